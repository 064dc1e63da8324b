#!/usr/bin/env python3
"""Start-up cost does not grow with the code a process maps.

The same program is linked once against a small shared library (10
functions) and once against a generated big one (60000 functions: 2 MB of
.eh_frame, 1.4 MB of .dynsym).  It calls the library once and burns CPU in
its own code, so samples never land in the library.  Each variant runs with
and without the profiler (default kinds), interleaved, three times.

Counted work, from the registry's line at exit (STOWAWAY_LOG_LEVEL=debug):
the big library's unwind rules are read in place through its .eh_frame_hdr
(no table is built: 0 KiB in both variants) and its 60000 function symbols
are never read (functions held differ by less than 1000).  Memory: the
profiler's extra peak RSS with the big library exceeds the extra with the
small one by less than 2 MiB (reading the big library's tables at start
would cost several MiB; peak RSS does not depend on the machine's load).
The CPU difference is printed, not checked (timing)."""
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

from checks import check, check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
BIG_FUNCTIONS = 60000
REPEATS = 3

# One function with a frame record and its CFI, per architecture.
FUNCTION = {
    "x86_64": """\t.globl {name}
\t.type {name}, @function
{name}:
\t.cfi_startproc
\tpushq %rbp
\t.cfi_def_cfa_offset 16
\t.cfi_offset 6, -16
\tmovq %rsp, %rbp
\t.cfi_def_cfa_register 6
\tleal {k}(%rdi), %eax
\tpopq %rbp
\t.cfi_def_cfa 7, 8
\tret
\t.cfi_endproc
\t.size {name}, .-{name}
""",
    "aarch64": """\t.globl {name}
\t.type {name}, %function
{name}:
\t.cfi_startproc
\tstp x29, x30, [sp, -16]!
\t.cfi_def_cfa_offset 16
\t.cfi_offset 29, -16
\t.cfi_offset 30, -8
\tmov x29, sp
\tadd w0, w0, #{k}
\tldp x29, x30, [sp], 16
\t.cfi_restore 30
\t.cfi_restore 29
\t.cfi_def_cfa_offset 0
\tret
\t.cfi_endproc
\t.size {name}, .-{name}
""",
}

MAIN = r"""
#include <time.h>
int lib_entry(int);
int main(void)
{
	volatile unsigned long x = (unsigned long)lib_entry(1);
	clock_t end = clock() + CLOCKS_PER_SEC / 10;
	while (clock() < end)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i * (unsigned long)i ^ (x >> 3);
	return x == 42;
}
"""

# Runs a program and prints its peak RSS (KiB) and CPU seconds: a small
# forking parent, since a child's peak RSS counts its parent's memory at fork.
LAUNCHER = r"""
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct rusage ru;
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
		return 126;
	fprintf(stderr, "\nLAUNCHER %d %ld %.6f\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128, ru.ru_maxrss,
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
"""

# The export's own line at exit: the CPU of each step and the bytes made.
EXPORT_LINE = re.compile(r"export 0: (\d+) us of CPU naming pcs, (\d+) us encoding, (\d+) us "
                         r"compressing \((\d+) KiB of pprof to (\d+) KiB\), (\d+) us in the exporters")
LINE = re.compile(r"symbols: (\d+) modules mapped, names read for (\d+) \((\d+) functions, (\d+) KiB\)"
                  r".*?unwind rules read in place for (\d+), search tables built for (\d+) \((\d+) KiB\)")


def write_library(path, functions, arch):
    with open(path, "w") as f:
        f.write("\t.text\n")
        f.write(FUNCTION[arch].format(name="lib_entry", k=1))
        for i in range(functions):
            f.write(FUNCTION[arch].format(name=f"filler_{i}", k=i % 4000))
        f.write('\t.section .note.GNU-stack,"",%progbits\n')


