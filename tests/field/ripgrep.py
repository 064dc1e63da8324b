#!/usr/bin/env python3
"""Debian's ripgrep (rg, Rust, two search threads) under the library: a
case-insensitive Unicode regex over 48 MB of generated text in 24 files
(about 2 s of CPU).  Its output order is its threads' order, so lines are
compared sorted.  tests/field/fieldlib.py says what is checked."""
import os
import random

from fieldlib import Field, batch

with Field("ripgrep") as field:
    corpus = field.path("corpus")
    os.mkdir(corpus)
    rng = random.Random(22)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüé") for _ in range(rng.randint(2, 11)))
             for _ in range(5000)]
    for i in range(24):
        with open(os.path.join(corpus, "f%02d.txt" % i), "w") as f:
            lines = []
            for _ in range(8000):
                lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + " %d" % rng.randint(0, 99999))
            f.write("\n".join(lines) + "\n")
    batch(field, ["/usr/bin/rg", "-j2", "-i", "-c", r"\b\w{3}[äöü]\w*\s+\w+ing\b|\b[A-Z]\w{4}\d{2}\b|é\w+é",
                  corpus], sort_output=True,
          perf_note="rg is stripped (no .symtab, almost no .dynsym): neither perf nor we name its "
                    "functions, so it is compared by module")
