#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/libotel_ctx.so build/workloads/musl/libotel_ctx.so build/workloads/otel_dlopen build/workloads/otel_dlopen-musl build/workloads/otel_writer build/workloads/otel_writer-lib build/workloads/otel_writer-lib-musl build/workloads/otel_writer-musl
"""OpenTelemetry thread context (OTEP 4947) without our API: build/workloads/
otel_writer* publish `otel_thread_ctx_v1` records (from the executable or
from a library, glibc and musl) while switching spans every ~1 ms, and write
the truth of every span (ids, CPU, sleep).  Checks, from `go tool pprof -raw`:
every CPU, wall and allocation sample taken in a span's own code carries
exactly that span (span id number and trace_id string; a wrong parity, a
mismatched trace id or another thread's span would be a stale or torn read),
samples between spans carry none, the span's attributes are named by the
process context's key map (OTEP 4719), and the labelled share of CPU time
agrees with the truth.  (Wall time per span is not compared: a wall sample weighs
the time since the thread's previous one, which straddles spans ~1 ms long.)"""
import glob
import os
import subprocess
import tempfile
import pprof_raw
from checks import check, check_terse, finish

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
SECONDS = 2.5


def parse_raw(path):
    return pprof_raw.samples(path, plain_names=True)


def read_truth(path):
    spans, threads = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "thread":
                threads[int(parts[1])] = int(parts[2])
            else:
                spans[int(parts[1])] = (parts[2], int(parts[3]), int(parts[4]))
    return spans, threads


def where(stack, names):
    """The first of `names` found in the stack (leaf first), or None."""
    for fn in stack:
        if fn in names:
            return fn
    return None


def label_problem(labels, spans, tid_of_thread):
    """Why a sample's OTel labels are wrong, or None."""
    if "span id" not in labels or "trace_id" not in labels:
        return "no span"
    span = int(labels["span id"])
    if span not in spans:
        return f"unknown span {span}"
    if spans[span][0] != labels["trace_id"]:
        return f"torn: span {span} with trace {labels['trace_id']}"
    thread = span >> 40
    tid = labels.get("thread id")
    if tid_of_thread.setdefault(thread, tid) != tid:
        return f"span {span} of thread {thread} on tid {tid}"
    # Attributes (once the process context's key map is known): the span's own.
    k = (span & ((1 << 40) - 1)) - 1
    if ("http.route" in labels or "worker" in labels) and (
            labels.get("http.route") != f"/r{k % 3}" or labels.get("worker") != f"w{thread - 1}"):
        return f"attributes of span {span}: {labels.get('http.route')}, {labels.get('worker')}"
    return None


def span_index(labels):
    return (int(labels["span id"]) & ((1 << 40) - 1)) - 1


