#!/usr/bin/env bash
# Wall sampler cost: CPU time of our sampler thread (which serves the wall
# ticks, and its own 10-100 ms tick; idle otherwise), as % of one
# core and per tick, with 10, 100 and 1000 waiting host threads at the
# defaults (100 Hz, 32 threads per tick).  The threads are a mix: a quarter
# each in pthread_cond_wait and nanosleep loops (interposed), in a held
# pthread_mutex_lock and in raw futex waits that wake every 5 ms (not
# interposed: /proc/self/task/TID/syscall).  Target: < 1% at 100 threads.
set -u
cd "$(dirname "$0")/../.."
SO=build/libstowaway.so
DRIVER=build/workloads/wall_threads
SECONDS_RUN=${BENCH_WALL_SECONDS:-5}
if [ ! -x "$DRIVER" ] || [ ! -f "$SO" ]; then
	echo "bench_wall: $DRIVER or $SO missing (make bench builds them)" >&2
	exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for n in 10 100 1000; do
	line=$(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$out" STOWAWAY_PROFILES=wall \
		LD_PRELOAD="$SO" "$DRIVER" "$n" "$SECONDS_RUN" 2>/dev/null | grep '^wall_sampler_ns')
	set -- $line
	cpu=$2
	elapsed=$4
	if [ "$cpu" -lt 0 ]; then
		echo "bench_wall: no stowaway-sample thread with $n threads" >&2
		exit 1
	fi
	awk -v c="$cpu" -v e="$elapsed" -v n="$n" 'BEGIN {
		pct = 100 * c / e; ticks = e / 1e7;
		printf "BENCH wall_sampler_%d_threads: cpu_pct_one_core = %.2f (%.1f us per 10 ms tick; target < 1%% at 100 threads)\n", n, pct, c / ticks / 1000 }'
done
