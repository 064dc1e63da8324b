#!/usr/bin/env python3
"""Debian's PostgreSQL 15 under the library: the postmaster forks a backend
per connection (a backend that exits within its first period hands its
samples to the postmaster, whose profiles then hold their work).  A fixed psql
session must answer as without the library, then pgbench (select-only and
TPC-B-like, about 8 s).  Postgres refuses root: everything runs as nobody
(data directory and sockets in a scratch directory, a free port).  Besides
the common checks (tests/field/fieldlib.py): the server log has no new
error or warning, and no wall sample has a frame of our library.  The perf comparison sums every process."""
import os
import re
import signal

from fieldlib import NOBODY, Field, check, free_port, read_text, same_output, wait_until

BIN = "/usr/lib/postgresql/15/bin"
SQL = b"""SELECT count(*), sum(x), md5(string_agg(x::text, ',' ORDER BY x)) FROM generate_series(1, 200000) x;
CREATE TEMP TABLE t AS SELECT x, md5(x::text) AS h FROM generate_series(1, 50000) x;
CREATE INDEX ON t(h);
SELECT x, h FROM t WHERE h LIKE 'ab%' ORDER BY h LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.x = b.x + 1 WHERE a.h < b.h;
"""

with Field("postgres") as field:
    pgdata, log = field.path("pgdata"), field.path("pg.log")
    env = field.plain_env(HOME=field.tmp, LC_ALL="C", PGHOST=field.tmp)
    init = field.run(field.as_user([BIN + "/initdb", "-D", pgdata, "-A", "trust", "-U", "field", "--no-sync"],
                                   NOBODY), env, timeout=120)
    check("postgres: initdb", init[0] == 0, init[2][-400:])

    def serve(lib_env, prefix, load):
        port = free_port()
        logfile = field.path("lib.log" if load else "base.log")
        server = field.start(prefix + field.as_user(["env"] + ["%s=%s" % kv for kv in lib_env.items()] +
                                                    [BIN + "/postgres", "-D", pgdata, "-p", str(port),
                                                     "-k", field.tmp, "-c", "listen_addresses=",
                                                     "-c", "fsync=off"], NOBODY),
                             env, stderr=open(logfile, "wb"))
        psql = field.as_user(["/usr/bin/psql", "-X", "-q", "-A", "-U", "field", "-p", str(port), "-d", "postgres"],
                             NOBODY)
        up = wait_until(lambda: field.run(psql + ["-c", "SELECT 1"], env, timeout=10)[0] == 0)
        got = field.run(psql + ["-v", "ON_ERROR_STOP=1"], env, stdin_data=SQL, timeout=60)
        bench = []
        if load:
            pgb = field.as_user(["/usr/bin/pgbench", "-U", "field", "-p", str(port)], NOBODY)
            bench.append(field.run(pgb + ["-i", "-q", "-s", "2", "postgres"], env, timeout=120))
            bench.append(field.run(pgb + ["-S", "-c", "4", "-j", "2", "-T", "5", "postgres"], env, timeout=120))
            bench.append(field.run(pgb + ["-c", "2", "-j", "2", "-T", "3", "postgres"], env, timeout=120))
        pid = field.workload_pid(server)
        rc = field.stop(server, signal.SIGINT, timeout=60)
        return up, got, bench, rc, pid

    up0, got0, _, rc0, _ = serve({}, [], False)
    check("postgres: the baseline server answers", up0 and got0[0] == 0, got0[2][-300:])
    data = field.path("perf.data")
    up1, got1, bench, rc1, pid1 = serve(field.lib_env({}, STOWAWAY_LOG_LEVEL="debug"), field.perf_argv(data),
                                         True)
    check("postgres: the server answers under the library", up1)
    same_output(field, "psql", got0, got1)
    outs = [b[1].decode(errors="replace") for b in bench]
    check("postgres: pgbench -i, -S and TPC-B complete without a failed transaction",
          len(bench) == 3 and all(b[0] == 0 for b in bench)
          and all(re.search(r"number of failed transactions: 0 ", o) for o in outs[1:]),
          "\n".join(o[-300:] for o in outs) + "\n".join(b[2].decode(errors="replace")[-300:] for b in bench))
    check("postgres: the server exits as without the library", rc0 == rc1, "without %s, with %s" % (rc0, rc1))
    field.check_log_clean("postgres's log", read_text(field.path("base.log")), read_text(field.path("lib.log")),
                          r"(ERROR|FATAL|PANIC|WARNING):(?!  the database system is starting up)")
    files = field.check_profiles_valid()
    pids = {int(m.group(1)) for m in (re.search(r"\.(\d+)\.cpu\.", f) for f in files) if m}
    # Backends that exit within their first period hand their samples to
    # the postmaster (STOWAWAY_CHILDREN_TO_PARENT) as a group of inbox
    # slots, or export them themselves when they cannot (the debug line
    # says why); the perf comparison below sums every process either way.
    lib_log = read_text(field.path("lib.log"))
    handed = lib_log.count("handed this process's last samples to its parent")
    itself = re.findall(r"exporting this process's last samples itself, not through its parent: ([^\n]*)",
                        lib_log)
    taken = re.search(r"fork family: (\d+) children's last samples taken over \((\d+) samples\), "
                      r"(\d+) malformed", lib_log)
    check("postgres: backends hand their samples to the postmaster, which takes them whole",
          pid1 in pids and handed >= 1 and taken is not None and int(taken.group(1)) == handed
          and int(taken.group(3)) == 0,
          "%d handed, %d exported themselves (%s); postmaster: %s; %d processes wrote CPU profiles" % (
              handed, len(itself), "; ".join(sorted(set(itself))),
              taken.group(0) if taken else "no family line", len(pids)))
    field.check_cpu_agrees_with_perf(data)
    field.check_wall_not_in_library()
