#!/usr/bin/env bash
# CPU profiling overhead and fairness.
#
# A fixed amount of identical CPU work on 4 threads
# (build/workloads/bench_cpu_work-nofp: no frame pointers, so every sample
# unwinds with CFI) is run, in interleaved rounds, five ways:
#   base    no library
#   off     libstowaway.so preloaded, profiling disabled
#   cpu     profiling on, STOWAWAY_PROFILES=cpu, 100 Hz
#   all     profiling on, the default kinds (cpu, wall, alloc, heap)
#   gperf   gperftools' libprofiler.so, CPUPROFILE_FREQUENCY=100 (setitimer)
# Each run's CPU time (user+sys of the child, from wait4's rusage), the CPU
# time its worker threads report for themselves, and its wall time are
# compared with the base run of the same round; the median ratio and the
# spread (min..max) over rounds are printed.  Fairness: every thread does the
# same work in its own leaf function (hot_t0..hot_t3), so each should get a
# quarter of the samples; the largest relative deviation from that (and from
# the threads' true CPU shares) is printed for our profile and gperftools'.
# Unwind cost per sample comes from the unwinder's own benchmark driver
# (build/workloads/unwind_*, tests/workloads/unwind_driver.c).
set -eu
cd "$(dirname "$0")/../.."
so=${STOWAWAY_SO:-build/libstowaway.so}
work=build/workloads/bench_cpu_work-nofp
for t in "$so" "$work" build/workloads/unwind_gcc_omit build/workloads/unwind_gcc_fp; do
	[ -e "$t" ] || make --no-print-directory -s "$t" >&2
done
gperf=${GPERF_SO:-/usr/lib/x86_64-linux-gnu/libprofiler.so.0}
[ -e "$gperf" ] || { echo "missing $gperf (apt-get install libgoogle-perftools4)" >&2; exit 1; }

# The unwinder's cost per sample, measured by its own driver (not repeated here).
unwind_line() {
	local bin=$1 label=$2 flag=$3
	"$bin" "$label" chain "$flag" | awk -v k="$4" '/^BENCH unwind_/ {
		sub(/.*= /, ""); v = $1; $1 = ""
		printf "BENCH cpu: unwind_%s_ns_per_sample = %s (unwind_driver chain%s)\n", k, v, $0 }'
}
unwind_line build/workloads/unwind_gcc_omit gcc_omit --libc-cfi cfi
unwind_line build/workloads/unwind_gcc_fp gcc_fp --fp-only fp

SO="$PWD/$so" WORK="$PWD/$work" GPERF="$gperf" python3 - <<'EOF'
import glob, os, re, statistics, subprocess, tempfile, time

SO, WORK, GPERF = os.environ["SO"], os.environ["WORK"], os.environ["GPERF"]
THREADS = 4
ITERS = int(os.environ.get("BENCH_CPU_ITERS", "300000000"))
ROUNDS = int(os.environ.get("BENCH_CPU_ROUNDS", "5"))
tmp = tempfile.mkdtemp(prefix="bench_cpu.")

def env_for(kind, rnd):
    d = os.path.join(tmp, f"{kind}.{rnd}")
    os.makedirs(d)
    on = {"DD_PROFILING_ENABLED": "true", "STOWAWAY_OUTPUT_DIR": d, "LD_PRELOAD": SO,
          "DD_SERVICE": "benchcpu"}
    return d, {
        "base": {},
        "off": {"LD_PRELOAD": SO},
        "cpu": dict(on, STOWAWAY_PROFILES="cpu"),
        "all": on,
        "gperf": {"CPUPROFILE": os.path.join(d, "gperf.prof"), "LD_PRELOAD": GPERF,
                  "CPUPROFILE_FREQUENCY": "100"},
    }[kind]

