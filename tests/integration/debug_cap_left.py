#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fork_short
"""Reading debug information takes only what the CPU cap leaves after
sampling (docs/configuration.md, the CPU cap of inflating).  With Debian's
libc6-dbg installed, a forked child sorts with libc's qsort for 0.8 s of
CPU, CPU and allocation profiles on.  First with allocation samples every
1 KiB while it allocates and frees 256 MiB in 1 KiB blocks: sampling alone costs far
more than the cap of 2% of its CPU, and the child's export reads nothing of
libc's debug file (its qsort frames keep their names, without lines; its
debug line says what the rest of the profiler had used of the cap: its
threads' CPU and what the samples cost the host's threads).  Then with the
default sampling mean, sorting for 1.6 s: sampling leaves room, and the
same frames carry msort.c lines (msort.c's unit lies about 0.8 MiB into
what is inflated, priced at 8 us a KiB until a MiB has been timed: over
6 ms, where a quarter of the cap of a 0.8 s child allows 1 ms plus 4 ms).
Before, the first child read libc's debug file too: its share was 1 ms
plus a quarter of the cap, whatever sampling had cost."""
import glob
import os
import subprocess
import sys
import tempfile
from checks import check, status
from dwarf_lines import READING as LINE, libc_debug_ready

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
PROG = os.path.join(ROOT, "build", "workloads", "fork_short")


def child_run(out, sample_bytes, alloc_kb, cpu_ms):
    """The child's debug line fields and its qsort frames in `go tool pprof -lines -top`."""
    # The child exports itself (it would hand its samples to its parent):
    # its own export's debug line and names are what is judged.
    env = dict(os.environ, LD_PRELOAD=LIB, DD_PROFILING_ENABLED="true", STOWAWAY_CHILDREN_TO_PARENT="false",
               STOWAWAY_PROFILES="cpu,alloc", STOWAWAY_OUTPUT_DIR=out, STOWAWAY_LOG_LEVEL="debug",
               STOWAWAY_ALLOC_SAMPLE_BYTES=str(sample_bytes))
    r = subprocess.run([PROG, "1", str(cpu_ms), str(alloc_kb), "0", "0", "1"], env=env,
                       capture_output=True, text=True, timeout=120)
    pids = r.stdout.split()
    reads = [tuple(int(g) for g in m.groups()) for m in LINE.finditer(r.stderr)]
    files = glob.glob(os.path.join(out, f"fork_short.{pids[0]}.cpu.*.pb.gz")) if pids else []
    top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-lines", "-top", files[0]],
                         capture_output=True, text=True).stdout if files else ""
    msort = [l for l in top.splitlines() if "msort_with_tmp" in l]
    # The child exits first: its debug line comes before the parent's.
    return r.returncode, (reads[0] if len(reads) == 2 else None), msort, r.stderr[-300:]


def main():
    if not libc_debug_ready("debug_cap_left", PROG):
        return
    with tempfile.TemporaryDirectory() as capped, tempfile.TemporaryDirectory() as roomy:
        rc, line, msort, tail = child_run(capped, 1024, 262144, 800)
        check("debug_cap_left: a child whose allocation samples cost more than the cap runs and "
              "reports what sampling used", rc == 0 and line is not None and line[4] > line[5] > 0,
              f"rc {rc}, debug line {line}; {tail}")
        check("debug_cap_left: that child inflates nothing of libc's debug file",
              line is not None and line[3] == 0 and line[1] > 0,
              f"KiB inflated {line and line[3]}, lookups deferred {line and line[1]}")
        check("debug_cap_left: its qsort frames keep their names, without lines",
              msort and not any("msort.c:" in l for l in msort), "\n".join(msort[:4]) or "no msort_with_tmp")
        rc, line, msort, tail = child_run(roomy, 524288, 0, 1600)
        check("debug_cap_left: with the default sampling mean, sampling leaves room under the cap",
              rc == 0 and line is not None and line[4] < line[5],
              f"rc {rc}, debug line {line}; {tail}")
        check("debug_cap_left: and the same child's qsort frames carry libc's source lines",
              msort and all("msort.c:" in l for l in msort), "\n".join(msort[:4]) or "no msort_with_tmp")


if __name__ == "__main__":
    main()
    sys.exit(status())
