#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fork_short
"""A fork family shares the resume points of a compressed section's stream
(docs/configuration.md, reading debug information on demand).  With
Debian's libc6-dbg installed, a parent forks four children one after
another; child i spends 0.3 s of CPU in libc's qsort, snprintf, strftime
or regexec, whose translation units lie further and further into libc's
compressed .debug_info (a zlib stream: a unit is reached by inflating what
comes before it).  The parent reads libc's index for its children at its
second fork, so children 2 to 4 share its section mapping: the pages a
child inflates and, now, the resume point it leaves every 256 KiB of the
stream.  Children 3 and 4 then resume close to their units.  Judged by the
debug line of each (KiB inflated): together they inflate less than child
2 alone (before, each inflated from the parent's points, near the stream's
start: 4.1-7.8 and 3.6-4.3 MiB, more than child 2's 4.3-8.3), and `go tool pprof -lines`
gives child 4's regexec frames their regexec.c lines.  The cap is raised
to 50% so that every child can afford its units."""
import glob
import os
import subprocess
import sys
import tempfile
from checks import check, status
from dwarf_lines import READING, libc_debug_ready

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
PROG = os.path.join(ROOT, "build", "workloads", "fork_short")


def main():
    if not libc_debug_ready("debug_shared_points", PROG):
        return
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=LIB, DD_PROFILING_ENABLED="true", STOWAWAY_PROFILES="cpu",
                   STOWAWAY_OUTPUT_DIR=out, STOWAWAY_LOG_LEVEL="debug", STOWAWAY_MAX_OVERHEAD_PCT="50")
        r = subprocess.run([PROG, "4", "300", "0", "0", "0", "2"], env=env, capture_output=True,
                           text=True, timeout=120)
        pids = r.stdout.split()
        kib = [int(m.group(4)) for m in READING.finditer(r.stderr)]
        check("debug_shared_points: the parent and its four children run and each reports what it "
              "inflated", r.returncode == 0 and len(pids) == 4 and len(kib) == 5,
              f"rc {r.returncode}, pids {pids}, KiB {kib}; {r.stderr[-300:]}")
        children = kib[:4] if len(kib) == 5 else [0, 0, 0, 0]
        check("debug_shared_points: children 3 and 4 together inflate less than child 2 alone "
              "(they resume from the points their siblings left)",
              children[1] > 0 and children[2] + children[3] < children[1],
              f"KiB inflated per child: {children}")
        last = glob.glob(os.path.join(out, f"fork_short.{pids[-1]}.cpu.*.pb.gz")) if pids else []
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-lines", "-top", last[0]],
                             capture_output=True, text=True).stdout if last else ""
        regex = [l for l in top.splitlines() if " re_search_internal " in l or " regexec" in l]
        check("debug_shared_points: child 4's regexec frames carry libc's source lines",
              regex and any("regexec.c:" in l for l in regex), "\n".join(regex[:4]) or top[:400])


if __name__ == "__main__":
    main()
    sys.exit(status())
