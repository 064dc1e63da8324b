#!/usr/bin/env python3
"""Debian's nginx (master and two forked workers) under the library,
serving static files: a few fetched files must be byte for byte what a
server without the library sends, then ab (keep-alive, about 5 s of load).
Besides the common checks (tests/field/fieldlib.py): nginx's error log has no
new line, and no wall sample has a frame of our library."""
import os
import re
import signal
import urllib.request

from fieldlib import Field, check, free_port, read_text, same_output, wait_until

CONF = """daemon off;
master_process on;
worker_processes 2;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/%(log)s info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path %(tmp)s/body;
    server {
        listen 127.0.0.1:%(port)d;
        root %(tmp)s/www;
        location / { }
    }
}
"""


def fetch(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/%s" % (port, name), timeout=10) as r:
        return r.status, r.read()


with Field("nginx") as field:
    www = field.path("www")
    os.mkdir(www)
    with open(os.path.join(www, "index.html"), "w") as f:
        f.write("<html><body>%s</body></html>\n" % ("field " * 200))
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(bytes((i * 7919) & 255 for i in range(1 << 20)))
    os.chmod(www, 0o755)

    def serve(env, log, prefix, load):
        port = free_port()
        conf = field.path(log + ".conf")
        with open(conf, "w") as f:
            f.write(CONF % {"tmp": field.tmp, "log": log, "port": port})
        server = field.start(prefix + ["env"] + ["%s=%s" % kv for kv in env.items()] +
                             ["/usr/sbin/nginx", "-p", field.tmp, "-c", conf, "-e", field.path(log)],
                             field.plain_env())
        up = wait_until(lambda: fetch(port, "index.html")[0] == 200)
        got = b""
        for name in ("index.html", "big.bin", "missing"):
            try:
                status, body = fetch(port, name)
            except urllib.error.HTTPError as e:
                status, body = e.code, b""
            got += b"%s %d %d %s\n" % (name.encode(), status, len(body), body[:64])
        bench = None
        if load:
            bench = field.run(["/usr/bin/ab", "-q", "-k", "-n", "150000", "-c", "8",
                               "http://127.0.0.1:%d/index.html" % port], field.plain_env(), timeout=120)
        rc = field.stop(server, signal.SIGQUIT, timeout=30)
        return up, (0, got, b""), bench, rc

    up0, got0, _, rc0 = serve({}, "base.log", [], False)
    check("nginx: the baseline server answers", up0)
    data = field.path("perf.data")
    up1, got1, bench, rc1 = serve(field.lib_env({}), "lib.log", field.perf_argv(data), True)
    check("nginx: the server answers under the library", up1)
    same_output(field, "HTTP", got0, got1)
    out = bench[1].decode(errors="replace")
    check("nginx: ab completes every request", bench[0] == 0 and "Complete requests:      150000" in out
          and re.search(r"Failed requests:\s+0\n", out) and "Non-2xx" not in out, out[-600:])
    check("nginx: the server exits as without the library", rc0 == rc1, "without %s, with %s" % (rc0, rc1))
    field.check_log_clean("nginx's error log", read_text(field.path("base.log")), read_text(field.path("lib.log")),
                          r"\[(warn|error|crit|alert|emerg)\]")
    field.check_profiles_valid()
    field.check_cpu_agrees_with_perf(data)
    field.check_wall_not_in_library()
