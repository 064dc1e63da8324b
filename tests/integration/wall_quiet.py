#!/usr/bin/env python3
"""Wake-ups of our threads in a process whose threads all wait, and the wall
profile's accuracy while the wall ticks are stretched (quiet ticks).

One thread of ours (stowaway-sample) serves the wall ticks and its own; while
every host thread waits in an interposed call, the next wall tick comes
100 ms later, unless a thread leaves its call first: it times its leaving
and wakes our thread.  Counted, not timed (the kernel's
voluntary_ctxt_switches of our threads, which load does not raise: each is
one sleep of ours ending):
 - an idle python3 (one time.sleep, default kinds): our threads together wake
   at most 30 times a second (about 10 expected; two threads at 100 + 10
   before);
 - a python3 thread alternating time.sleep(0.23), select() on a silent pipe
   for 0.17 s and 20 ms of CPU, measuring each phase itself: its sleep and
   select shares of its wall time in the profile (go tool pprof -traces)
   within 3 points of the measured ones (the spans up to each timed leaving
   are exact, and the CPU burst after it is met by ticks at the configured
   rate: without the wake-up the burst's time went to the next call's end,
   +5 points on sleep), and its total within 5% of its life; our threads
   woke fewer than 70 times a second meanwhile (the ticks were stretched; a
   100 Hz tick alone is 100);
 - a python3 thread spinning 0.6 s then sleeping 0.3 s, three times: while
   it spins, its running samples the CPU profile's signals', our threads
   woke fewer than 40 times a second (flat ticks, up to 100 ms apart); its
   sleep and running shares within 3 points of the measured ones and its
   total within 5% of its life;
 - a thread that ends right after a 1.2 s sleep (no visit between its timed
   leaving and its end) keeps at least 95% of the sleep (0.71 s of 1.2 s
   before the departed thread's span was placed)."""
import glob
import os
import subprocess
import sys
import tempfile
import time

from pprof_traces import traces
from checks import check, check_terse, status
from own_threads import our_wakes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
IDLE_WAKES_MAX = 30
RUN_WAKES_MAX = 70
SHARE_POINTS = 0.03

PHASES = """
import os, select, sys, threading, time
seconds = float(sys.argv[1])
r, w = os.pipe()
res = {}
def worker():
    res["tid"] = threading.get_native_id()
    slept = selected = 0.0
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        a = time.monotonic(); time.sleep(0.23); b = time.monotonic()
        select.select([r], [], [], 0.17); c = time.monotonic()
        while time.monotonic() - c < 0.02: pass
        slept += b - a; selected += c - b
    res["v"] = (slept, selected, time.monotonic() - start)
th = threading.Thread(target=worker); th.start()
time.sleep(seconds + 0.3); th.join()
print("worker", res["tid"], *res["v"])
"""

# A thread that runs flat out, then sleeps: its running samples are the CPU
# profile's signals', so the wall ticks may stretch while it runs.
FLAT = """
import sys, threading, time
res = {}
def worker():
    res["tid"] = threading.get_native_id()
    spun = slept = 0.0
    start = time.monotonic()
    for _ in range(3):
        a = time.monotonic()
        while time.monotonic() - a < 0.6: pass
        b = time.monotonic(); time.sleep(0.3); c = time.monotonic()
        spun += b - a; slept += c - b
    res["v"] = (spun, slept, time.monotonic() - start)
th = threading.Thread(target=worker); th.start(); th.join()
print("worker", res["tid"], *res["v"])
"""
FLAT_WAKES_MAX = 40

# A thread that ends right after leaving a long sleep (its quiet ticks
# timed the leaving; no visit came between the leaving and the end).
ENDING = """
import threading, time
res = {}
def worker():
    res["tid"] = threading.get_native_id()
    a = time.monotonic(); time.sleep(1.2); res["slept"] = time.monotonic() - a
th = threading.Thread(target=worker); th.start(); th.join()
time.sleep(0.3)
print("worker", res["tid"], res["slept"])
"""


def wakes_per_second(pid, start_after, seconds):
    time.sleep(start_after)
    a = our_wakes(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    b = our_wakes(pid)
    elapsed = time.monotonic() - t0
    per = {k: (b[k] - a[k]) / elapsed for k in b if k in a}
    return sum(per.values()), per


def env_for(out, service):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_"))}
    env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               DD_SERVICE=service)
    return env


def idle(out):
    p = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(4)"],
                         env=env_for(out, "wallquiet"), stderr=subprocess.PIPE, text=True)
    try:
        total, per = wakes_per_second(p.pid, 1.0, 2.5)
    finally:
        p.wait(timeout=30)
    check("idle python3: runs", p.returncode == 0, p.stderr.read()[-300:])
    check(f"idle python3: our threads wake at most {IDLE_WAKES_MAX} times a second",
          0 < total <= IDLE_WAKES_MAX, f"{total:.1f}/s: " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items())))


