"""Shared by tests/integration/hazards_*.py: run a hazard workload plainly and
with the library preloaded at high rates, compare exit status and output,
watch its memory, and check the profiles it wrote with go tool pprof."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from checks import check_terse as check, finish  # noqa: F401 (used as hc.check, hc.finish)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
LIBCS = [("glibc", ""), ("musl", "-musl")]


def prog(name, suffix):
    return os.path.join(WL, "hazard_" + name + suffix)


def profiled_env(out, **extra):
    env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               STOWAWAY_CPU_HZ="1000", DD_PROFILING_UPLOAD_PERIOD="1", STOWAWAY_LOG_LEVEL="info")
    env.pop("DD_SERVICE", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def plain_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "DD_PROFILING_ENABLED"):
        env.pop(k, None)
    return env


class Run:
    """A finished run: rc (None on timeout), out, err, mem [(t, private rss_kb,
    data_kb, shared rss_kb)],
    timers (max lines seen in /proc/PID/timers), pid."""


def status_kb(pid):
    """(private RSS, VmData, shared RSS) in kB.  The shared part is our
    inflated debug data (debuginfo.c maps it shared so forked workers fill
    it once): a cache with its own bound that fills a little at every export
    (the CPU cap), so it is checked apart from what a leak would grow."""
    rss = data = shmem = None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmData:"):
                    data = int(line.split()[1])
                elif line.startswith("RssShmem:"):
                    shmem = int(line.split()[1])
    except OSError:
        pass
    if rss is None or shmem is None:
        return rss, data, shmem
    return rss - shmem, data, shmem


def count_timers(pid):
    try:
        with open(f"/proc/{pid}/timers") as f:
            return sum(1 for line in f if line.startswith("ID:"))
    except OSError:
        return None


def run(args, env, timeout, watch=None, stdin=subprocess.DEVNULL):
    """Runs args; samples memory and POSIX timers every 0.1 s; `watch(pid,
    out_so_far)` may be called once the process printed something."""
    r = Run()
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(args, env=env, stdout=out, stderr=err, stdin=stdin)
        r.pid = p.pid
        r.mem, r.timers = [], 0
        r.rc = None
        while True:
            try:
                r.rc = p.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                pass
            t = time.monotonic() - start
            rss, data, shmem = status_kb(p.pid)
            if rss is not None:
                r.mem.append((t, rss, data, shmem or 0))
            n = count_timers(p.pid)
            if n is not None:
                r.timers = max(r.timers, n)
            if watch:
                out.seek(0)
                if watch(p.pid, out.read().decode(errors="replace")):
                    watch = None
                out.seek(0, 2)
            if t > timeout:
                p.kill()
                p.wait()
                break
        r.seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        r.out = out.read().decode(errors="replace")
        r.err = err.read().decode(errors="replace")
    return r


def profiles(out, kind=None, pid=None):
    pat = "*.%s.%s.*.pb.gz" % (pid if pid else "*", kind if kind else "*")
    return sorted(glob.glob(os.path.join(out, pat)))


_pprof_tmp = tempfile.mkdtemp(prefix="stowaway-hz-pprof-")


def pprof(*args):
    env = dict(os.environ, HOME=_pprof_tmp, PPROF_TMPDIR=_pprof_tmp,
               GOCACHE=os.path.join(_pprof_tmp, "gocache"), GOFLAGS="")
    env.pop("LD_PRELOAD", None)
    p = subprocess.run(["go", "tool", "pprof", "-symbolize=none"] + list(args), env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def pprof_accepts(files, limit=6):
    """go tool pprof -raw on up to `limit` files spread over the list; returns
    the list of (file, error) it rejected."""
    if not files:
        return [("(none)", "no profile written")]
    step = max(1, len(files) // limit)
    picked = files[::step][:limit] + [files[-1]]
    bad = []
    for f in sorted(set(picked)):
        rc, _, err = pprof("-raw", f)
        if rc != 0:
            bad.append((os.path.basename(f), err.strip()[-200:]))
    return bad


def cpu_sample_count(path):
    """Number of CPU samples (sum of the cpu-samples value) in a profile."""
    rc, raw, _ = pprof("-raw", path)
    if rc != 0:
        return None
    total = 0
    in_samples = False
    for line in raw.splitlines():
        if line.startswith("Samples:"):
            in_samples = True
        elif line.startswith("Locations"):
            break
        elif in_samples:
            m = re.match(r"^\s+(\d+)\s+(\d+): ", line)
            if m:
                total += int(m.group(1))
    return total


def growth_after_warmup(mem, warm_fraction=0.3):
    """(RSS growth kB, VmData growth kB) after warm-up: the second half of
    the run against the span between warm-up and the middle.  RSS compares
    the windows' maxima.  VmData compares their medians: it jumps by whole
    thread stacks (8 MiB each) for a moment whenever libc maps a new one
    beside its cache, with or without the library (plain glibc churn: +32 MiB
    in 7 of 119 samples), so a window's maximum is a coin toss, while a leak
    lifts the median."""
    if len(mem) < 6:
        return None
    end_t = mem[-1][0]
    early = [m for m in mem if end_t * warm_fraction <= m[0] < end_t * 0.5]
    late = [m for m in mem if m[0] >= end_t * 0.5]
    if not early or not late:
        return None
    return (max(m[1] for m in late) - max(m[1] for m in early),
            _median([m[2] for m in late]) - _median([m[2] for m in early]))


def _median(values):
    v = sorted(values)
    return v[len(v) // 2]


def growth_at_end(mem):
    """(RSS, VmData) growth in kB of the last quarter over the third quarter
    (maxima for RSS, medians for VmData, as growth_after_warmup): what a leak
    still adds when the run ends."""
    if len(mem) < 8:
        return None
    end_t = mem[-1][0]
    third = [m for m in mem if end_t * 0.5 <= m[0] < end_t * 0.75]
    last = [m for m in mem if m[0] >= end_t * 0.75]
    if not third or not last:
        return None
    return (max(m[1] for m in last) - max(m[1] for m in third),
            _median([m[2] for m in last]) - _median([m[2] for m in third]))


# The step VmData may take and then hold: four 8 MiB thread stacks.  Under
# load more churned threads are alive at once and glibc keeps their stacks
# mapped (its stack cache), which moves even the median by whole stacks, in
# either direction (fresh25: +24 MiB, private RSS +0.2 MiB, flat after).
DATA_STEP_KB = 32768


def check_memory_flat(name, mem, every=10):
    """Memory after warm-up grows less than 4 MiB; or it took one step and
    stayed there: nothing grows in the last quarter and the step is under
    16 MiB of private RSS (DATA_STEP_KB of VmData).  (Our recorder and symbol
    tables keep their high-water capacity, so a period with more distinct
    stacks than any before raises it once, at any time; a leak grows until
    the end.)"""
    g, end = growth_after_warmup(mem), growth_at_end(mem)
    small = g is not None and g[0] < 4096 and g[1] < 4096
    plateau = (g is not None and end is not None and end[0] < 512 and end[1] < 512
               and g[0] < 16384 and g[1] < DATA_STEP_KB)
    check(f"{name}: memory flat after warm-up (private RSS +{g[0] if g else '?'} kB, "
          f"data +{g[1] if g else '?'} kB, in the last quarter +{end[0] if end else '?'} / "
          f"+{end[1] if end else '?'} kB; bound 4096 kB, or a step < 16 MiB of RSS, "
          f"{DATA_STEP_KB // 1024} MiB of data, then flat)",
          small or plateau, str(mem[::every]))
    # The shared part (inflated debug data) within STOWAWAY_DEBUG_MEMORY_MB's
    # default 64 MiB for the one module that has debug data here (libc).
    shared = max((m[3] for m in mem), default=0)
    check(f"{name}: inflated debug data within its bound ({shared} kB, bound 65536 kB)",
          shared <= 65536, str([m[3] for m in mem[::every]]))


def compare_plain(name, plain, prof):
    """Exit code and output of the profiled run equal the plain run's."""
    check(f"{name}: no hang (profiled run finished)", prof.rc is not None,
          f"killed after {prof.seconds:.0f}s")
    check(f"{name}: exit status unchanged ({plain.rc})", prof.rc == plain.rc,
          f"plain {plain.rc}, profiled {prof.rc}; stderr: {prof.err[-300:]}")
    check(f"{name}: output unchanged", prof.out == plain.out,
          f"plain {plain.out!r} profiled {prof.out!r}")


def hazard(name, suffix, args, plain_args=None, timeout=60, env_extra=None, kinds_required=("cpu",)):
    """The common protocol: plain run, profiled run, equal results, valid
    profiles.  Returns (profiled Run, output dir) — the dir is removed at exit."""
    out = tempfile.mkdtemp(prefix="stowaway-hz-")
    os.chmod(out, 0o777)
    plain = run([prog(name.split()[0], suffix)] + (plain_args or args), plain_env(), timeout)
    prof = run([prog(name.split()[0], suffix)] + args, profiled_env(out, **(env_extra or {})), timeout)
    compare_plain(name, plain, prof)
    for kind in kinds_required:
        files = profiles(out, kind, prof.pid)
        bad = pprof_accepts(files)
        check(f"{name}: {kind} profiles written and accepted by go tool pprof -raw "
              f"({len(files)} files)", not bad, str(bad))
    return prof, out


def cleanup(dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(_pprof_tmp, ignore_errors=True)
