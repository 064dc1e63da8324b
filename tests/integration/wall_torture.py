#!/usr/bin/env python3
"""Wall profiler torture test, glibc and musl hosts.

build/workloads/wall_torture runs one thread per blocking call (nanosleep,
clock_nanosleep, usleep, read on a pipe and a socket, recv with
SO_RCVTIMEO and MSG_WAITALL, accept, epoll_wait, poll, select, ppoll,
sem_timedwait, pthread_cond_timedwait, pthread_mutex_lock on a held mutex,
waitpid) plus a CPU burner, under the preloaded library at the highest wall
rate we allow (STOWAWAY_WALL_HZ=1000).  Each thread counts its EINTRs and
short reads.  Judged with `go tool pprof -traces -sample_index=wall-time`:
 - zero EINTR and zero short reads in every thread;
 - each waiting function's share of the whole profile's wall time within
   3 percentage points of its true share (its thread's lifetime over the sum
   of all threads' lifetimes, as the workload measured them);
 - each such thread: >= 97% of its wall time under its waiting function;
 - the stacks of its waits start at the C library's function it called
   (a name containing the call's, e.g. __nanosleep), never at its caller
   or at our wrapper (>= 97% of its thread's time off a CPU, less the time
   off a CPU in other calls it makes, each in a frame of its own: the fork
   of the child wait_waitpid waits for);
 - the profile's total wall time within 5% of the threads' lifetimes."""
import glob
import os
import subprocess
import sys
import tempfile

from pprof_traces import traces
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
# STOWAWAY_WL: another build's workloads (aarch64.sh: launchers that run them under qemu).
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
SECONDS = float(os.environ.get("WALL_TORTURE_SECONDS", "6"))
# The C library call each interposed wait makes: its leaf frame's name holds
# this (glibc and musl name their entries __nanosleep, __libc_read, ...).
# wait_mutex_lock is left out: pthread_mutex_lock is not interposed.
CALLED = {"wait_nanosleep": "nanosleep", "wait_clock_nanosleep": "clock_nanosleep",
          "wait_usleep": "usleep", "wait_read_pipe": "read", "wait_read_socket": "read",
          "wait_recv_timeout": "recv", "wait_accept": "accept", "wait_epoll": "epoll_wait",
          "wait_poll": "poll", "wait_select": "select", "wait_ppoll": "ppoll",
          "wait_sem_timedwait": "sem_timedwait", "wait_cond_timedwait": "cond_timedwait",
          "wait_waitpid": "waitpid"}
# Calls a waiting thread makes besides its wait, each in a frame of its own:
# their time off a CPU is not the wait's and is left out of the leaf check.
NOT_THE_WAIT = {"wait_waitpid": "fork_child"}


