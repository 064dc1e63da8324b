#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fork_short
"""Children of a forking parent read libc's debug information once between
them, not once each (docs/configuration.md, the CPU cap of inflating).
With Debian's libc6-dbg installed, a parent forks five children one after
another, each sorting with libc's qsort for 0.7 s of CPU.  At its second
fork the parent resolves the frames it forks from with an allowance of its
own (its share of its own CPU is too small then): libc's DWARF index and
the sections inflated whole are built in the parent, and the children
forked afterwards inherit them; the pages of .debug_info a child inflates
for a unit are shared with its siblings.  A parent that forks once reads
nothing for its children.  Judged by each process's debug line
(the bytes it inflated) and by `go tool pprof -lines` (the last child's
qsort frames carry libc's source lines).  Before, each child read libc's
debug file on its own or, deferred by its share, never: no libc lines.

Then the family shares the resume points of the compressed stream too:
a parent forks four children one after another; child i spends 0.3 s of CPU in libc's qsort, snprintf, strftime
or regexec, whose translation units lie further and further into libc's
compressed .debug_info (a zlib stream: a unit is reached by inflating what
comes before it).  The parent reads libc's index for its children at its
second fork, so children 2 to 4 share its section mapping: the pages a
child inflates and, now, the resume point it leaves every 256 KiB of the
stream.  Children 3 and 4 then resume close to their units.  Judged by the
debug line of each (KiB inflated): children 2 to 4 together inflate less
than 1.75 times the three sections inflated on demand (.debug_info,
.debug_abbrev, .debug_line: 7.7 MiB), each stretch about once (before,
each from the parent's points near the stream's start: 15.7-18.6 MiB
together; now 8.4-10.9), and
`go tool pprof -lines` gives child 4's regexec frames their regexec.c lines.  The cap is raised
to 50% so that every child can afford its units."""
import glob
import os
import subprocess
import sys
import tempfile
from checks import check, status
from dwarf_lines import READING as LINE, libc_debug_file, libc_debug_ready
from zsections import compressed_sections  # tests/bench, on the path dwarf_lines sets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
PROG = os.path.join(ROOT, "build", "workloads", "fork_short")


def main():
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=LIB, DD_PROFILING_ENABLED="true", STOWAWAY_PROFILES="cpu",
                   STOWAWAY_CHILDREN_TO_PARENT="false",
                   STOWAWAY_OUTPUT_DIR=out, STOWAWAY_LOG_LEVEL="debug")
        once = subprocess.run([PROG, "1", "100", "0", "0", "0", "1"], env=env, capture_output=True,
                              text=True, timeout=60)
        reads = [tuple(int(g) for g in m.groups()) for m in LINE.finditer(once.stderr)]
        check("debug_fork: a parent that forks once inflates nothing of libc's debug file for "
              "its child", once.returncode == 0 and len(reads) == 2 and reads[1][3] == 0,
              f"rc {once.returncode}, KiB inflated (child, parent): {[x[3] for x in reads]}")
        for f in glob.glob(os.path.join(out, "*")):
            os.unlink(f)
        r = subprocess.run([PROG, "5", "700", "0", "0", "0", "1"], env=env, capture_output=True,
                           text=True, timeout=60)
        pids = r.stdout.split()
        reads = [tuple(int(g) for g in m.groups()) for m in LINE.finditer(r.stderr)]
        check("debug_fork: the parent and its five children run and each reports what it read",
              r.returncode == 0 and len(pids) == 5 and len(reads) == 6,
              f"rc {r.returncode}, pids {pids}, {len(reads)} debug lines; {r.stderr[-300:]}")
        children, parent = (reads[:5], reads[5]) if len(reads) == 6 else ([(0, 0, 0, -1)] * 5, None)
        check("debug_fork: the children forked after the parent's second fork name lines in the "
              "program and in libc", all(c[0] >= 2 for c in children[2:]),
              f"modules with lines, per child: {[c[0] for c in children]}")
        # A late sample may fall in code of another module with debug
        # information (ld.so), whose index that child reads itself.
        check("debug_fork: the last two children together inflate less than one child that read "
              "libc's debug file on its own (the index is their parent's, the pages of qsort's unit "
              "a sibling's)", sum(c[3] for c in children[3:]) < children[0][3],
              f"KiB inflated per child: {[c[3] for c in children]}, parent {parent and parent[3]}")
        last = glob.glob(os.path.join(out, f"fork_short.{pids[-1]}.cpu.*.pb.gz")) if pids else []
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-lines", "-top", last[0]],
                             capture_output=True, text=True).stdout if last else ""
        msort = [l for l in top.splitlines() if "msort_with_tmp" in l]
        check("debug_fork: the last child's qsort frames carry libc's source lines",
              msort and all("msort.c:" in l for l in msort),
              "\n".join(msort[:4]) or f"no msort_with_tmp in {last}")


def shared_points():
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=LIB, DD_PROFILING_ENABLED="true", STOWAWAY_PROFILES="cpu",
                   STOWAWAY_CHILDREN_TO_PARENT="false",
                   STOWAWAY_OUTPUT_DIR=out, STOWAWAY_LOG_LEVEL="debug", STOWAWAY_MAX_OVERHEAD_PCT="50")
        r = subprocess.run([PROG, "4", "300", "0", "0", "0", "2"], env=env, capture_output=True,
                           text=True, timeout=120)
        pids = r.stdout.split()
        kib = [int(m.group(4)) for m in LINE.finditer(r.stderr)]
        check("debug_fork shared points: the parent and its four children run and each reports what it "
              "inflated", r.returncode == 0 and len(pids) == 4 and len(kib) == 5,
              f"rc {r.returncode}, pids {pids}, KiB {kib}; {r.stderr[-300:]}")
        children = kib[:4] if len(kib) == 5 else [0, 0, 0, 0]
        lazy_kib = sum(size for name, _, size in compressed_sections(libc_debug_file())
                       if name in (".debug_info", ".debug_abbrev", ".debug_line")) >> 10
        check("debug_fork shared points: children 2 to 4 pass each stretch of the sections inflated "
              "on demand about once between them (less than 1.75 times those sections; each from "
              "near the stream's start, they inflate twice them)",
              children[1] > 0 and sum(children[1:]) < lazy_kib * 7 // 4,
              f"KiB inflated per child: {children}, sections inflated on demand {lazy_kib} KiB")
        last = glob.glob(os.path.join(out, f"fork_short.{pids[-1]}.cpu.*.pb.gz")) if pids else []
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-lines", "-top", last[0]],
                             capture_output=True, text=True).stdout if last else ""
        regex = [l for l in top.splitlines() if " re_search_internal " in l or " regexec" in l]
        check("debug_fork shared points: child 4's regexec frames carry libc's source lines",
              regex and any("regexec.c:" in l for l in regex), "\n".join(regex[:4]) or top[:400])


if __name__ == "__main__":
    if libc_debug_ready("debug_fork", PROG):
        main()
        shared_points()
    sys.exit(status())
