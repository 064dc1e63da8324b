#!/usr/bin/env python3
"""Debian's sqlite3 shell under the library: a recursive CTE fills a table,
then joins, sorts, an index build and aggregates (about 2 s of CPU).
tests/field/fieldlib.py says what is checked."""
from fieldlib import Field, batch

SQL = b"""
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000)
INSERT INTO t SELECT x, (x * 7919) % 10007, printf('row%08d', (x * 104729) % 1500000) FROM c;
CREATE INDEX tk ON t(k, s);
SELECT count(*), sum(k), min(s), max(s) FROM t;
SELECT k, count(*), group_concat(substr(s, 4, 2), '') FROM t GROUP BY k ORDER BY 3 DESC, 1 LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.k = b.id WHERE b.s > a.s;
SELECT s FROM t ORDER BY substr(s, 8) || s LIMIT 3;
"""

with Field("sqlite3") as field:
    batch(field, ["/usr/bin/sqlite3", ":memory:"], stdin_data=SQL)
