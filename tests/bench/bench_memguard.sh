#!/usr/bin/env bash
# Memory guard cost: CPU time of the scheduler thread (which polls the
# cgroup's usage file) over a few seconds while the process holds memory
# far from the limit (10%: a poll every 250 ms) and near it (85%, past the
# 80% threshold, 5% below the next: polls every 50 ms), against the same thread with
# STOWAWAY_MEMORY_GUARD=false in the same run.  Needs root (it makes a
# 192 MiB cgroup, v2 or v1) and build/workloads/memleak.
set -u
cd "$(dirname "$0")/../.."
SO=$PWD/build/libstowaway.so
WL=$PWD/build/workloads/memleak
SECS=${BENCH_MEMGUARD_SECONDS:-4}
[ -x "$WL" ] && [ -f "$SO" ] || { echo "bench_memguard: $WL or $SO missing" >&2; exit 1; }
cg=""
v2=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
v1=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
if [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
	grep -qw memory "$v2/cgroup.subtree_control" || echo +memory >"$v2/cgroup.subtree_control"
	cg=$v2/stowaway-bench-$$ && mkdir "$cg" && echo 192M >"$cg/memory.max"
elif [ -n "$v1" ]; then
	cg=$v1/stowaway-bench-$$ && mkdir "$cg" && echo 192M >"$cg/memory.limit_in_bytes"
fi
[ -n "$cg" ] && [ -d "$cg" ] || { echo "bench_memguard: cannot make a memory cgroup" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"; rmdir "$cg" 2>/dev/null' EXIT

# Runs memleak hold MIB in the cgroup; prints the scheduler thread's CPU ns over SECS.
sched_ns() {
	local mib=$1 guard=$2
	(echo $BASHPID >"$cg/cgroup.procs"; exec env DD_PROFILING_ENABLED=true \
		STOWAWAY_OUTPUT_DIR="$out" STOWAWAY_MEMORY_GUARD="$guard" LD_PRELOAD="$SO" \
		"$WL" hold "$mib" $((SECS + 3)) >/dev/null 2>&1) &
	local pid=$!
	sleep 1.5
	local tid="" t
	for t in /proc/$pid/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = stowaway-sched ] && tid=$t
	done
	[ -n "$tid" ] || { echo -1; wait $pid; return; }
	local a b
	a=$(cut -d' ' -f1 "$tid/schedstat")
	sleep "$SECS"
	b=$(cut -d' ' -f1 "$tid/schedstat")
	wait $pid
	echo $((b - a))
}
for case in "far 19" "near 163"; do
	set -- $case
	on=$(sched_ns "$2" true)
	off=$(sched_ns "$2" false)
	awk -v on="$on" -v off="$off" -v s="$SECS" -v name="$1" -v mib="$2" 'BEGIN {
		printf "BENCH memguard_%s (%d MiB of 192): watcher us_cpu_per_s = %.1f (guard on %.1f, off %.1f us/s of the scheduler thread; %.4f%% of one core)\n",
			name, mib, (on - off) / s / 1000, on / s / 1000, off / s / 1000, (on - off) / s / 1e7 }'
done
