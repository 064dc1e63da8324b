#!/usr/bin/env python3
"""The overhead cap (STOWAWAY_MAX_OVERHEAD_PCT), end to end.

An expensive setting (1000 Hz, 900 extra frames per stack) must make the
profiler lower its CPU sampling rate when the limit is well under what it
costs uncapped, a quarter of it (the kernel's tick bounds the CPU-timer rate, 250 Hz on a
HZ=250 kernel, so the cost is measured first and the limit, a decimal
percentage, set from it): the profile's comment says
so, the log says so, the profile really holds fewer samples per CPU second
than the same run with a limit it never reaches, and its cpu-time total still matches
the CPU the threads used (samples are weighted by elapsed CPU time,
whatever the rate).  A cheap
setting (the defaults, shallow stacks) must keep the configured rate.  The
wall sampler's rate is lowered by the same cap, and the bytes between
allocation samples are raised.  Runs last a fixed wall time, whatever the
machine's speed: the cap decides once per 3 s window, after a first second
of baseline.
Profiles are read with `go tool pprof -raw`, not with our own decoder."""
import glob
import os
import re
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WORK = os.path.join(ROOT, "build", "workloads", "bench_cpu_work-nofp")
THREADS = 4

COMMENT = re.compile(r"overhead (?P<pct>[0-9.]+)% of application CPU.*sampling rates lowered "
                     r"(?P<lowered>\d+) times.*cpu (?P<hz>\d+) Hz \(configured (?P<conf>\d+) Hz\)")


