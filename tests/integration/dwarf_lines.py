#!/usr/bin/env python3
# needs: build/tests/dwarf_query
"""Our DWARF reader against independent judges: for sampled addresses of C
and C++ programs built by gcc and clang at -O2 -g (DWARF 4 and 5, zlib
compressed sections and not), the inline chain (function names, file:line
of every frame, innermost first) must agree with `llvm-symbolizer
--inlining` (Rust too).  The same
through a separate debug file found under a .build-id tree and through
.gnu_debuglink, and never through a debug file whose build id or CRC does
not match."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from checks import check, status

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from zsections import LIBC, MULTIARCH_LIB, libc_debug_file  # noqa: E402,F401  (for the debug_* tests)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUERY = os.path.join(ROOT, "build", "tests", "dwarf_query")
WL = os.path.join(ROOT, "tests", "workloads")
PER_BINARY = 400  # sampled addresses per binary


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kw).stdout


def build_id(path):
    """The GNU build id of an ELF file, as readelf prints it, or None."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split()[-1]
    return None


# The DWARF part of the symbols comment and debug line: lines for modules,
# lookups deferred by the CPU cap, us spent inflating, KiB inflated, and
# what the rest of the profiler had used of the cap (us) against the cap (us).
READING = re.compile(r"lines for (\d+) \((\d+) lookups deferred by the CPU cap; (\d+) us inflating "
                     r"(\d+) KiB and decoding \d+ KiB; the rest of us had used (\d+) us of the cap's "
                     r"(\d+) us\)")


def libc_debug_ready(name, prog):
    """Whether libc6-dbg's debug file for this system's libc, the workload
    prog and go are all there; if not, test `name` fails one check saying
    what it needs."""
    ready = shutil.which("go") is not None and libc_debug_file() is not None and os.path.exists(prog)
    if not ready:
        check(f"{name} prerequisites", False,
              f"needs {prog}, go and libc6-dbg (tests/deps/debuginfo.txt)")
    return ready


def functions(binary):
    """(start, size) of the defined functions of binary's .symtab."""
    out = run(["nm", "--defined-only", "-S", binary])
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            start, size = int(parts[0], 16), int(parts[1], 16)
            if size > 0:
                funcs.append((start, size))
    return sorted(set(funcs))


