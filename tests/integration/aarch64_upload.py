#!/usr/bin/env python3
# Not run by tests/run.sh on its own (not executable): aarch64.sh runs it.
"""Upload from an aarch64 process to a loopback Datadog agent (used by
aarch64.sh): the program runs under qemu-user with the aarch64 library
preloaded, uploads each period, and the receiver checks the request the way
export_agent.py does for x86-64: method, path, multipart form, event
attachment, and a gzip pprof that `go tool pprof` reads."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402

SO = os.environ["STOWAWAY_SO"]
WL = os.environ["STOWAWAY_WL"]


def main():
    rec = ec.Recorder()
    server, port = ec.start_tcp(rec)
    try:
        for prog in os.environ.get("STOWAWAY_VARIANTS", "hello hello-musl").split():
            before = len(rec.requests)
            env = dict(os.environ, DD_PROFILING_ENABLED="true", LD_PRELOAD=SO, DD_SERVICE="arm-upload",
                       DD_TRACE_AGENT_URL=f"http://127.0.0.1:{port}", DD_PROFILING_UPLOAD_PERIOD="1",
                       # every allocation sampled: a process without any sample
                       # uploads nothing at its exit, and hello is short
                       STOWAWAY_ALLOC_SAMPLE_BYTES="1")
            proc = subprocess.run([os.path.join(WL, prog), "a", "3"], env=env, capture_output=True,
                                  text=True, timeout=120)
            ec.check(f"{prog}: runs", proc.returncode == 3, f"rc {proc.returncode} {proc.stderr[-300:]}")
            reqs = rec.requests[before:]
            ec.check(f"{prog}: at least one upload reached the agent", len(reqs) >= 1, str(len(reqs)))
            if not reqs:
                continue
            req = reqs[-1]
            ec.check(f"{prog}: POST /profiling/v1/input",
                     req["method"] == "POST" and req["target"] == "/profiling/v1/input",
                     f'{req["method"]} {req["target"]}')
            parts, err = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
            ec.check(f"{prog}: multipart form parses", parts is not None, str(err))
            if parts is None:
                continue
            names = {p["name"]: p for p in parts}
            event = json.loads(names["event"]["data"]) if "event" in names else {}
            ec.check(f"{prog}: event names the service",
                     "service:arm-upload" in event.get("tags_profiler", ""), str(event)[:200])
            cpu = [p for p in parts if p["filename"] and p["filename"].endswith(".pprof")]
            ec.check(f"{prog}: a pprof is attached", len(cpu) >= 1, str([p["filename"] for p in parts]))
            if cpu:
                with tempfile.NamedTemporaryFile(suffix=".pb.gz") as f:
                    f.write(cpu[0]["data"])
                    f.flush()
                    ok = cpu[0]["data"][:2] == b"\x1f\x8b" and len(gzip.decompress(cpu[0]["data"])) > 0
                    top = subprocess.run(["go", "tool", "pprof", "-sample_index=cpu-time", "-top", f.name], capture_output=True,
                                         text=True)
                    ec.check(f"{prog}: the attached profile is gzip pprof with cpu-time (go tool pprof)",
                             ok and top.returncode == 0 and "Type: cpu-time" in top.stdout, top.stderr[-200:] + top.stdout[:300])
    finally:
        ec.stop(server, rec)


if __name__ == "__main__":
    main()
    ec.finish()
