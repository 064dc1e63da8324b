#!/usr/bin/env python3
"""Allocation profiler across thread churn, cross-thread frees and fork.

alloc_churn (glibc and musl) runs 2000 short-lived threads whose blocks are
half freed by the main thread and half kept, and forks twice while threads
allocate.  Judged with `go tool pprof`: no hang or crash; parent and both
children write profiles; the parent's heap-live-size is within 10% of the
kept bytes (so frees on another thread retired their blocks); each child's
live heap is the share of the parent's heap it inherited at fork (within
20%)."""
import glob
import os
import re
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
ROUNDS = 250


def live_bytes(path):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-unit=B", "-sample_index=heap-live-size",
                          path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Total samples = ([0-9.]+)B", out)
    return float(m.group(1)) if m else 0.0


def run(name):
    exe = os.path.join(WL, name)
    with tempfile.TemporaryDirectory() as out:
        # Each child exports itself: its live heap, inherited from the
        # parent, is what is judged (a child handing its samples to its
        # parent leaves its live heap out, tests/integration/fork_family.py).
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   STOWAWAY_CHILDREN_TO_PARENT="false",
                   LD_PRELOAD=SO, DD_SERVICE="churn", STOWAWAY_PROFILES="alloc,heap",
                   STOWAWAY_ALLOC_SAMPLE_BYTES="32768")
        try:
            proc = subprocess.run([exe, str(ROUNDS)], env=env, capture_output=True, text=True,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            check(f"{name}: finishes (no deadlock)", False, "timed out after 120 s")
            return
        check(f"{name}: finishes (no deadlock), children exit 0", proc.returncode == 0,
              proc.stderr[-300:])
        children = [int(l.split()[1]) for l in proc.stdout.splitlines() if l.startswith("child ")]
        truth = [int(l.split()[2]) for l in proc.stdout.splitlines() if l.startswith("truth live")]
        heap = {}
        for f in glob.glob(os.path.join(out, "churn.*.heap.*.pb.gz")):
            heap.setdefault(int(os.path.basename(f).split(".")[1]), []).append(f)
        pids = sorted(p for p in heap if p not in children)
        # The workload is the one other process with profiles.
        parent = pids[-1] if pids else None
        check(f"{name}: parent and both children write profiles",
              parent is not None and len(children) == 2 and all(c in heap for c in children),
              f"children {children}, profiled pids {sorted(heap)}")
        if parent is None or not truth or len(children) != 2 or not all(c in heap for c in children):
            return
        got = live_bytes(sorted(heap[parent])[-1])
        check(f"{name}: parent live heap within 10% of the kept blocks",
              abs(got / truth[0] - 1) <= 0.10, f"{got:.0f} vs {truth[0]}")
        for i, c in enumerate(children):
            want = truth[0] * (i + 1) / 3.0
            got = live_bytes(sorted(heap[c])[-1])
            check(f"{name}: child {i + 1} live heap is what it inherited at fork (20%)",
                  abs(got / want - 1) <= 0.20, f"{got:.0f} vs about {want:.0f}")


def main():
    for name in ("alloc_churn", "alloc_churn-musl"):
        if not os.path.exists(os.path.join(WL, name)):
            check(f"{name}: built", False)
            continue
        run(name)
    return status()


if __name__ == "__main__":
    sys.exit(main())
