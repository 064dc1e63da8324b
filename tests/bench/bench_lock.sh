#!/usr/bin/env bash
# Lock and exception profilers: an uncontended pthread_mutex_lock/
# unlock loop and a throw/catch loop, without the library, with the library
# loaded but these profiles off, and with them on (default sampling rates).
# The lock loop also runs under a minimal forwarding interposer
# (lock_forward.so: each entry point one indirect jump to the C library),
# the floor any LD_PRELOAD interposer pays before doing any work.
#
# The lock loop runs in two modes.  "mt" starts one idle thread first:
# glibc on x86-64 skips the lock prefix of its mutex operations while a
# process has a single thread, and the profiler's own thread turns that off,
# so only with a second thread in every configuration is our cost measured
# rather than glibc's single-thread shortcut ("st", reported for reference).
#
# Each configuration runs REPS times interleaved with the others and the
# fastest run counts (thread CPU time; the machine is shared).
# Target: under 2% on the uncontended loop with the lock profile on.
set -eu
cd "$(dirname "$0")/../.."
so="$PWD/build/libstowaway.so"
lock=build/workloads/lock_bench
floor="$PWD/build/workloads/lock_forward.so"
exc=build/workloads/exception_bench
for f in "$so" "$lock" "$floor" "$exc"; do
	[ -e "$f" ] || make --no-print-directory -s "${f#"$PWD"/}" >&2
done
reps="${LOCK_BENCH_REPS:-7}"
pairs="${LOCK_BENCH_PAIRS:-3000000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # config program args...
	local cfg="$1"
	shift
	case "$cfg" in
	off) "$@" ;;
	floor) LD_PRELOAD="$floor" "$@" ;;
	loaded) LD_PRELOAD="$so" "$@" ;;
	on) DD_PROFILING_ENABLED=true STOWAWAY_PROFILES=lock,exception STOWAWAY_OUTPUT_DIR="$tmp" \
		DD_SERVICE=bench LD_PRELOAD="$so" "$@" ;;
	esac
}

best() { # name config -> prints the minimum over reps
	sort -g "$tmp/$1.$2" | head -n1
}

for r in $(seq "$reps"); do
	for cfg in off floor loaded on; do
		for mode in mt st; do
			run "$cfg" "$lock" "$pairs" "$mode" | awk '{print $2}' >>"$tmp/lock-$mode.$cfg"
		done
		[ "$cfg" = floor ] && continue
		run "$cfg" "$exc" 100000 | awk '{print $2}' >>"$tmp/exc.$cfg"
	done
done

report_lock() { # name label
	local off floor loaded on
	off=$(best "$1" off)
	floor=$(best "$1" floor)
	loaded=$(best "$1" loaded)
	on=$(best "$1" on)
	awk -v n="$2" -v a="$off" -v f="$floor" -v b="$loaded" -v c="$on" 'BEGIN {
		printf "BENCH %s: ns_per_lock_unlock_pair = %.2f without, %.2f forwarding floor, %.2f loaded (profile off), %.2f profiled (%+.1f%% floor, %+.1f%% loaded, %+.1f%% profiled)\n",
			n, a, f, b, c, (f / a - 1) * 100, (b / a - 1) * 100, (c / a - 1) * 100 }'
}
report() { # name unit label
	local off loaded on
	off=$(best "$1" off)
	loaded=$(best "$1" loaded)
	on=$(best "$1" on)
	awk -v n="$3" -v u="$2" -v a="$off" -v b="$loaded" -v c="$on" 'BEGIN {
		printf "BENCH %s: %s = %.2f without, %.2f loaded (profile off), %.2f profiled (%+.1f%% loaded, %+.1f%% profiled)\n",
			n, u, a, b, c, (b / a - 1) * 100, (c / a - 1) * 100 }'
}
report_lock lock-mt "uncontended mutex loop, multi-threaded process"
report_lock lock-st "uncontended mutex loop, single-threaded process (glibc's shortcut off under the profiler)"
report exc ns_per_throw_catch "throw/catch loop"
