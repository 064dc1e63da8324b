#!/usr/bin/env python3
# needs: build/tests/dwarf_query
"""Compressed separate debug files are read on demand: looking up one pc of
libc through Debian's libc6-dbg (zlib-compressed .debug_* sections) inflates
and holds a small part of the sections (work and memory counted by the
reader, not timed), and the lines of sampled libc addresses still agree with
llvm-symbolizer.  A small memory bound gives the over-budget answer with one
warning line, never a crash."""
import os
import shutil
import struct
import subprocess
import sys
import zlib
from checks import check, status
from dwarf_lines import LIBC, QUERY, agreement, blocks, libc_debug_file, functions, llvm

SECTIONS = (".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
            ".debug_rnglists", ".debug_aranges")



def sections(path):
    """name -> (flags, bytes as stored) of an ELF64 little-endian file."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = data[strtab + h[0]:data.index(b"\0", strtab + h[0])].decode()
        out[name] = (h[2], data[h[4]:h[4] + h[5]])
    return out


def inflated(flags, raw):
    if flags & 0x800:  # SHF_COMPRESSED: Elf64_Chdr, then a zlib stream (Python's zlib judges it)
        return zlib.decompress(raw[24:])
    return raw


def unit_pcs(aranges):
    """(.debug_info offset, first address) of every set of .debug_aranges."""
    out, pos = [], 0
    while pos + 16 <= len(aranges):
        length, = struct.unpack_from("<I", aranges, pos)
        _, info_off, asz, _ = struct.unpack_from("<HIBB", aranges, pos + 4)
        tup = pos + 16 if asz == 8 else pos + 12
        if asz == 8 and tup + 16 <= pos + 4 + length:
            lo, n = struct.unpack_from("<QQ", aranges, tup)
            if n > 8:
                out.append((info_off, lo + 4))
        pos += 4 + length
    return sorted(out)


def stats(args):
    r = subprocess.run([QUERY, "--stats"] + args, capture_output=True, text=True)
    line = next((l for l in r.stderr.splitlines() if l.startswith("stats:")), "")
    words = line.split()
    vals = {words[i]: words[i + 1] for i in range(1, len(words) - 1, 2)}
    return r, {k: int(float(v)) for k, v in vals.items() if k.endswith(("bytes", "budget", "deferred"))}


def main():
    dbg = libc_debug_file() or ""
    if not os.path.exists(QUERY) or shutil.which("llvm-symbolizer") is None or not os.path.exists(dbg):
        check("debug_lazy prerequisites", False,
              "needs build/tests/dwarf_query, llvm-symbolizer and libc6-dbg (tests/deps/debuginfo.txt)")
        return
    secs = sections(dbg)
    if not all(n in secs and secs[n][0] & 0x800 for n in (".debug_info", ".debug_line", ".debug_aranges")):
        check("debug_lazy: libc's debug file has compressed sections", False, dbg)
        return
    whole = sum(len(inflated(*secs[n])) for n in SECTIONS if n in secs)
    units = unit_pcs(inflated(*secs[".debug_aranges"]))
    check("debug_lazy: units found in .debug_aranges", len(units) > 100, f"{len(units)} sets")
    if len(units) < 2:
        return

    # One pc in the first unit: a small part inflated and held.
    first_pc = units[0][1]
    r, st = stats([LIBC, hex(first_pc)])
    frac_work = st.get("inflated_bytes", whole) / whole
    frac_held = st.get("peak_bytes", whole) / whole
    check("debug_lazy: one pc in the first unit inflates <= 10% of the sections",
          frac_work <= 0.10, f"{st.get('inflated_bytes')} of {whole} bytes ({frac_work:.1%})")
    # Held: that unit's pages, the small sections inflated whole (.debug_str,
    # .debug_line_str, .debug_rnglists, .debug_aranges: ~6%) and the unit table.
    check("debug_lazy: one pc in the first unit holds <= 15% of the sections",
          frac_held <= 0.15, f"peak {st.get('peak_bytes')} of {whole} bytes ({frac_held:.1%})")

    # One pc in the last unit: everything before it is inflated (one zlib
    # stream), but only that unit's pages and the resume points are kept.
    last_pc = units[-1][1]
    r, st = stats([LIBC, hex(last_pc)])
    frac_held = st.get("peak_bytes", whole) / whole
    check("debug_lazy: one pc in the last unit holds <= 35% of the sections",
          frac_held <= 0.35, f"peak {st.get('peak_bytes')} of {whole} bytes ({frac_held:.1%}); "
          f"inflated {st.get('inflated_bytes')}")

    # Lines and inlined frames of sampled libc functions: as llvm-symbolizer
    # reads the same debug file.
    funcs = functions(dbg)
    step = max(1, len(funcs) // 60)
    addrs = [start + min(size - 1, 6) for start, size in funcs[::step]][:60] + [first_pc, last_pc]
    r = subprocess.run([QUERY, "--stats", LIBC] + [hex(a) for a in addrs], capture_output=True, text=True)
    mine = blocks(r.stdout)
    theirs = llvm(dbg, addrs)
    same, diffs = agreement(mine, theirs)
    with_lines = sum(1 for b in mine if b and b[0][2] > 0)
    check("debug_lazy: sampled libc addresses agree with llvm-symbolizer", same == 1.0 and with_lines >= len(addrs) // 2,
          f"{same:.1%} of {len(addrs)} agree, {with_lines} with lines; first differences {diffs}")

    # The CPU bound (1 ms plus 2% of the process's CPU, as --cpu-ppm sets it): a process that has
    # used almost no CPU does not even open the file (its small sections,
    # inflated whole at open, cost more than 1 ms); one that has used 400 ms
    # opens it and reads the first unit, but defers the last (a pass over
    # the whole stream); unbounded, both are read.
    r, st = stats(["--cpu-ppm", "20000", LIBC, hex(first_pc), hex(last_pc)])
    check("debug_lazy: under the CPU bound a process that has run almost nothing defers the open",
          r.returncode == 3 and st.get("deferred", 0) == 1 and st.get("inflated_bytes", 1) == 0,
          f"rc {r.returncode}, stats {st}")
    r, st = stats(["--cpu-ppm", "20000", "--spin-ms", "400", LIBC, hex(first_pc), hex(last_pc)])
    answers = [b for b in blocks(r.stdout)]
    check("debug_lazy: under the CPU bound a process that has run 400 ms defers the last unit and reads the first",
          r.returncode == 0 and st.get("deferred", 0) >= 1 and len(answers) >= 1 and answers[0]
          and answers[0][0][2] > 0 and st.get("inflated_bytes", 1 << 40) < whole // 3,
          f"rc {r.returncode}, stats {st}, first answer {answers[:1]}")
    r, st = stats([LIBC, hex(first_pc), hex(last_pc)])
    check("debug_lazy: without the CPU bound both units are read",
          r.returncode == 0 and st.get("deferred", 1) == 0, f"stats {st}")

    # A memory bound too small for the units: over budget, one warning, no crash.
    bound = 1500000
    r, st = stats(["--budget", str(bound), LIBC, hex(first_pc), hex(last_pc)] +
                  [hex(a) for a in addrs[:20]])
    warnings = [l for l in r.stderr.splitlines() if l.startswith("stowaway:")]
    check("debug_lazy: a small bound ends in over-budget answers and one warning",
          r.returncode == 0 and st.get("over_budget", 0) > 0 and len(warnings) == 1 and
          st.get("peak_bytes", 1 << 30) <= bound,
          f"rc {r.returncode}, stats {st}, warnings {warnings}")


if __name__ == "__main__":
    main()
    sys.exit(status())
