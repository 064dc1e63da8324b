#!/usr/bin/env python3
# needs: build/libstowaway.so
"""Line numbers and inlined frames in CPU profiles, judged by go tool pprof
(decoding) and llvm-symbolizer (truth).  A -O2 -g program spends its time in
an always-inline helper (tests/workloads/inline_hot.cc, inline_hot_c.c):
the helper must appear as an inlined frame with its own file:line on more
than 90% of CPU time, every leaf location's chain must equal
llvm-symbolizer --inlining's for that address, and the binary's mapping
says has_functions and has_inline_frames.  Built by g++ and clang++ in a
glibc process, by musl-gcc in a musl process, and stripped with its debug
file under a .build-id tree named by STOWAWAY_DEBUG_DIRS."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "tests", "workloads")
SECONDS = "0.8"  # CPU seconds


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kw).stdout


def profile(binary, tmp, extra_env=None):
    out = tempfile.mkdtemp(dir=tmp)
    env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="1", STOWAWAY_OUTPUT_DIR=out,
               STOWAWAY_PROFILES="cpu", **(extra_env or {}))
    r = subprocess.run([binary, SECONDS], env=env, capture_output=True, text=True, timeout=120)
    files = glob.glob(os.path.join(out, "*cpu*.pb.gz"))
    return (files[0] if files else None), r.stderr


def parse_raw(path, tmp):
    """(samples [(value, [loc ids])], locations {id: (addr, mapping, [(name, file, line)])},
    mappings {id: (start, limit, offset, path, flags)}) from go tool pprof -raw."""
    env = dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp, GOFLAGS="")
    text = run(["go", "tool", "pprof", "-raw", "-symbolize=none", path], env=env)
    samples_part = text.split("Samples:", 1)[1].split("\nLocations", 1)[0]
    loc_part = text.split("\nLocations", 1)[1].split("\nMappings", 1)[0]
    map_part = text.split("\nMappings", 1)[1]
    samples = []
    for line in samples_part.splitlines():
        m = re.match(r"\s+\d+\s+(\d+): ([\d ]+)$", line)
        if m:
            samples.append((int(m.group(1)), [int(x) for x in m.group(2).split()]))
    locations, cur = {}, None
    for line in loc_part.splitlines():
        # Synthetic frames ("[unsampled]") have no mapping.
        m = re.match(r"\s+(\d+): 0x([0-9a-f]+)(?: M=(\d+))? ?(.*)$", line)
        frame = None
        if m:
            cur = int(m.group(1))
            locations[cur] = (int(m.group(2), 16), int(m.group(3) or 0), [])
            frame = m.group(4)
        elif cur is not None and line.strip():
            frame = line.strip()
        if frame:
            # "name file:line s=N" or, with a mangled system name,
            # "readable name file:line s=N(system name)".
            fm = re.match(r"(.*) (\S*):(\d+) s=\d+(?:\((\S+)\))?$", frame)
            if fm:
                locations[cur][2].append((fm.group(4) or fm.group(1), fm.group(2), int(fm.group(3)),
                                          fm.group(1)))
    mappings = {}
    for line in map_part.splitlines():
        m = re.match(r"(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+) ?(\S*) ?(.*)$", line)
        if m:
            mappings[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16),
                                         m.group(5), m.group(7))
    return samples, locations, mappings


def file_vaddr(binary, offset):
    """Link-time address of file offset `offset` through binary's PT_LOAD headers."""
    for line in run(["readelf", "-lW", binary]).splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if off <= offset < off + filesz:
                return offset - off + vaddr
    return None


def llvm_chain(binary, vaddr):
    text = run(["llvm-symbolizer", "--inlining", "--no-demangle", "--obj=" + binary, hex(vaddr)])
    frames = []
    lines = text.strip("\n").split("\n")
    for i in range(0, len(lines) - 1, 2):
        path, line = lines[i + 1].rsplit(":", 2)[0], lines[i + 1].rsplit(":", 2)[1]
        frames.append((lines[i], os.path.normpath(path), int(line)))
    return frames


