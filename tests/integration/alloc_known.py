#!/usr/bin/env python3
"""Allocation and live-heap profiles against known answers.

The alloc_known workloads (C on glibc and musl, C++ with operator new and
delete) print how many bytes each function allocated and how many are
still live at exit.  The profiles written by the preloaded library must
agree, judged by `go tool pprof` (not our own decoder):
  - each function's share of alloc-space within 2 percentage points,
  - total alloc-space within 10%, alloc-samples within 10% of the count,
  - heap-live-size within 10% of the live set, made only of live functions,
  - every sample labelled with the thread id.
The C++ workload runs twice: with libstdc++'s operator new (which our
malloc counts through) and with jemalloc's preloaded after us (which does
not call malloc: the operator itself counts)."""
import glob
import os
import platform
import re
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
# STOWAWAY_WL: another build's workloads (aarch64.sh: launchers that run them under qemu).
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
JEMALLOC = f"/usr/lib/{platform.machine()}-linux-gnu/libjemalloc.so.2"


def pprof(args, path):
    return subprocess.run(["go", "tool", "pprof"] + args + [path], capture_output=True,
                          text=True, check=True).stdout


def flat_by_function(path, index):
    """{function: flat value} and the total, in the sample type's base unit."""
    unit = "B" if index.endswith(("space", "size")) else ""
    out = pprof(["-top", "-nodecount=1000", "-sample_index=" + index] +
                (["-unit=" + unit] if unit else []), path)
    total, flat = None, {}
    m = re.search(r"Total samples = ([0-9.]+)", out)
    if m:
        total = float(m.group(1))
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].endswith("%") and parts[4].endswith("%"):
            value = float(parts[0].rstrip("B")) if parts[0] != "0" else 0.0
            # C++ functions read as c++filt prints them: "new_objects(int)"
            name = parts[5].split("(")[0]
            flat[name] = flat.get(name, 0.0) + value
    return flat, total or 0.0


def run(name, rate, counts=None, scale="1", check_live=True, after=None):
    """after: a library preloaded after ours (its allocator is the next one)."""
    exe = os.path.join(WL, name)
    label = f"{name}+{os.path.basename(after).split('.')[0]}@{rate}" if after else f"{name}@{rate}"
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=SO + (" " + after if after else ""), DD_SERVICE="allocknown", STOWAWAY_PROFILES="alloc,heap",
                   STOWAWAY_ALLOC_SAMPLE_BYTES=str(rate))
        proc = subprocess.run([exe, scale], env=env, capture_output=True, text=True,
                              timeout=300)
        check(f"{label}: runs", proc.returncode == 0, proc.stderr[-300:])
        truth, live = {}, {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "truth":
                truth[parts[1]] = int(parts[2])
                live[parts[1]] = int(parts[3])
        alloc_files = sorted(glob.glob(os.path.join(out, "allocknown.*.alloc.*.pb.gz")))
        heap_files = sorted(glob.glob(os.path.join(out, "allocknown.*.heap.*.pb.gz")))
        check(f"{label}: profiles written", bool(alloc_files) and bool(heap_files),
              str(os.listdir(out)))
        if not alloc_files or not heap_files or not truth:
            return
        # Periods add up for allocations; the live heap is the last snapshot.
        flat, total = {}, 0.0
        for f in alloc_files:
            fl, t = flat_by_function(f, "alloc-space")
            total += t
            for k, v in fl.items():
                flat[k] = flat.get(k, 0.0) + v
        true_total = sum(truth.values())
        worst = max(abs(flat.get(fn, 0.0) / total - b / true_total) * 100 for fn, b in truth.items())
        check(f"{label}: alloc-space shares within 2 points", worst <= 2.0,
              f"worst {worst:.2f} points; " + ", ".join(
                  f"{fn} {flat.get(fn, 0.0) / total * 100:.1f}% (true {b / true_total * 100:.1f}%)"
                  for fn, b in truth.items()))
        check(f"{label}: alloc-space total within 10%", abs(total / true_total - 1) <= 0.10,
              f"{total:.0f} vs {true_total}")
        if counts:
            n_total = 0.0
            for f in alloc_files:
                _, t = flat_by_function(f, "alloc-samples")
                n_total += t
            true_n = sum(counts.values())
            check(f"{label}: alloc-samples within 10% of the count",
                  abs(n_total / true_n - 1) <= 0.10, f"{n_total:.0f} vs {true_n}")
        tags = pprof(["-tags"], alloc_files[-1])
        check(f"{label}: samples carry the thread id", "thread id" in tags,
              "" if "thread id" in tags else " ".join(tags.split())[:200])
        if not check_live:
            return
        lflat, ltotal = flat_by_function(heap_files[-1], "heap-live-size")
        true_live = sum(live.values())
        check(f"{label}: heap-live-size within 10% of the live set",
              abs(ltotal / true_live - 1) <= 0.10, f"{ltotal:.0f} vs {true_live}")
        dead = sum(lflat.get(fn, 0.0) for fn, b in live.items() if b == 0)
        check(f"{label}: freed blocks are not live", dead <= 0.01 * true_live,
              f"{dead:.0f} bytes of freed functions in the live heap")


def main():
    if not os.path.exists(SO):
        check("alloc_known: library built", False, SO)
        return 1
    # 64 KiB: enough sample points for 2-point shares and a 10% live heap
    # from one short run.
    c_counts = {"small_malloc": 8000000, "medium_calloc": 125000, "large_aligned": 1000,
                "grow_realloc": 800 * 9, "live_small": 64000, "live_large": 512}
    wanted = os.environ.get("STOWAWAY_VARIANTS", "alloc_known alloc_known-musl alloc_known_cxx").split()
    for name in wanted:
        run(name, 65536, None if name.endswith("_cxx") else c_counts)
    if "alloc_known_cxx" in wanted and os.path.exists(JEMALLOC):
        run("alloc_known_cxx", 65536, after=JEMALLOC)
    elif "alloc_known_cxx" in wanted:
        check("alloc_known_cxx+libjemalloc: jemalloc installed", False,
              f"{JEMALLOC} missing (tests/deps/alloc.txt)")
    # STOWAWAY_ALLOC_DEFAULT_RUN=0 (aarch64.sh) leaves out this run: it
    # tests sampling statistics, not anything of the architecture.
    if "alloc_known" in wanted and os.environ.get("STOWAWAY_ALLOC_DEFAULT_RUN", "1") == "1":
        # The default rate (512 KiB) on a larger run; its live set (about 200
        # sample points) is too small for a 10% check at this rate.
        run("alloc_known", 524288, scale="2", check_live=False)
    return status()


if __name__ == "__main__":
    sys.exit(main())