def run(launcher, cmd, env):
    """(exit status, peak RSS KiB, CPU seconds, stderr) of one run."""
    p = subprocess.run([launcher] + cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    m = re.search(r"\nLAUNCHER (\d+) (\d+) ([\d.]+)\n", p.stderr)
    if m is None:
        return 125, 0, 0.0, p.stderr
    return int(m.group(1)), int(m.group(2)), float(m.group(3)), p.stderr


def main():
    arch = platform.machine()
    if arch not in FUNCTION:
        check("architecture has a generator", False, arch)
        return
    with tempfile.TemporaryDirectory() as d:
        progs = {}
        launcher = os.path.join(d, "launcher")
        with open(launcher + ".c", "w") as f:
            f.write(LAUNCHER)
        b = subprocess.run(["gcc", "-O1", "-o", launcher, launcher + ".c"], capture_output=True,
                           text=True)
        if not check_terse("launcher built", b.returncode == 0, b.stderr[-400:]):
            return
        for name, n in (("small", 10), ("big", BIG_FUNCTIONS)):
            src = os.path.join(d, f"lib{name}.s")
            write_library(src, n, arch)
            lib = os.path.join(d, f"lib{name}.so")
            main_c = os.path.join(d, "main.c")
            with open(main_c, "w") as f:
                f.write(MAIN)
            prog = os.path.join(d, f"main_{name}")
            b = subprocess.run(["gcc", "-shared", "-Wl,-z,noexecstack", "-o", lib, src],
                               capture_output=True, text=True)
            b2 = subprocess.run(["gcc", "-O1", "-o", prog, main_c, f"-L{d}", f"-l{name}",
                                 f"-Wl,-rpath,{d}"], capture_output=True, text=True) \
                if b.returncode == 0 else b
            if not check_terse(f"{name} library and program built", b2.returncode == 0,
                               b2.stderr[-400:]):
                return
            progs[name] = prog
        size = os.path.getsize(os.path.join(d, "libbig.so"))
        out = os.path.join(d, "out")
        os.mkdir(out)
        plain = dict(os.environ)
        plain.pop("LD_PRELOAD", None)
        profiled = dict(plain, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                        STOWAWAY_LOG_LEVEL="debug")
        rss = {(v, p): [] for v in progs for p in (False, True)}
        cpu = {(v, p): [] for v in progs for p in (False, True)}
        lines = {v: [] for v in progs}
        exports = {v: [] for v in progs}
        for _ in range(REPEATS):
            for v in ("small", "big"):
                for p in (False, True):
                    code, kib, secs, err = run(launcher, [progs[v]], profiled if p else plain)
                    if code != 0:
                        check(f"{v} runs {'profiled' if p else 'plain'}", False, err[-400:])
                        return
                    rss[(v, p)].append(kib)
                    cpu[(v, p)].append(secs)
                    m = LINE.search(err)
                    if p and m is not None:
                        lines[v].append([int(x) for x in m.groups()])
                    e = EXPORT_LINE.search(err)
                    if p and e is not None:
                        exports[v].append([int(x) for x in e.groups()])
        med = {k: statistics.median(x) for k, x in rss.items()}
        medc = {k: statistics.median(x) for k, x in cpu.items()}
        extra = {v: med[(v, True)] - med[(v, False)] for v in progs}
        extra_cpu = {v: medc[(v, True)] - medc[(v, False)] for v in progs}
        check("the runs completed, profiled ones with the registry's line at exit",
              all(len(lines[v]) == REPEATS for v in progs) and all(len(x) == REPEATS for x in rss.values()),
              {v: len(lines[v]) for v in progs})
        exported = [x for v in progs for x in exports[v]]
        check("each profiled run's exit export says what it cost, step by step",
              len(exported) == REPEATS * len(progs) and
              all(x[3] >= x[4] and x[3] > 0 and x[1] > 0 for x in exported),
              exported[:3])
        if lines["small"] and lines["big"]:
            small, big = lines["small"][-1], lines["big"][-1]
            check("big library's unwind rules read in place, no table built",
                  big[4] >= small[4] and big[4] >= 3 and big[5] == 0 and big[6] == 0,
                  f"in place {big[4]} (small: {small[4]}), built {big[5]} ({big[6]} KiB)")
            check("big library's function symbols never read (not sampled)",
                  max(r[2] for r in lines["big"]) - min(r[2] for r in lines["small"]) < 1000,
                  f"functions held: big {[r[2] for r in lines['big']]}, "
                  f"small {[r[2] for r in lines['small']]}; library has {BIG_FUNCTIONS}")
        check("extra peak RSS with the big library within 2 MiB of the small one's",
              extra["big"] - extra["small"] < 2048,
              f"profiler's extra peak RSS: small {extra['small']} KiB, big {extra['big']} KiB "
              f"(big library {size >> 10} KiB); medians of {REPEATS}")
        print(f"INFO startup_flat: profiler's extra CPU: small {extra_cpu['small'] * 1000:.0f} ms, "
              f"big {extra_cpu['big'] * 1000:.0f} ms (medians of {REPEATS}, not checked)")


if __name__ == "__main__":
    main()
    sys.exit(status())
