#!/usr/bin/env python3
"""Debian's java (OpenJDK) under the library: the source launcher compiles
a small program in memory (javac) and runs it (collections, strings,
sorting).  Java's JIT code is anonymous to perf (no perf map) and to us, so
it is compared as one module [anonymous], and the JVM's own libraries by
name.  tests/field/fieldlib.py says what is checked."""
from fieldlib import Field, batch

PROGRAM = r"""
import java.util.*;
public class Field {
    public static void main(String[] args) {
        HashMap<String, Integer> m = new HashMap<>();
        for (int i = 0; i < 800000; i++) m.merge("k" + (i * 7919 % 200003), i, Integer::sum);
        ArrayList<String> keys = new ArrayList<>(m.keySet());
        Collections.sort(keys, Comparator.comparing((String s) -> new StringBuilder(s).reverse().toString()));
        long h = 0;
        for (String k : keys) h = h * 31 + k.hashCode() + m.get(k);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 200000; i++) sb.append(Integer.toHexString(i * 2654435761L > 0 ? i : -i));
        System.out.println(m.size() + " " + keys.get(0) + " " + h + " " + sb.length());
    }
}
"""

with Field("java") as field:
    src = field.path("Field.java")
    with open(src, "w") as f:
        f.write(PROGRAM)
    batch(field, ["/usr/bin/java", "-XX:TieredStopAtLevel=1", src],
          perf_note="JIT code is anonymous to both perf and us: compared as the module [anonymous]")
