#!/usr/bin/env python3
# needs: build/tests/export_driver
"""Pyroscope exporter against a loopback Pyroscope-style /ingest receiver:
one POST per profile kind, the query string (name with labels, from, until,
format, sampleRate for CPU), the raw pprof body, bearer / basic auth and the
tenant header."""
import base64
import os
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402


def env_for(port, **extra):
    env = {"STOWAWAY_PYROSCOPE_URL": "http://127.0.0.1:%d" % port, "DD_SERVICE": "shop-api",
           "DD_ENV": "prod", "DD_VERSION": "2.0", "DD_TAGS": "team:perf,zone:eu",
           "STOWAWAY_PROFILES": "cpu,wall,alloc", "STOWAWAY_CPU_HZ": "97"}
    env.update(extra)
    return env


def main():
    tmp = tempfile.mkdtemp(prefix="stowaway-pyro-")
    profile = ec.sample_profile()
    path = os.path.join(tmp, "p.pb.gz")
    with open(path, "wb") as f:
        f.write(profile)

    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("pyroscope", path, env_for(port, STOWAWAY_PYROSCOPE_AUTH_TOKEN="tok-123",
                                                 STOWAWAY_PYROSCOPE_TENANT_ID="tenant-a"))
    ec.check("pyroscope_upload_ok", r["code"] == 0 and len(rec.requests) == 3,
             r["stdout"] + r["stderr"])
    now = time.time()
    rates = []
    for i, req in enumerate(rec.requests):
        url = urllib.parse.urlsplit(req["target"])
        q = urllib.parse.parse_qs(url.query, strict_parsing=True)
        single = {k: v[0] for k, v in q.items() if len(v) == 1}
        ec.check("pyroscope_req%d_path" % i, req["method"] == "POST" and url.path == "/ingest",
                 req["target"])
        ec.check("pyroscope_req%d_name_labels" % i,
                 single.get("name") == "shop-api{env=prod,version=2.0,team=perf,zone=eu}",
                 repr(single.get("name")))
        ok_times = ("from" in single and "until" in single
                    and int(single["until"]) - int(single["from"]) in (60, 61)
                    and abs(int(single["until"]) - now) < 120)
        ec.check("pyroscope_req%d_from_until" % i, ok_times, str(single))
        ec.check("pyroscope_req%d_format" % i, single.get("format") == "pprof")
        rates.append(single.get("sampleRate"))
        ec.check("pyroscope_req%d_body" % i, req["body"] == profile and req["complete"])
        ec.check("pyroscope_req%d_bearer" % i, ec.header(req, "Authorization") == "Bearer tok-123")
        ec.check("pyroscope_req%d_tenant" % i, ec.header(req, "X-Scope-OrgID") == "tenant-a")
        ec.check("pyroscope_req%d_connection_close" % i, ec.header(req, "Connection") == "close")
    ec.check("pyroscope_sample_rate_cpu_only", rates == ["97", None, None], str(rates))
    ec.stop(srv, rec)

    # Basic auth, base64 of user:pass.
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("pyroscope", path, env_for(port, STOWAWAY_PROFILES="wall",
                                                 STOWAWAY_PYROSCOPE_BASIC_AUTH="alice:s3cr=t:x"))
    want = "Basic " + base64.b64encode(b"alice:s3cr=t:x").decode()
    ec.check("pyroscope_basic_auth",
             r["code"] == 0 and len(rec.requests) == 1
             and ec.header(rec.requests[0], "Authorization") == want
             and ec.header(rec.requests[0], "X-Scope-OrgID") is None,
             str(rec.requests[0]["headers"] if rec.requests else r["stderr"]))
    ec.stop(srv, rec)

    # 500 then 200 for the first kind: retried, the other kinds still sent.
    rec = ec.Recorder([500, 200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("pyroscope", path, env_for(port, STOWAWAY_PROFILES="cpu,heap"))
    ec.check("pyroscope_500_then_200", r["code"] == 0 and len(rec.requests) == 3,
             "%d requests" % len(rec.requests))
    ec.stop(srv, rec)

    # A path prefix in the URL is kept.
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("pyroscope", path, env_for(port, STOWAWAY_PROFILES="cpu",
                      STOWAWAY_PYROSCOPE_URL="http://127.0.0.1:%d/pyroscope/" % port))
    ec.check("pyroscope_path_prefix",
             rec.requests and rec.requests[0]["target"].startswith("/pyroscope/ingest?"),
             rec.requests[0]["target"] if rec.requests else r["stderr"])
    ec.stop(srv, rec)
    ec.finish()


if __name__ == "__main__":
    main()
