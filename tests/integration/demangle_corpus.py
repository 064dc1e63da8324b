#!/usr/bin/env python3
"""Our demangler against c++filt (the judge) and llvm-cxxfilt (reported) on
every mangled symbol of real binaries, extracted with nm at test time:
libstdc++ and libLLVM (Debian's large C++ libraries) and a Rust program
built here (its own and std's legacy-mangled symbols).  At most SAMPLE
symbols a binary (every k-th), so the test takes seconds.

Agreement is counted on the symbols c++filt demangles.  Rust: c++filt
prints the legacy hash (::h0123...), which we drop as rustfilt and perf do,
so it is removed from c++filt's line before comparing.  The disagreements
are listed by class; the floors below are the rates measured when the test
was written, so a regression fails."""
import os
import re
import subprocess
import sys

from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILTER = os.path.join(ROOT, "build", "tests", "demangle_filter")
SAMPLE = 20000
# binary, nm flags, floor of agreement with c++filt (fraction)
CORPUS = [
    ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", ["-D"], 1.0),
    ("/usr/lib/llvm-14/lib/libLLVM-14.so.1", ["-D"], 0.99),
    (os.path.join(ROOT, "build", "workloads", "rust_split"), [], 0.999),
]
RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
EXPRESSION = re.compile(r"(X|sr|DT|Dt|fp|tl|il|sZ|sP|Tp)")


def symbols(path, flags):
    out = subprocess.run(["nm", "--defined-only"] + flags + [path], capture_output=True, text=True,
                         check=True).stdout
    names = sorted({line.split()[-1].split("@")[0] for line in out.splitlines()
                    if line.split() and line.split()[-1].startswith("_Z")})
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


def main():
    if not os.path.exists(FILTER):
        check("demangle_filter is built", False, FILTER)
        return
    for path, flags, floor in CORPUS:
        label = os.path.basename(path)
        if not os.path.exists(path):
            check(f"{label}: present", False, path)
            continue
        names = symbols(path, flags)
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
        rate = agree / judged if judged else 0.0
        detail = f"{agree}/{judged} = {100 * rate:.2f}% of {len(names)} symbols"
        for c, n in sorted(classes.items()):
            detail += f"; {c}: {n}"
        check(f"{label}: agreement with c++filt >= {100 * floor:.1f}%", judged > 0 and rate >= floor,
              detail)
        for c, (name, o, j) in sorted(examples.items()):
            print(f"  {label} {c}: {name}\n    ours:     {o[:300]}\n    c++filt:  {j[:300]}",
                  file=sys.stderr)
        if llvm_judged:
            print(f"  {label}: llvm-cxxfilt agreement (after '> >' and clone spelling) "
                  f"{llvm_agree}/{llvm_judged} = {100 * llvm_agree / llvm_judged:.2f}%", file=sys.stderr)


main()
sys.exit(status())
