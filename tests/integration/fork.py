#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/prefork build/workloads/prefork-musl
"""fork: a prefork server (parent + 8 workers, each burning its own function)
yields one correct CPU profile per process, in glibc and musl processes:
each file belongs to one pid, its samples are that process's function, each
child has a runtime of its own (files per pid), and no child profile carries
the parent's samples."""
import glob
import os
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))


def flat_shares(path):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=50", path],
                         capture_output=True, text=True).stdout
    shares = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].endswith("%"):
            shares[parts[5]] = float(parts[1][:-1])
    return shares


WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
for prog in os.environ.get("STOWAWAY_VARIANTS", "prefork prefork-musl").split():
    with tempfile.TemporaryDirectory() as out:
        # Each worker exports itself (they would hand their only period to
        # the parent otherwise: tests/integration/fork_family.py).
        env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true",
                   STOWAWAY_OUTPUT_DIR=out, DD_SERVICE="prefork", STOWAWAY_CHILDREN_TO_PARENT="false")
        proc = subprocess.run([os.path.join(WL, prog), os.environ.get("STOWAWAY_FORK_SECONDS", "1.5")], env=env,
                              capture_output=True, text=True, timeout=120)
        check(f"{prog}: parent and workers exit cleanly", proc.returncode == 0, proc.stderr[-300:])
        expected = dict(line.split() for line in proc.stdout.splitlines())
        check(f"{prog}: 9 processes reported", len(expected) == 9, str(len(expected)))
        for pid, fn in sorted(expected.items()):
            files = glob.glob(os.path.join(out, f"prefork.{pid}.cpu.*.pb.gz"))
            if len(files) != 1:
                check(f"{prog}: {fn} (pid {pid}) wrote one CPU profile", False, str(files))
                continue
            shares = flat_shares(files[0])
            mine = shares.get(fn, 0.0)
            others = [f for f in shares if f.startswith("burn_") and f != fn]
            check(f"{prog}: {fn} dominates its own profile", mine >= 90.0, f"{mine:.1f}% {shares}")
            check(f"{prog}: {fn}'s profile has no other process's function", not others,
                  str(others))
sys.exit(status())
