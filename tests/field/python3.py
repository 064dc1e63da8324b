#!/usr/bin/env python3
"""Debian's python3 interpreter (/usr/bin/python3, not a virtualenv's)
under the library: dictionaries, string formatting, sorting, json and
zlib (about 2 s of CPU).  tests/field/fieldlib.py says what is checked."""
from fieldlib import Field, batch

PROGRAM = r"""
import json, zlib, hashlib
d = {}
for i in range(300000):
    d["k%d" % (i * 7919 % 300007)] = [i, str(i)[::-1], i * i % 1000]
rows = sorted(d.items(), key=lambda kv: (kv[1][2], kv[0]))
blob = json.dumps(rows[:100000]).encode()
packed = zlib.compress(blob, 6)
back = json.loads(zlib.decompress(packed))
words = " ".join(r[0] for r in back).split()
count = {}
for w in words:
    count[w[-2:]] = count.get(w[-2:], 0) + 1
print(len(d), len(blob), len(packed), hashlib.sha256(blob).hexdigest())
print(sorted(count.items())[:5], sum(x[1][0] for x in back))
"""

with Field("python3") as field:
    batch(field, ["/usr/bin/python3", "-c", PROGRAM])
