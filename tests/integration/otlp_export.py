#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/otel_writer
"""OTLP profiles exporter against a loopback OTLP/HTTP receiver that follows
the OpenTelemetry Collector's rules (otlpreceiver: POST
/v1development/profiles, Content-Type application/x-protobuf, gzip
Content-Encoding, exactly one OTLP-Profiles-Development-Version header equal
to "1"; anything else is answered 400).  Each request body is judged by
`protoc --decode_raw` and decoded by a small decoder written here from the
field numbers of opentelemetry-proto v1.11.0.  Checks: per sample type, the
totals of every OTLP request equal those of the pprof files written in the
same run; the dictionary's index-0 entries are zero values; every sample's
stack, attribute and link indices are in range; the trace/span links carry
exactly the ids of the pprof `span id`/`trace_id` labels, with the same
totals; the resource has OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; a
400 is not retried and a 503 is retried once."""
import glob
import gzip
import http.server
import os
import subprocess
import tempfile
import threading
import pprof_raw
from checks import check, check_terse, finish

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WRITER = os.path.join(ROOT, "build", "workloads", "otel_writer")


# ---- a protobuf wire decoder, from the field numbers ----

def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """[(field, wire, value)] of one message; LEN values are bytes."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % w)
        out.append((f, w, v))
    return out


def packed(v, w):
    if w == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def one(msg, f, default=0):
    vals = [v for ff, w, v in fields(msg) if ff == f]
    return vals[-1] if vals else default


def decode_request(body):
    """The request as Python data (Export/ResourceProfiles/... by field number)."""
    req = {"resource": [], "profiles": [], "dict": {}}
    dict_bytes = b""
    for f, w, v in fields(body):
        if f == 1:
            for ff, ww, vv in fields(v):
                if ff == 1:  # Resource
                    for a, _, kv in fields(vv):
                        if a == 1:
                            key = one(kv, 1, b"").decode()
                            val = one(one(kv, 2, b""), 1, b"").decode()
                            req["resource"].append((key, val))
                elif ff == 2:  # ScopeProfiles
                    for a, _, p in fields(vv):
                        if a == 1:
                            req["scope"] = one(p, 1, b"").decode()
                        elif a == 2:
                            req["profiles"].append(p)
        elif f == 2:
            dict_bytes = v
    d = {k: [] for k in ("mapping", "location", "function", "link", "string", "attribute", "stack")}
    names = {1: "mapping", 2: "location", 3: "function", 4: "link", 5: "string", 6: "attribute",
             7: "stack"}
    for f, w, v in fields(dict_bytes):
        d[names[f]].append(v)
    req["dict"] = d
    return req


def profile_samples(req, p):
    """(type, unit, [(value, stack_index, attribute indices, link index)])."""
    strings = [s.decode() for s in req["dict"]["string"]]
    vt = one(p, 1, b"")
    typ, unit = strings[one(vt, 1)], strings[one(vt, 2)]
    samples = []
    for f, w, v in fields(p):
        if f != 2:
            continue
        vals, attrs, stack, link = [], [], 0, 0
        for ff, ww, vv in fields(v):
            if ff == 1:
                stack = vv
            elif ff == 2:
                attrs += packed(vv, ww)
            elif ff == 3:
                link = vv
            elif ff == 4:
                vals += [signed(x) for x in packed(vv, ww)]
        samples.append((vals, stack, attrs, link))
    return typ, unit, samples


# ---- the receiver ----

class Receiver(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, status):
        super().__init__(("127.0.0.1", 0), Handler)
        self.status = status
        self.requests = []
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        versions = self.headers.get_all("OTLP-Profiles-Development-Version") or []
        ok = (self.path == "/v1development/profiles"
              and self.headers.get("Content-Type") == "application/x-protobuf"
              and self.headers.get("Content-Encoding") == "gzip"
              and versions == ["1"])
        raw = None
        if ok:
            try:
                raw = gzip.decompress(body)
            except Exception:
                ok = False
        with self.server.lock:
            self.server.requests.append({"path": self.path, "headers": dict(self.headers),
                                         "versions": versions, "raw": raw, "ok": ok})
        status = self.server.status if ok else 400
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve(status):
    srv = Receiver(status)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def pprof_totals(path):
    """{(type, unit): total} and {(span, trace, (type, unit)): total} as go tool pprof reads them."""
    types = pprof_raw.sample_types(path)
    totals = {t: 0 for t in types}
    links = {}
    for values, _, labels in pprof_raw.samples(path):
        for t, x in zip(types, values):
            totals[t] += x
            if x and "span id" in labels and "trace_id" in labels:  # OTLP omits zeros
                key = (int(labels["span id"]), labels["trace_id"], t)
                links[key] = links.get(key, 0) + x
    return totals, links


def run(port, out, seconds, period, extra=None):
    env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               DD_SERVICE="dd-name", DD_ENV="staging", DD_VERSION="1.2.3",
               OTEL_SERVICE_NAME="checkout", OTEL_RESOURCE_ATTRIBUTES="team=payments,region=eu%2Dwest",
               OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:%d/" % port,
               STOWAWAY_PROFILES="cpu,wall,alloc", STOWAWAY_CPU_HZ="1000",
               STOWAWAY_ALLOC_SAMPLE_BYTES="65536", DD_PROFILING_UPLOAD_PERIOD=str(period))
    env.update(extra or {})
    return subprocess.run([WRITER, str(seconds), os.path.join(out, "truth.txt"), "2"], env=env,
                          capture_output=True, text=True, timeout=60)


srv = serve(200)
with tempfile.TemporaryDirectory() as out:
    proc = run(srv.server_address[1], out, 2.5, 1)
    check_terse("otlp: the program runs with the exporter", proc.returncode == 0, proc.stderr[-300:])
    reqs = srv.requests
    check("otlp: requests follow the receiver's rules (path, content type, gzip, version header)",
          len(reqs) >= 2 and all(r["ok"] for r in reqs),
          [(r["path"], r["versions"], r["headers"].get("Content-Encoding")) for r in reqs][:3])
    decoded, judged = [], 0
    for r in reqs:
        if not r["raw"]:
            continue
        pr = subprocess.run(["protoc", "--decode_raw"], input=r["raw"], capture_output=True)
        judged += pr.returncode == 0 and pr.stdout.startswith(b"1 {")
        decoded.append(decode_request(r["raw"]))
    check("otlp: protoc --decode_raw parses every request", judged == len(reqs) and judged > 0,
          f"{judged} of {len(reqs)}")

    # Resource and scope.
    res = dict(decoded[0]["resource"]) if decoded else {}
    check("otlp: resource attributes from OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and DD_*",
          res.get("service.name") == "checkout" and res.get("team") == "payments"
          and res.get("region") == "eu-west" and res.get("service.version") == "1.2.3"
          and res.get("deployment.environment.name") == "staging"
          and res.get("process.pid", "").isdigit(), res)
    check("otlp: scope is stowaway", all(d.get("scope") == "stowaway" for d in decoded))

    # Dictionary rules and index ranges.
    bad = []
    otlp_totals, otlp_links = {}, {}
    for d in decoded:
        t = d["dict"]
        zero = (t["string"][:1] == [b""] and t["mapping"][:1] == [b""] and
                t["location"][:1] == [b""] and t["function"][:1] == [b""] and
                t["attribute"][:1] == [b""] and t["stack"][:1] == [b""] and
                len(t["link"]) >= 1 and one(t["link"][0], 1, b"") == bytes(16)
                and one(t["link"][0], 2, b"") == bytes(8))
        if not zero:
            bad.append("index 0 entries are not zero values")
        for p in d["profiles"]:
            typ, unit, samples = profile_samples(d, p)
            for vals, stack, attrs, link in samples:
                if not (0 < stack < len(t["stack"]) and all(0 < a < len(t["attribute"]) for a in attrs)
                        and 0 <= link < len(t["link"]) and len(vals) == 1):
                    bad.append((typ, stack, attrs, link, vals))
                    continue
                otlp_totals[(typ, unit)] = otlp_totals.get((typ, unit), 0) + vals[0]
                if link:
                    lk = t["link"][link]
                    key = (int.from_bytes(one(lk, 2, b""), "big"), one(lk, 1, b"").hex(), (typ, unit))
                    otlp_links[key] = otlp_links.get(key, 0) + vals[0]
            for s in t["stack"][1:]:
                locs = packed(one(s, 1, b""), 2)
                if not all(0 < x < len(t["location"]) for x in locs):
                    bad.append(("stack", locs))
    check("otlp: dictionary index 0 entries are zero values; sample indices in range", not bad, bad[:3])

    pp_totals, pp_links = {}, {}
    files = sorted(glob.glob(os.path.join(out, "*.pb.gz")))
    for f in files:
        tot, lk = pprof_totals(f)
        for k, v in tot.items():
            pp_totals[k] = pp_totals.get(k, 0) + v
        for k, v in lk.items():
            pp_links[k] = pp_links.get(k, 0) + v
    kinds = sorted(pp_totals)
    check("otlp: per sample type, the requests' totals equal the pprof files'",
          len(kinds) >= 6 and all(otlp_totals.get(k) == pp_totals[k] for k in kinds)
          and set(otlp_totals) <= set(pp_totals),
          {"/".join(k): (pp_totals[k], otlp_totals.get(k)) for k in kinds})
    check("otlp: trace/span links carry exactly the pprof span id and trace_id labels, same totals",
          len(pp_links) >= 20 and otlp_links == pp_links,
          f"{len(pp_links)} pprof (span, trace, type) totals, {len(otlp_links)} OTLP; "
          f"differ: {[k for k in set(pp_links) | set(otlp_links) if pp_links.get(k) != otlp_links.get(k)][:3]}")
    # Functions resolve to names (the dictionary's functions point at strings).
    names = set()
    for d in decoded:
        strings = [s.decode() for s in d["dict"]["string"]]
        for fn in d["dict"]["function"][1:]:
            names.add(strings[one(fn, 1)])
    check("otlp: functions carry their names", {"burn_even", "burn_odd", "work"} <= names,
          sorted(names)[:10])
srv.shutdown()

# No retry on 400; one retry on 503 (a single export at exit).
for status, want in ((400, 1), (503, 2)):
    srv = serve(status)
    with tempfile.TemporaryDirectory() as out:
        proc = run(srv.server_address[1], out, 0.3, 60)
        n = len(srv.requests)
        check(f"otlp: an answer {status} is sent {want} time(s) (no retry on 400, one on 5xx)",
              proc.returncode == 0 and n == want, f"{n} requests")
    srv.shutdown()
finish()
