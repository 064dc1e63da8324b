#!/usr/bin/env bash
# Lock and exception profilers (#13): an uncontended pthread_mutex_lock/
# unlock loop and a throw/catch loop, without the library, with the library
# loaded but these profiles off, and with them on (default sampling rates).
# Each configuration runs REPS times interleaved with the others and the
# fastest run counts (thread CPU time; the machine is shared).
# Target: under 2% on the uncontended loop with the lock profile on.
set -eu
cd "$(dirname "$0")/../.."
so="$PWD/build/libstowaway.so"
lock=build/workloads/lock_bench
exc=build/workloads/exception_bench
for f in "$so" "$lock" "$exc"; do
	[ -e "$f" ] || make --no-print-directory -s "$f" >&2
done
reps="${LOCK_BENCH_REPS:-7}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # config program args...
	local cfg="$1"
	shift
	case "$cfg" in
	off) "$@" ;;
	loaded) LD_PRELOAD="$so" "$@" ;;
	on) DD_PROFILING_ENABLED=true STOWAWAY_PROFILES=lock,exception STOWAWAY_OUTPUT_DIR="$tmp" \
		DD_SERVICE=bench LD_PRELOAD="$so" "$@" ;;
	esac
}

best() { # name config program args... -> prints the minimum over reps
	sort -g "$tmp/$1.$2" | head -n1
}

for r in $(seq "$reps"); do
	for cfg in off loaded on; do
		run "$cfg" "$lock" 5000000 | awk '{print $2}' >>"$tmp/lock.$cfg"
		run "$cfg" "$exc" 100000 | awk '{print $2}' >>"$tmp/exc.$cfg"
	done
done

report() { # name unit label
	local off loaded on
	off=$(best "$1" off)
	loaded=$(best "$1" loaded)
	on=$(best "$1" on)
	awk -v n="$3" -v u="$2" -v a="$off" -v b="$loaded" -v c="$on" 'BEGIN {
		printf "BENCH %s: %s = %.2f without, %.2f loaded (profile off), %.2f profiled (%+.1f%% loaded, %+.1f%% profiled)\n",
			n, u, a, b, c, (b / a - 1) * 100, (c / a - 1) * 100 }'
}
report lock ns_per_lock_unlock_pair "uncontended mutex loop"
report exc ns_per_throw_catch "throw/catch loop"
