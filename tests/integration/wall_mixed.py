#!/usr/bin/env python3
"""Wall-clock accuracy where threads mix CPU-heavy system calls, user work
and blocking waits inside one thread, as servers do (glibc and musl hosts).

build/workloads/wall_mixed runs a read(/dev/zero)/poll alternation, an
epoll event loop with user work and write() of 2 MiB per event, and a
writer whose pipe blocks about half the time; each thread measures the wall
time inside each of its phase functions with the monotonic clock.  The
library profiles cpu (1000 Hz) and wall (1000 Hz).  Each scenario runs in
its own process.  Judged with go tool pprof -traces:
 - each phase function's share of its thread's wall time within 3 points
   of the share the thread measured, plus the share of its life the thread
   spent waiting for a CPU (its schedstat run_delay, printed): where a
   preempted thread waits, the kernel does not say without privileges, so
   that time is placed where the thread used CPU (docs/architecture.md,
   "Wall-clock time without EINTR"); on a quiet machine that share is ~0;
   plus the share of its life it spent in its running phases neither on a
   CPU nor waiting for one by its schedstat (their wall time less its whole
   run time and run delay, at least 0): on a virtual machine, time the
   hypervisor took its CPU away ("steal"), which the guest's kernel counts
   for no thread, so the profile places it with the thread's waits
   (docs/architecture.md); ~0 on a host that does not steal;
   plus three standard deviations of the sampling error of the function's
   running time, which is the CPU profile's draw (sqrt(n) of its n ticks:
   3.8 points for the event loop's 1.4 s of handle_work in a 3 s run);
 - its wall time not below its CPU time in the CPU profile of the same run,
   less three standard deviations of that profile's sampling error (a
   function's CPU samples are a count of 1 ms ticks: sqrt(n) of them);
 - the state label of each phase (io, waiting, running: >= 80% of its time);
 - no stack starts in our own library's internal functions (the symbols
   nm lists as local to libstowaway.so);
 - the CPU profile's signals took at least 90% of the wall profile's running
   samples (its debug line at exit)."""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

from pprof_traces import traces
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
SECONDS = float(os.environ.get("WALL_MIXED_SECONDS", "3"))

SCENARIOS = ["readpoll", "eventloop", "pipewriter"]
SHARE_POINTS = 0.03
CPU_HZ = 1000

# The state each phase's time must carry (>= 80% of it).
STATES = {"read_phase": "io", "poll_phase": "waiting", "wait_events": "waiting",
          "handle_work": "running", "reply_write": "io", "produce": "running",
          "push_write": "waiting"}


def our_local_functions():
    out = subprocess.run(["nm", "--defined-only", SO], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[2] for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[1] == "t"}


