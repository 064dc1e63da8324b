#!/usr/bin/env bash
# Compares `make bench` between two built trees (e.g. a worktree at an older
# commit and this one):
#   tests/bench/compare.sh BEFORE_DIR AFTER_DIR [bench ...]
# It first builds in both trees what the bench scripts run.  Every bench
# script named (default:
# cpu alloc lock wall encode gzip startup) runs ROUNDS times in each tree,
# interleaved and in alternating order (A B, B A, ...), so a machine whose
# load drifts moves both sides alike; each run's `uptime` is kept next to
# its output.  Every "BENCH name: metric = value" line yields the first number
# after "=" and each "(+x% word" in its text; the table gives each metric's
# median in both trees, the difference (percent points for % values) or
# ratio, and the spread over rounds.  Also: library and CLI size, stripped.
# Outputs land in COMPARE_OUT (build/bench/compare/; COMPARE_REPORT_ONLY=1
# prints the table of the last comparison there again).  Environment: ROUNDS
# (default 3) and each bench's own knobs (defaults here shorten bench_alloc's
# steady runs).
set -u
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_DIR AFTER_DIR [bench ...]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
shift 2
benches=${*:-cpu alloc lock wall encode gzip startup}
rounds=${ROUNDS:-3}
out=${COMPARE_OUT:-$(cd "$(dirname "$0")/../.." && pwd)/build/bench/compare}
export ALLOC_BENCH_REPS=${ALLOC_BENCH_REPS:-5} ALLOC_BENCH_STEADY_REPS=${ALLOC_BENCH_STEADY_REPS:-2}
export ALLOC_BENCH_STEADY_SECONDS=${ALLOC_BENCH_STEADY_SECONDS:-9}
export BENCH_STARTUP_REPS=${BENCH_STARTUP_REPS:-100}

size_line() { # tree label
	local t=$1 s ls cs
	s=$(mktemp)
	strip -o "$s" "$t/build/libstowaway.so" && ls=$(stat -c %s "$s")
	strip -o "$s" "$t/build/stowaway" && cs=$(stat -c %s "$s")
	rm -f "$s"
	echo "SIZE $2 library_stripped_bytes=$ls cli_stripped_bytes=$cs library_bytes=$(stat -c %s "$t/build/libstowaway.so") cli_bytes=$(stat -c %s "$t/build/stowaway")"
}
run_all() {
	rm -rf "$out" && mkdir -p "$out"
	# What the bench scripts run (those missing in a tree are skipped).
	for t in "$A" "$B"; do
		make -C "$t" -k -j2 --no-print-directory -s all build/workloads/bench_cpu_work-nofp \
			build/workloads/unwind_gcc_omit build/workloads/unwind_gcc_fp build/workloads/hello \
			build/workloads/alloc_bench build/workloads/lock_bench build/workloads/exception_bench \
			build/workloads/lock_forward.so build/workloads/wall_threads build/bench/bench_encode \
			build/tests/bench_gzip_driver >/dev/null 2>&1
	done
	{ size_line "$A" before; size_line "$B" after; } | tee "$out/sizes"

	for r in $(seq "$rounds"); do
		for b in $benches; do
			order="before after"
			[ $((r % 2)) -eq 0 ] && order="after before"
			for side in $order; do
				tree=$A
				[ "$side" = after ] && tree=$B
				f="$out/$b.$side.$r"
				echo "UPTIME start $(uptime)" >"$f"
				start=$(date +%s)
				(cd "$tree" && "tests/bench/bench_$b.sh") >>"$f" 2>"$f.err" || echo "FAILED $?" >>"$f"
				echo "UPTIME end $(uptime) seconds $(($(date +%s) - start))" >>"$f"
				echo "round $r $b $side: $(($(date +%s) - start)) s, $(grep -c '^BENCH' "$f") lines, load $(uptime | sed 's/.*average: //')" >&2
			done
		done
	done
}
[ -n "${COMPARE_REPORT_ONLY:-}" ] || run_all

python3 - "$out" "$rounds" $benches <<'EOF'
import os, re, statistics, sys

out, rounds, benches = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
num = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"

def parse(path):
    vals = {}
    for line in open(path):
        m = re.match(r"BENCH (.+?): (\S+) = (" + num + r")(%?)(.*)", line)
        if not m:
            continue
        name, metric, v, pct, rest = m.groups()
        key = f"{name if len(name) <= 40 else name[:37] + '...'}: {metric}"
        vals[key] = (float(v), pct == "%")
        for pv, word in re.findall(r"(" + num + r")% (\w+)", rest):
            if pv.startswith(("+", "-")):
                vals[f"{key} [{word}]"] = (float(pv), True)
    return vals

loads = []
rows = []
for b in benches:
    runs = {"before": [], "after": []}
    for side in runs:
        for r in range(1, rounds + 1):
            p = os.path.join(out, f"{b}.{side}.{r}")
            if os.path.exists(p):
                runs[side].append(parse(p))
                for line in open(p):
                    m = re.search(r"load average: ([\d.]+)", line)
                    if m:
                        loads.append(float(m.group(1)))
    keys = [k for k in runs["after"][0]] if runs["after"] else []
    for k in keys:
        a = [v[k][0] for v in runs["before"] if k in v]
        c = [v[k][0] for v in runs["after"] if k in v]
        if not a or not c:
            continue
        is_pct = runs["after"][0][k][1]
        ma, mc = statistics.median(a), statistics.median(c)
        if is_pct:
            change = f"{mc - ma:+.1f} pt"
        elif ma:
            change = f"x{mc / ma:.3f}"
        else:
            change = "n/a"
        spread = lambda xs: f"{min(xs):g}..{max(xs):g}"
        rows.append((k, f"{ma:g}{'%' if is_pct else ''}", f"{mc:g}{'%' if is_pct else ''}", change,
                     spread(a), spread(c)))

w = max(len(r[0]) for r in rows) if rows else 10
print(f"{'metric':<{w}}  {'before':>10}  {'after':>10}  {'change':>9}  spread before | after")
for r in rows:
    print(f"{r[0]:<{w}}  {r[1]:>10}  {r[2]:>10}  {r[3]:>9}  {r[4]} | {r[5]}")
for line in open(os.path.join(out, "sizes")):
    print(line.rstrip())
if loads:
    print(f"load average (1 min) over the runs: median {statistics.median(loads):.2f}, "
          f"range {min(loads):.2f}..{max(loads):.2f} on {os.cpu_count()} CPUs")
EOF