def raw_profile(path):
    """(comments, [(cpu-samples, cpu-time ns)]) from go tool pprof -raw."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True,
                         timeout=120).stdout
    comments = [l[len("Comment: "):] for l in out.splitlines() if l.startswith("Comment: ")]
    samples, in_samples = [], False
    for line in out.splitlines():
        if line.startswith("Samples:"):
            in_samples = True
        elif line.startswith("Locations"):
            in_samples = False
        elif in_samples:
            m = re.match(r"^\s*(\d+)\s+(\d+):", line)
            if m:
                samples.append((int(m.group(1)), int(m.group(2))))
    return comments, samples


def run(name, iterations, depth, extra_env):
    """Runs the workload profiled; returns (thread cpu ns total, stderr, comments, samples)."""
    with tempfile.TemporaryDirectory() as out:
        # One profile per run, however long a loaded machine makes it (the
        # run's timeout is 300 s; the default period, 60 s, split one once).
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   STOWAWAY_PROFILES="cpu", STOWAWAY_LOG_LEVEL="info", DD_SERVICE="ovcap",
                   DD_PROFILING_UPLOAD_PERIOD="600", LD_PRELOAD=SO)
        env.update(extra_env)
        proc = subprocess.run([WORK, str(THREADS), str(iterations), str(depth)], env=env,
                              capture_output=True, text=True, timeout=300)
        check(f"{name}: runs", proc.returncode == 0, proc.stderr[-300:])
        thread_ns = sum(int(l.split()[3]) for l in proc.stdout.splitlines() if l.startswith("thread "))
        files = glob.glob(os.path.join(out, "ovcap.*.cpu.*.pb.gz"))
        check(f"{name}: one CPU profile written", len(files) == 1, str(files))
        if not files:
            return thread_ns, proc.stderr, [], []
        comments, samples = raw_profile(files[0])
        return thread_ns, proc.stderr, comments, samples


def ns_per_iteration():
    """Thread CPU per iteration of the workload, unprofiled (for runs of a given length)."""
    iters = 50000000
    proc = subprocess.run([WORK, str(THREADS), str(iters), "0"], capture_output=True, text=True,
                          timeout=300)
    ns = [int(l.split()[3]) for l in proc.stdout.splitlines() if l.startswith("thread ")]
    return max(0.05, sum(ns) / len(ns) / iters) if ns else 1.0


def iterations_for(wall_s, per_iter_ns):
    """Iterations per thread for about wall_s seconds with THREADS threads on this machine."""
    cores = min(THREADS, os.cpu_count() or 1)
    return int(wall_s * 1e9 * cores / THREADS / per_iter_ns)


def overhead_comment(name, comments):
    found = [m for m in (COMMENT.search(c) for c in comments) if m]
    check(f"{name}: the profile's comment reports overhead and rates", len(found) == 1,
          " | ".join(comments)[:400])
    return found[0] if found else None


def main():
    if not os.path.exists(WORK) or not os.path.exists(SO):
        check("overhead_cap: build", False, f"missing {WORK} or {SO} (make test-build)")
        return 1

    per_iter = ns_per_iteration()
    # Expensive: 4 threads, 900 recursive frames, 1000 Hz; once with the limit at 100% (the
    # reference: never reached), once at a limit well under what the reference measured.
    expensive = {"STOWAWAY_CPU_HZ": "1000", "STOWAWAY_MAX_FRAMES": "1024"}
    name = "uncapped"
    ref_ns, log, comments, ref_samples = run(name, iterations_for(7, per_iter), 900,
                                              dict(expensive, STOWAWAY_MAX_OVERHEAD_PCT="100"))
    m = overhead_comment(name, comments)
    uncapped_pct = float(m["pct"]) if m else 0.0
    if m:
        check(f"{name}: rates kept", int(m["lowered"]) == 0 and m["hz"] == "1000", m.group(0))
    # A quarter: the measured cost moves by 2x from run to run (0.68%, 0.97%
    # and 1.48% uncapped in three fresh clones; it is timed on one sample in
    # eight), so at half of one reading a run can sit under the limit until
    # its last window.
    limit = max(0.05, round(uncapped_pct / 4, 2))
    name = f"expensive (limit {limit}%, {uncapped_pct}% uncapped)"
    # Longer: the first decision comes after about 4 s, most of the run must follow it.
    thread_ns, log, comments, samples = run(name, iterations_for(14, per_iter), 900,
                                            dict(expensive, STOWAWAY_MAX_OVERHEAD_PCT=str(limit)))
    m = overhead_comment(name, comments)
    if m:
        check(f"{name}: rates lowered", int(m["lowered"]) >= 1 and int(m["hz"]) < 1000, m.group(0))
    cuts = [float(x) for x in re.findall(r"profiler overhead ([0-9.]+)% .*sampling lowered", log)]
    check(f"{name}: the log says the rate was lowered, with the overhead over the limit",
          bool(cuts) and cuts[0] > limit, log[-300:])
    if m and cuts:
        check(f"{name}: overhead fell after lowering", float(m["pct"]) < cuts[0],
              f"{cuts[0]}% at the first cut, {m['pct']}% in the last window")
    # Samples per second of thread CPU, against the uncapped run (1000 Hz is
    # more than the kernel tick delivers, so the reference is measured).
    n, ref_n = sum(s for s, _ in samples), sum(s for s, _ in ref_samples)
    rate = n / (thread_ns / 1e9) if thread_ns else 0
    ref_rate = ref_n / (ref_ns / 1e9) if ref_ns else 0
    check(f"{name}: fewer samples per CPU second than uncapped", 0 < rate < 0.8 * ref_rate,
          f"{rate:.0f}/s capped, {ref_rate:.0f}/s uncapped")
    cpu_ns = sum(t for _, t in samples)
    check(f"{name}: cpu-time total within 15% of the threads' CPU",
          thread_ns > 0 and abs(cpu_ns - thread_ns) <= 0.15 * thread_ns,
          f"profile {cpu_ns/1e9:.3f}s, threads {thread_ns/1e9:.3f}s")

    # Cheap: the defaults (100 Hz, limit 2%), shallow stacks.
    name = "cheap"
    thread_ns, log, comments, samples = run(name, iterations_for(7, per_iter), 0, {})
    m = overhead_comment(name, comments)
    if m:
        check(f"{name}: rates kept", int(m["lowered"]) == 0 and m["hz"] == "100"
              and m["conf"] == "100", m.group(0))
        check(f"{name}: measured overhead under the 2% limit", float(m["pct"]) < 2.0, m["pct"] + "%")
        delivered = re.search(r"delivering (\d+) samples per CPU second", m.string)
        check(f"{name}: the comment gives the rate delivered, about the 100 Hz configured",
              delivered is not None and 80 <= int(delivered.group(1)) <= 105, m.string[-200:])
    check(f"{name}: nothing lowered in the log", "sampling lowered" not in log, log[-300:])

    # Sampled allocations cost CPU on the allocating threads: one sample per
    # 4 KiB over a 1% limit makes the cap raise the mean bytes per sample,
    # and lower the wall sampler's rate with the same scale.
    name = "alloc"
    bench = os.path.join(ROOT, "build", "workloads", "alloc_bench")
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   STOWAWAY_PROFILES="cpu,wall,alloc", STOWAWAY_ALLOC_SAMPLE_BYTES="4096",
                   STOWAWAY_WALL_HZ="1000",
                   STOWAWAY_MAX_OVERHEAD_PCT="1", DD_SERVICE="ovcap", LD_PRELOAD=SO)
        proc = subprocess.run([bench, "2", "1000", "mixed", "8"], env=env, capture_output=True,
                              text=True, timeout=300)
        check(f"{name}: runs", proc.returncode == 0, proc.stderr[-300:])
        files = glob.glob(os.path.join(out, "ovcap.*.alloc.*.pb.gz"))
        comments = raw_profile(files[0])[0] if files else []
        means = [re.search(r"alloc one sample per (\d+) bytes \(configured 4096\)", c) for c in comments]
        means = [m for m in means if m]
        check(f"{name}: bytes per allocation sample raised above the configured 4096",
              len(means) == 1 and int(means[0].group(1)) > 4096, " | ".join(comments)[:300])
        wall = [m for m in (re.search(r"wall (\d+) Hz \(configured 1000 Hz\)", c) for c in comments) if m]
        check(f"{name}: the wall rate is lowered with the same scale",
              len(wall) == 1 and int(wall[0].group(1)) < 1000, " | ".join(comments)[:300])
    return status()


if __name__ == "__main__":
    sys.exit(main())
