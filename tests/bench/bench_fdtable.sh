#!/usr/bin/env bash
# Descriptor system calls of a single-threaded program (write+read pair on a
# pipe, epoll_wait with timeout 0): without the library; without it but with
# one idle thread sharing the descriptor table (what the kernel charges every
# call while any other thread shares the table: it then takes a reference
# on the file each time); with one idle thread on a table of its own (the
# floor for any program with a second thread: libc's multi-threaded paths,
# e.g. cancellation around read and write); and preloaded with the CPU profile and with the
# default kinds, whose threads run on tables of their own.  The wall profile
# (a default kind) also interposes these calls.  FDTABLE_COMPARE_SO=path adds
# the same two preloaded runs with another build (before/after).
#
# Each configuration runs REPS times interleaved with the others; the median
# of the thread's CPU time per call counts.
set -eu
cd "$(dirname "$0")/../.."
so="$PWD/build/libstowaway.so"
drv=build/workloads/fd_calls
for f in "$so" "$drv"; do
	[ -e "$f" ] || make --no-print-directory -s "${f#"$PWD"/}" >&2
done
reps="${FDTABLE_BENCH_REPS:-7}"
calls="${FDTABLE_BENCH_CALLS:-1000000}"
if [ -n "${BENCH_QUICK:-}" ]; then
	reps=3
	calls=300000
fi
other="${FDTABLE_COMPARE_SO:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs="off thread private-thread cpu default"
[ -n "$other" ] && configs="$configs cpu-other default-other"

run() { # config
	local lib="$so"
	case "$1" in *-other) lib="$other" ;; esac
	case "$1" in
	off) "$drv" "$calls" ;;
	thread) "$drv" "$calls" thread ;;
	private-thread) "$drv" "$calls" private-thread ;;
	cpu*) DD_PROFILING_ENABLED=true STOWAWAY_PROFILES=cpu STOWAWAY_OUTPUT_DIR="$tmp/out" \
		DD_SERVICE=bench LD_PRELOAD="$lib" "$drv" "$calls" ;;
	default*) DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$tmp/out" DD_SERVICE=bench \
		LD_PRELOAD="$lib" "$drv" "$calls" ;;
	esac
}

for r in $(seq "$reps"); do
	for cfg in $configs; do
		run "$cfg" >>"$tmp/$cfg"
	done
	configs="${configs#* } ${configs%% *}" # rotate: a drifting load hits every configuration
done

median() { # config column
	awk -v c="$2" '{print $c}' "$tmp/$1" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
report() { # column name
	local line="" off
	off=$(median off "$1")
	for cfg in off thread private-thread cpu default ${other:+cpu-other default-other}; do
		line="$line $cfg $(median "$cfg" "$1")"
	done
	echo "$line" | awk -v n="$2" -v a="$off" '{
		printf "BENCH fdtable: %s_ns =", n
		for (i = 1; i < NF; i += 2)
			printf " %s %.1f (%+.1f%%)%s", $i, $(i + 1), ($(i + 1) / a - 1) * 100, i + 2 < NF ? "," : ""
		printf " (median of '"$reps"', thread CPU per call)\n" }'
}
report 2 write_read_pair
report 4 epoll_wait