def run_variant(exe_name):
    exe = os.path.join(WL, exe_name)
    if not os.access(exe, os.X_OK):
        check(f"{exe_name}: built", False, exe + " missing (make test-build)")
        return
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=SO, DD_SERVICE="walltorture", STOWAWAY_WALL_HZ="1000",
                   STOWAWAY_PROFILES="wall")
        proc = subprocess.run([exe, str(SECONDS)], env=env, capture_output=True, text=True,
                              timeout=120)
        check(f"{exe_name}: runs", proc.returncode == 0, proc.stderr[-300:])
        results = []
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "result":
                results.append((parts[1], parts[2], int(parts[3]), int(parts[4]), int(parts[5]),
                                int(parts[6]), int(parts[7])))
        check(f"{exe_name}: every thread reported", len(results) == 16, str(len(results)))
        for name, _, calls, eintr, short, errors, _ in results:
            check(f"{exe_name}: {name}: zero EINTR, zero short reads, no other error",
                  calls > 0 and eintr == 0 and short == 0 and errors == 0,
                  f"calls {calls} EINTR {eintr} short {short} errors {errors}")
        files = glob.glob(os.path.join(out, "walltorture.*.wall.*.pb.gz"))
        check(f"{exe_name}: a wall profile was written", len(files) == 1, str(files))
        if not files:
            return
        pprof_env = dict(os.environ, HOME=out, PPROF_TMPDIR=out)
        samples = traces(files[0], pprof_env)
        total = sum(v for _, _, v in samples)
        lifetimes = {name[:15]: life for name, _, _, _, _, _, life in results}
        # Threads of the workload besides the workers: main, feeder, holder.
        others = sum(v for lab, _, v in samples if lab.get("thread name") not in lifetimes)
        true_total = sum(lifetimes.values()) + others
        check(f"{exe_name}: total wall time within 5% of the threads' lifetimes",
              abs(total - true_total) <= 0.05 * true_total and others <= 4 * SECONDS * 1e9 * 1.05,
              f"profile {total/1e9:.2f}s, workers {sum(lifetimes.values())/1e9:.2f}s + others {others/1e9:.2f}s")
        for name, function, _, _, _, _, life in results:
            thread = name[:15]
            mine = [(s, v) for lab, s, v in samples if lab.get("thread name") == thread]
            under = sum(v for s, v in mine if function in s)
            got = under / total if total else 0
            want = life / true_total
            check(f"{exe_name}: {function} share within 3 points", abs(got - want) <= 0.03,
                  f"profile {100*got:.2f}%, truth {100*want:.2f}%")
            thread_total = sum(v for _, v in mine)
            frac = under / thread_total if thread_total else 0
            # Where the rest went, for a failure's log: the thread's largest
            # other stacks with their state.
            others = {}
            for lab, st, v in samples:
                if lab.get("thread name") == thread and function not in st:
                    key = f"{lab.get('state')}: {' < '.join(st[:4])}"
                    others[key] = others.get(key, 0) + v
            top = sorted(others.items(), key=lambda kv: -kv[1])[:3]
            check(f"{exe_name}: {function}: >= 97% of its thread's wall time under it",
                  frac >= 0.97, f"{100*frac:.2f}% of {thread_total/1e9:.2f}s" +
                  (f"; elsewhere: {[(k, round(v / 1e6)) for k, v in top]} ms" if top else ""))
            if function in CALLED:
                helper = NOT_THE_WAIT.get(function)
                thread_off_cpu = [(s, v) for lab, s, v in samples
                                  if lab.get("thread name") == thread and lab.get("state") != "running"]
                off_cpu = [(s, v) for s, v in thread_off_cpu if not (helper and helper in s)]
                def called(stack):  # the C library's entry, not the workload's wait_ caller
                    return bool(stack) and CALLED[function] in stack[0] and stack[0] != function
                at_call = sum(v for s, v in off_cpu if called(s))
                waited = sum(v for _, v in off_cpu)
                leaves = sorted({s[0] for s, _ in off_cpu if s and not called(s)})
                check(f"{exe_name}: {function}: its waits' leaf frame is the C library's "
                      f"{CALLED[function]}", waited > 0 and at_call >= 0.97 * waited,
                      f"{100*at_call/waited if waited else 0:.2f}% of {waited/1e9:.2f}s off a CPU; "
                      f"other leaves {leaves[:4]}")
                if helper:
                    # The rest of its time off a CPU is in the other call,
                    # and its stacks keep the frame that made it (a scan
                    # from a C library without tables must not skip it).
                    outside = [(s, v) for s, v in thread_off_cpu if not called(s)]
                    total_out = sum(v for _, v in outside)
                    under = sum(v for s, v in outside if helper in s)
                    check(f"{exe_name}: {function}: its time off a CPU outside "
                          f"{CALLED[function]} is under {helper}",
                          total_out > 0 and total_out - under <= 0.1 * total_out + 5e6,
                          f"{under/1e6:.1f} of {total_out/1e6:.1f} ms")
        states = {lab.get("state") for lab, _, _ in samples}
        check(f"{exe_name}: states running, sleeping, waiting, network present",
              {"running", "sleeping", "waiting", "network"} <= states, str(sorted(s for s in states if s)))


def negative_control(exe_name):
    """Without the library, signalling every thread each millisecond (what a
    naive wall profiler does) must make the workload count EINTRs: proof
    that the counters above can fail."""
    exe = os.path.join(WL, exe_name)
    if not os.access(exe, os.X_OK):
        return
    proc = subprocess.run([exe, "2", "naive"], capture_output=True, text=True, timeout=60)
    eintr = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "result":
            eintr[parts[2]] = int(parts[4]) + int(parts[5])
    expected = ["wait_nanosleep", "wait_epoll", "wait_poll", "wait_select", "wait_ppoll",
                "wait_recv_timeout"]
    if "musl" not in exe_name:  # musl retries sem_timedwait after SA_RESTART handlers
        expected.append("wait_sem_timedwait")
    check(f"{exe_name}: negative control: naive signalling causes EINTR or short reads",
          all(eintr.get(f, 0) > 0 for f in expected), str({f: eintr.get(f) for f in expected}))


for variant in os.environ.get("STOWAWAY_VARIANTS", "wall_torture wall_torture-musl").split():
    negative_control(variant)
    run_variant(variant)
sys.exit(status())
