#!/usr/bin/env bash
# make bench: runs every tests/bench/bench_*.sh; each prints "BENCH ..." lines
# with ratios against baselines measured in the same run.
set -u
cd "$(dirname "$0")/../.."
mkdir -p build/bench
status=0
for b in tests/bench/bench_*.sh; do
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	if ! "$b" 2>build/bench/"$(basename "$b" .sh)".err; then
		echo "bench $(basename "$b") failed:"
		tail -5 build/bench/"$(basename "$b" .sh)".err
		status=1
	fi
done
exit "$status"
