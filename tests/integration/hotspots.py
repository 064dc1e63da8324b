#!/usr/bin/env python3
"""Code hotspots: every sample of a request's work carries that request's
span ids, endpoint and custom label, no sample carries another request's,
idle samples carry none; `go tool pprof -tagfocus='span id=N'` isolates one
request; the same binary (weak API) runs unchanged without the library.
span_waits: 4 threads of 50 us requests that wait, then clear their span,
wall at 1000 Hz: every sample of the wait carries its own request's span,
though the sampler often reads a thread just as it leaves the wait (before
the context was read with the call still open, 2 to 10 of about 10,000
such samples had no span)."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import pprof_raw
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
KINDS = {"work_checkout": 0, "work_search": 1, "work_login": 2}
ENDPOINTS = {0: "POST /checkout", 1: "GET /search", 2: "POST /login"}


def parse_raw(path, whole_stack=False):
    """Samples as (leaf function, labels dict) from `go tool pprof -raw`;
    with whole_stack, (list of functions leaf first, labels)."""
    return [[stack if whole_stack else stack[0], labels]
            for _, stack, labels in pprof_raw.samples(path)]


for prog in ["hotspots", "hotspots-musl"]:
    exe = os.path.join(WL, prog)
    plain = subprocess.run([exe, "3"], capture_output=True, text=True, timeout=60)
    check(f"{prog}: runs without the library (weak API)",
          plain.returncode == 0 and "api=no" in plain.stdout, plain.stdout[-100:])
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   DD_SERVICE="hotspots", STOWAWAY_CPU_HZ="1000",
                   STOWAWAY_ALLOC_SAMPLE_BYTES="65536")
        proc = subprocess.run([exe, "6"], env=env, capture_output=True, text=True, timeout=120)
        check(f"{prog}: runs with the library", proc.returncode == 0 and "api=yes" in proc.stdout,
              proc.stderr[-200:])
        m = re.search(r"runtime_id=([0-9a-f-]{36})", proc.stdout)
        check(f"{prog}: stowaway_runtime_id returns a UUID", m is not None)
        requests = {}
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts[0] == "request":
                requests[int(parts[2])] = (int(parts[1]), parts[3])
        files = glob.glob(os.path.join(out, "hotspots.*.cpu.*.pb.gz"))
        check(f"{prog}: one CPU profile", len(files) == 1)
        if not files:
            continue
        samples = parse_raw(files[0])
        work = [(f, l) for f, l in samples if f in KINDS]
        idle = [(f, l) for f, l in samples if f == "idle_spin"]
        check(f"{prog}: work samples were taken", len(work) >= 20, str(len(work)))
        tagged = [l for f, l in work if "span id" in l]
        check(f"{prog}: every work sample carries span ids", len(tagged) == len(work),
              f"{len(tagged)}/{len(work)}")
        wrong = []
        for f, l in work:
            if "span id" not in l:
                continue
            span, root = int(l["span id"]), int(l.get("local root span id", 0))
            want = requests.get(span)
            if (want is None or want[0] != root or span % 10 != KINDS[f]
                    or l.get("trace endpoint") != ENDPOINTS[KINDS[f]]
                    or l.get("customer") != ("acme" if KINDS[f] == 0 else "globex")):
                wrong.append((f, l))
        check(f"{prog}: each sample carries its own request's ids, endpoint and label",
              not wrong, str(wrong[:3]))
        leaked = [l for f, l in idle if "span id" in l or "trace endpoint" in l]
        check(f"{prog}: idle samples carry no request context", not leaked and len(idle) > 0,
              f"{len(leaked)} of {len(idle)}")
        # One request, isolated by go tool pprof's tag filter.
        counts = {}
        for f, l in work:
            counts[l.get("span id")] = counts.get(l.get("span id"), 0) + 1
        span = max((s for s in counts if s), key=lambda s: counts[s])
        kind_fn = [f for f, k in KINDS.items() if k == int(span) % 10][0]
        top = subprocess.run(["go", "tool", "pprof", "-top", f"-tagfocus=span id={span}",
                              files[0]], capture_output=True, text=True).stdout
        flat = [line.split()[-1] for line in top.splitlines()
                if re.match(r"\s+\d", line) and not line.split()[0].startswith("0")]
        # The request's own function leads; the allocator it calls may appear,
        # no other request kind's function may.
        others = [f for f in flat if f in KINDS and f != kind_fn]
        check(f"{prog}: -tagfocus='span id={span}' isolates {kind_fn}",
              flat[:1] == [kind_fn] and not others, str(flat))
        alloc_files = glob.glob(os.path.join(out, "hotspots.*.alloc.*.pb.gz"))
        allocs = [(f, l) for f, l in parse_raw(alloc_files[0]) if f in KINDS] if alloc_files else []
        check(f"{prog}: allocation samples in request work", len(allocs) >= 10, str(len(allocs)))
        bad = [(f, l) for f, l in allocs
               if "span id" not in l or int(l["span id"]) % 10 != KINDS[f]
               or int(l["span id"]) not in requests]
        check(f"{prog}: allocation samples carry their request's span ids", not bad, str(bad[:3]))
        wall_files = glob.glob(os.path.join(out, "hotspots.*.wall.*.pb.gz"))
        waits = [l for s, l in (parse_raw(wall_files[0], True) if wall_files else [])
                 if "wait_backend" in s]
        check(f"{prog}: wall samples of the backend wait", len(waits) >= 5, str(len(waits)))
        bad = [l for l in waits if "span id" not in l or int(l["span id"]) not in requests]
        check(f"{prog}: wall samples of a wait carry their request's span ids", not bad, str(bad[:3]))
        # Most are taken blocked in nanosleep; a few catch the thread running
        # inside wait_backend just before or after the system call.
        sleeping = sum(1 for l in waits if l.get("state") == "sleeping")
        check(f"{prog}: the wait is seen as sleeping", waits and sleeping >= 0.8 * len(waits),
              f"{sleeping} of {len(waits)}")
for prog in ["span_waits", "span_waits-musl"]:
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   DD_SERVICE="spanwaits", STOWAWAY_PROFILES="cpu,wall", STOWAWAY_WALL_HZ="1000")
        proc = subprocess.run([os.path.join(WL, prog), "2", "50"], env=env, capture_output=True,
                              text=True, timeout=60)
        check(f"{prog}: runs with the library", proc.returncode == 0 and "api=yes" in proc.stdout,
              proc.stderr[-200:])
        wall_files = glob.glob(os.path.join(out, "spanwaits.*.wall.*.pb.gz"))
        waits = [(stack, l) for stack, l in (parse_raw(wall_files[0], True) if wall_files else [])
                 if any(f.startswith("wait_backend") for f in stack)]
        # span = root * 1000000 + request number, root = 1000 + thread.
        bad = [l for _, l in waits
               if "span id" not in l or int(l["span id"]) // 1000000 != int(l.get("local root span id", 0))]
        check(f"{prog}: every wall sample of a short wait carries its request's span id",
              len(waits) >= 500 and not bad, f"{len(bad)} of {len(waits)} without: {bad[:2]}")
sys.exit(status())
