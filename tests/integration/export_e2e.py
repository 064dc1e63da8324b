#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/demo build/workloads/hello
"""Uploads from the preloaded library itself (scheduler + exporters), end to end:
periodic and final uploads reach a loopback agent over TCP and a unix socket,
each a valid multipart request whose pprof `go tool pprof` reads, with
contiguous periods; and a process whose agent hangs or is down still exits
within STOWAWAY_EXIT_TIMEOUT_MS, output and exit code unchanged."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402

SO = os.environ.get("STOWAWAY_SO", os.path.join(ec.ROOT, "build", "libstowaway.so"))
WL = os.path.join(ec.ROOT, "build", "workloads")
check = ec.check


def run(args, env_extra, timeout=60):
    env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", DD_SERVICE="e2e",
               **env_extra)
    t0 = time.monotonic()
    proc = subprocess.run(args, env=env, capture_output=True, timeout=timeout)
    return proc, time.monotonic() - t0


def rfc3339_ns(text):
    # 2026-01-01T00:00:00.123456789Z -> ns since the epoch
    import calendar
    date, frac = text.rstrip("Z").split(".")
    secs = calendar.timegm(time.strptime(date, "%Y-%m-%dT%H:%M:%S"))
    return secs * 10**9 + int(frac.ljust(9, "0"))


def pprof_sample_types(data):
    with tempfile.NamedTemporaryFile(suffix=".pb.gz") as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["go", "tool", "pprof", "-raw", f.name], capture_output=True,
                             text=True)
    for line in out.stdout.splitlines():
        if "/" in line and ("cpu-time" in line or "wall-time" in line or "alloc" in line):
            return line.split(), out.returncode
    return [], out.returncode


def periodic_uploads(label, url, recorder):
    proc, elapsed = run([os.path.join(WL, "demo"), "3.5"],
                        {"DD_TRACE_AGENT_URL": url, "DD_PROFILING_UPLOAD_PERIOD": "1"})
    check(f"{label}: demo exit code unchanged", proc.returncode == 0, proc.stderr[-300:].decode())
    reqs = list(recorder.requests)
    check(f"{label}: periodic and final uploads arrived", len(reqs) >= 3, f"{len(reqs)} uploads")
    starts, ends, runtime_ids = [], [], set()
    for i, req in enumerate(reqs):
        check(f"{label}: upload {i} is POST /profiling/v1/input",
              req["method"] == "POST" and req["target"] == "/profiling/v1/input",
              f'{req["method"]} {req["target"]}')
        parts, err = ec.parse_multipart(ec.header(req, "content-type"), req["body"])
        if err:
            check(f"{label}: upload {i} multipart", False, err)
            continue
        by_name = {p["name"]: p for p in parts}
        event = json.loads(by_name["event"]["data"])
        tags = dict(t.split(":", 1) for t in event["tags_profiler"].split(","))
        runtime_ids.add(tags.get("runtime-id"))
        starts.append(rfc3339_ns(event["start"]))
        ends.append(rfc3339_ns(event["end"]))
        data = by_name["profile.pprof"]["data"]
        check(f"{label}: upload {i} pprof is gzip", data[:2] == b"\x1f\x8b")
        types, rc = pprof_sample_types(data)
        want = {"cpu-time/nanoseconds", "wall-time/nanoseconds", "alloc-space/bytes",
                "heap-live-size/bytes"}
        check(f"{label}: upload {i} go tool pprof reads all four kinds", rc == 0 and want <= set(
            t.rstrip("[dflt]") for t in types), " ".join(types))
    check(f"{label}: one runtime id across the process's uploads", len(runtime_ids) == 1,
          str(runtime_ids))
    ok = all(s < e for s, e in zip(starts, ends)) and all(
        abs(starts[i + 1] - ends[i]) < 50_000_000 for i in range(len(starts) - 1))
    check(f"{label}: periods are ordered and contiguous", ok and len(starts) >= 3)


def exit_bound(label, mode):
    rec = ec.Recorder(mode=mode)
    server, port = ec.start_tcp(rec)
    if mode == "down":
        ec.stop(server, rec)  # the port is closed: connections are refused
    plain = subprocess.run([os.path.join(WL, "hello"), "x", "4"], capture_output=True)
    proc, elapsed = run([os.path.join(WL, "hello"), "x", "4"],
                        {"DD_TRACE_AGENT_URL": f"http://127.0.0.1:{port}",
                         "STOWAWAY_EXIT_TIMEOUT_MS": "1000", "STOWAWAY_HTTP_TIMEOUT_MS": "5000",
                         # every allocation sampled, so that hello (a few ms, often
                         # without a sample) always has a profile to send at exit
                         "STOWAWAY_ALLOC_SAMPLE_BYTES": "1"})
    check(f"{label}: exit code unchanged", proc.returncode == plain.returncode == 4)
    check(f"{label}: output unchanged", proc.stdout == plain.stdout)
    check(f"{label}: exits within the 1000 ms exit timeout", elapsed < 1.6, f"{elapsed:.2f}s")
    lines = [l for l in proc.stderr.decode().splitlines() if l]
    check(f"{label}: at most one log line, prefixed", len(lines) <= 1 and all(
        l.startswith("stowaway: ") for l in lines), str(lines))
    if mode != "down":
        ec.stop(server, rec)


rec = ec.Recorder(statuses=[200])
server, port = ec.start_tcp(rec)
periodic_uploads("tcp", f"http://127.0.0.1:{port}", rec)
ec.stop(server, rec)

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "apm.socket")
    rec = ec.Recorder(statuses=[200])
    server = ec.start_unix(rec, path)
    periodic_uploads("unix", f"unix://{path}", rec)
    ec.stop(server, rec)

exit_bound("agent hangs", "hang")
exit_bound("agent down", "down")
ec.finish()
