#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/demo build/workloads/hotspots build/workloads/lock_known
"""Pyroscope conformance: the preloaded library's uploads from real workloads
against a receiver that enforces Pyroscope's 1.x and 2.x default rules
(conformance.py): every upload accepted, each kind filed under the standard
series name (process_cpu, wall, memory, mutex, block), no number labels, span
ids as 16 hex digits, sample limits kept by trimming into [trimmed] with one
log line, empty kinds not sent.  The receiver itself refuses the Datadog-style
profiles the exporter used to send."""
import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402
import export_common as ec  # noqa: E402

SO = os.environ.get("STOWAWAY_SO", os.path.join(ec.ROOT, "build", "libstowaway.so"))
WL = os.path.join(ec.ROOT, "build", "workloads")
check = ec.check


def run(args, env_extra, timeout=90):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("DD_") or k.startswith("STOWAWAY_"))}
    env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", DD_PROFILING_UPLOAD_PERIOD="1")
    env.update(env_extra)
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def with_receiver(version, args, env_extra, **rules):
    rec = cf.PyroscopeReceiver(cf.PyroscopeRules(version, now=time.time(), **rules))
    srv, port = ec.start_tcp(rec)
    env = {"STOWAWAY_PYROSCOPE_URL": "http://127.0.0.1:%d" % port}
    env.update(env_extra)
    proc = run(args, env)
    ec.stop(srv, rec)
    return proc, rec


def uploaded_labels(rec):
    """The labels of every sample the receiver accepted or refused."""
    for _, info in rec.results:
        p = info.get("profile")
        for s in (p["samples"] if p else []):
            yield cf.sample_labels(p, s)


def refusals(rec):
    return [(r["target"][:120], e) for r, (e, _) in zip(rec.requests, rec.results) if e]


# Awkward names on purpose: a service with ':' and a space, tags whose keys
# carry '.', '-' and a leading digit.
AWKWARD = {"DD_SERVICE": "shop api:v2", "DD_ENV": "prod", "DD_VERSION": "1.0",
           "DD_TAGS": "team.name:perf,zone-id:eu,9lives:cat,env:other"}