def run(kind, rnd):
    d, extra = env_for(kind, rnd)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "CPUPROFILE"))}
    env.update(extra)
    t0 = time.monotonic()
    p = subprocess.Popen([WORK, str(THREADS), str(ITERS)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{kind} run failed ({p.returncode}): {err[-300:]}")
    threads = [int(l.split()[3]) for l in out.splitlines() if l.startswith("thread ")]
    return {"cpu": ru.ru_utime + ru.ru_stime, "wall": wall, "threads_cpu": sum(threads) / 1e9,
            "per_thread": threads, "dir": d}

KINDS = ["base", "off", "cpu", "all", "gperf"]
results = {k: [] for k in KINDS}
for rnd in range(ROUNDS):
    order = KINDS[rnd % len(KINDS):] + KINDS[:rnd % len(KINDS)]  # rotate: no position bias
    for k in order:
        results[k].append(run(k, rnd))

def ratios(kind, metric):
    return [r[metric] / b[metric] for r, b in zip(results[kind], results["base"])]

def pct(x):
    return f"{(x - 1) * 100:+.2f}%"

base_cpu = statistics.median(r["cpu"] for r in results["base"])
base_wall = statistics.median(r["wall"] for r in results["base"])
print(f"BENCH cpu: base_cpu_s = {base_cpu:.3f} (no library: {THREADS} threads x {ITERS} iterations, "
      f"process CPU from wait4 rusage, median of {ROUNDS}; wall {base_wall:.3f}s)")
names = {"off": "preloaded, disabled", "cpu": "cpu profile only, 100 Hz",
         "all": "default kinds cpu+wall+alloc+heap", "gperf": "gperftools libprofiler.so, 100 Hz"}
for k in ["off", "cpu", "all", "gperf"]:
    for metric, what in [("cpu", "process CPU"), ("threads_cpu", "worker threads' own CPU"),
                         ("wall", "wall")]:
        rs = ratios(k, metric)
        print(f"BENCH cpu: {k}_{metric}_ratio = {statistics.median(rs):.4f} ({names[k]}: {what} "
              f"{pct(statistics.median(rs))} vs no library, median of {ROUNDS} rounds, "
              f"spread {pct(min(rs))}..{pct(max(rs))})")
ours = [a / b for a, b in zip(ratios("cpu", "cpu"), ratios("gperf", "cpu"))]
print(f"BENCH cpu: cpu_vs_gperf_cpu_ratio = {statistics.median(ours):.4f} (process CPU with our "
      f"cpu profile / with gperftools, same rounds, spread {min(ours):.4f}..{max(ours):.4f})")

# ---- fairness ----
def top_counts(args):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=200"] + args,
                         capture_output=True, text=True, timeout=120).stdout
    counts = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and re.fullmatch(r"hot_t\d", f[-1]):
            v = f[0]
            mult = 1000 if v.endswith("k") else 1
            counts[f[-1]] = float(v.rstrip("k")) * mult
    return counts

def fairness(kind, files_of):
    samples = {f"hot_t{i}": 0.0 for i in range(THREADS)}
    truth = [0] * THREADS
    for r in results[kind]:
        for path, args in files_of(r):
            for name, c in top_counts(args).items():
                if name in samples:
                    samples[name] += c
        truth = [a + b for a, b in zip(truth, r["per_thread"])]
    total = sum(samples.values())
    if total == 0:
        return None
    shares = [samples[f"hot_t{i}"] / total for i in range(THREADS)]
    true_shares = [t / sum(truth) for t in truth]
    dev_equal = max(abs(s * THREADS - 1) for s in shares)
    dev_true = max(abs(s / t - 1) for s, t in zip(shares, true_shares))
    return total, shares, dev_equal, dev_true, true_shares

def ours_files(r):
    return [(f, ["-sample_index=cpu-samples", f])
            for f in glob.glob(os.path.join(r["dir"], "benchcpu.*.cpu.*.pb.gz"))]

def gperf_files(r):
    f = os.path.join(r["dir"], "gperf.prof")
    return [(f, ["-sample_index=samples", WORK, f])] if os.path.exists(f) else []

for kind, files_of, label in [("cpu", ours_files, "stowaway per-thread CPU timers"),
                              ("gperf", gperf_files, "gperftools setitimer")]:
    f = fairness(kind, files_of)
    if f is None:
        print(f"BENCH cpu: {kind}_fairness = none (no samples found in the {label} profiles)")
        continue
    total, shares, dev_equal, dev_true, true_shares = f
    sh = " ".join(f"{100 * s:.1f}" for s in shares)
    tr = " ".join(f"{100 * s:.1f}" for s in true_shares)
    print(f"BENCH cpu: {kind}_fairness_max_dev_from_equal = {100 * dev_equal:.1f}% ({label}: "
          f"sample shares of threads doing equal work {sh}%, {total:.0f} samples over {ROUNDS} runs)")
    print(f"BENCH cpu: {kind}_fairness_max_dev_from_true = {100 * dev_true:.1f}% ({label}: "
          f"vs the threads' own CPU clocks {tr}%)")

# ---- the handler's cost in this workload, as the overhead probe measures it ----
d = os.path.join(tmp, "probe")
os.makedirs(d)
env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=d, LD_PRELOAD=SO,
           STOWAWAY_PROFILES="cpu", STOWAWAY_LOG_LEVEL="debug")
p = subprocess.run([WORK, str(THREADS), str(ITERS * 3)], env=env, capture_output=True, text=True)
wins = re.findall(r"our threads (\d+) us \+ recording samples (\d+) us, handler (\d+) us \((\d+) "
                  r"samples, delivery (\d+) ns each\), process (\d+) us", p.stderr)
if wins:
    thr, rec, hnd, n, dlv, proc = (sum(int(w[i]) for w in wins) for i in range(6))
    dlv = int(wins[-1][4])
    own = thr + rec + hnd
    print(f"BENCH cpu: handler_ns_per_sample = {1000 * hnd / max(n, 1):.0f} (measured in process by the "
          f"overhead probe: signal delivery {dlv} ns + time in the handler; recording "
          f"{1000 * rec / max(n, 1):.0f} ns more on the sampler thread; {n} samples)")
    print(f"BENCH cpu: probe_overhead_pct = {100 * own / max(proc - own, 1):.2f} (the overhead cap's "
          f"own estimate at 100 Hz, cpu only: our threads {thr} us + recording {rec} us + handler "
          f"{hnd} us per {proc} us of process CPU)")
else:
    print("BENCH cpu: handler_ns_per_sample = none (the run was too short for an overhead window)")
subprocess.run(["rm", "-rf", tmp])
EOF
