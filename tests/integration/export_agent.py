#!/usr/bin/env python3
# needs: build/tests/export_driver
"""Datadog agent exporter against loopback servers written here: every
multipart field and header over TCP and a unix socket, retries, timeouts,
4xx reporting and the size limit."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402

RUNTIME_ID = "3f1c2b9e-8d4a-4c1e-9b7a-0123456789ab"
HOSTNAME = os.uname().nodename
RFC3339_NS = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{9})Z$")


def base_env(url, **extra):
    env = {"DD_TRACE_AGENT_URL": url, "DD_SERVICE": 'svc "quoted" \\ back', "DD_ENV": "staging",
           "DD_VERSION": "1.2.3", "DD_TAGS": "team:profiling,zone:eu-1",
           "EXPORT_DRIVER_RUNTIME_ID": RUNTIME_ID, "STOWAWAY_LOG_LEVEL": "debug"}
    env.update(extra)
    return env


def to_seconds(stamp):
    m = RFC3339_NS.match(stamp)
    if not m:
        return None
    import calendar
    y, mo, d, h, mi, s, ns = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) + ns / 1e9


def check_upload(prefix, req, profile, transport):
    ec.check(prefix + "_method_and_path",
             req["method"] == "POST" and req["target"] == "/profiling/v1/input"
             and req["proto"] == "HTTP/1.1", "%s %s" % (req["method"], req["target"]))
    ec.check(prefix + "_body_complete", req["complete"])
    ec.check(prefix + "_content_length",
             ec.header(req, "Content-Length") == str(len(req["body"])))
    ec.check(prefix + "_connection_close", ec.header(req, "Connection") == "close")
    ec.check(prefix + "_no_chunked", ec.header(req, "Transfer-Encoding") is None)
    want_host = "localhost" if transport == "unix" else None
    host = ec.header(req, "Host")
    ec.check(prefix + "_host_header",
             host == want_host if want_host else bool(re.fullmatch(r"127\.0\.0\.1:\d+", host or "")),
             repr(host))
    ec.check(prefix + "_origin_headers",
             ec.header(req, "DD-EVP-ORIGIN") == "stowaway"
             and ec.header(req, "DD-EVP-ORIGIN-VERSION") == ec.VERSION
             and ec.header(req, "User-Agent") == "stowaway/" + ec.VERSION,
             str(req["headers"]))
    ec.check(prefix + "_no_api_key_to_agent", ec.header(req, "DD-API-KEY") is None)
    cid = ec.expected_container_id()
    ec.check(prefix + "_container_id_header", ec.header(req, "Datadog-Container-ID") == cid,
             "%r vs %r" % (ec.header(req, "Datadog-Container-ID"), cid))

    parts, err = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
    if not ec.check(prefix + "_multipart_rfc7578", parts is not None, err or ""):
        return
    ec.check(prefix + "_two_parts",
             [p["name"] for p in parts] == ["event", "profile.pprof"]
             and [p["filename"] for p in parts] == ["event.json", "profile.pprof"],
             str([(p["name"], p["filename"]) for p in parts]))
    event_part = parts[0]
    ec.check(prefix + "_event_content_type",
             event_part["headers"].get("content-type") == "application/json")
    try:
        event = json.loads(event_part["data"].decode("utf-8"))
    except ValueError as e:
        ec.check(prefix + "_event_json_parses", False, str(e))
        return
    ec.check(prefix + "_event_json_parses", True)
    ec.check(prefix + "_event_keys",
             sorted(event) == sorted(["attachments", "tags_profiler", "start", "end", "family",
                                      "version", "endpoint_counts", "internal", "info"]),
             str(sorted(event)))
    ec.check(prefix + "_attachments", event.get("attachments") == ["profile.pprof"])
    ec.check(prefix + "_family_version",
             event.get("family") == "native" and event.get("version") == "4")
    info = event.get("info", {})
    ec.check(prefix + "_internal_info",
             event.get("internal") == {"profiler_version": ec.VERSION}
             and info.get("profiler", {}).get("version") == ec.VERSION
             and to_seconds(info.get("application", {}).get("start_time", "")) is not None
             and info.get("application", {}).get("service") == 'svc "quoted" \\ back'
             and info.get("platform", {}).get("hostname") == HOSTNAME,
             str(event.get("internal")) + str(info))
    ec.check(prefix + "_endpoint_counts", event.get("endpoint_counts") == {"GET /driver": 7},
             str(event.get("endpoint_counts")))
    tags = event.get("tags_profiler", "").split(",")
    want = ['service:svc "quoted" \\ back', "env:staging", "version:1.2.3", "language:native",
            "runtime-id:" + RUNTIME_ID, "profiler_version:" + ec.VERSION, "host:" + HOSTNAME,
            "team:profiling", "zone:eu-1"]
    missing = [t for t in want if t not in tags]
    ec.check(prefix + "_tags_profiler", not missing, "missing %s in %s" % (missing, tags))
    ec.check(prefix + "_tags_process_id", any(re.fullmatch(r"process_id:\d+", t) for t in tags))
    start, end = to_seconds(event.get("start", "")), to_seconds(event.get("end", ""))
    ec.check(prefix + "_start_end_rfc3339_ns", start is not None and end is not None,
             "%r %r" % (event.get("start"), event.get("end")))
    if start is not None and end is not None:
        import time
        ec.check(prefix + "_start_end_values",
                 abs((end - start) - 60) < 1e-6 and abs(end - time.time()) < 120,
                 "start %s end %s" % (start, end))
    ec.check(prefix + "_profile_bytes", parts[1]["data"] == profile,
             "%d vs %d bytes" % (len(parts[1]["data"]), len(profile)))


def main():
    if not os.path.exists(ec.DRIVER):
        ec.check("export_driver_built", False, ec.DRIVER)
        ec.finish()
    tmp = tempfile.mkdtemp(prefix="stowaway-export-")
    profile = ec.sample_profile()
    profile_path = os.path.join(tmp, "profile.pprof.gz")
    with open(profile_path, "wb") as f:
        f.write(profile)

    # 1. TCP agent.
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path, base_env("http://127.0.0.1:%d" % port))
    ec.check("agent_tcp_upload_ok", r["code"] == 0 and len(rec.requests) == 1,
             r["stdout"] + r["stderr"][-2000:])
    if rec.requests:
        check_upload("agent_tcp", rec.requests[0], profile, "tcp")
    ec.stop(srv, rec)

    # 2. Unix socket agent.
    sock_path = os.path.join(tmp, "apm.socket")
    rec = ec.Recorder([200])
    srv = ec.start_unix(rec, sock_path)
    r = ec.run_driver("datadog", profile_path, base_env("unix://" + sock_path))
    ec.check("agent_unix_upload_ok", r["code"] == 0 and len(rec.requests) == 1,
             r["stdout"] + r["stderr"][-2000:])
    if rec.requests:
        check_upload("agent_unix", rec.requests[0], profile, "unix")
    ec.stop(srv, rec)

    # 3. DD_AGENT_HOST=localhost + DD_TRACE_AGENT_PORT, and an API key that
    #    must not reach the agent.
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    env = base_env("", DD_AGENT_HOST="localhost", DD_TRACE_AGENT_PORT=str(port),
                   DD_API_KEY="secret-key-never-sent")
    del env["DD_TRACE_AGENT_URL"]
    r = ec.run_driver("datadog", profile_path, env)
    ec.check("agent_localhost_port_ok", r["code"] == 0 and len(rec.requests) == 1,
             r["stdout"] + r["stderr"][-2000:])
    ec.check("agent_never_gets_api_key",
             all(ec.header(q, "DD-API-KEY") is None and b"secret-key-never-sent" not in q["body"]
                 for q in rec.requests))
    ec.stop(srv, rec)

    # 4. 500 then 200: one retry, success.
    rec = ec.Recorder([500, 200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path, base_env("http://127.0.0.1:%d" % port))
    ec.check("agent_500_then_200_retried", r["code"] == 0 and len(rec.requests) == 2,
             "code %d, %d requests" % (r["code"], len(rec.requests)))
    ec.stop(srv, rec)

    # 5. 500 always: exactly one retry, then failure.
    rec = ec.Recorder([500])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path, base_env("http://127.0.0.1:%d" % port))
    ec.check("agent_500_retried_once", r["code"] == 1 and len(rec.requests) == 2,
             "code %d, %d requests" % (r["code"], len(rec.requests)))
    ec.stop(srv, rec)

    # 6. 403 and 404: no retry, the reason logged once across two periods.
    for status, reason in ((403, "forbidden"), (404, "too old")):
        rec = ec.Recorder([status])
        srv, port = ec.start_tcp(rec)
        r = ec.run_driver("datadog", profile_path, base_env("http://127.0.0.1:%d" % port,
                                                            STOWAWAY_LOG_LEVEL="warn"), runs=2)
        lines = [l for l in r["stderr"].splitlines() if str(status) in l]
        ec.check("agent_%d_not_retried" % status, len(rec.requests) == 2 and r["code"] == 1,
                 "%d requests" % len(rec.requests))
        ec.check("agent_%d_logged_once_with_reason" % status,
                 len(lines) == 1 and reason in lines[0], r["stderr"])
        ec.stop(srv, rec)

    # 7. A server that hangs: bounded by the HTTP timeout, retried once.
    rec = ec.Recorder([200], mode="hang")
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path,
                      base_env("http://127.0.0.1:%d" % port, STOWAWAY_HTTP_TIMEOUT_MS="500"),
                      deadline_ms=5000)
    res = r["results"][0] if r["results"] else {"rc": 0, "elapsed_ms": -1}
    ec.check("agent_hang_times_out", res["rc"] == -110 and 900 <= res["elapsed_ms"] <= 1600,
             str(res))
    ec.check("agent_hang_retried_once", rec.connections == 2, str(rec.connections))
    ec.stop(srv, rec)

    # 8. The batch deadline wins over a longer HTTP timeout.
    rec = ec.Recorder([200], mode="hang")
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path,
                      base_env("http://127.0.0.1:%d" % port, STOWAWAY_HTTP_TIMEOUT_MS="5000"),
                      deadline_ms=700)
    res = r["results"][0] if r["results"] else {"rc": 0, "elapsed_ms": -1}
    ec.check("agent_deadline_bounds_upload", res["rc"] < 0 and res["elapsed_ms"] <= 900,
             str(res))
    ec.stop(srv, rec)

    # 9. A server that resets the connection: retried once, fails fast.
    rec = ec.Recorder([200], mode="reset")
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", profile_path, base_env("http://127.0.0.1:%d" % port))
    res = r["results"][0] if r["results"] else {"rc": 0, "elapsed_ms": -1}
    ec.check("agent_reset_fails_fast", res["rc"] < 0 and res["elapsed_ms"] < 1000, str(res))
    ec.check("agent_reset_retried_once", rec.connections == 2, str(rec.connections))
    ec.stop(srv, rec)

    # 10. Agent down (nothing listens): fails fast, one log line per outage.
    probe = ec.socket.socket()
    probe.bind(("127.0.0.1", 0))
    dead_port = probe.getsockname()[1]
    probe.close()
    r = ec.run_driver("datadog", profile_path,
                      base_env("http://127.0.0.1:%d" % dead_port, STOWAWAY_LOG_LEVEL="warn"),
                      runs=3)
    ok = len(r["results"]) == 3 and all(x["rc"] == -111 and x["elapsed_ms"] < 500
                                        for x in r["results"])
    ec.check("agent_down_fails_fast", ok, r["stdout"])
    ec.check("agent_down_logged_once",
             len([l for l in r["stderr"].splitlines() if "refused" in l]) == 1, r["stderr"])

    # 11. Over 10 MiB: dropped with a log line, nothing sent.
    big_path = os.path.join(tmp, "big.pprof.gz")
    with open(big_path, "wb") as f:
        f.write(os.urandom(10 * 1024 * 1024 + 1))
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    r = ec.run_driver("datadog", big_path, base_env("http://127.0.0.1:%d" % port))
    ec.check("agent_over_10mib_dropped",
             r["results"] and r["results"][0]["rc"] == -90 and not rec.connections
             and "dropped" in r["stderr"], r["stdout"] + r["stderr"])
    ec.stop(srv, rec)
    ec.finish()


if __name__ == "__main__":
    main()
