#!/usr/bin/env bash
# make bench: runs every tests/bench/bench_*.sh; each prints "BENCH ..." lines
# with ratios against baselines measured in the same run (bench_programs.sh
# also prints a table).  BENCH=programs,cpu runs the scripts whose names
# contain one of the words; BENCH_QUICK=1 shortens every script (fewer
# repeats, less work per run: a smoke run in a few minutes, noisier).
set -u
cd "$(dirname "$0")/../.."
mkdir -p build/bench
if [ -n "${BENCH_QUICK:-}" ] && [ "$BENCH_QUICK" != 0 ]; then
	export BENCH_CPU_ROUNDS=${BENCH_CPU_ROUNDS:-3} BENCH_CPU_ITERS=${BENCH_CPU_ITERS:-150000000}
	export ALLOC_BENCH_REPS=${ALLOC_BENCH_REPS:-3} ALLOC_BENCH_STEADY_REPS=${ALLOC_BENCH_STEADY_REPS:-1}
	export ALLOC_BENCH_STEADY_SECONDS=${ALLOC_BENCH_STEADY_SECONDS:-9}
	export LOCK_BENCH_REPS=${LOCK_BENCH_REPS:-3} GZIP_BENCH_REPS=${GZIP_BENCH_REPS:-3}
	export BENCH_WALL_SECONDS=${BENCH_WALL_SECONDS:-2} BENCH_MEMGUARD_SECONDS=${BENCH_MEMGUARD_SECONDS:-2}
	export BENCH_SYMBOLIZE_REPS=${BENCH_SYMBOLIZE_REPS:-1} BENCH_SYMBOLIZE_CTOR_REPS=${BENCH_SYMBOLIZE_CTOR_REPS:-10}
	export BENCH_SYMBOLIZE_UNITS=${BENCH_SYMBOLIZE_UNITS:-6}
	export BENCH_STARTUP_REPS=${BENCH_STARTUP_REPS:-60}
fi
status=0
all_start=$(date +%s)
for b in tests/bench/bench_*.sh; do
	[ -x "$b" ] || continue
	name=$(basename "$b" .sh)
	if [ -n "${BENCH:-}" ]; then
		want=
		for w in ${BENCH//,/ }; do
			case "$name" in *"$w"*) want=1 ;; esac
		done
		[ -n "$want" ] || continue
	fi
	echo "== $name.sh (load $(cut -d' ' -f1-3 /proc/loadavg))"
	start=$(date +%s)
	if ! "$b" 2>build/bench/"$name".err; then
		echo "bench $name.sh failed:"
		tail -5 build/bench/"$name".err
		status=1
	fi
	echo "== $name.sh took $(($(date +%s) - start)) s"
done
echo "== make bench took $(($(date +%s) - all_start)) s"
exit "$status"