def judge(name, path, binary, truth_binary, helper, tmp, suite="inline_frames"):
    if not check(suite + " %s profile written" % name, path is not None):
        return
    samples, locations, mappings = parse_raw(path, tmp)
    total = sum(v for v, _ in samples) or 1
    real = os.path.realpath(binary)
    mids = [k for k, m in mappings.items() if os.path.realpath(m[3]) == real]
    inlined = lines = 0
    for v, locs in samples:
        leaf = locations.get(locs[0]) if locs else None
        if leaf is None or not leaf[2]:
            continue
        first = leaf[2][0]
        if len(leaf[2]) >= 2 and first[3].startswith(helper) and \
                first[1].endswith(("inline_hot.h", "inline_hot_c.c")) and first[2] > 0:
            inlined += v
        if all(f[2] > 0 and f[1] for f in leaf[2]):
            lines += v
    check(suite + " %s helper is an inlined frame with file:line on > 90%% of CPU" % name,
          inlined / total > 0.90, "%.1f%%" % (100 * inlined / total))
    check(suite + " %s leaf file:line on > 90%% of CPU" % name, lines / total > 0.90,
          "%.1f%%" % (100 * lines / total))
    flags = mappings[mids[0]][4] if mids else ""
    check(suite + " %s mapping has_functions and has_inline_frames" % name,
          "[FN]" in flags and "[IN]" in flags, flags)
    # Every leaf location of the binary against llvm-symbolizer.
    same = n = 0
    diffs = []
    for lid in {locs[0] for _, locs in samples if locs}:
        addr, mid, frames = locations[lid]
        if mid not in mids:
            continue
        start, _, off, _, _ = mappings[mid]
        vaddr = file_vaddr(truth_binary, addr - start + off)
        want = llvm_chain(truth_binary, vaddr)
        got = [(f[0], os.path.normpath(f[1]), f[2]) for f in frames]
        # Outermost name: the symbol table's in both (e.g. main.cold).
        ok = len(got) == len(want) and all(
            g[1:] == w[1:] and (i == len(got) - 1 or g[0] == w[0]) for i, (g, w) in enumerate(zip(got, want)))
        same += ok
        n += 1
        if not ok and len(diffs) < 2:
            diffs.append((hex(vaddr), got, want))
    check(suite + " %s leaf chains equal llvm-symbolizer's (%d locations)" % (name, n),
          n > 0 and same == n, "%d/%d agree; %s" % (same, n, diffs))


def main():
    for tool in ("go", "llvm-symbolizer", "g++"):
        if shutil.which(tool) is None:
            check("inline_frames %s present" % tool, False)
            return
    tmp = tempfile.mkdtemp(prefix="inline_frames.")
    cxx = os.path.join(WL, "inline_hot.cc")
    # The helper's readable name: namespaced and demangled for C++.
    helper = "geometry::Mesh<float>::smooth(int) const"
    builds = [("g++", "g++", cxx, helper), ("clang++", "clang++", cxx, helper)]
    if shutil.which("musl-gcc"):
        builds.append(("musl", "musl-gcc", os.path.join(WL, "inline_hot_c.c"), "smooth"))
    first = None
    for name, cc, src, helper in builds:
        if shutil.which(cc) is None:
            check("inline_frames %s compiler present" % name, False)
            continue
        binary = os.path.join(tmp, "ih_" + name.replace("+", "x"))
        subprocess.run([cc, "-O2", "-g", "-I", WL, "-o", binary, src], check=True)
        path, err = profile(binary, tmp)
        judge(name, path, binary, binary, helper, tmp)
        first = first or (binary, helper)
    # Stripped, with its debug file under <root>/.build-id/xx/rest.debug.
    binary, helper = first
    root = os.path.join(tmp, "debugroot")
    bid = run(["readelf", "-n", binary]).split("Build ID:")[1].split()[0]
    os.makedirs(os.path.join(root, ".build-id", bid[:2]))
    subprocess.run(["objcopy", "--only-keep-debug", binary,
                    os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")], check=True)
    stripped = os.path.join(tmp, "ih_stripped")
    subprocess.run(["strip", "-g", "-o", stripped, binary], check=True)
    path, err = profile(stripped, tmp, {"STOWAWAY_DEBUG_DIRS": root})
    judge("stripped+build-id", path, stripped, binary, helper, tmp)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
    sys.exit(status())
