#!/usr/bin/env python3
# needs: build/libstowaway.so
"""A short-lived process whose export names many libc pcs while Debian's
libc6-dbg is installed: its CPU share is too small to inflate libc's debug
sections (docs/configuration.md, the CPU cap of inflating), so the open is
deferred.  It is tried once, not once per libc pc: each attempt maps the
4 MB debug file, checks its build id and reads its section headers only to
be deferred again (a postgres backend under `pgbench -C` made ten at every
exit, a quarter of its export).  Judged by strace (the openat calls of the
debug file) and by `go tool pprof -raw` (the libc locations in the
profile, named from libc's own dynamic symbols).  The program is Debian's `ls -l`,
its allocations sampled every 64 bytes on average."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from checks import check, status
from dwarf_lines import build_id

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "build", "libstowaway.so")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"



def libc_locations(profile):
    """(libc locations, those with a function name) of a pprof file, as go tool pprof reads it."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", profile],
                         capture_output=True, text=True, check=True).stdout
    mappings = out.split("Mappings", 1)[1]
    ids = [m.group(1) for m in re.finditer(r"^(\d+): \S+ (\S+)", mappings, re.M)
           if m.group(2).endswith("/libc.so.6")]
    locations = out.split("Locations", 1)[1].split("Mappings", 1)[0]
    rows = [l.split() for l in locations.splitlines() if ids and f" M={ids[0]} " in l + " "]
    return len(rows), sum(1 for r in rows if len(r) >= 4)


def main():
    bid = build_id(LIBC) if os.path.exists(LIBC) else None
    debug = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" if bid else ""
    missing = [t for t in ("strace", "go", "ls") if shutil.which(t) is None]
    if missing or not os.path.exists(debug) or not os.path.exists(LIB):
        check("debug_deferred prerequisites", False,
              f"needs {LIB}, strace, go and libc6-dbg (tests/deps/debuginfo.txt); missing {missing}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profiles")
        trace = os.path.join(tmp, "strace.txt")
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_PROFILES="alloc",
                   STOWAWAY_ALLOC_SAMPLE_BYTES="64", STOWAWAY_OUTPUT_DIR=out)
        r = subprocess.run(["strace", "-f", "-e", "trace=openat,open", "-o", trace,
                            "env", f"LD_PRELOAD={LIB}", "ls", "-l", "/usr/bin"],
                           env=env, capture_output=True, text=True, timeout=60)
        files = sorted(os.listdir(out)) if os.path.isdir(out) else []
        check("debug_deferred: ls -l runs unchanged and writes its allocation profile",
              r.returncode == 0 and len(r.stdout.splitlines()) > 100 and
              len(files) == 1 and ".alloc." in files[0], f"rc {r.returncode}, files {files}, stderr {r.stderr[-300:]}")
        alloc = [os.path.join(out, f) for f in files if ".alloc." in f]
        libc, named = libc_locations(alloc[0]) if alloc else (0, 0)
        opens = sum(1 for l in open(trace) if debug in l)
        check("debug_deferred: the export names many libc pcs", libc >= 10 and named >= 10,
              f"{libc} libc locations, {named} of them named")
        check("debug_deferred: libc's debug file, deferred by the CPU share, is opened once, "
              "not once per libc pc", opens == 1, f"{opens} openat of {debug} for {libc} libc locations")


if __name__ == "__main__":
    main()
    sys.exit(status())