def phases(out):
    seconds = 3.0
    p = subprocess.Popen([sys.executable, "-S", "-c", PHASES, str(seconds)],
                         env=env_for(out, "wallphases"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        total, per = wakes_per_second(p.pid, 0.5, 2.5)
    finally:
        stdout, stderr = p.communicate(timeout=60)
    check("phases: runs", p.returncode == 0, stderr[-300:])
    check(f"phases: our threads woke fewer than {RUN_WAKES_MAX} times a second (ticks stretched)",
          0 < total < RUN_WAKES_MAX, f"{total:.1f}/s: " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items())))
    line = [l.split() for l in stdout.splitlines() if l.startswith("worker ")]
    walls = glob.glob(os.path.join(out, f"wallphases.{p.pid}.wall.*.pb.gz"))
    if not check_terse("phases: the worker reported and a wall profile was written",
                 len(line) == 1 and len(walls) == 1, f"{stdout!r} {os.listdir(out)}"):
        return
    tid, slept, selected, life = line[0][1], float(line[0][2]), float(line[0][3]), float(line[0][4])
    samples = [(s, v) for lab, s, v in traces(walls[0], dict(os.environ, HOME=out, PPROF_TMPDIR=out))
               if lab.get("thread id") == tid]
    total_ns = sum(v for _, v in samples)
    check("phases: the worker's wall time within 5% of its life",
          abs(total_ns / 1e9 - life) <= 0.05 * life, f"profile {total_ns / 1e9:.3f} s, life {life:.3f} s")
    for name, frame, truth in (("sleep", "clock_nanosleep", slept), ("select", "select", selected)):
        got = sum(v for s, v in samples if any(f == frame or f == "__" + frame for f in s)) / max(total_ns, 1)
        want = truth / life
        check(f"phases: {name} share within {100 * SHARE_POINTS:.0f} points of the measured one",
              abs(got - want) <= SHARE_POINTS,
              f"profile {100 * got:.1f}%, measured {100 * want:.1f}%")


def flat(out):
    p = subprocess.Popen([sys.executable, "-S", "-c", FLAT], env=env_for(out, "wallflat"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Inside the first spin (0.1 s to 0.5 s of it).
        total, per = wakes_per_second(p.pid, 0.15, 0.4)
    finally:
        stdout, stderr = p.communicate(timeout=60)
    check("flat: runs", p.returncode == 0, stderr[-300:])
    check(f"flat: our threads woke fewer than {FLAT_WAKES_MAX} times a second while a thread "
          "ran flat out (ticks stretched; a 100 Hz tick alone is 100)",
          0 < total < FLAT_WAKES_MAX, f"{total:.1f}/s: " +
          ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items())))
    line = [l.split() for l in stdout.splitlines() if l.startswith("worker ")]
    walls = glob.glob(os.path.join(out, f"wallflat.{p.pid}.wall.*.pb.gz"))
    if not check_terse("flat: the worker reported and a wall profile was written",
                       len(line) == 1 and len(walls) == 1, f"{stdout!r} {os.listdir(out)}"):
        return
    tid, spun, slept, life = line[0][1], float(line[0][2]), float(line[0][3]), float(line[0][4])
    samples = [(lab, s, v) for lab, s, v in traces(walls[0], dict(os.environ, HOME=out, PPROF_TMPDIR=out))
               if lab.get("thread id") == tid]
    total_ns = sum(v for _, _, v in samples)
    check("flat: the worker's wall time within 5% of its life",
          abs(total_ns / 1e9 - life) <= 0.05 * life, f"profile {total_ns / 1e9:.3f} s, life {life:.3f} s")
    got = sum(v for _, s, v in samples if any(f in ("clock_nanosleep", "__clock_nanosleep") for f in s))
    run = sum(v for lab, _, v in samples if lab.get("state") == "running")
    for name, ns, truth in (("sleep", got, slept), ("running", run, spun)):
        check(f"flat: {name} share within {100 * SHARE_POINTS:.0f} points of the measured one",
              abs(ns / max(total_ns, 1) - truth / life) <= SHARE_POINTS,
              f"profile {100 * ns / max(total_ns, 1):.1f}%, measured {100 * truth / life:.1f}%")


def ending(out):
    p = subprocess.run([sys.executable, "-S", "-c", ENDING], env=env_for(out, "wallending"),
                       capture_output=True, text=True, timeout=60)
    line = [l.split() for l in p.stdout.splitlines() if l.startswith("worker ")]
    walls = glob.glob(os.path.join(out, "wallending.*.wall.*.pb.gz"))
    if not check_terse("ending: runs, reports, and a wall profile was written",
                       p.returncode == 0 and len(line) == 1 and len(walls) == 1,
                       f"rc {p.returncode} {p.stdout!r} {p.stderr[-300:]}"):
        return
    tid, slept = line[0][1], float(line[0][2])
    got = sum(v for lab, s, v in traces(walls[0], dict(os.environ, HOME=out, PPROF_TMPDIR=out))
              if lab.get("thread id") == tid and any(f in ("clock_nanosleep", "__clock_nanosleep") for f in s))
    check("ending: a thread that ends right after a 1.2 s sleep keeps at least 95% of it",
          got >= 0.95e9 * slept, f"profile {got / 1e9:.3f} s, slept {slept:.3f} s")


def main():
    with tempfile.TemporaryDirectory() as out:
        idle(out)
        phases(out)
        flat(out)
        ending(out)
    return status()


if __name__ == "__main__":
    sys.exit(main())
