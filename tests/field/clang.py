#!/usr/bin/env python3
"""Debian's clang compiling a generated C file at -O2 (about 2 s of CPU;
LLVM's optimizer and code generator).  The object file must be byte for byte
the one clang writes without the library.  tests/field/fieldlib.py says
what is checked."""
from fieldlib import Field, batch

with Field("clang") as field:
    src = field.path("gen.c")
    with open(src, "w") as f:
        f.write("#include <string.h>\n#include <stdlib.h>\n")
        for i in range(300):
            f.write("""
struct s%d { int a[%d]; double d; char name[16]; };
static int cmp%d(const void *x, const void *y) { return ((const struct s%d *)x)->a[0] - ((const struct s%d *)y)->a[0]; }
double work%d(struct s%d *v, int n) {
    double acc = %d.5;
    qsort(v, (size_t)n, sizeof(*v), cmp%d);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < %d; j++) acc += v[i].a[j] * (j ^ %d) + v[i].d / (j + 1);
        if (strlen(v[i].name) > %d) acc -= i %% %d;
        switch (v[i].a[%d] & 7) { case 0: acc *= 1.01; break; case 3: acc += i; break; default: acc -= 0.5; }
    }
    return acc;
}
""" % (i, 4 + i % 13, i, i, i, i, i, i, i, 4 + i % 13, i, i % 9, 3 + i % 7, (i % 13) + 3 - 3))
    obj = field.path("gen.o")
    batch(field, ["/usr/bin/clang", "-O2", "-g", "-c", src, "-o", obj], out_file=obj)
