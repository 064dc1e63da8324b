#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/rust_split build/workloads/rust_split-v0
"""A Rust program built by rustc with its default linker (lld on current
x86-64 toolchains: p_vaddr != p_offset) names its functions as perf does,
with its own symbols in the legacy mangling and in v0 (-C
symbol-mangling-version=v0); every mangled name in the profile, the
standard library's included, is spelled as llvm-cxxfilt spells it.

One run of build/workloads/rust_split under `perf record` with the library
preloaded, so perf and our CPU profile watch the same execution.  perf is
the judge: each hot function's share among the four hot functions (perf's
self samples vs our flat CPU time, read with `go tool pprof`) within 5
points, the same demangled spelling, and function.system_name keeping the
mangled symbol (go tool pprof -raw), on inlined frames too.

Our profile has inlined frames (DWARF); perf's symbol view does not, so the
shares are compared like for like: each location's time goes to its
outermost (physical) function on our side (go tool pprof -noinlines), as
perf attributes a sample to the symbol containing its address."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pprof_raw
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
EXE = os.path.join(ROOT, "build", "workloads", "rust_split")
HOT = ["rust_split::work::collatz", "rust_split::work::fnv_mix",
       "<rust_split::Xorshift as rust_split::Kernel>::run", "rust_split::accumulate"]
# v0 names a generic function's instance with its arguments.
HOT_V0 = HOT[:3] + ["rust_split::accumulate::<u32>"]


def perf_shares(data):
    out = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol",
                          "-q", "--stdio"], capture_output=True, text=True, timeout=120).stdout
    shares = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(.*?)\s*(?:-\s+-\s*)?$", line)
        if m:
            shares[m.group(2).strip()] = shares.get(m.group(2).strip(), 0.0) + float(m.group(1))
    return shares


def our_shares(profile):
    out = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-top", "-noinlines", "-nodecount=1000",
                          "-sample_index=cpu-time", profile], capture_output=True, text=True, timeout=120).stdout
    shares = {}
    for line in out.splitlines():
        m = re.match(r"\s*\S+\s+([\d.]+)%\s+\S+%\s+\S+\s+\S+%\s+(.*)$", line)
        if m:
            shares[m.group(2).strip()] = float(m.group(1))
    return shares


def normalized(shares, hot):
    total = sum(shares.get(n, 0.0) for n in hot)
    return {n: (100.0 * shares.get(n, 0.0) / total if total else 0.0) for n in hot}


def main():
    legacy, v0 = "_ZN10rust_split4work7collatz17h", "_RNvNtCs"
    for suffix, hot, prefix, dwarf in (("", HOT, legacy, True), ("-v0", HOT_V0, v0, True),
                                       ("-release", HOT, legacy, False),
                                       ("-v0-release", HOT_V0, v0, False)):
        exe, label = EXE + suffix, "rust_split" + suffix
        if not os.path.exists(exe):
            check(f"{label} was built (rustc on PATH or in ~/.cargo/bin)", False, exe)
            continue
        judge(exe, label, hot, prefix, dwarf)


def judge(exe, label, hot, collatz_prefix, dwarf):
    """One run of exe under perf; without DWARF (dwarf False) every name comes from the
    symbol table, and there are no inlined frames to look at."""
    comment = subprocess.run(["readelf", "-p", ".comment", exe], capture_output=True, text=True).stdout
    linker = "lld" if "LLD" in comment else "GNU ld or other"
    check(f"{label}: linked by rustc's default linker", True, linker)
    with tempfile.TemporaryDirectory() as out:
        data = os.path.join(out, "perf.data")
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   DD_SERVICE="rustnames", STOWAWAY_CPU_HZ="1000", STOWAWAY_MAX_OVERHEAD_PCT="100")
        proc = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-o", data, "--", "env",
                               "LD_PRELOAD=" + SO, exe, "5" if dwarf else "3"], env=env, capture_output=True, text=True,
                              timeout=120)
        check(f"{label} runs under perf with the library", proc.returncode == 0, proc.stderr[-300:])
        files = glob.glob(os.path.join(out, "rustnames.*.cpu.*.pb.gz"))
        if not check(f"{label}: a CPU profile was written", len(files) == 1, str(files)):
            return
        theirs, ours = perf_shares(data), our_shares(files[0])
        for name in hot:
            check(f"{label}: perf names {name}", name in theirs, sorted(theirs)[:8])
            check(f"{label}: our profile names {name}", name in ours, sorted(ours)[:8])
        pt, us = normalized(theirs, hot), normalized(ours, hot)
        for name in hot:
            check(f"{label}: {name}: share within 5 points of perf's", abs(pt[name] - us[name]) <= 5.0,
                  f"ours {us[name]:.1f}%, perf {pt[name]:.1f}%")
        raw = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw", files[0]], capture_output=True,
                             text=True, timeout=120).stdout
        m = re.search(r"rust_split::work::collatz (?:\S*:\d+ )?s=\d+\((\S+)\)", raw)
        check(f"{label}: function.system_name keeps the mangled symbol",
              m is not None and m.group(1).startswith(collatz_prefix),
              m.group(1) if m else "no collatz location in -raw")
        if dwarf:
            judge_inlined(label, raw)
        judge_spelling(label, located_functions(raw))


def judge_inlined(label, raw):
    inlined = inlined_lines(raw)
    ours_inlined = [(n, sn) for n, sn in inlined if n.startswith("rust_split::")]
    # Rust's own inlined frames (a path); a C function inlined in libc
    # (call_init into __libc_start_main, sampled while constructors run,
    # once libc's debug file is read) has no linkage name to keep.
    unmangled = [(n, sn) for n, sn in inlined if "::" in n and not sn.startswith(("_ZN", "_R"))]
    check(f"{label}: inlined frames are present, some of rust_split's own",
          bool(ours_inlined), str(inlined[:4]))
    check(f"{label}: every inlined frame's function.system_name is its mangled symbol (DW_AT_linkage_name)",
          inlined and not unmangled, str(unmangled[:4]))


RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


def judge_spelling(label, functions):
    """Every mangled symbol in the profile (the program's own and the Rust standard
    library's) is shown as its judge spells it: v0 (_R...) as llvm-cxxfilt, legacy
    (_ZN...E) as c++filt without the ::h<hash> (llvm-cxxfilt 14 leaves legacy escapes
    such as $u7b$ as they are; c++filt and perf decode them)."""
    want = {}
    for prefix, tool in (("_R", "llvm-cxxfilt"), ("_ZN", "c++filt")):
        mangled = sorted({sn for n, sn in functions if sn.startswith(prefix)})
        judged = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                                text=True, timeout=60).stdout.splitlines()
        want.update({sn: RUST_HASH.sub("", j) for sn, j in zip(mangled, judged) if j != sn})
    shown = {}
    for n, sn in functions:
        shown.setdefault(sn, n)
    v0 = [sn for sn in want if sn.startswith("_R")]
    wrong = [(sn, shown[sn], want[sn]) for sn in want if shown[sn] != want[sn]]
    check(f"{label}: the profile has v0-mangled (_R) functions to judge", bool(v0), f"{len(want)} mangled")
    check(f"{label}: every mangled function name is shown as llvm-cxxfilt demangles it "
          f"({len(want)} names, {len(v0)} of them v0)", want and not wrong, str(wrong[:3]))


def line_names(text):
    """(name, system_name or "") of one location line of go tool pprof -raw, or None."""
    m = re.match(r"(.+?) (?:\S*:\d+ )?s=\d+(?:\((\S+)\))?$", text)
    return (m.group(1), m.group(2) or "") if m else None


def located_functions(raw):
    """(name, system_name) of every line of every location in go tool pprof -raw; a
    system_name equal to its name is not printed, and is the name."""
    named = [line_names(t) for lines in pprof_raw.locations(raw).values() for t in lines]
    return [(n, sn or n) for n, sn in filter(None, named)]


def inlined_lines(raw):
    """(name, system_name) of every line but the last (the physical function) of multi-line
    locations in go tool pprof -raw."""
    named = [line_names(t) for lines in pprof_raw.locations(raw).values() for t in lines[:-1]]
    return [x for x in named if x is not None]


if shutil.which("perf") is None:
    check("perf is installed", False)
else:
    main()
sys.exit(status())