def sample_addresses(binary):
    funcs = functions(binary)
    total = sum(s for _, s in funcs)
    stride = max(1, total // PER_BINARY)
    addrs, carry = [], 0
    for start, size in funcs:
        off = carry
        while off < size:
            addrs.append(start + off)
            off += stride
        carry = off - size
    return addrs[:PER_BINARY * 2]


def blocks(text):
    """Per address: list of (name, file, line) innermost first."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        lines = block.split("\n")
        frames = []
        for i in range(0, len(lines) - 1, 2):
            name = lines[i]
            loc = lines[i + 1]
            parts = loc.rsplit(":", 2) if loc.count(":") >= 2 and loc.rsplit(":", 2)[1].isdigit() else loc.rsplit(":", 1) + ["0"]
            path, line = parts[0], parts[1]
            frames.append((name, os.path.normpath(path) if path != "??" else "??", int(line) if line.isdigit() else 0))
        out.append(frames)
    return out


def ours(binary, addrs, dirs=None):
    cmd = [QUERY]
    if dirs:
        cmd += ["--dirs", dirs]
    r = subprocess.run(cmd + [binary] + [hex(a) for a in addrs], capture_output=True, text=True)
    return blocks(r.stdout) if r.returncode == 0 else [[("??", r.stderr.strip(), 0)]] * len(addrs)


def llvm(binary, addrs):
    text = run(["llvm-symbolizer", "--inlining", "--no-demangle", "--obj=" + binary],
               input="\n".join(hex(a) for a in addrs) + "\n")
    return blocks(text)


def no_dwarf(frames):
    """Our "??" and llvm-symbolizer's single line-0 frame (a name from the
    symbol table, the file from an STT_FILE symbol): no DWARF covers it."""
    return frames == [("??", "??", 0)] or (len(frames) == 1 and frames[0][2] == 0)


def addr2line(binary, addrs):
    """Per address: (name, file, line) innermost first, from GNU addr2line -a -i -f."""
    text = run(["addr2line", "-a", "-i", "-f", "-e", binary] + [hex(a) for a in addrs])
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("0x") and all(c in "0123456789abcdefx" for c in line):
            cur = []
            out.append(cur)
        elif cur is not None:
            cur.append(line)
    frames = []
    for block in out:
        fr = []
        for i in range(0, len(block) - 1, 2):
            path, _, ln = block[i + 1].partition(" ")[0].rpartition(":")
            fr.append((block[i], os.path.normpath(path) if path != "??" else "??", int(ln) if ln.isdigit() else 0))
        frames.append(fr)
    return frames


def agreement(a, b, innermost_only=False):
    same = 0
    diffs = []
    for x, y, in zip(a, b):
        if no_dwarf(x) and no_dwarf(y):
            same += 1
            continue
        # The outermost frame's name is the symbol table's in both the
        # profile and llvm-symbolizer (main.cold, not main): compared by the
        # symbols tests, not here.
        if innermost_only:
            ok = x[:1] and y[:1] and x[0][1:] == y[0][1:]
        else:
            ok = len(x) == len(y) and all(
                (p[1:] == q[1:] and (k == len(x) - 1 or p[0] == q[0])) for k, (p, q) in enumerate(zip(x, y)))
        same += bool(ok)
        if not ok and len(diffs) < 3:
            diffs.append((x, y))
    return same / max(1, len(a)), diffs


def build(tmp, name, compiler, src, flags):
    out = os.path.join(tmp, name)
    subprocess.run([compiler, "-O2", "-g", *flags, "-I", WL, "-o", out, src], check=True,
                   capture_output=True)
    return out


def main():
    if not os.path.exists(QUERY) or shutil.which("llvm-symbolizer") is None:
        check("dwarf_lines tools present", False, "build/tests/dwarf_query or llvm-symbolizer missing")
        return
    tmp = tempfile.mkdtemp(prefix="dwarf_lines.")
    cxx = os.path.join(WL, "inline_hot.cc")
    c = os.path.join(WL, "cpu_split.c")
    variants = []
    for comp, lang, src in (("g++", "cxx", cxx), ("clang++", "cxx", cxx), ("gcc", "c", c), ("clang", "c", c)):
        for dw in ("-gdwarf-4", "-gdwarf-5"):
            for gz in ([], ["-gz=zlib"]):
                if shutil.which(comp) is None:
                    continue
                name = "%s_%s%s%s" % (comp.replace("+", "x"), lang, dw[2:], "_gz" if gz else "")
                variants.append((name, build(tmp, name, comp, src, [dw, *gz, "-lpthread" if lang == "c" else "-lstdc++"])))
    # Rust (rustc -O -g, its default linker): std comes without DWARF, so
    # most of its addresses compare as "no DWARF" on both sides.
    rust = os.path.join(WL, "rust_split.rs")
    if shutil.which("rustc"):
        out = os.path.join(tmp, "rust")
        subprocess.run(["rustc", "-O", "-g", "-o", out, rust], check=True, capture_output=True)
        variants.append(("rustc", out))
    else:
        check("dwarf_lines rustc present", False)
    for name, binary in variants:
        addrs = sample_addresses(binary)
        mine = ours(binary, addrs)
        judge = llvm(binary, addrs)
        ratio, diffs = agreement(mine, judge)
        covered = sum(not no_dwarf(y) for y in judge)
        inlined = sum(len(y) > 1 for y in judge)
        if name.startswith(("gxx", "gcc")):
            # GNU addr2line as a second judge: the line numbers of every
            # frame (it names the compile unit's file for some functions
            # defined in headers, where llvm-symbolizer and we name the header).
            a2l = addr2line(binary, addrs)
            same = sum((no_dwarf(x) and no_dwarf(y)) or [f[2] for f in x] == [f[2] for f in y]
                       for x, y in zip(mine, a2l))
            check("dwarf_lines %s line chains agree with addr2line -i" % name, same >= 0.99 * len(addrs),
                  "%d of %d" % (same, len(addrs)))
        check("dwarf_lines %s inline chains agree with llvm-symbolizer" % name, ratio >= 0.99 and covered > 0,
              "%.1f%% of %d addresses (%d covered by DWARF, %d with inlined frames); first differences %s" % (
                  100 * ratio, len(addrs), covered, inlined, diffs))
    # A budget too small for the units: lookups report it, nothing breaks,
    # and the index never holds more than the budget.
    name, binary = variants[0]
    addrs = sample_addresses(binary)
    r = subprocess.run([QUERY, "--stats", "--budget", "12000", binary] + [hex(a) for a in addrs],
                       capture_output=True, text=True)
    stats = dict(zip(r.stderr.split("stats:")[-1].split()[::2], r.stderr.split("stats:")[-1].split()[1::2])) \
        if "stats:" in r.stderr else {}
    check("dwarf_lines a small budget is reported and never passed",
          r.returncode == 0 and int(stats.get("over_budget", 0)) > 0 and int(stats.get("peak_bytes", 1 << 30)) <= 12000,
          r.stderr[-300:])
    # Separate debug files: a stripped copy finds its debug file by build id
    # under a --dirs root, and by .gnu_debuglink beside it.
    name, binary = variants[0]
    addrs = sample_addresses(binary)
    want = ours(binary, addrs)
    root = os.path.join(tmp, "debugroot")
    bid = run(["readelf", "-n", binary]).split("Build ID:")[1].split()[0]
    os.makedirs(os.path.join(root, ".build-id", bid[:2]))
    debug = os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")
    subprocess.run(["objcopy", "--only-keep-debug", binary, debug], check=True)
    stripped = os.path.join(tmp, "stripped")
    subprocess.run(["objcopy", "--strip-debug", "--strip-unneeded", binary, stripped], check=True)
    r = subprocess.run([QUERY, stripped, "0x0"], capture_output=True, text=True)
    check("dwarf_lines stripped binary has no debug info of its own", r.returncode == 1, r.stderr)
    check("dwarf_lines build-id debug file gives the same chains", ours(stripped, addrs, root) == want)
    # A debug file with another build id at that path is refused.
    other = variants[1][1]
    subprocess.run(["objcopy", "--only-keep-debug", other, debug], check=True)
    r = subprocess.run([QUERY, "--dirs", root, stripped, "0x0"], capture_output=True, text=True)
    check("dwarf_lines debug file with another build id is refused", r.returncode == 1, r.stderr)
    # .gnu_debuglink beside the binary; a modified file fails the CRC.
    linkdir = os.path.join(tmp, "link")
    os.makedirs(linkdir)
    dbg = os.path.join(linkdir, "prog.debug")
    subprocess.run(["objcopy", "--only-keep-debug", binary, dbg], check=True)
    linked = os.path.join(linkdir, "prog")
    subprocess.run(["objcopy", "--strip-debug", "--remove-section=.note.gnu.build-id",
                    "--add-gnu-debuglink=" + dbg, binary, linked], check=True)
    check("dwarf_lines .gnu_debuglink beside the binary gives the same chains", ours(linked, addrs) == want)
    with open(dbg, "ab") as f:
        f.write(b"\0")
    r = subprocess.run([QUERY, linked, "0x0"], capture_output=True, text=True)
    check("dwarf_lines .gnu_debuglink file with a wrong CRC is refused", r.returncode == 1, r.stderr)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
    sys.exit(status())
