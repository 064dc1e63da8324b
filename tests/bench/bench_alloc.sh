#!/usr/bin/env bash
# Allocation profiler overhead: a malloc/free-heavy multi-threaded workload
# (build/workloads/alloc_bench: "mixed" and "small" do nothing but
# malloc/free pairs; "touched" also writes each new block, so allocation is
# about a fifth of its CPU time) without the library, with it preloaded but
# off, with profiling on at the default rate (alloc+heap), with sampling so
# rare that only the unsampled path runs, and under heaptrack (same program,
# fewer pairs: it is much slower).  Process CPU time per malloc/free pair,
# as the median of ratios to a baseline run interleaved with each.  Each run
# lasts ALLOC_BENCH_SECONDS (default 1) so one-time costs (the first sample
# loads the unwinder's tables) do not pass for per-pair costs; the
# default-settings runs are measured after ALLOC_BENCH_STEADY_WARMUP (6 s),
# once the overhead cap has measured and acted.  Prints "BENCH alloc: <metric> = <value> (...)".
set -eu
cd "$(dirname "$0")/../.."
bin=build/workloads/alloc_bench
so=${STOWAWAY_SO:-build/libstowaway.so}
[ -x "$bin" ] || make --no-print-directory -s "$bin" >&2 ||
	make --no-print-directory -s -f Makefile -f src/collect/alloc.mk "$bin" >&2
[ -f "$so" ] || make --no-print-directory -s "$so" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
threads=${ALLOC_BENCH_THREADS:-$(nproc 2>/dev/null || echo 2)}
pairs=${ALLOC_BENCH_PAIRS:-2000000}
seconds=${ALLOC_BENCH_SECONDS:-1}
reps=${ALLOC_BENCH_REPS:-7}

