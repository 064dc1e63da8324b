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
from dwarf_lines import LIBC, libc_debug_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))



def libc_locations(profile):
    """(libc mapping (start, offset), [(address, function name or None)]) of a pprof file,
    as go tool pprof reads it."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", profile],
                         capture_output=True, text=True, check=True).stdout
    mappings = out.split("Mappings", 1)[1]
    found = [m for m in re.finditer(r"^(\d+): 0x([0-9a-f]+)/0x[0-9a-f]+/0x([0-9a-f]+) (\S+)", mappings, re.M)
             if m.group(4).endswith("/libc.so.6")]
    if not found:
        return None, []
    mid, start, offset = found[0].group(1), int(found[0].group(2), 16), int(found[0].group(3), 16)
    locations = out.split("Locations", 1)[1].split("Mappings", 1)[0]
    rows = []
    for line in locations.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2] == f"M={mid}":
            rows.append((int(f[1], 16), f[3] if len(f) >= 4 else None))
    return (start, offset), rows


def symbol_table(path):
    """[(start, size, names)] of the function symbols of an ELF file, by nm."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    by_start = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "TtWi":
            start, size = int(f[0], 16), int(f[1], 16)
            e = by_start.setdefault(start, [size, set()])
            e[0] = max(e[0], size)
            e[1].add(f[3].split("@")[0])
    return sorted((k, v[0], v[1]) for k, v in by_start.items())


def dynamic_names(path):
    """The names of an ELF file's defined dynamic symbols, by nm."""
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    return {f[-1].split("@")[0] for f in (l.split() for l in out.splitlines()) if len(f) >= 3}


def containing(table, addr):
    """The names of the function symbol covering link-time address addr, or None."""
    lo, hi = 0, len(table)
    while lo < hi:
        mid = (lo + hi) // 2
        if table[mid][0] <= addr:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0 or addr >= table[lo - 1][0] + table[lo - 1][1]:
        return None
    return table[lo - 1][2]


def main():
    debug = libc_debug_file() or ""
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
        mapping, rows = libc_locations(alloc[0]) if alloc else (None, [])
        libc, named = len(rows), sum(1 for _, n in rows if n)
        opens = sum(1 for l in open(trace) if debug in l)
        check("debug_deferred: the export names many libc pcs", libc >= 10 and named >= 10,
              f"{libc} libc locations, {named} of them named")
        # A return address is one past its call: the call's own byte names it.
        table = symbol_table(debug)
        judged = [(a, n, containing(table, a - 1 - mapping[0] + mapping[1])) for a, n in rows] if mapping else []
        wrong = [(hex(a), n, sorted(t)[:3]) for a, n, t in judged if t is not None and n is not None and n not in t]
        unnamed = [(hex(a), sorted(t)[:3]) for a, n, t in judged if t is not None and n is None]
        check("debug_deferred: with its DWARF deferred, every libc pc the debug file's .symtab covers "
              "is named as nm -S of that file names it (internal functions included)",
              len(judged) >= 10 and not wrong and not unnamed,
              f"{len(judged)} libc locations; named otherwise than nm: {wrong[:4]}; unnamed: {unnamed[:4]}")
        dynamic = dynamic_names(LIBC)
        internal = sorted({n for _, n, t in judged if n and n not in dynamic})
        check("debug_deferred: libc functions absent from its dynamic symbols are named",
              len(internal) >= 3, f"{len(internal)}: {internal[:6]}")
        check("debug_deferred: libc's debug file, deferred by the CPU share, is opened once, "
              "not once per libc pc", opens == 1, f"{opens} openat of {debug} for {libc} libc locations")


if __name__ == "__main__":
    main()
    sys.exit(status())
