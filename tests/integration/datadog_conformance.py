#!/usr/bin/env python3
# needs: build/libstowaway.so build/stowaway build/workloads/demo build/workloads/hello build/workloads/hotspots
"""Datadog conformance: uploads of the preloaded library against a loopback
agent and a loopback intake (TLS) that refuse what the agent and the intake
refuse (conformance.py); the
destination chosen as dd-trace chooses it (DD_API_KEY alone goes to the agent,
with one notice line; the default socket when present; a DD_TRACE_AGENT_URL
path kept as a prefix); Datadog-Entity-ID (ci-<container id> from the cgroup
file, in-<cgroup inode> in a cgroup namespace) and Datadog-External-Env;
built-in tags win over DD_TAGS; the timeline: at least 90% of CPU and wall
samples carry end_timestamp_ns inside their profile's period, in uploads and
files (go tool pprof and the stowaway CLI read them), none when switched
off; a tracer's runtime id adopted; endpoint_counts per endpoint."""
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402
import export_common as ec  # noqa: E402

SO = os.environ.get("STOWAWAY_SO", os.path.join(ec.ROOT, "build", "libstowaway.so"))
WL = os.path.join(ec.ROOT, "build", "workloads")
CLI = os.path.join(ec.ROOT, "build", "stowaway")
check = ec.check
CID = "8c046cb0b72cd4c99f51b5591cd5b095967f58ee003710a45280c28ee1a9c7fa"


def run(args, env_extra, timeout=90, prefix=()):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("DD_") or k.startswith("STOWAWAY_"))}
    env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", DD_PROFILING_UPLOAD_PERIOD="1",
               STOWAWAY_AGENT_SOCKET="/nonexistent/apm.socket")
    env.update(env_extra)
    return subprocess.run(list(prefix) + args, env=env, capture_output=True, text=True,
                          timeout=timeout)


def all_ok(reqs, prefix="", require_entity=True):
    bad, events = [], []
    for r in reqs:
        errors, event = cf.check_datadog_agent(r, prefix, require_entity)
        if errors:
            bad.append(errors)
        events.append(event)
    return bad, events


def profiles_of(req):
    parts, _ = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
    by = {p["name"]: p for p in parts or []}
    return cf.decode_pprof(gzip.decompress(by["profile.pprof"]["data"]))


def timeline_share(p):
    """(samples with CPU or wall values, of those with a timestamp in the period)."""
    st = p["strings"]
    types = [st[t] for t, _ in p["sample_type"]]
    timed = [i for i, t in enumerate(types) if t in ("cpu-time", "wall-time")]
    lo, hi = p["time_nanos"], p["time_nanos"] + p["duration_nanos"]
    total = inside = 0
    for s in p["samples"]:
        if not any(s["values"][i] for i in timed):
            continue
        total += 1
        ts = cf.sample_labels(p, s).get("end_timestamp_ns")
        if isinstance(ts, int) and lo <= ts <= hi:
            inside += 1
    return total, inside


tmp = tempfile.mkdtemp(prefix="stowaway-dd-")

# 1. Only DD_API_KEY: the agent's default socket, the key never sent, one notice.
sock = os.path.join(tmp, "apm.socket")
rec = ec.Recorder([200])
srv = ec.start_unix(rec, sock)
proc = run([os.path.join(WL, "demo"), "2"],
           {"DD_API_KEY": "k-never-sent", "STOWAWAY_AGENT_SOCKET": sock,
            "STOWAWAY_CGROUP_FILE": os.path.join(tmp, "cgroup")},
           )
ec.stop(srv, rec)
notice = [l for l in proc.stderr.splitlines() if "DD_PROFILING_AGENTLESS" in l]
check("api key only: profiles go to the agent's default socket", len(rec.requests) >= 2,
      "%d uploads; %s" % (len(rec.requests), proc.stderr[-300:]))
check("api key only: the key never reaches the agent",
      all(b"k-never-sent" not in r["body"] and ec.header(r, "DD-API-KEY") is None
          for r in rec.requests))
check("api key only: one notice line at start", len(notice) == 1 and notice[0].startswith(
    "stowaway: ") and sock in notice[0], proc.stderr[-400:])

# 2. Entity id from a container's cgroup file, external env, a path prefix,
#    DD_TAGS duplicates of built-in tags, the timeline in every upload.
with open(os.path.join(tmp, "cgroup"), "w") as f:
    f.write("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-%s.scope\n" % CID)
