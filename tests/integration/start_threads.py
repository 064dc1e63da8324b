#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/short_threads-musl
"""What starting the profiler costs a process that exits at once (a shell's
/bin/true, a build's many short commands), and that the wall time of one
that lives on still counts from our start.  Counts, judged by strace, not
times:
  - a process that exits at once (glibc's /bin/true, and a musl program)
    created one thread of ours (the scheduler), and its constructor waited
    for none of our threads to be scheduled (no FUTEX_WAIT on the main
    thread): the sampler thread starts once the process has lived 20 ms.
    Before, the constructor started two threads and waited for each to run,
    which on a loaded machine is a round of the run queue each;
  - a process that sleeps 100 ms has both threads, and its wall profile
    (a run without strace) holds the whole sleep (-10% to +50%: the span
    from our start to the sleep's end): the main thread's clocks began at
    our start, so the first visit places the span before the sampler
    started."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
MUSL_EXIT = [os.path.join(ROOT, "build", "workloads", "short_threads-musl"), "0", "1"]


def traced(argv, out, label):
    """(threads created by any thread, FUTEX_WAITs of the main thread) of one run under strace -f."""
    trace = os.path.join(out, "strace.txt")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_"))}
    env.update(DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, DD_SERVICE="start")
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=clone,clone3,futex", "-o", trace, "-E",
                        "LD_PRELOAD=" + SO, *argv], env=env, capture_output=True, text=True, timeout=60)
    check(f"{label}: runs unchanged under the library", r.returncode == 0, r.stderr[-300:])
    with open(trace) as f:
        lines = f.read().splitlines()
    main = lines[0].split()[0] if lines else ""
    threads = [l for l in lines if re.search(r"clone3?\(.*CLONE_THREAD", l)]
    waits = [l for l in lines if l.split()[0] == main and "FUTEX_WAIT" in l]
    return len(threads), len(waits)


def main():
    if shutil.which("strace") is None or shutil.which("go") is None:
        check("start_threads prerequisites", False, "needs strace and go (tests/deps/wall.txt)")
        return
    for label, argv in (("glibc /bin/true", ["/bin/true"]), ("musl program exiting at once", MUSL_EXIT)):
        with tempfile.TemporaryDirectory() as out:
            threads, waits = traced(argv, out, label)
            check(f"{label}: one thread of ours created, the constructor waited for none",
                  threads == 1 and waits == 0, f"threads {threads}, main thread's FUTEX_WAITs {waits}")
    with tempfile.TemporaryDirectory() as out:
        threads, _ = traced(["/bin/sleep", "0.1"], out, "sleep 0.1")
        check("sleep 0.1: the scheduler and the sampler thread", threads == 2, f"threads {threads}")
    with tempfile.TemporaryDirectory() as out:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_"))}
        env.update(DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, DD_SERVICE="start", LD_PRELOAD=SO)
        subprocess.run(["/bin/sleep", "0.1"], env=env, timeout=60)
        files = glob.glob(os.path.join(out, "start.*.wall.*.pb.gz"))
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw", *files[:1]],
                             capture_output=True, text=True, timeout=60).stdout if files else ""
        values = [int(m.group(2)) for m in re.finditer(r"^\s+(\d+)\s+(\d+): [\d ]+$", top, re.M)]
        total = sum(values) / 1e9
        check("sleep 0.1: its wall profile holds the whole sleep, the span before "
              "the sampler started included", len(files) == 1 and 0.09 <= total <= 0.15,
              f"{len(files)} files, {total:.3f} s")


main()
sys.exit(status())
