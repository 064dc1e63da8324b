#!/usr/bin/env python3
"""Instructions our interposed waiting calls (wall_hooks.c) execute per
call, counted by callgrind (exact and independent of the machine's load).
build/workloads/wall_calls makes rounds of read(/dev/zero), write(/dev/null)
and poll(timeout 0) in calls_loop, the function the counts are toggled on;
N and 2N rounds are counted, so the first calls (which find the C
library's functions) cancel.  The instructions that ran in
libstowaway.so are summed from callgrind's output, per call:
 - library loaded but off, and CPU profile only (wall profiling off): the
   exported entry loads the next definition and the flag and jumps to the
   C library (7 on x86-64; a wrapper that saves registers before the flag
   test costs 30 or more), bound 10;
 - wall profiling on: the entry, the publishing body and the call's enter
   and leave (136 with gcc 12), bound 150, judged where CPU timers expire
   in task work (wall_syscalls.py: elsewhere a call blocks our signal while
   the sampler has a request running, two system calls and their code).
The same for realloc and the aligned family, which forward the same way
while nothing is sampled: rounds of posix_memalign, realloc and free
(alloc_loop), library loaded and off: 32 per round (93 when realloc and
posix_memalign set up a frame before testing anything), bound 40.
The bounds are x86-64 instruction counts; elsewhere the counts are printed,
not judged."""
import os
import platform
import shutil
import sys
import tempfile

from checks import check, check_count, status
from wall_syscalls import task_work_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from callgrind import callgrind_self_costs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
CALLS = os.path.join(ROOT, "build", "workloads", "wall_calls")
N = 5000
CALLS_PER_ROUND = 3
BOUNDS = {"off": 10, "cpu": 10, "wall": 150, "alloc_off": 40}


def ours(rounds, extra, tmp, loop="calls_loop"):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    env.update(extra)
    r, self_cost = callgrind_self_costs([CALLS, str(rounds)] + (["alloc"] if loop == "alloc_loop" else []),
                                        loop, os.path.join(tmp, f"cg.{rounds}"), env=env)
    if self_cost is None:
        raise RuntimeError(f"callgrind failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    so = os.path.realpath(SO)
    return sum(c for (ob, _), c in self_cost.items() if ob and os.path.realpath(ob) == so)


def main():
    if not shutil.which("valgrind"):
        check("wall_instructions: valgrind", False, "valgrind not installed (tests/deps/wall.txt)")
        return
    tmp = tempfile.mkdtemp(prefix="wall_instr")
    try:
        base = {"LD_PRELOAD": SO, "STOWAWAY_OUTPUT_DIR": tmp, "DD_PROFILING_ENABLED": "true"}
        configs = {"off": dict(base, DD_PROFILING_ENABLED="false"),
                   "cpu": dict(base, STOWAWAY_PROFILES="cpu"),
                   "wall": dict(base, STOWAWAY_PROFILES="wall")}
        for name, env in configs.items():
            per_call = (ours(2 * N, env, tmp) - ours(N, env, tmp)) / (N * CALLS_PER_ROUND)
            bound = BOUNDS[name]
            judged = platform.machine() == "x86_64" and (name != "wall" or task_work_kernel())
            detail = (f"{per_call:.1f} instructions per interposed call in libstowaway.so "
                      f"({name}; bound {bound})")
            check_count(f"wall_instructions {name}", per_call <= bound, detail, judged)
        off = configs["off"]
        per_round = (ours(2 * N, off, tmp, "alloc_loop") - ours(N, off, tmp, "alloc_loop")) / N
        bound = BOUNDS["alloc_off"]
        detail = (f"{per_round:.1f} instructions per posix_memalign+realloc+free in "
                  f"libstowaway.so (off; bound {bound})")
        check_count("wall_instructions alloc off", per_round <= bound, detail)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(status())