rec = ec.Recorder([200])
srv, port = ec.start_tcp(rec)
proc = run([os.path.join(WL, "demo"), "3"],
           {"DD_TRACE_AGENT_URL": "http://127.0.0.1:%d/dd/proxy/" % port, "DD_ENV": "prod",
            "DD_VERSION": "7", "DD_TAGS": "env:dup,version:dup,service:dup,team:a",
            "DD_SERVICE": "conf", "DD_EXTERNAL_ENV": "it-false,cn-app,pu-abc",
            "STOWAWAY_CGROUP_FILE": os.path.join(tmp, "cgroup")})
ec.stop(srv, rec)
bad, events = all_ok(rec.requests, prefix="/dd/proxy")
check("agent: uploads accepted (prefix kept, entity id, multipart, event)",
      len(rec.requests) >= 3 and not bad, "%d uploads; %s" % (len(rec.requests), bad[:2]))
check("agent: Datadog-Entity-ID is ci-<container id>",
      all(ec.header(r, "Datadog-Entity-ID") == "ci-" + CID
          and ec.header(r, "Datadog-Container-ID") == CID for r in rec.requests))
check("agent: Datadog-External-Env from DD_EXTERNAL_ENV",
      all(ec.header(r, "Datadog-External-Env") == "it-false,cn-app,pu-abc"
          for r in rec.requests))
tags = [dict(t.split(":", 1) for t in e["tags_profiler"].split(",")) for e in events if e]
check("agent: built-in tags win over DD_TAGS",
      tags and all(t["env"] == "prod" and t["version"] == "7" and t["service"] == "conf"
                   and t["team"] == "a" for t in tags), str(tags[:1]))
shares = [timeline_share(profiles_of(r)) for r in rec.requests]
total, inside = sum(t for t, _ in shares), sum(i for _, i in shares)
check("timeline: >= 90% of CPU and wall samples carry end_timestamp_ns in their period",
      total > 50 and inside >= 0.9 * total, "%d of %d" % (inside, total))
print("  timeline: %d of %d CPU/wall samples timestamped inside their period" % (inside, total))

# 3. Off switch.
rec = ec.Recorder([200])
srv, port = ec.start_tcp(rec)
run([os.path.join(WL, "demo"), "1.5"], {"DD_TRACE_AGENT_URL": "http://127.0.0.1:%d" % port,
                                       "DD_PROFILING_TIMELINE_ENABLED": "false",
                                       "STOWAWAY_CGROUP_FILE": os.path.join(tmp, "cgroup")})
ec.stop(srv, rec)
shares = [timeline_share(profiles_of(r)) for r in rec.requests]
check("timeline off: no sample carries end_timestamp_ns",
      rec.requests and sum(t for t, _ in shares) > 0 and sum(i for _, i in shares) == 0,
      str(shares))

# 4. In a cgroup namespace without a container id: in-<inode>.
if shutil.which("unshare") and os.geteuid() == 0:
    rec = ec.Recorder([200])
    srv, port = ec.start_tcp(rec)
    probe = subprocess.run(["unshare", "--cgroup", "sh", "-c", "cat /proc/self/cgroup"],
                           capture_output=True, text=True)
    # Every allocation sampled: hello lives a few milliseconds, and a process
    # without any sample uploads nothing at its exit.
    proc = run([os.path.join(WL, "hello"), "x", "0"],
               {"DD_TRACE_AGENT_URL": "http://127.0.0.1:%d" % port, "STOWAWAY_ALLOC_SAMPLE_BYTES": "1"},
               prefix=("unshare", "--cgroup"))
    ec.stop(srv, rec)
    node = None
    for line in probe.stdout.splitlines():
        _, ctl, path = line.split(":", 2)
        if "memory" in ctl.split(","):
            node = os.path.join("/sys/fs/cgroup/memory", path.lstrip("/"))
            break
        if ctl == "":
            node = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
    want = "in-%d" % os.stat(node).st_ino if node and os.path.exists(node) else None
    got = [ec.header(r, "Datadog-Entity-ID") for r in rec.requests]
    check("cgroup namespace: Datadog-Entity-ID is in-<inode of the cgroup directory>",
          want and got and all(g == want for g in got), "%s vs %s" % (got, want))
