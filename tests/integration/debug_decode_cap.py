#!/usr/bin/env python3
# needs: build/tests/dwarf_query build/libstowaway.so
"""Decoding a DWARF unit is held to the CPU cap too (docs/configuration.md,
"Inflating is also held to the CPU cap"): the first lookup in a unit
decodes its line table and scope tree, milliseconds for a large unit (a
self-built libpython 3.11's unicodeobject.c, 489 KiB of .debug_info: 9.5
ms, where `python3 -c pass` runs for 34 ms).  A program built here with
-g, one small unit and one of about 100 KiB, is read by dwarf_query (the
library's reader, tests/workloads/dwarf_query.c):
  - without a cap both addresses get their lines, the ones addr2line gives;
  - under a cap of 0.5% of a process that has run for nothing, the small
    unit fits the 1 ms every process may spend and is read; the large one
    is deferred (no frame now, counted as deferred);
  - under 25% of a process that has run 60 ms both are read again.
Then the same units in a profiled process that spins in the large one for
about 0.2 s: its CPU profile names big_* without lines, and the comment
that counts deferred lookups (written once the file's locations are
resolved) counts them."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUERY = os.path.join(ROOT, "build", "tests", "dwarf_query")
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
FUNCTIONS = 500

SMALL = """#include <stdint.h>
#include <stdio.h>
uint64_t big_0(uint64_t);
__attribute__((noinline)) uint64_t small_fn(uint64_t x) { return x * 3 + 1; }
int main(int c, char **v) { (void)v; printf("%lu\\n", (unsigned long)(small_fn((uint64_t)c) + big_0((uint64_t)c))); return 0; }
"""


def big_source():
    lines = ["#include <stdint.h>"]
    for i in range(FUNCTIONS):
        lines.append(f"static inline uint64_t mix{i}(uint64_t x) {{ uint64_t a = x * {2 * i + 1}u; "
                     f"uint64_t b = a ^ (a >> {i % 31 + 1}); return b + {i}u; }}")
        lines.append(f"__attribute__((noinline)) uint64_t big_{i}(uint64_t x) {{ uint64_t s = 0; "
                     f"for (int k = 0; k < 3; k++) s += mix{i}(x + (uint64_t)k); return s; }}")
    return "\n".join(lines) + "\n"


def query(prog, addrs, *opts):
    """([(function, file:line) per address], stats dict)."""
    r = subprocess.run([QUERY, "--stats", *opts, prog, *addrs], capture_output=True, text=True, timeout=60)
    blocks = [b.splitlines() for b in r.stdout.strip("\n").split("\n\n")]
    answers = [(b[-2], os.path.basename(b[-1])) if len(b) >= 2 else ("??", "??:0") for b in blocks]
    line = next((l for l in r.stderr.splitlines() if l.startswith("stats:")), "")
    words = line.split()
    stats = {words[i]: words[i + 1] for i in range(1, len(words) - 1, 2)}
    return answers, stats


SPIN = """#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
uint64_t big_%d(uint64_t);
int main(int c, char **v) { uint64_t s = 0; long n = c > 1 ? atol(v[1]) : 1;
for (long i = 0; i < n; i++) s += big_%d(s + (uint64_t)i);
printf("%%lu\\n", (unsigned long)s); return 0; }
""" % (FUNCTIONS // 2, FUNCTIONS // 2)


def profiled_deferral(tmp):
    """The comment of a short process's CPU profile counts the lookups its own naming deferred."""
    with open(os.path.join(tmp, "spin.c"), "w") as f:
        f.write(SPIN)
    prog = os.path.join(tmp, "spin")
    subprocess.run(["gcc", "-O1", "-g", "-o", prog, os.path.join(tmp, "spin.c"), os.path.join(tmp, "big.c")],
                   check=True, timeout=120)
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, DD_SERVICE="spin",
               STOWAWAY_PROFILES="cpu", STOWAWAY_CPU_HZ="1000", LD_PRELOAD=LIB)
    run = subprocess.run([prog, "20000000"], env=env, capture_output=True, text=True, timeout=60)
    files = [os.path.join(out, n) for n in os.listdir(out) if ".cpu." in n]
    if not check("debug_decode_cap: the spinning program runs under the library and writes a CPU profile",
                 run.returncode == 0 and len(files) == 1, run.stderr[-300:]):
        return
    raw = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", files[0]], capture_output=True,
                         text=True, timeout=60).stdout
    big = re.findall(r" (big_\d+) (\S*:\d+) s=", raw)
    m = re.search(r"lines for \d+ \((\d+) lookups deferred by the CPU cap;", raw)
    check("debug_decode_cap: the profiled process names big_* without lines (its unit deferred)",
          big and all(where == ":0" for _, where in big), str(big[:4]))
    check("debug_decode_cap: the profile's comment counts the lookups deferred in naming it",
          m is not None and int(m.group(1)) >= 1, m.group(0) if m else "no symbols comment")


def main():
    if not os.path.exists(QUERY) or shutil.which("gcc") is None or shutil.which("addr2line") is None:
        check("debug_decode_cap prerequisites", False, "needs build/tests/dwarf_query, gcc and addr2line")
        return
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "small.c"), "w") as f:
            f.write(SMALL)
        with open(os.path.join(tmp, "big.c"), "w") as f:
            f.write(big_source())
        prog = os.path.join(tmp, "prog")
        subprocess.run(["gcc", "-O1", "-g", "-o", prog, os.path.join(tmp, "small.c"),
                        os.path.join(tmp, "big.c")], check=True, timeout=120)
        syms = dict(reversed(l.split()[::2]) for l in subprocess.run(
            ["nm", prog], capture_output=True, text=True).stdout.splitlines() if len(l.split()) == 3)
        addrs = ["0x" + syms["small_fn"], "0x" + syms[f"big_{FUNCTIONS // 2}"]]
        judge = subprocess.run(["addr2line", "-f", "-e", prog, *addrs], capture_output=True, text=True).stdout.split()
        expected = [(judge[0], os.path.basename(judge[1])), (judge[2], os.path.basename(judge[3]))]

        free, free_stats = query(prog, addrs)
        check("debug_decode_cap: without a cap both units are read, as addr2line reads them",
              free == expected, f"{free} against {expected}, stats {free_stats}")
        capped, capped_stats = query(prog, addrs, "--cpu-ppm", "5000")
        check("debug_decode_cap: under 0.5% of no CPU the small unit is read and the large one deferred",
              capped[0] == expected[0] and capped[1] == ("??", "??:0") and
              int(capped_stats.get("deferred", 0)) >= 1, f"{capped}, stats {capped_stats}")
        ran, ran_stats = query(prog, addrs, "--cpu-ppm", "250000", "--spin-ms", "60")
        check("debug_decode_cap: under 25% of 60 ms of CPU both are read",
              ran == expected and int(ran_stats.get("deferred", 1)) == 0, f"{ran}, stats {ran_stats}")
        profiled_deferral(tmp)


if __name__ == "__main__":
    main()
    sys.exit(status())
