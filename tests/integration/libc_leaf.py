#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/libc_leaf build/workloads/libc_leaf-musl
"""A thread interrupted inside C library code that has neither unwind tables
nor a frame of its own (musl's assembly memcpy, as Debian's musl builds it)
keeps its stack: tests/workloads/libc_leaf.c copies with memcpy in a loop
from copy_loop, built without frame pointers, for glibc and musl.  Judged
with go tool pprof on the CPU and wall profiles of one run:
  - the CPU profile holds at least half the CPU time the process measured
    (samples whose stack ends at once are not lost);
  - >= 90% of the CPU time and of the wall time is under copy_loop, and
    main under it (the handler finds the caller above a table-less leaf by
    scanning from sp for a return address the tables lead on from)."""
import glob
import os
import subprocess
import tempfile

from pprof_traces import traces
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
SECONDS = 1.5


def run(exe_name):
    exe = os.path.join(WL, exe_name)
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
                   DD_SERVICE="libcleaf", STOWAWAY_PROFILES="cpu,wall")
        proc = subprocess.run([exe, str(SECONDS)], env=env, capture_output=True, text=True, timeout=60)
        check(f"{exe_name}: runs", proc.returncode == 0, proc.stderr[-300:])
        cpu_ns = next((int(l.split()[1]) for l in proc.stdout.splitlines() if l.startswith("cpu_ns ")), 0)
        pprof_env = dict(os.environ, HOME=out, PPROF_TMPDIR=out)
        for kind, index in (("cpu", "cpu-time"), ("wall", "wall-time")):
            files = glob.glob(os.path.join(out, f"libcleaf.*.{kind}.*.pb.gz"))
            if not check(f"{exe_name}: a {kind} profile was written", len(files) == 1, str(files)):
                continue
            samples = traces(files[0], pprof_env, index)
            total = sum(v for _, _, v in samples)
            under = sum(v for _, s, v in samples if "copy_loop" in s and "main" in s[s.index("copy_loop"):])
            if kind == "cpu":
                check(f"{exe_name}: the CPU profile holds at least half the process's CPU time",
                      cpu_ns > 0 and total >= 0.5 * cpu_ns,
                      f"profile {total / 1e6:.0f} ms, process {cpu_ns / 1e6:.0f} ms")
            leaves = sorted({s[0] for _, s, _ in samples if s and "copy_loop" not in s})[:4]
            check(f"{exe_name}: >= 90% of the {kind} time is under copy_loop and main",
                  total > 0 and under >= 0.9 * total,
                  f"{100 * under / total if total else 0:.1f}% of {total / 1e6:.0f} ms; other stacks end in {leaves}")


def main():
    for exe in ("libc_leaf", "libc_leaf-musl"):
        run(exe)


if __name__ == "__main__":
    main()
    raise SystemExit(status())