else:
    check("cgroup namespace test needs root and unshare", False, "not root or no unshare")

# 5. Hotspots: the tracer's runtime id and endpoint_counts.
rec = ec.Recorder([200])
srv, port = ec.start_tcp(rec)
rid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
proc = run([os.path.join(WL, "hotspots"), "5"],
           {"DD_TRACE_AGENT_URL": "http://127.0.0.1:%d" % port, "HOTSPOTS_RUNTIME_ID": rid.upper(),
            "STOWAWAY_CGROUP_FILE": os.path.join(tmp, "cgroup"), "DD_PROFILING_UPLOAD_PERIOD": "60"})
ec.stop(srv, rec)
bad, events = all_ok(rec.requests)
check("hotspots: uploads accepted", rec.requests and not bad, str(bad[:2]))
check("hotspots: stowaway_set_runtime_id accepted and reported",
      "set_runtime_id=0" in proc.stdout and ("runtime_id=" + rid) in proc.stdout, proc.stdout[-200:])
rids = {dict(t.split(":", 1) for t in e["tags_profiler"].split(",")).get("runtime-id")
        for e in events if e}
check("hotspots: uploads carry the adopted runtime id", rids == {rid}, str(rids))
want = {}
for line in proc.stdout.splitlines():
    m = re.match(r"request \d+ \d+ (\w+)", line)
    if m:
        ep = {"checkout": "POST /checkout", "search": "GET /search", "login": "POST /login"}
        want[ep[m.group(1)]] = want.get(ep[m.group(1)], 0) + 1
got = {}
for e in events:
    for k, v in (e or {}).get("endpoint_counts", {}).items():
        got[k] = got.get(k, 0) + v
check("hotspots: endpoint_counts count every request per endpoint", got == want and want,
      "%s vs %s" % (got, want))

# 6. Agentless, only when asked: the intake's rules on real uploads.
import export_tls as tls  # noqa: E402
try:
    tls.make_ca(tmp, "ca")
    tls.make_leaf(tmp, "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
    rec = ec.Recorder([202])
    srv, port = ec.start_tls(rec, tls.context(tmp, "localhost"))
    proc = run([os.path.join(WL, "demo"), "1.5"],
               {"DD_PROFILING_AGENTLESS": "true", "DD_API_KEY": tls.API_KEY,
                "STOWAWAY_INTAKE_URL": "https://localhost:%d/api/v2/profile" % port,
                "STOWAWAY_CA_FILE": os.path.join(tmp, "ca.crt")})
    ec.stop(srv, rec)
    bad = [cf.check_datadog_intake(r, tls.API_KEY)[0] for r in rec.requests]
    check("intake: DD_PROFILING_AGENTLESS=true uploads accepted by the intake's rules",
          len(rec.requests) >= 2 and not any(bad), "%d uploads; %s %s" % (
              len(rec.requests), [b for b in bad if b][:2], proc.stderr[-300:]))
except (OSError, subprocess.CalledProcessError) as e:
    check("intake: test CA generated", False, str(e))

# 7. Files on disk carry the timeline; go tool pprof and the CLI read them.
with tempfile.TemporaryDirectory() as out:
    run([os.path.join(WL, "demo"), "2"], {"STOWAWAY_OUTPUT_DIR": out,
                                          "DD_PROFILING_UPLOAD_PERIOD": "60"})
    files = sorted(glob.glob(os.path.join(out, "*.cpu.*.pb.gz")) +
                   glob.glob(os.path.join(out, "*.wall.*.pb.gz")))
    total = inside = 0
    for path in files:
        t, i = timeline_share(cf.decode_pprof(gzip.decompress(open(path, "rb").read())))
        total, inside = total + t, inside + i
    check("files: >= 90% of CPU and wall samples timestamped in their period",
          files and total > 50 and inside >= 0.9 * total, "%d of %d" % (inside, total))
    print("  files: %d of %d CPU/wall samples timestamped inside their period" % (inside, total))
    ok = bool(files)
    for path in files:
        r = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True)
        ok = ok and r.returncode == 0 and "end_timestamp_ns" in r.stdout
    check("files: go tool pprof reads them (end_timestamp_ns shown)", ok)
    r = subprocess.run([CLI, "report", out], capture_output=True, text=True)
    check("files: stowaway report reads them", r.returncode == 0 and "hash_block" in r.stdout,
          r.stderr[-300:])
ec.finish()