for prog in ["otel_writer", "otel_writer-lib", "otel_writer-musl", "otel_writer-lib-musl"]:
    with tempfile.TemporaryDirectory() as out:
        truth_path = os.path.join(out, "truth.txt")
        env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   DD_SERVICE="otel", STOWAWAY_PROFILES="cpu,wall,alloc", STOWAWAY_CPU_HZ="1000",
                   STOWAWAY_WALL_HZ="200", STOWAWAY_ALLOC_SAMPLE_BYTES="32768",
                   STOWAWAY_LOG_LEVEL="debug")
        proc = subprocess.run([os.path.join(WL, prog), str(SECONDS), truth_path], env=env,
                              capture_output=True, text=True, timeout=60)
        check_terse(f"{prog}: runs with the library", proc.returncode == 0, proc.stderr[-300:])
        check_terse(f"{prog}: the variable is found in static TLS",
              "reading otel_thread_ctx_v1 from" in proc.stderr, proc.stderr[-300:])
        if proc.returncode != 0:
            continue
        spans, threads = read_truth(truth_path)
        tid_of_thread = {}

        cpu = parse_raw(glob.glob(os.path.join(out, "*.cpu.*.pb.gz"))[0])
        in_span = [(v, s, l) for v, s, l in cpu if where(s, ("burn_even", "burn_odd", "burn_gap"))]
        check(f"{prog}: CPU samples in the writer's code", len(in_span) >= 40, len(in_span))
        wrong = []
        for v, s, l in in_span:
            fn = where(s, ("burn_even", "burn_odd", "burn_gap"))
            if fn == "burn_gap":
                if "span id" in l or "trace_id" in l or "http.route" in l:
                    wrong.append(("labelled between spans", l))
                continue
            why = label_problem(l, spans, tid_of_thread)
            if why is None and (span_index(l) % 2) != (fn == "burn_odd"):
                why = f"stale: {fn} under span {l['span id']}"
            if why:
                wrong.append((why, l))
        check(f"{prog}: every CPU sample carries exactly its active span (or none between spans)",
              not wrong, f"{len(wrong)} of {len(in_span)}: {wrong[:3]}")
        spans_cpu = [l for v, s, l in in_span if "span id" in l]
        with_attrs = [l for l in spans_cpu if "http.route" in l]
        # The key map is published by main() after we start and found within
        # a second of the first record with attributes.
        check(f"{prog}: span attributes named by the process context's key map",
              len(with_attrs) >= 0.1 * len(spans_cpu) and len(with_attrs) > 0,
              f"{len(with_attrs)} of {len(spans_cpu)} span samples carry http.route/worker")
        workers = [(v, s, l) for v, s, l in cpu if "work" in s]
        total_cpu = sum(v[1] for v, s, l in workers)
        labelled_cpu = sum(v[1] for v, s, l in workers if "span id" in l)
        truth_share = sum(c for _, c, _ in spans.values()) / max(1, sum(threads.values()))
        share = labelled_cpu / max(1, total_cpu)
        # A share estimated from weighted samples: four standard errors over
        # the effective number of samples, (sum w)^2 / sum w^2.  Under load
        # the kernel sends CPU-timer signals late and one signal carries
        # several periods (overruns), so the weights vary and the samples
        # count for fewer than their number (a row of c samples of total w
        # counts as c samples of w / c each).
        sum_w2 = sum(v[1] * v[1] / max(1, v[0]) for v, s, l in workers)
        n_eff = total_cpu * total_cpu / sum_w2 if sum_w2 else 0
        tol = max(0.06, 4 * (truth_share * (1 - truth_share) / max(1, n_eff)) ** 0.5)
        check(f"{prog}: labelled share of CPU time matches the truth",
              abs(share - truth_share) < tol,
              f"{share:.3f} vs truth {truth_share:.3f} (margin {tol:.3f}, {len(workers)} rows, "
              f"{n_eff:.0f} effective samples)")

        wall = parse_raw(glob.glob(os.path.join(out, "*.wall.*.pb.gz"))[0])
        sleeps = [(v, s, l) for v, s, l in wall if "sleep_in_span" in s]
        check(f"{prog}: wall samples of the in-span sleep", len(sleeps) >= 20, len(sleeps))
        wrong = []
        for v, s, l in sleeps:
            why = label_problem(l, spans, tid_of_thread)
            if why is None and span_index(l) % 4 != 3:
                why = f"stale: sleep under span {l['span id']}"
            if why:
                wrong.append((why, l))
        check(f"{prog}: every wall sample of a sleep carries the sleeping span",
              not wrong, f"{len(wrong)} of {len(sleeps)}: {wrong[:3]}")
        alloc = parse_raw(glob.glob(os.path.join(out, "*.alloc.*.pb.gz"))[0])
        allocs = [(v, s, l) for v, s, l in alloc if where(s, ("alloc_in_span", "alloc_in_gap"))]
        wrong = []
        for v, s, l in allocs:
            if where(s, ("alloc_in_span", "alloc_in_gap")) == "alloc_in_gap":
                if "span id" in l:
                    wrong.append(("labelled between spans", l))
            else:
                why = label_problem(l, spans, tid_of_thread)
                if why:
                    wrong.append((why, l))
        check(f"{prog}: allocation samples carry their span (or none between spans)",
              len(allocs) >= 20 and not wrong, f"{len(wrong)} of {len(allocs)}: {wrong[:3]}")
