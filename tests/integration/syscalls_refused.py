#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/syscall_refused build/workloads/cpu_split-nofp
"""Each system call the library makes that a container's seccomp filter may
not list (a profile recorded from the program's own calls, or one written
before the call existed), refused with EPERM, one at a time
(tests/workloads/syscall_refused.c), under cpu_split-nofp (threads, no frame
pointers, known CPU split) with every default kind:
  - the program runs unchanged: same exit status, its own output, no hang,
    and every line we add to its stderr starts with `stowaway:`;
  - the profiles are still written, gzip pprof that `go tool pprof` reads,
    the CPU profile naming the program's four hot functions and unwinding
    them to their thread's entry, except where the refused call is the one
    a kind is made of: without timer_create or timer_settime no CPU or wall
    timer runs, which one warning line says, and the other kinds are still
    written.
The calls younger than the kernels still in use (statx 4.11, getrandom
3.17, renameat2 3.15, pidfd_open 5.3, pidfd_getfd 5.6, close_range 5.9,
epoll_pwait2 5.11) are also refused with ENOSYS, as such a kernel answers.
fsync refused (EPERM, and EINVAL as a file system that cannot sync answers)
leaves the profiles written, not synced, and one debug line says so.
socket refused while uploading to an agent every second: one warning says
a network call was refused, not a bare "network error"."""
import concurrent.futures
import errno
import glob
import os
import subprocess
import sys
import tempfile

from checks import check, status
from pprof_traces import traces
from syscall_numbers import UNISTD, numbers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
LEAVES = {"alpha_leaf": "worker_ab", "beta_leaf": "worker_ab", "gamma_leaf": "worker_g",
          "delta_leaf": "main"}
# The calls, by name; their numbers come from the kernel headers.
# (Not those the loader needs before us: newfstatat, pread64.)
CALLS = ["statx", "renameat2", "linkat", "mkdirat", "getdents64", "flock", "fsync",
         "readlinkat", "getrandom", "process_vm_readv", "pidfd_open", "pidfd_getfd", "unshare",
         "close_range", "prlimit64", "madvise", "tgkill", "rt_sigtimedwait", "getrusage", "uname",
         "timer_create", "timer_settime", "capget", "epoll_pwait2"]
# Calls a kernel still in use may not have: refused with ENOSYS too.
YOUNG = ["statx", "getrandom", "renameat2", "pidfd_open", "pidfd_getfd", "close_range", "epoll_pwait2"]


def run(name, nr, err, log_level="info"):
    """Runs cpu_split-nofp 1 with call nr refused; (returncode, stdout, stderr, profile paths)."""
    out = tempfile.mkdtemp(prefix="refused.")
    env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, DD_SERVICE="refused",
               LD_PRELOAD=LIB, STOWAWAY_ALLOC_SAMPLE_BYTES="1", STOWAWAY_LOG_LEVEL=log_level)
    try:
        p = subprocess.run([os.path.join(WL, "syscall_refused"), str(nr), str(err),
                            os.path.join(WL, "cpu_split-nofp"), "1"],
                           env=env, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr, sorted(glob.glob(os.path.join(out, "*.pb.gz")))
    except subprocess.TimeoutExpired:
        return None, "", "no exit after 60 s", []


def judge(name, result):
    rc, stdout, stderr, files = result
    truths = [l for l in stdout.splitlines() if l.startswith("truth ")]
    foreign = [l for l in stderr.splitlines() if l.strip() and not l.startswith("stowaway:")]
    check(f"{name} refused: the program runs unchanged (exit 0, its 4 truth lines, "
          "only stowaway: lines added to stderr)",
          rc == 0 and len(truths) == 4 and not foreign,
          f"exit {rc}, {len(truths)} truth lines, foreign stderr {foreign[:2]}")
    kinds = sorted({os.path.basename(f).split(".")[2] for f in files})
    cpu = [f for f in files if ".cpu." in f]
    if name in ("timer_create", "timer_settime"):
        verb = name.split("_")[1].replace("settime", "arm")
        check(f"{name} refused: one warning says CPU timers cannot be made or armed; the allocation "
              "profile is still written",
              stderr.count(f"cannot {verb} CPU timers") == 1 and "alloc" in kinds,
              f"kinds {kinds}; {stderr.strip()[:300]}")
        return
    check(f"{name} refused: the CPU and allocation profiles are written", "cpu" in kinds and "alloc" in kinds,
          f"kinds {kinds}; {stderr.strip()[-300:]}")
    if not cpu:
        return
    st = [stack for _, stack, _ in traces(cpu[0], os.environ, "cpu-time")]
    leaves = {s[0] for s in st if s}
    leaf_stacks = [s for s in st if s and s[0] in LEAVES]
    reached = [s for s in leaf_stacks if LEAVES[s[0]] in s]
    check(f"{name} refused: the CPU profile names the 4 hot functions and unwinds them to their "
          "thread's entry", set(LEAVES) <= leaves and leaf_stacks and len(reached) == len(leaf_stacks),
          f"leaves {sorted(leaves & set(LEAVES))}, {len(reached)} of {len(leaf_stacks)} stacks reach the entry")


def main():
    missing = [p for p in (LIB, os.path.join(WL, "syscall_refused"), os.path.join(WL, "cpu_split-nofp"))
               if not os.path.exists(p)]
    if missing or UNISTD is None or not os.path.exists(UNISTD):
        check("syscalls_refused prerequisites", False, f"missing {missing}, headers {UNISTD}")
        return
    nrs = numbers()
    calls = [c for c in CALLS if c in nrs]
    cases = [(c, errno.EPERM) for c in calls] + [(c, errno.ENOSYS) for c in YOUNG if c in nrs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda ce: run(ce[0], nrs[ce[0]], ce[1]), cases))
    for (c, err), result in zip(cases, results):
        judge(c if err == errno.EPERM else f"{c} (ENOSYS)", result)
    env = dict(os.environ, DD_PROFILING_ENABLED="true", DD_PROFILING_UPLOAD_PERIOD="1",
               DD_TRACE_AGENT_URL="http://127.0.0.1:9", LD_PRELOAD=LIB)
    p = subprocess.run([os.path.join(WL, "syscall_refused"), str(nrs["socket"]), str(errno.EPERM),
                        os.path.join(WL, "cpu_split-nofp"), "2"], env=env, capture_output=True,
                       text=True, timeout=60)
    said = [l for l in p.stderr.splitlines() if l.startswith("stowaway:")]
    check("socket refused: one warning says a network call was refused, and the program runs unchanged",
          p.returncode == 0 and len(said) == 1 and "a network system call was refused" in said[0],
          f"exit {p.returncode}; {said[:3]}")
    for err in ("EPERM", "EINVAL"):
        rc, _, stderr, files = run("fsync", nrs["fsync"], getattr(errno, err), "debug")
        check(f"fsync refused with {err}: profiles written, and one debug line says they are not synced",
              rc == 0 and any(".cpu." in f for f in files) and
              stderr.count("fsync refused") == 1 and "cannot write profiles" not in stderr,
              f"exit {rc}, {len(files)} files; {[l for l in stderr.splitlines() if 'sync' in l][:2]}")


if __name__ == "__main__":
    main()
    sys.exit(status())
