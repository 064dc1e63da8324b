#!/usr/bin/env python3
"""Debian's node under the library: objects, strings, sorting, JSON and a
regular expression (about 2 s of CPU).  Most of its CPU is JIT code, which
neither perf nor we can name (no perf map), so that part is compared as one
anonymous module.  tests/field/fieldlib.py says what is checked.

V8 maps part of the node binary a second time (its embedded builtins, near
the JIT code) and unmaps it before the process exits; the exit profile must
still name that code (e.g. Builtins_MapPrototypeSet, as perf does): the check
that our profile leaves no more code without a module than perf holds it."""
from fieldlib import Field, batch

PROGRAM = r"""
const m = new Map();
for (let i = 0; i < 600000; i++) m.set('k' + (i * 7919 % 600011), [i, String(i).split('').reverse().join('')]);
const rows = [...m.entries()].sort((a, b) => (a[1][1] < b[1][1] ? -1 : a[1][1] > b[1][1] ? 1 : 0));
const blob = JSON.stringify(rows.slice(0, 200000));
const back = JSON.parse(blob);
let hits = 0;
for (const r of back) if (/^k1.*7$/.test(r[0])) hits++;
let h = 0;
for (let i = 0; i < blob.length; i++) h = (h * 31 + blob.charCodeAt(i)) | 0;
console.log(m.size, blob.length, hits, h);
"""

with Field("node") as field:
    batch(field, ["/usr/bin/node", "-e", PROGRAM],
          perf_note="JIT code is anonymous to both perf and us: compared as the module [anonymous]")
