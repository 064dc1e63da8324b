#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/own_malloc build/workloads/own_malloc-musl build/workloads/own_new build/workloads/alloc_known build/workloads/mimalloc_direct build/workloads/rust_mimalloc build/workloads/rust_split-release build/workloads/malloc_address
"""A program whose executable defines the allocator (jemalloc or tcmalloc
linked statically, a custom operator new): the loader binds those names to
the executable's definitions before LD_PRELOAD's, so no allocation made
through them reaches our interposers.  The profiler says so, once, naming
the name and the file that defines it, and the program runs unchanged; a
program whose allocator is the C library's gets no such line, nor does a
non-PIE executable that takes malloc's address (as node does): the lookup
returns its canonical PLT entry, which defines nothing.  The binding is
judged by outside tools: `nm -D` and `readelf --dyn-syms` of the executable.

A program that calls an allocator by that allocator's own names (mimalloc's
mi_malloc from C, a Rust #[global_allocator] over mi_malloc_aligned, as the
mimalloc crate sets up) bypasses malloc without any binding: a few seconds
in, one line says which allocator, by the name its symbols give (judged by
`nm`); a Rust program on the default allocator gets no such line."""
import os
import platform
import subprocess
import sys
import tempfile

from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
# program, the names its executable defines, the name the line gives
CASES = [("own_malloc", "malloc", "malloc"), ("own_malloc-musl", "malloc", "malloc"),
         ("own_new", "_Znwm", "operator new")]


def dynamic_defines(path, name):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
    return any(l.split()[-1] == name for l in out.splitlines() if l.split())


def run(prog, *args):
    exe = os.path.join(WL, prog)
    plain = subprocess.run([exe] + list(args), capture_output=True, text=True, timeout=60)
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=LIB)
        r = subprocess.run([exe] + list(args), env=env, capture_output=True, text=True, timeout=60)
        return exe, plain, r, sorted(os.listdir(out))


def symbol_names(path, name):
    """Whether nm (the symbol table, else the dynamic one) names `name`, defined or not."""
    for flags in ([], ["-D"]):
        out = subprocess.run(["nm"] + flags + [path], capture_output=True, text=True).stdout
        if any(l.split()[-1] == name for l in out.splitlines() if l.split()):
            return True
    return False


# Programs that call an allocator by its own names, run past the seconds
# after which the library looks (4 s): program, the name nm gives, the allocator.
DIRECT = [("mimalloc_direct", "mi_malloc", "mimalloc"),
          ("rust_mimalloc", "mi_malloc_aligned", "mimalloc")]


for prog, symbol, shown in CASES:
    exe, plain, r, files = run(prog)
    lines = [l for l in r.stderr.splitlines() if "resolves to the definition" in l]
    check(f"{prog}: nm -D says the executable defines {symbol}", dynamic_defines(exe, symbol), exe)
    check(f"{prog}: runs unchanged (exit, output)", r.returncode == 0 and r.stdout == plain.stdout
          and plain.returncode == 0, f"{r.returncode} {r.stdout!r} vs {plain.stdout!r}")
    check(f"{prog}: one warning names {shown} and {exe}",
          len(lines) == 1 and lines[0].startswith(f"stowaway: warning: {shown} resolves to the definition "
                                                  f"in {exe}, which the loader binds before"), r.stderr[-400:])
    check(f"{prog}: the other profiles are still written", any(".cpu." in f for f in files), files)

exe, plain, r, files = run("alloc_known")
check("alloc_known (the C library's malloc): no such line, and its allocation profile is written",
      "resolve" not in r.stderr and any(".alloc." in f for f in files), f"{files}; {r.stderr[-300:]}")

for prog, symbol, allocator in DIRECT:
    exe, plain, r, files = run(prog, "4")
    lines = [l for l in r.stderr.splitlines() if "directly" in l]
    check(f"{prog}: nm says the executable names {symbol}", symbol_names(exe, symbol), exe)
    check(f"{prog}: runs unchanged (exit, output)", r.returncode == 0 and r.stdout == plain.stdout
          and plain.returncode == 0, f"{r.returncode} {r.stdout!r} vs {plain.stdout!r}")
    check(f"{prog}: one warning says it calls {allocator} directly, naming {symbol}",
          len(lines) == 1 and lines[0] == f"stowaway: warning: {exe} calls {allocator} directly (its "
          f"symbols name {symbol}), not through malloc: the allocations it makes with it are not in "
          f"the allocation and live-heap profiles", r.stderr[-400:])
    check(f"{prog}: no other warning, and the CPU profile is written",
          len([l for l in r.stderr.splitlines() if l.startswith("stowaway:")]) == 1 and
          any(".cpu." in f for f in files), f"{files}; {r.stderr[-300:]}")

exe, plain, r, files = run("rust_split-release", "4")
check("rust_split-release (Rust's default allocator, malloc): no line about an allocator",
      r.returncode == 0 and "stowaway:" not in r.stderr and any(".cpu." in f for f in files),
      f"{files}; {r.stderr[-300:]}")

def canonical_plt(path, name):
    """Whether readelf shows `name` in the dynamic symbols undefined (UND) with an address."""
    out = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7].split("@")[0] == name and f[6] == "UND":
            return int(f[1], 16) != 0
    return False


exe, plain, r, files = run("malloc_address")
check("malloc_address: readelf shows malloc undefined with an address (a canonical PLT entry)",
      canonical_plt(exe, "malloc"), exe)
check("malloc_address: runs unchanged, no line about malloc, and its allocation profile is written",
      r.returncode == 0 and r.stdout == plain.stdout and "stowaway:" not in r.stderr and
      any(".alloc." in f for f in files), f"{files}; {r.stderr[-300:]}")

# A library preloaded before ours (LD_PRELOAD=libjemalloc.so.2:libstowaway.so) wins the same way.
JEMALLOC = f"/usr/lib/{platform.machine()}-linux-gnu/libjemalloc.so.2"
if os.path.exists(JEMALLOC):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=f"{JEMALLOC}:{LIB}")
        r = subprocess.run([os.path.join(WL, "alloc_known")], env=env, capture_output=True, text=True,
                           timeout=60)
        said = [l for l in r.stderr.splitlines() if l.startswith("stowaway: warning:")]
        check("jemalloc preloaded before us: one warning names it and says to list libstowaway.so first",
              r.returncode == 0 and len(said) == 1 and JEMALLOC in said[0] and
              "list libstowaway.so first in LD_PRELOAD" in said[0], said)
sys.exit(status())