for version in ("1.x", "2.x"):
    tag = "pyroscope %s" % version
    # 1. A default run: cpu, wall, alloc, heap.
    proc, rec = with_receiver(version, [os.path.join(WL, "demo"), "2.5"], AWKWARD)
    check(f"{tag}: demo runs unchanged", proc.returncode == 0, proc.stderr[-300:])
    bad = refusals(rec)
    check(f"{tag}: default run uploads all accepted", rec.requests and not bad,
          "%d uploads, refused: %s" % (len(rec.requests), bad[:3]))
    metrics = [info.get("metric") for _, info in rec.results]
    check(f"{tag}: kinds filed as process_cpu, wall, memory",
          {"process_cpu", "wall", "memory"} <= set(metrics)
          and set(metrics) <= {"process_cpu", "wall", "memory"}, str(sorted(set(metrics))))
    check(f"{tag}: memory has alloc and in-use types",
          {tuple(i["types"]) for _, i in rec.results if i.get("metric") == "memory"}
          >= {("alloc_objects", "alloc_space"), ("inuse_objects", "inuse_space")},
          str({tuple(i["types"]) for _, i in rec.results if i}))
    check(f"{tag}: no number labels", all(i.get("number_labels") == 0 for _, i in rec.results),
          str([i.get("number_labels") for _, i in rec.results]))
    names = [r["target"] for r in rec.requests]
    check(f"{tag}: service name sanitized",
          all("name=shop_api_v2%7B" in t for t in names), names[0][:120] if names else "")
    thread_names = set()
    for labels in uploaded_labels(rec):
        if "thread_name" in labels:
            thread_names.add(labels["thread_name"])
        if any(k in labels for k in ("thread_id", "thread id")):
            thread_names.add("!thread id label")
    check(f"{tag}: thread_name labels, no thread id series",
          {"cpu-hash", "cpu-primes"} <= thread_names and "!thread id label" not in thread_names,
          str(sorted(thread_names)))
    check(f"{tag}: one log line at most", len([l for l in proc.stderr.splitlines() if l]) <= 1,
          proc.stderr[-300:])

    # 2. Hotspots: span_id, span_name and a custom label.
    proc, rec = with_receiver(version, [os.path.join(WL, "hotspots"), "4"],
                              {"DD_SERVICE": "hotspots", "STOWAWAY_PROFILES": "cpu,wall",
                               "STOWAWAY_CPU_HZ": "1000"})
    bad = refusals(rec)
    check(f"{tag}: hotspots uploads all accepted", rec.requests and not bad, str(bad[:3]))
    spans, endpoints, customers = set(), set(), set()
    for labels in uploaded_labels(rec):
        if "span_id" in labels:
            spans.add(labels["span_id"])
        endpoints.add(labels.get("span_name"))
        customers.add(labels.get("customer"))
    want_spans = {"%016x" % (1000 * (t + 1) + r) for t in range(4) for r in range(4)}
    check(f"{tag}: span_id is the local root span as 16 hex digits",
          spans and spans <= want_spans and all(i.get("bad_span_ids") == 0
                                                for _, i in rec.results), str(sorted(spans)[:4]))
    check(f"{tag}: trace endpoint as span_name, custom label kept",
          {"POST /checkout", "GET /search", "POST /login"} <= endpoints
          and {"acme", "globex"} <= customers, str(endpoints) + str(customers))

    # 3. Locks and exceptions: mutex and block, exceptions.
    proc, rec = with_receiver(version, [os.path.join(WL, "lock_known"), "1.5"],
                              {"DD_SERVICE": "locks", "STOWAWAY_PROFILES": "lock,exception"})
    bad = refusals(rec)
    metrics = sorted(i.get("metric") for _, i in rec.results)
    check(f"{tag}: lock uploads accepted as block and mutex",
          rec.requests and not bad and {"block", "mutex"} <= set(metrics), str(metrics) + str(bad))
    check(f"{tag}: the kind with no samples (exception) is not uploaded",
          "exceptions" not in metrics, str(metrics))

    # 4. Over the sample limit: merged, then the smallest into [trimmed].
    proc, rec = with_receiver(version, [os.path.join(WL, "hotspots"), "3"],
                              {"DD_SERVICE": "trim", "STOWAWAY_PROFILES": "cpu",
                               "STOWAWAY_CPU_HZ": "1000", "DD_PROFILING_UPLOAD_PERIOD": "60",
                               "STOWAWAY_PYROSCOPE_MAX_SAMPLES": "4",
                               "STOWAWAY_PYROSCOPE_THREAD_ID": "true"}, max_samples=4)
    bad = refusals(rec)
    trimmed = []
    for _, info in rec.results:
        p = info.get("profile")
        if p:
            funcs = cf.function_names(p)
            trimmed += [s for s in p["samples"] if any("[trimmed]" in funcs.get(l, [])
                                                       for l in s["locs"])]
    lines = [l for l in proc.stderr.splitlines() if "[trimmed]" in l]
    check(f"{tag}: over the limit: accepted with a [trimmed] stack",
          rec.requests and not bad and trimmed, str(bad[:2]) + " trimmed=%d" % len(trimmed))
    check(f"{tag}: trimming logged once", len(lines) == 1, proc.stderr[-400:])

# 5. The receiver refuses what the exporter used to send: a Datadog-style
#    file (wall-time, "thread name") posted as it was.
with tempfile.TemporaryDirectory() as out:
    run([os.path.join(WL, "demo"), "1"], {"STOWAWAY_OUTPUT_DIR": out, "DD_SERVICE": "old",
                                           "STOWAWAY_PROFILES": "wall"})
    files = glob.glob(os.path.join(out, "*.wall.*.pb.gz"))
    if check("datadog-style wall file written", files, str(os.listdir(out))):
        body = open(files[0], "rb").read()
        for version in ("1.x", "2.x"):
            errors, _ = cf.PyroscopeRules(version).check("/ingest?name=old%7B%7D&format=pprof",
                                                         None, body)
            check(f"pyroscope {version}: receiver refuses the old wall-time profile",
                  any("sample type contains -" in e for e in errors), str(errors))
        errors, _ = cf.PyroscopeRules("1.x").check(
            "/ingest?name=old%7B%7D&format=pprof", None, body)
        check("pyroscope 1.x: receiver refuses 'thread name'",
              any("thread name" in e for e in errors), str(errors))
ec.finish()
