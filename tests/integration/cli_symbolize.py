#!/usr/bin/env python3
# needs: build/libstowaway.so build/stowaway
"""Offline symbolization: a CPU profile of a stripped C++ -O2 -g program
(no debug file reachable by the library) is symbolized by `stowaway
symbolize --debug-dir DIR`, with the debug file under DIR/.build-id/ or
anywhere below DIR under another name.  go tool pprof then reads the
helper as an inlined frame with file:line on > 90% of CPU, and every leaf
chain equals llvm-symbolizer's on the unstripped binary.  A debug file with
another build id is not used; `report --debug-dir` names the helper."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from checks import check, status
import inline_frames

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "stowaway")
WL = os.path.join(ROOT, "tests", "workloads")
HELPER = "geometry::Mesh<float>::smooth(int) const"


def main():
    if shutil.which("go") is None or shutil.which("llvm-symbolizer") is None:
        check("cli_symbolize tools present", False)
        return
    tmp = tempfile.mkdtemp(prefix="cli_symbolize.")
    full = os.path.join(tmp, "full")
    subprocess.run(["g++", "-O2", "-g", "-I", WL, "-o", full, os.path.join(WL, "inline_hot.cc")], check=True)
    stripped = os.path.join(tmp, "prog")
    subprocess.run(["strip", "-o", stripped, full], check=True)
    path, _ = inline_frames.profile(stripped, tmp)
    if not check("cli_symbolize profile of the stripped binary written", path is not None):
        return
    bid = subprocess.run(["readelf", "-n", full], capture_output=True, text=True).stdout.split("Build ID:")[1].split()[0]
    # Layout 1: DIR/.build-id/xx/rest.debug
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, ".build-id", bid[:2]))
    subprocess.run(["objcopy", "--only-keep-debug", full,
                    os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")], check=True)
    # Layout 2: any name below DIR.
    flat = os.path.join(tmp, "flat", "sub")
    os.makedirs(flat)
    subprocess.run(["objcopy", "--only-keep-debug", full, os.path.join(flat, "whatever.dbg")], check=True)
    for name, d in (("build-id layout", root), ("any file below", os.path.dirname(flat))):
        out = os.path.join(tmp, name.replace(" ", "_") + ".pb.gz")
        r = subprocess.run([CLI, "symbolize", path, "--debug-dir", d, "-o", out], capture_output=True, text=True)
        check("cli_symbolize %s exits 0" % name, r.returncode == 0, r.stdout + r.stderr)
        inline_frames.judge(name, out if os.path.exists(out) else None, stripped, full, HELPER, tmp,
                            "cli_symbolize")
    # Another binary's debug file is not used.
    other = os.path.join(tmp, "other")
    subprocess.run(["g++", "-O2", "-g", "-DOTHER=1", "-I", WL, "-o", other, os.path.join(WL, "inline_hot.cc"),
                    "-Wl,--build-id=sha1", "-Wl,-z,norelro"], check=True)
    wrong = os.path.join(tmp, "wrong")
    os.makedirs(wrong)
    subprocess.run(["objcopy", "--only-keep-debug", other, os.path.join(wrong, "prog.debug")], check=True)
    out = os.path.join(tmp, "wrong.pb.gz")
    r = subprocess.run([CLI, "symbolize", path, "--debug-dir", wrong, "-o", out], capture_output=True, text=True)
    check("cli_symbolize a debug file with another build id is not used", " 0 of " in r.stdout, r.stdout + r.stderr)
    r = subprocess.run([CLI, "report", path, "--debug-dir", root, "--top", "3"], capture_output=True, text=True)
    check("cli_symbolize report --debug-dir names the inlined helper", HELPER in r.stdout, r.stdout + r.stderr)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
    sys.exit(status())
