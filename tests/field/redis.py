#!/usr/bin/env python3
"""Debian's redis-server under the library, driven by redis-cli (a fixed
script whose replies must match a server without the library) and
redis-benchmark (about 5 s of load).  Besides the common checks
(tests/field/fieldlib.py): the server's log has no new warning or error, and
no wall sample has a frame of our library."""
import re
import signal

from fieldlib import Field, check, free_port, read_text, same_output, wait_until

SCRIPT = b"""SET a 1
INCRBY a 41
GET a
RPUSH l x y z
LRANGE l 0 -1
HSET h f1 v1 f2 v2
HGETALL h
SADD s m1 m2 m3
SCARD s
APPEND a 7
GET a
DEL a l
DBSIZE
"""

field = Field("redis")


def serve(env, log, prefix, load):
    port = free_port()
    server = field.start(prefix + ["env"] + ["%s=%s" % kv for kv in env.items()] +
                         ["/usr/bin/redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", field.tmp, "--logfile", log, "--daemonize", "no"],
                         field.plain_env())
    cli = ["/usr/bin/redis-cli", "-p", str(port)]
    up = wait_until(lambda: field.run(cli + ["PING"], field.plain_env(), timeout=5)[1].strip() == b"PONG")
    replies = field.run(cli, field.plain_env(), stdin_data=SCRIPT, timeout=30)
    bench = None
    if load:
        bench = field.run(["/usr/bin/redis-benchmark", "-p", str(port), "-q", "-n", "60000", "-c", "8",
                           "-t", "set,get,incr,lpush,lrange_100"], field.plain_env(), timeout=120)
    field.run(cli + ["SHUTDOWN", "NOSAVE"], field.plain_env(), timeout=10)
    rc = field.stop(server, signal.SIGTERM, timeout=30, settle=10)
    return up, replies, bench, rc


with field:
    base_log, lib_log = field.path("base.log"), field.path("lib.log")
    up0, replies0, _, rc0 = serve({}, base_log, [], False)
    check("redis: the baseline server answers", up0 and replies0[0] == 0, replies0[2][-300:])
    data = field.path("perf.data")
    up1, replies1, bench, rc1 = serve(field.lib_env({}), lib_log, field.perf_argv(data), True)
    check("redis: the server answers under the library", up1)
    same_output(field, "redis-cli", replies0, replies1)
    check("redis: redis-benchmark completes every test",
          bench[0] == 0 and len(re.findall(rb": [\d.]+ requests per second", bench[1])) >= 5, bench[1][-400:] + bench[2][-200:])
    check("redis: the server exits as without the library", rc0 == rc1, "without %s, with %s" % (rc0, rc1))
    field.check_log_clean("redis-server's log", read_text(base_log), read_text(lib_log),
                          r" [#!] |(?i:error|crash|assert)")
    field.check_profiles_valid()
    field.check_cpu_agrees_with_perf(data)
    field.check_wall_not_in_library()