# The variable in a library loaded with dlopen after the profiler started:
# read where the library's TLS is static (glibc's surplus), else skipped
# with one message (musl: the dlopening thread's copy is not in static TLS).
for prog, lib in (("otel_dlopen", "libotel_ctx.so"), ("otel_dlopen-musl", "musl/libotel_ctx.so")):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   STOWAWAY_PROFILES="cpu", STOWAWAY_CPU_HZ="1000", STOWAWAY_LOG_LEVEL="debug")
        proc = subprocess.run([os.path.join(WL, prog), os.path.join(WL, lib), "2"], env=env,
                              capture_output=True, text=True, timeout=60)
        check_terse(f"{prog}: runs with the library", proc.returncode == 0, proc.stderr[-300:])
        read = f"reading otel_thread_ctx_v1 from {os.path.join(WL, lib)}" in proc.stderr
        skipped = proc.stderr.count("lives in dynamic TLS; its thread context is not read")
        cpu = parse_raw(glob.glob(os.path.join(out, "*.cpu.*.pb.gz"))[0])
        burns = [(s, l) for v, s, l in cpu if where(s, ("burn_even", "burn_odd"))]
        taken = sum(v[0] for v, s, l in cpu if where(s, ("burn_even", "burn_odd")))
        labelled = [l for s, l in burns if "span id" in l]
        if read:
            wrong = [(s[0], l) for s, l in burns
                     if "span id" not in l or span_index(l) % 2 != (where(s, ("burn_even", "burn_odd")) == "burn_odd")]
            check(f"{prog}: the dlopened variable is read (static TLS): every sample carries its span",
                  taken >= 20 and not wrong, f"{len(wrong)} wrong of {len(burns)}: {wrong[:2]}")
        else:
            check(f"{prog}: the dlopened variable in dynamic TLS is skipped, said once, nothing labelled",
                  skipped == 1 and not labelled and taken >= 20,
                  f"{skipped} messages, {len(labelled)} labelled of {taken} samples")
        print(f"INFO {prog}: {'static TLS, read' if read else 'dynamic TLS, skipped'}")

# Both an API context and an OpenTelemetry record: the API's ids win.
with tempfile.TemporaryDirectory() as out:
    truth_path = os.path.join(out, "truth.txt")
    env = dict(os.environ, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               DD_SERVICE="otel", STOWAWAY_PROFILES="cpu", STOWAWAY_CPU_HZ="1000",
               OTEL_WRITER_API="1")
    proc = subprocess.run([os.path.join(WL, "otel_writer"), "1.5", truth_path, "2"], env=env,
                          capture_output=True, text=True, timeout=60)
    check_terse("otel_writer with the API on thread 0: runs", proc.returncode == 0, proc.stderr[-300:])
    spans, _ = read_truth(truth_path)
    cpu = parse_raw(glob.glob(os.path.join(out, "*.cpu.*.pb.gz"))[0])
    api = [l for v, s, l in cpu if l.get("local root span id") == "1"]
    bad = [l for l in api if "trace_id" in l or int(l["span id"]) >= (1 << 40)]
    otel = [l for v, s, l in cpu if "trace_id" in l]
    check("API span ids win over the OpenTelemetry record on the thread that sets both",
          len(api) >= 10 and not bad and len(otel) >= 10 and
          all(int(l["span id"]) >> 40 == 2 for l in otel),  # thread 0's never
          f"{len(api)} API-labelled, {len(bad)} wrong, {len(otel)} OTel-labelled")
finish()
