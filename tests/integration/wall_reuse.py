#!/usr/bin/env python3
"""Wall sampler stack reuse for raw waits, glibc and musl hosts.

build/workloads/wall_reuse runs threads blocked in futex waits made with an
inline system call instruction (no interposed wrapper sees them: the sampler
reads /proc/self/task/TID/syscall and reuses a thread's stack while its CPU
clock stands still).  The workload measures how long each thread spent in
each of its waiting functions.  Judged with `go tool pprof -traces
-sample_index=wall-time`, at 1000 Hz (the thread waking every 3 ms is seen
both moving and standing still) and at the default 100 Hz (it moved at
almost every visit):
 - reuse-blocked, one wait for the whole run: >= 97% of its thread's wall
   time under blocked_forever and its total within 5% of its lifetime (the
   reused stack still carries the full time since the previous sample);
 - reuse-alt, 3 ms waits in the pattern site_a, site_a, site_a, site_b from
   frames the kernel cannot tell apart (same sp and pc): each site's share
   of the thread within 5 points of its measured share (a stack kept after
   the thread ran would put everything under one site);
 - reuse-phases, 300 ms in phase_x then 100 ms in phase_y: shares within 3
   points (a reused stack dropped as soon as the thread moved)."""
import glob
import os
import subprocess
import sys
import tempfile

from pprof_traces import traces
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
SECONDS = float(os.environ.get("WALL_REUSE_SECONDS", "4"))


TOLERANCE = {"reuse-alt": 0.05, "reuse-phases": 0.03}


def run_variant(exe_name, hz):
    exe = os.path.join(WL, exe_name)
    tag = f"{exe_name} at {hz} Hz"
    if not os.access(exe, os.X_OK):
        check(f"{tag}: built", False, exe + " missing (make test-build)")
        return
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=SO, DD_SERVICE="wallreuse", STOWAWAY_WALL_HZ=str(hz),
                   STOWAWAY_PROFILES="wall")
        proc = subprocess.run([exe, str(SECONDS)], env=env, capture_output=True, text=True,
                              timeout=120)
        check(f"{tag}: runs", proc.returncode == 0, proc.stderr[-300:])
        sites = []
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "site":
                sites.append((parts[1], parts[2], int(parts[3]), int(parts[4])))
        check(f"{tag}: every site reported", len(sites) == 5, str(sites))
        files = glob.glob(os.path.join(out, "wallreuse.*.wall.*.pb.gz"))
        check(f"{tag}: a wall profile was written", len(files) == 1, str(files))
        if not files or not sites:
            return
        samples = traces(files[0], dict(os.environ, HOME=out, PPROF_TMPDIR=out))
        for thread, function, in_fn, life in sites:
            mine = [(s, v) for lab, s, v in samples if lab.get("thread name") == thread]
            total = sum(v for _, v in mine)
            under = sum(v for s, v in mine if function in s)
            if thread == "reuse-blocked":
                check(f"{tag}: {thread}: total within 5% of its lifetime",
                      abs(total - life) <= 0.05 * life, f"profile {total/1e9:.3f}s, lifetime {life/1e9:.3f}s")
                frac = under / total if total else 0
                check(f"{tag}: {thread}: >= 97% of its wall time under {function}", frac >= 0.97,
                      f"{100*frac:.2f}% of {total/1e9:.3f}s")
                continue
            got = under / total if total else 0
            want = in_fn / life
            check(f"{tag}: {thread}: {function} share within {100*TOLERANCE[thread]:.0f} points",
                  abs(got - want) <= TOLERANCE[thread], f"profile {100*got:.2f}%, truth {100*want:.2f}%")


for variant in ["wall_reuse", "wall_reuse-musl"]:
    for rate in (1000, 100):
        run_variant(variant, rate)
sys.exit(status())
