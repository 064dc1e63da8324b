#!/usr/bin/env python3
# needs: build/libstowaway.so build/stowaway build/workloads/names_cxx
"""Names a person expects, in the profile and in the CLI.

build/workloads/names_cxx (g++ -O2 -g) burns CPU in a namespaced template
member on its own thread while main mallocs and frees.  In its CPU profile
(read with go tool pprof -symbolize=none, so only what we wrote counts):
  - function.name is demangled as c++filt prints it, function.system_name
    keeps the mangled symbol;
  - glibc's free is "free" (not its aliases cfree or __libc_free), and no
    name carries a __GI_ prefix;
  - none of our own frames (the library's thread start trampoline) is in a
    host stack: the relax thread's stacks end in libc's start routine;
  - `stowaway report` shows the readable name;
  - a frame with no symbol anywhere keeps its module and file offset: a copy
    of names_cxx stripped of its symbols and debug link (no debug file can
    name it) shows its hot function as names_stripped+0x..., an offset that
    nm places inside relax() in the unstripped binary."""
import glob
import os
import re
import subprocess
import sys
import tempfile

from checks import check, check_terse, status
from pprof_traces import mangled_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
EXE = os.path.join(ROOT, "build", "workloads", "names_cxx")
CLI = os.path.join(ROOT, "build", "stowaway")
MANGLED = "_ZN8geometry4MeshIfE5relaxEi"


def pprof(*args):
    return subprocess.run(["go", "tool", "pprof", "-symbolize=none"] + list(args), capture_output=True,
                          text=True, timeout=120).stdout


def main():
    readable = subprocess.run(["c++filt", MANGLED], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
                   DD_SERVICE="names", STOWAWAY_CPU_HZ="1000", STOWAWAY_MAX_OVERHEAD_PCT="100")
        proc = subprocess.run([EXE, "2"], env=env, capture_output=True, text=True, timeout=60)
        check("names_cxx runs", proc.returncode == 0, proc.stderr[-300:])
        files = glob.glob(os.path.join(out, "names.*.cpu.*.pb.gz"))
        if not check("a CPU profile was written", len(files) == 1, str(files)):
            return
        prof = files[0]
        raw = pprof("-raw", prof)
        names = set(re.findall(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ (.+?) (?:\S*:\d+ )?s=\d+", raw, re.M))
        systems = set(re.findall(r"s=\d+\(([^)]*)\)", raw))
        hot = [n for n in names if n.startswith(readable)]
        check("function.name is demangled as c++filt prints it", bool(hot), readable + " in " +
              str(sorted(names)[:12]))
        check("function.system_name keeps the mangled symbol",
              any(s.startswith(MANGLED) for s in systems), str(sorted(systems)[:6]))
        left = sorted(mangled_names(raw))
        check("no function.name is mangled, inlined frames' included", not left, left[:5])
        check("glibc's free is named free", "free" in names, sorted(names)[:20])
        aliases = [n for n in names if n in ("cfree", "__libc_free", "__free") or n.startswith("__GI_")]
        check("no cfree, __libc_free or __GI_ names", not aliases, aliases)
        mappings = raw[raw.find("Mappings"):]
        own = [line for line in mappings.splitlines() if "libstowaway" in line]
        own_ids = {line.split(":")[0].strip() for line in own}
        own_locs = [line for line in raw.splitlines()
                    if re.match(r"\s+\d+: 0x[0-9a-f]+ M=(\d+) ", line) and
                    re.match(r"\s+\d+: 0x[0-9a-f]+ M=(\d+) ", line).group(1) in own_ids]
        check("no frame of ours in host stacks", not own_locs, own_locs[:3])
        traces = pprof("-traces", "-sample_index=cpu-time", prof)
        relax_stacks = [t for t in traces.split("-----------") if readable in t]
        trampoline = [t for t in relax_stacks if "thread_start" in t or "trampoline" in t]
        check("relax thread's stacks hold no start trampoline", relax_stacks and not trampoline,
              trampoline[:1])
        report = subprocess.run([CLI, "report", prof], capture_output=True, text=True, timeout=60)
        check("stowaway report runs", report.returncode == 0, report.stderr[-300:])
        check_terse("stowaway report shows the readable name", readable in report.stdout, report.stdout[-600:])
        check_terse("stowaway report shows no mangled name", "_ZN" not in report.stdout, report.stdout[-600:])
        symbol_less(out)


def relax_file_range():
    """File offsets [start, end) of relax() in the unstripped binary, from nm and its PT_LOADs."""
    nm = subprocess.run(["nm", "-S", EXE], capture_output=True, text=True).stdout
    sym = [line.split() for line in nm.splitlines() if MANGLED in line]
    if not sym:
        return None
    vaddr, size = int(sym[0][0], 16), int(sym[0][1], 16)
    phdrs = subprocess.run(["readelf", "-lW", EXE], capture_output=True, text=True).stdout
    for line in phdrs.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, va, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if va <= vaddr < va + filesz:
                return vaddr - va + off, vaddr - va + off + size
    return None


def symbol_less(out):
    stripped = os.path.join(out, "names_stripped")
    strip = subprocess.run(["objcopy", "--strip-all", "--remove-section=.gnu_debuglink", EXE, stripped],
                           capture_output=True, text=True)
    if not check("stripped copy of names_cxx made", strip.returncode == 0, strip.stderr[-300:]):
        return
    env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
               DD_SERVICE="stripped", STOWAWAY_CPU_HZ="1000", STOWAWAY_MAX_OVERHEAD_PCT="100")
    env.pop("STOWAWAY_DEBUG_DIRS", None)
    proc = subprocess.run([stripped, "2"], env=env, capture_output=True, text=True, timeout=60)
    files = glob.glob(os.path.join(out, "stripped.*.cpu.*.pb.gz"))
    if not check("stripped copy runs and writes a CPU profile", proc.returncode == 0 and len(files) == 1,
                 proc.stderr[-300:] + str(files)):
        return
    report = subprocess.run([CLI, "report", files[0]], capture_output=True, text=True, timeout=60)
    offsets = [int(m, 16) for m in re.findall(r"names_stripped\+0x([0-9a-f]+)", report.stdout)]
    check_terse("stowaway report names a symbol-less frame by module+offset", bool(offsets),
                report.stdout[-600:])
    rng = relax_file_range()
    inside = [o for o in offsets if rng is not None and rng[0] <= o < rng[1]]
    check_terse("the symbol-less hot frame's offset lies inside relax() (nm of the unstripped binary)",
                bool(inside), "relax at %s, offsets %s" % (rng, [hex(o) for o in offsets[:8]]))


main()
sys.exit(status())