# run NAME MIX SECONDS ENV... : appends "cpu_ns wall_ns" per pair of one run
# to $tmp/NAME.MIX (after WARMUP seconds, when set)
run() {
	local name=$1 mix=$2 secs=$3 warm=${WARMUP:-0}
	shift 3
	env "$@" "$bin" "$threads" 1 "$mix" "$secs" $warm >"$tmp/out" 2>>"$tmp/err"
	awk '{print $6 / $2, $4 / $2}' "$tmp/out" >>"$tmp/$name.$mix"
}
# Median over rounds of NAME's CPU per pair divided by the same round's
# baseline: runs are interleaved, so a machine that drifts (other tenants,
# cache and page state; +-5% here between runs of the same program) moves
# both sides of each ratio together.
ratio() {
	paste "$tmp/$1" "$tmp/$2" | awk '{print $1 / $3}' | sort -g |
		awk '{r[NR] = $1} END {m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; printf "%+.1f%%", (m - 1) * 100}'
}
# median ns per pair (CPU) of the runs in file NAME
median_ns() {
	sort -g -k1 "$tmp/$1" | awk '{r[NR] = $1} END {printf "%.2f", r[int((NR + 1) / 2)]}'
}
on=(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$tmp" STOWAWAY_PROFILES=alloc,heap LD_PRELOAD="$PWD/$so")
steady=${ALLOC_BENCH_STEADY_SECONDS:-12}
steady_warmup=${ALLOC_BENCH_STEADY_WARMUP:-6} # the cap's first two 3 s windows
steady_reps=${ALLOC_BENCH_STEADY_REPS:-5}
for mix in mixed small touched; do
	for _ in $(seq "$reps"); do
		run base "$mix" "$seconds"
		run off "$mix" "$seconds" LD_PRELOAD="$PWD/$so"
		run unsampled "$mix" "$seconds" "${on[@]}" STOWAWAY_ALLOC_SAMPLE_BYTES=1073741824
		run uncapped "$mix" "$seconds" "${on[@]}" STOWAWAY_MAX_OVERHEAD_PCT=100
	done
	for _ in $(seq "$steady_reps"); do
		WARMUP=$steady_warmup run steadybase "$mix" "$steady"
		WARMUP=$steady_warmup run steady "$mix" "$steady" "${on[@]}"
	done
	echo "BENCH alloc: ${mix}_base_ns_per_pair = $(median_ns "base.$mix") (no library; $threads threads making malloc/free pairs for $seconds s, process CPU time, median of $reps)"
	echo "BENCH alloc: ${mix}_off_slowdown = $(ratio "off.$mix" "base.$mix") (library preloaded, profiling off: the cost of interposing malloc and free at all; median of $reps paired ratios)"
	echo "BENCH alloc: ${mix}_unsampled_slowdown = $(ratio "unsampled.$mix" "base.$mix") (profiling on, 1 GiB sample interval so only the unsampled paths run)"
	echo "BENCH alloc: ${mix}_default_rate_slowdown = $(ratio "uncapped.$mix" "base.$mix") (profiling on at the default 512 KiB rate, alloc+heap, overhead cap off: $(median_ns "uncapped.$mix") ns per pair; target <= +5%)"
	echo "BENCH alloc: ${mix}_default_settings_slowdown = $(ratio "steady.$mix" "steadybase.$mix") (alloc+heap with every default, the 2% overhead cap included, the $((steady - steady_warmup)) s after a $steady_warmup s warm-up, median of $steady_reps paired ratios)"
done

# One sample's cost with cold caches (alloc_cold: a sweep larger than a
# core's private caches between allocations, as a busy server's work between
# samples): every 64 KiB block sampled (4 KiB mean, probability 1 - e^-16),
# against the same program with the library loaded and off, so the
# difference is the sampled path alone; jemalloc's profiler on the same
# program at the same mean (lg_prof_sample:12) against jemalloc alone, when
# installed.  Medians of ALLOC_COLD_REPS interleaved runs.
cold=build/workloads/alloc_cold
[ -x "$cold" ] || make --no-print-directory -s "$cold" >&2
cold_rounds=${ALLOC_COLD_ROUNDS:-10000}
cold_reps=${ALLOC_COLD_REPS:-9}
jemalloc=${JEMALLOC_SO:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}
[ -f "$jemalloc" ] || jemalloc=
: >"$tmp/cold.ours"
: >"$tmp/cold.je"
for _ in $(seq "$cold_reps"); do
	off=$(env LD_PRELOAD="$PWD/$so" DD_PROFILING_ENABLED=false "$cold" "$cold_rounds")
	ours=$(env "${on[@]}" STOWAWAY_ALLOC_SAMPLE_BYTES=4096 STOWAWAY_MAX_OVERHEAD_PCT=100 "$cold" "$cold_rounds")
	echo "$ours $off" | awk '{print $1 - $2}' >>"$tmp/cold.ours"
	if [ -n "$jemalloc" ]; then
		je=$(env LD_PRELOAD="$jemalloc" "$cold" "$cold_rounds")
		je_prof=$(env LD_PRELOAD="$jemalloc" MALLOC_CONF=prof:true,lg_prof_sample:12 "$cold" "$cold_rounds" 2>/dev/null)
		echo "$je_prof $je" | awk '{print $1 - $2}' >>"$tmp/cold.je"
	fi
done
# median (first and third quartile) of the numbers in file NAME
spread() {
	sort -g "$tmp/$1" | awk '{r[NR] = $1} END {if (NR == 0) {print "n/a"; exit}
		printf "%.0f (%.0f..%.0f)", r[int((NR + 1) / 2)], r[int((NR + 3) / 4)], r[int((3 * NR + 3) / 4)]}'
}
echo "BENCH alloc: cold_sample_ns = $(spread cold.ours) (one allocation sample, alloc+heap, with cold caches: alloc_cold's 22-frame stacks from two paths, no frame pointers; ns of thread CPU over the library loaded and off, median and quartiles of $cold_reps)"
if [ -n "$jemalloc" ]; then
	echo "BENCH alloc: cold_sample_jemalloc_prof_ns = $(spread cold.je) (jemalloc's profiler on the same program at the same mean, over jemalloc alone)"
else
	echo "BENCH alloc: cold_sample_jemalloc_prof_ns = n/a (jemalloc not installed; see tests/deps/bench.txt)"
fi

if command -v heaptrack >/dev/null 2>&1; then
	hpairs=$((pairs / 20))
	abs_bin="$PWD/$bin"
	(cd "$tmp" && heaptrack -o "$tmp/ht" "$abs_bin" "$threads" "$hpairs" mixed) >"$tmp/ht.out" 2>&1 || true
	# Wall time: heaptrack also works in a second process.
	ht=$(awk '$1 == "pairs" {printf "%.2f", $4 / $2}' "$tmp/ht.out")
	if [ -n "$ht" ]; then
		ours=$(sort -g -k2 "$tmp/uncapped.mixed" | awk 'NR == 1 {printf "%.2f", $2}')
		echo "BENCH alloc: heaptrack_wall_ns_per_pair = $ht (heaptrack on the same program, $threads x $hpairs pairs: $(awk -v a="$ht" -v b="$ours" 'BEGIN{printf "%.1fx", a/b}') the wall time per pair of stowaway at the default rate, $ours ns)"
	else
		echo "BENCH alloc: heaptrack_wall_ns_per_pair = n/a (heaptrack failed: $(tail -1 "$tmp/ht.out"))"
	fi
else
	echo "BENCH alloc: heaptrack_wall_ns_per_pair = n/a (heaptrack not installed; see tests/deps/alloc.txt)"
fi
