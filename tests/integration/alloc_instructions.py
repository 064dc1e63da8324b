#!/usr/bin/env python3
"""Instructions our allocation hooks add per allocation pair, counted by
callgrind (exact and independent of the machine's load), against the floor
of any interposer: tests/workloads/alloc_forward.c, which only jumps to the
next definition.  build/workloads/alloc_pairs makes 100000 malloc/free or
operator new/delete pairs (64-127 bytes) under each configuration: the
library loaded but off, profiling allocations with so rare a sample that
only the unsampled paths run, and the same with the live heap (every free
and delete looks up the live filter).  Each count is the pair loop's own
(--toggle-collect), after a warm-up.  The bounds are x86-64 instruction
counts with some room (the hooks, compiled by gcc 12: malloc/free +8, +31,
+44; new/delete +16, +42, +58 over the floor: operator new(n) forwards with
no count of its own once it learned that its inner malloc counts the bytes,
and operator delete with no check once it learned that its next operator
frees through our free); elsewhere the counts are
printed, not judged."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checks import check, check_count, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
SO = os.environ.get("STOWAWAY_SO", os.path.join(BUILD, "libstowaway.so"))
PAIRS = os.path.join(BUILD, "workloads", "alloc_pairs")
FORWARD = os.path.join(BUILD, "workloads", "alloc_forward.so")
N = 100000
# Instructions per pair over the floor, at most (mode, config).
BOUNDS = {("malloc", "off"): 12, ("malloc", "unsampled"): 40, ("malloc", "heap"): 56,
          ("new", "off"): 24, ("new", "unsampled"): 52, ("new", "heap"): 68}


def configs(outdir):
    ours = {"LD_PRELOAD": SO, "STOWAWAY_OUTPUT_DIR": outdir, "DD_PROFILING_ENABLED": "true",
            "STOWAWAY_ALLOC_SAMPLE_BYTES": str(1 << 30)}
    return {
        "floor": {"LD_PRELOAD": FORWARD},
        "off": dict(ours, DD_PROFILING_ENABLED="false"),
        "unsampled": dict(ours, STOWAWAY_PROFILES="alloc"),
        "heap": dict(ours, STOWAWAY_PROFILES="alloc,heap"),
    }


def count(mode, extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    env.update(extra)
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        f"--toggle-collect={mode}_pairs", PAIRS, mode, str(N)],
                       env=env, capture_output=True, text=True, timeout=120)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"callgrind failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    return int(m.group(1)) / N


def main():
    if not shutil.which("valgrind"):
        check("alloc_instructions: valgrind", False, "valgrind not installed (tests/deps/alloc.txt)")
        return
    outdir = tempfile.mkdtemp(prefix="alloc_instr")
    try:
        cfgs = configs(outdir)
        for mode in ("malloc", "new"):
            per = {name: count(mode, env) for name, env in cfgs.items()}
            floor = per["floor"]
            for name in ("off", "unsampled", "heap"):
                extra = per[name] - floor
                bound = BOUNDS[(mode, name)]
                detail = (f"{extra:+.1f} instructions per {mode} pair over the forwarding-only "
                          f"interposer ({per[name]:.1f} vs {floor:.1f}; bound +{bound})")
                check_count(f"alloc_instructions {mode} {name}", extra <= bound, detail)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(status())
