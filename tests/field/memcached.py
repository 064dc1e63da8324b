#!/usr/bin/env python3
"""Debian's memcached (four worker threads) under the library: a fixed
text-protocol session whose replies must match a server without the
library, then memcslap (about 5 s of load).  memcached refuses to run as
root without -u: it runs as nobody.  Besides the common checks
(tests/field/fieldlib.py): no wall sample has a frame of our library."""
import signal
import socket

from fieldlib import NOBODY, Field, check, free_port, same_output, wait_until

SESSION = [b"set a 0 0 2\r\n42\r\n", b"get a\r\n", b"incr a 8\r\n", b"append a 0 0 1\r\nx\r\n",
           b"gets a\r\n", b"add a 0 0 1\r\ny\r\n", b"delete a\r\n", b"get a\r\n",
           b"set big 0 0 5000\r\n" + b"z" * 5000 + b"\r\n", b"get big\r\n", b"version\r\n"]


def session(port):
    out = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as so:
        for req in SESSION:
            so.sendall(req)
            reply = b""
            while not reply.endswith((b"END\r\n", b"STORED\r\n", b"DELETED\r\n", b"NOT_STORED\r\n",
                                      b"NOT_FOUND\r\n")) and not (reply.endswith(b"\r\n") and
                                                                  reply[:1].isdigit()) \
                    and not reply.startswith(b"VERSION") or not reply.endswith(b"\r\n"):
                chunk = so.recv(65536)
                if not chunk:
                    break
                reply += chunk
            out += req[:20] + b" -> " + (reply[:40] if not reply.startswith(b"VERSION") else b"VERSION")
            out += b" (%d bytes)\n" % len(reply)
    # gets prints a cas unique, which is the server's counter: the same in both runs.
    return out


with Field("memcached") as field:
    def serve(env, prefix, load):
        port = free_port()
        server = field.start(prefix + ["env"] + ["%s=%s" % kv for kv in env.items()] +
                             ["/usr/bin/memcached", "-u", "nobody", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                              "-t", "4", "-m", "64"], field.plain_env(),
                             stderr=open(field.path("lib.log" if load else "base.log"), "wb"))
        up = wait_until(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() is None)
        got = session(port) if up else b""
        bench = None
        if load:
            bench = field.run(["/usr/bin/memcslap", "--servers=127.0.0.1:%d" % port, "--concurrency=8",
                               "--execute-number=25000", "--binary"], field.plain_env(), timeout=120)
        rc = field.stop(server, signal.SIGTERM, timeout=30)
        return up, (0, got, b""), bench, rc

    up0, got0, _, rc0 = serve({}, [], False)
    check("memcached: the baseline server answers", up0)
    data = field.path("perf.data")
    up1, got1, bench, rc1 = serve(field.lib_env({}), field.perf_argv(data), True)
    check("memcached: the server answers under the library", up1)
    same_output(field, "the memcached protocol", got0, got1)
    check("memcached: memcslap completes", bench[0] == 0 and b"Time total" in bench[1], bench[1][-300:] + bench[2][-300:])
    check("memcached: the server exits as without the library", rc0 == rc1, "without %s, with %s" % (rc0, rc1))
    field.check_log_clean("memcached's stderr", open(field.path("base.log"), errors="replace").read(),
                          open(field.path("lib.log"), errors="replace").read(), r".")
    field.check_profiles_valid()
    field.check_cpu_agrees_with_perf(data)
    field.check_wall_not_in_library()
