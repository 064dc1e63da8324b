#!/usr/bin/env python3
# needs: build/tests/demangle_filter build/workloads/rust_split
"""Our demangler against independent demanglers on every mangled symbol of
real binaries, extracted with nm at test time: libstdc++ and libLLVM
(Debian's large C++ libraries), a C++ program rich in expressions compiled
here (demangle_expr.cpp: enable_if, decltype, folds, pack expansions, the
standard library's templates and GCC vector types; g++ -c, its object's
symbols), a Rust
program built here (its own legacy symbols and std's v0 symbols) and rustc's
own librustc_driver (Rust v0, from the toolchain that built it).  At most
SAMPLE symbols a binary (every k-th), so the test takes seconds.

Itanium and Rust legacy (_Z...) are judged by c++filt, counted on the
symbols it demangles; c++filt prints the Rust legacy hash (::h0123...),
which we drop as rustfilt and perf do, so it is removed from c++filt's line
before comparing.  Rust v0 (_R...) is judged by llvm-cxxfilt (c++filt
prints crate hashes there, mycrate[3c1c0]::foo).  llvm-cxxfilt's agreement
on _Z symbols is reported too.  The disagreements are listed by class; the
floors are the rates measured when the test was written."""
import glob
import os
import platform
import re
import subprocess
import sys
import tempfile

from checks import check, check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER = os.path.join(ROOT, "build", "tests", "demangle_filter")
SAMPLE = 20000
# binary, nm flags, floor of agreement with the judge (fraction)
CORPUS = [
    (f"/usr/lib/{platform.machine()}-linux-gnu/libstdc++.so.6", ["-D"], 1.0),
    ("/usr/lib/llvm-14/lib/libLLVM-14.so.1", ["-D"], 1.0),
    (os.path.join(ROOT, "build", "workloads", "rust_split"), [], 1.0),
]
EXPR_SOURCE = os.path.join(ROOT, "tests", "integration", "demangle_expr.cpp")
# Its symbols c++filt reads and we print alike: 1036 of 1037 with g++ 12,
# 155 of them with vector types (the one left is c++filt's own reading of
# new T[4] in a decltype).
EXPR_FLOOR = 0.999


def rustc_driver():
    """librustc_driver of the rustc on PATH (or rustup's), a large v0-mangled library."""
    for rustc in ("rustc", os.path.expanduser("~/.cargo/bin/rustc")):
        try:
            root = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            continue
        found = sorted(glob.glob(os.path.join(root, "lib", "librustc_driver-*.so")))
        if found:
            return found[0]
    return None
RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
EXPRESSION = re.compile(r"(X|sr|DT|Dt|fp|tl|il|sZ|sP|Tp)")


def symbols(path, flags, prefix):
    out = subprocess.run(["nm", "--defined-only"] + flags + [path], capture_output=True, text=True,
                         check=True).stdout
    names = sorted({line.split()[-1].split("@")[0] for line in out.splitlines()
                    if line.split() and line.split()[-1].startswith(prefix)})
    step = max(1, len(names) // SAMPLE)
    return names[::step][:SAMPLE]


def filt(cmd, names):
    out = subprocess.run(cmd, input="\n".join(names) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    if len(out) != len(names):
        raise RuntimeError(f"{cmd[0]}: {len(out)} lines for {len(names)} names")
    return out


def llvm_normal(s):
    """llvm-cxxfilt's spellings mapped to c++filt's where they only differ in form."""
    s = re.sub(r"\(\.([a-z_]+(?:\.\d+)*)\)", r"[clone .\1]", s)
    return s.replace(" >", ">")


def classify(name, ours, judge):
    if ours == name:
        return "left mangled: expression or decltype" if EXPRESSION.search(name[2:]) else "left mangled: other"
    return "different text"


def judge_itanium(label, path, flags, floor):
    names = symbols(path, flags, "_Z")
    ours = filt([FILTER], names)
    judge = filt(["c++filt"], names)
    llvm = filt(["llvm-cxxfilt"], names)
    agree = judged = 0
    classes, examples = {}, {}
    llvm_agree = llvm_judged = 0
    for name, o, j, l in zip(names, ours, judge, llvm):
        if j == name:
            continue  # c++filt does not demangle it either
        judged += 1
        rust = RUST_HASH.search(j) is not None and o == RUST_HASH.sub("", j)
        if o == j or rust:
            agree += 1
        else:
            c = classify(name, o, j)
            classes[c] = classes.get(c, 0) + 1
            examples.setdefault(c, (name, o, j))
        if l != name and RUST_HASH.search(j) is None:
            llvm_judged += 1
            llvm_agree += llvm_normal(o) == llvm_normal(l)
    report(f"{label} (_Z, judged by c++filt)", agree, judged, len(names), floor, classes, examples)
    if llvm_judged:
        print(f"  {label}: llvm-cxxfilt agreement on _Z (after '> >' and clone spelling) "
              f"{llvm_agree}/{llvm_judged} = {100 * llvm_agree / llvm_judged:.2f}%", file=sys.stderr)


def judge_rust_v0(label, path, flags, floor):
    names = symbols(path, flags, "_R")
    if not names:
        return
    ours = filt([FILTER], names)
    judge = filt(["llvm-cxxfilt"], names)
    agree = judged = 0
    classes, examples = {}, {}
    for name, o, j in zip(names, ours, judge):
        if j == name:
            continue
        judged += 1
        if o == j:
            agree += 1
        else:
            c = "left mangled" if o == name else "different text"
            classes[c] = classes.get(c, 0) + 1
            examples.setdefault(c, (name, o, j))
    report(f"{label} (_R, judged by llvm-cxxfilt)", agree, judged, len(names), floor, classes, examples)


def report(label, agree, judged, total, floor, classes, examples):
    rate = agree / judged if judged else 0.0
    detail = f"{agree}/{judged} = {100 * rate:.2f}% of {total} symbols"
    for c, n in sorted(classes.items()):
        detail += f"; {c}: {n}"
    check(f"{label}: agreement >= {100 * floor:.1f}%", judged > 0 and rate >= floor, detail)
    for c, (name, o, j) in sorted(examples.items()):
        print(f"  {label} {c}: {name}\n    ours:  {o[:300]}\n    judge: {j[:300]}", file=sys.stderr)


def compiled_expressions(tmp):
    """demangle_expr.cpp compiled (C++20) to an object whose symbols nm lists."""
    obj = os.path.join(tmp, "demangle_expr.o")
    r = subprocess.run(["g++", "-std=c++20", "-O0", "-w", "-c", EXPR_SOURCE, "-o", obj],
                       capture_output=True, text=True)
    return obj if r.returncode == 0 else None


def main():
    if not os.path.exists(FILTER):
        check("demangle_filter is built", False, FILTER)
        return
    with tempfile.TemporaryDirectory() as tmp:
        obj = compiled_expressions(tmp)
        if check_terse("demangle_expr.cpp compiles (g++ -std=c++20 -c)", obj is not None, EXPR_SOURCE):
            judge_itanium("demangle_expr.o", obj, [], EXPR_FLOOR)
    for path, flags, floor in CORPUS:
        label = os.path.basename(path)
        if not check_terse(f"{label}: present", os.path.exists(path), path):
            continue
        judge_itanium(label, path, flags, floor)
        judge_rust_v0(label, path, flags, 1.0)
    driver = rustc_driver()
    if check_terse("librustc_driver found through rustc --print sysroot", driver is not None):
        judge_rust_v0(os.path.basename(driver), driver, ["-D"], 1.0)


main()
sys.exit(status())
