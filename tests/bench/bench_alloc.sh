#!/usr/bin/env bash
# Allocation profiler overhead: a malloc/free-heavy multi-threaded workload
# (build/workloads/alloc_bench) without the library, with it preloaded but
# off, with profiling on at the default rate (alloc+heap), with sampling so
# rare that only the unsampled path runs, and under heaptrack (same program,
# fewer pairs: it is much slower).  Process CPU time per malloc/free pair,
# the minimum of interleaved runs (the least disturbed by other load).  Each
# run lasts ALLOC_BENCH_SECONDS (default 1) so one-time costs (the first
# sample loads the unwinder's tables) do not pass for per-pair costs.  Prints "BENCH alloc: <metric> = <value> (...)".
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

# run NAME MIX ENV... : appends "cpu_ns wall_ns" per pair of one run to $tmp/NAME.MIX
run() {
	local name=$1 mix=$2
	shift 2
	env "$@" "$bin" "$threads" 1 "$mix" "$seconds" >"$tmp/out" 2>>"$tmp/err"
	awk '{print $6 / $2, $4 / $2}' "$tmp/out" >>"$tmp/$name.$mix"
}
# least ns per pair of column COL (1 cpu, 2 wall) over the runs in file NAME
per_pair() {
	sort -g -k"$2" "$tmp/$1" | awk -v c="$2" 'NR == 1 {printf "%.2f", $c}'
}
on=(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$tmp" STOWAWAY_PROFILES=alloc,heap LD_PRELOAD="$PWD/$so")
for mix in mixed small; do
	for _ in $(seq "$reps"); do
		run base "$mix"
		run off "$mix" LD_PRELOAD="$PWD/$so"
		run unsampled "$mix" "${on[@]}" STOWAWAY_ALLOC_SAMPLE_BYTES=1073741824
		run default "$mix" "${on[@]}"
	done
	base=$(per_pair "base.$mix" 1)
	for name in off unsampled default; do
		v=$(per_pair "$name.$mix" 1)
		eval "ns_$name=$v"
	done
	pct() { awk -v a="$1" -v b="$base" 'BEGIN{printf "%+.1f%%", (a/b-1)*100}'; }
	add() { awk -v a="$1" -v b="$base" 'BEGIN{printf "%+.2f", a-b}'; }
	echo "BENCH alloc: ${mix}_base_ns_per_pair = $base (no library; $threads threads making malloc/free pairs for $seconds s, process CPU time, least of $reps)"
	echo "BENCH alloc: ${mix}_off_added_ns_per_pair = $(add "$ns_off") (library preloaded, profiling off: $(pct "$ns_off"))"
	echo "BENCH alloc: ${mix}_unsampled_added_ns_per_pair = $(add "$ns_unsampled") (profiling on, 1 GiB sample interval so only the unsampled path runs: $(pct "$ns_unsampled"))"
	echo "BENCH alloc: ${mix}_default_slowdown = $(pct "$ns_default") (profiling on at the default 512 KiB rate, alloc+heap: $ns_default ns per pair, $(add "$ns_default") ns; target <= +5%)"
done

if command -v heaptrack >/dev/null 2>&1; then
	hpairs=$((pairs / 20))
	abs_bin="$PWD/$bin"
	(cd "$tmp" && heaptrack -o "$tmp/ht" "$abs_bin" "$threads" "$hpairs" mixed) >"$tmp/ht.out" 2>&1 || true
	# Wall time: heaptrack also works in a second process.
	ht=$(awk '$1 == "pairs" {printf "%.2f", $4 / $2}' "$tmp/ht.out")
	if [ -n "$ht" ]; then
		ours=$(per_pair default.mixed 2)
		echo "BENCH alloc: heaptrack_wall_ns_per_pair = $ht (heaptrack on the same program, $threads x $hpairs pairs: $(awk -v a="$ht" -v b="$ours" 'BEGIN{printf "%.1fx", a/b}') the wall time per pair of stowaway at the default rate, $ours ns)"
	else
		echo "BENCH alloc: heaptrack_wall_ns_per_pair = n/a (heaptrack failed: $(tail -1 "$tmp/ht.out"))"
	fi
else
	echo "BENCH alloc: heaptrack_wall_ns_per_pair = n/a (heaptrack not installed; see tests/deps/alloc.txt)"
fi
