#!/usr/bin/env python3
"""System calls the wall profiler adds to a busy thread's interposed calls.

A thread that runs all the time owes running time at nearly every wall
tick, so the sampler keeps a request in flight for it; on kernels whose
CPU-clock timers expire in task work (x86-64 >= 5.10, arm64 >= 5.16) an
interposed call must then still make no system call of ours (no
rt_sigprocmask pair around it).  python3 reads /dev/zero one byte at a time
through the interposed read(), at STOWAWAY_WALL_HZ=1000; strace (the
judge, tracing only rt_sigprocmask) counts the calls with and without the
library, and the difference per read must stay below 0.01 (a handshake
that blocks our signal makes two per read while a request runs).  On other
kernels the count is printed, not judged."""
import glob
import os
import platform
import shutil
import subprocess
import sys
import tempfile

from checks import check, check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
READS = 150000
LOOP = ("import os, time\n"
        "fd = os.open('/dev/zero', os.O_RDONLY)\n"
        "t = time.monotonic()\n"
        f"for _ in range({READS}): os.read(fd, 1)\n"
        "print(time.monotonic() - t)\n")


def task_work_kernel():
    rel = platform.release().split(".")
    try:
        version = (int(rel[0]), int(rel[1].split("-")[0]))
    except (IndexError, ValueError):
        return False
    since = {"x86_64": (5, 10), "aarch64": (5, 16)}.get(platform.machine())
    return since is not None and version >= since


def sigprocmask_calls(env, out):
    trace = os.path.join(out, "trace")
    r = subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=rt_sigprocmask", "-o", trace,
                        sys.executable, "-c", LOOP], env=env, capture_output=True, text=True,
                       timeout=120)
    with open(trace) as f:
        n = sum(1 for line in f if "rt_sigprocmask(" in line)
    return r, n


def main():
    if not check_terse("strace installed", shutil.which("strace") is not None,
                 "apt-get install strace (tests/deps/wall.txt)"):
        return status()
    with tempfile.TemporaryDirectory() as out:
        plain = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_"))}
        plain.pop("LD_PRELOAD", None)
        r0, base = sigprocmask_calls(plain, out)
        check("runs without the library", r0.returncode == 0, r0.stderr[-300:])
        prof = os.path.join(out, "prof")
        os.mkdir(prof)
        env = dict(plain, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", DD_SERVICE="wallsyscalls",
                   STOWAWAY_PROFILES="wall", STOWAWAY_WALL_HZ="1000", STOWAWAY_OUTPUT_DIR=prof)
        r1, with_lib = sigprocmask_calls(env, out)
        check("runs with the library", r1.returncode == 0, r1.stderr[-300:])
        check("a wall profile is written", len(glob.glob(os.path.join(prof, "*wall*.pb.gz"))) >= 1,
              os.listdir(prof))
        per_read = (with_lib - base) / READS
        detail = (f"{with_lib} rt_sigprocmask calls with the library, {base} without, "
                  f"{per_read:.4f} more per read over {READS} reads "
                  f"({platform.machine()} {platform.release()})")
        if task_work_kernel():
            check("no rt_sigprocmask around interposed calls (task-work CPU timers)",
                  per_read < 0.01, detail)
        else:
            check("rt_sigprocmask around interposed calls counted (handshake blocks on this "
                  "kernel, not judged)", True, detail)
    return status()


if __name__ == "__main__":
    sys.exit(main())
