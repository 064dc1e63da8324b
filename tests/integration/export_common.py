"""Loopback servers and checks shared by the export_* integration tests.

Not a test itself (not executable).  Servers record every request they
receive; the tests then run build/tests/export_driver against them.
"""
import gzip
import json
import os
import re
import socket
import socketserver
import ssl
import subprocess
import threading
import time
from checks import check_terse as check, finish  # noqa: F401 (used as ec.check, ec.finish)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "build", "tests", "export_driver")
VERSION = open(os.path.join(ROOT, "VERSION")).read().strip() if os.path.exists(
    os.path.join(ROOT, "VERSION")) else "0.0.0"


def sample_profile(size=4000):
    # Incompressible payload, so the gzip stream is about `size` bytes.
    return gzip.compress(os.urandom(size) + b"stowaway-test-profile")


def read_http_request(conn):
    """Reads one HTTP/1.1 request with a Content-Length body; returns
    (method, target, headers as list of (name, value), body) or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, proto = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        body += chunk
    return {"method": method, "target": target, "proto": proto, "headers": headers,
            "body": body, "complete": len(body) == length}


def header(req, name):
    values = [v for k, v in req["headers"] if k.lower() == name.lower()]
    return values[0] if len(values) == 1 else (None if not values else values)


class Recorder:
    """What a server saw and how it should answer."""

    def __init__(self, statuses=None, mode="answer", body=b"ok"):
        self.requests = []
        self.connections = 0
        self.statuses = list(statuses or [200])
        self.mode = mode  # answer | hang | reset
        self.body = body
        self.lock = threading.Lock()
        self.release = threading.Event()

    def handle(self, conn):
        with self.lock:
            self.connections += 1
        if self.mode == "reset":
            conn.recv(16)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()
            return
        req = read_http_request(conn)
        if req is None:
            return
        with self.lock:
            self.requests.append(req)
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        if self.mode == "hang":
            self.release.wait(30)
            return
        reason = {200: "OK", 202: "Accepted", 403: "Forbidden", 404: "Not Found",
                  500: "Internal Server Error"}.get(status, "Status")
        conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (status, reason.encode(), len(self.body),
                                                       self.body))


def _handler(recorder):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                recorder.handle(self.request)
            except OSError:
                pass
    return Handler


class _TCP(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


class _Unix(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


class _TLS(_TCP):
    def __init__(self, addr, handler, context):
        super().__init__(addr, handler)
        self.context = context
        self.handshake_failures = 0

    def get_request(self):
        sock, addr = self.socket.accept()
        try:
            sock.settimeout(10)
            wrapped = self.context.wrap_socket(sock, server_side=True)
            return wrapped, addr
        except (ssl.SSLError, OSError):
            self.handshake_failures += 1
            sock.close()
            raise OSError("handshake failed")


def start_tcp(recorder, host="127.0.0.1"):
    server = _TCP((host, 0), _handler(recorder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def start_unix(recorder, path):
    server = _Unix(path, _handler(recorder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_tls(recorder, context):
    server = _TLS(("127.0.0.1", 0), _handler(recorder), context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def stop(server, recorder=None):
    if recorder:
        recorder.release.set()
    server.shutdown()
    server.server_close()


def run_driver(kind, profile_path, env_extra, deadline_ms=10000, runs=1, timeout=60):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("DD_") or k.startswith("STOWAWAY_"))}
    env.update(env_extra)
    start = time.monotonic()
    proc = subprocess.run([DRIVER, kind, profile_path, str(deadline_ms), str(runs)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - start
    results = []
    for line in proc.stdout.splitlines():
        m = re.match(r"export rc=(-?\d+) elapsed_ms=(\d+) tls_heap_peak=(\d+) tls_heap_now=(\d+)",
                     line)
        if m:
            results.append({"rc": int(m.group(1)), "elapsed_ms": int(m.group(2)),
                            "tls_heap_peak": int(m.group(3)), "tls_heap_now": int(m.group(4))})
    return {"code": proc.returncode, "results": results, "stderr": proc.stderr,
            "stdout": proc.stdout, "elapsed": elapsed}


def parse_multipart(content_type, body):
    """RFC 7578 multipart/form-data, strictly: returns (parts, error).
    Each part: {"name", "filename", "headers", "data"}."""
    m = re.fullmatch(r'multipart/form-data; boundary=("?)([0-9A-Za-z\'()+_,./:=?-]{1,70})\1',
                     content_type or "")
    if not m:
        return None, "bad Content-Type %r" % content_type
    delim = b"--" + m.group(2).encode()
    if not body.startswith(delim + b"\r\n"):
        return None, "body does not start with the boundary"
    if not body.endswith(b"\r\n" + delim + b"--\r\n"):
        return None, "body does not end with the close delimiter"
    inner = body[len(delim) + 2:len(body) - len(delim) - 6]
    chunks = inner.split(b"\r\n" + delim + b"\r\n")
    parts = []
    for chunk in chunks:
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            return None, "part without header/body separator"
        headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, colon, value = line.partition(":")
            if not colon:
                return None, "malformed part header %r" % line
            headers[name.strip().lower()] = value.strip()
        cd = headers.get("content-disposition", "")
        dm = re.fullmatch(r'form-data; name="([^"]*)"(?:; filename="([^"]*)")?', cd)
        if not dm:
            return None, "bad Content-Disposition %r" % cd
        parts.append({"name": dm.group(1), "filename": dm.group(2), "headers": headers,
                      "data": data})
    return parts, None


def expected_container_id():
    """The id the exporter should find, by an independent reading."""
    try:
        text = open("/proc/self/cgroup").read()
    except OSError:
        return None
    best = None
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        last = path.rstrip("/").split("/")[-1]
        if last.endswith(".scope"):
            last = last[:-6]
        m = re.search(r"(?:^|[-:])([0-9a-f]{64})$", last)
        if m:
            return m.group(1)
        m = re.fullmatch(r"(?:.*-)?([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}"
                         r"[-_][0-9a-f]{12})", last)
        if m and best is None:
            best = m.group(1)
    return best