def run_variant(exe_name, scenario, ours):
    exe = os.path.join(WL, exe_name)
    if not os.access(exe, os.X_OK):
        check(f"{exe_name}: built", False, exe + " missing (make test-build)")
        return
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=SO, DD_SERVICE="wallmixed", STOWAWAY_WALL_HZ="1000",
                   STOWAWAY_CPU_HZ=str(CPU_HZ), STOWAWAY_PROFILES="cpu,wall",
                   STOWAWAY_LOG_LEVEL="debug")
        proc = subprocess.run([exe, str(SECONDS), scenario], env=env, capture_output=True,
                              text=True, timeout=120)
        exe_name = f"{exe_name} {scenario}"
        check(f"{exe_name}: runs", proc.returncode == 0, proc.stderr[-300:])
        # With the CPU profile on, its signals carry the wall profile's running
        # samples (one signal and one unwind for both; wall.h): the wall's own
        # timer is the fallback for time that waited CARRY_PATIENCE CPU periods.
        m = re.search(r"wall sampler: .* (\d+) running \((\d+) taken by CPU signals\)", proc.stderr)
        running, carried = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        check(f"{exe_name}: the CPU profile's signals take most running samples",
              running > 0 and carried >= 0.9 * running,
              f"{carried} of {running} running samples" if m else "no 'wall sampler:' debug line")
        truth, delayed, oncpu = [], {}, {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "phase":
                truth.append((parts[1], parts[2], int(parts[3]), int(parts[4])))
            elif parts and parts[0] == "delay":
                delayed[parts[1]] = max(0, int(parts[2])) / int(parts[3])
            elif parts and parts[0] == "oncpu":
                oncpu[parts[1]] = int(parts[2])
        check(f"{exe_name}: every phase reported", len(truth) == {"readpoll": 2, "eventloop": 3,
                                                                  "pipewriter": 2}[scenario],
              str(len(truth)))
        walls = glob.glob(os.path.join(out, "wallmixed.*.wall.*.pb.gz"))
        cpus = glob.glob(os.path.join(out, "wallmixed.*.cpu.*.pb.gz"))
        check(f"{exe_name}: one wall and one cpu profile written", len(walls) == 1 and len(cpus) == 1,
              str(walls + cpus))
        if len(walls) != 1 or len(cpus) != 1:
            return
        # Time the running phases spent neither on a CPU nor waiting for one.
        stolen = {}
        for thread in {t for t, _, _, _ in truth}:
            life = next(lf for t, _, _, lf in truth if t == thread)
            running = sum(w for t, f, w, _ in truth if t == thread and STATES[f] != "waiting")
            run = oncpu.get(thread, -1)
            stolen[thread] = (max(0.0, running - run - delayed.get(thread, 0.0) * life) / life
                              if run >= 0 else 0.0)
        pprof_env = dict(os.environ, HOME=out, PPROF_TMPDIR=out)
        wall = traces(walls[0], pprof_env)
        cpu = traces(cpus[0], pprof_env, "cpu-time")
        for thread, function, true_wall, life in truth:
            mine = [(lab, s, v) for lab, s, v in wall if lab.get("thread name") == thread]
            total = sum(v for _, _, v in mine)
            under = [(lab, v) for lab, s, v in mine if function in s]
            wall_ns = sum(v for _, v in under)
            got, want = (wall_ns / total if total else 0), true_wall / life
            delay = delayed.get(thread, 0.0)
            steal = stolen.get(thread, 0.0)
            cpu_ns = sum(v for lab, s, v in cpu if lab.get("thread name") == thread and function in s)
            # The CPU profile counts ticks of 1/CPU_HZ: its error is sqrt(n) ticks.
            # The wall profile's running time is the same draw (its running
            # samples are the CPU signals'), so a share carries that error too.
            slack = 3 * (cpu_ns * 1e9 / CPU_HZ) ** 0.5
            drawn = slack / total if total else 0.0
            check(f"{exe_name}: {thread}: {function} share within {100 * SHARE_POINTS:.0f} points "
                  f"of the truth, plus its thread's time waiting for a CPU, its running time "
                  f"off CPU by no count (steal) and its running samples' sampling error",
                  abs(got - want) <= SHARE_POINTS + delay + steal + drawn,
                  f"profile {100 * got:.1f}%, truth {100 * want:.1f}%, error "
                  f"{100 * (got - want):+.1f} points; waiting for a CPU {100 * delay:.1f}% of the "
                  f"thread's life; running phases off CPU by no count {100 * steal:.1f}%; "
                  f"sampling error 3 sd: {100 * drawn:.1f} points")
            check(f"{exe_name}: {thread}: {function} wall time not below its CPU time",
                  wall_ns >= cpu_ns - slack,
                  f"wall {wall_ns / 1e9:.3f}s, cpu profile {cpu_ns / 1e9:.3f}s "
                  f"(sampling error 3 sd: {slack / 1e9:.3f}s)")
            states = collections.Counter()
            for lab, v in under:
                states[lab.get("state")] += v
            want_state = STATES[function]
            check(f"{exe_name}: {thread}: {function} time is mostly '{want_state}'",
                  wall_ns > 0 and states[want_state] >= 0.8 * wall_ns,
                  {k: round(v / 1e9, 3) for k, v in states.items()})
        leaves = collections.Counter()
        for _, stack, v in wall:
            if stack and stack[0] in ours:
                leaves[stack[0]] += v
        check(f"{exe_name}: no wall stack starts in our own functions", not leaves,
              {k: round(v / 1e9, 3) for k, v in leaves.items()})


ours = our_local_functions()
check("our library's local functions listed by nm", len(ours) > 50, str(len(ours)))
for variant in ["wall_mixed", "wall_mixed-musl"]:
    for scenario in SCENARIOS:
        run_variant(variant, scenario, ours)
sys.exit(status())
