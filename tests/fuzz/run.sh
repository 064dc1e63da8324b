#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: `short` (make test, 6 s each)
# or `long` (make fuzz, 10 min each).  Seeds: tests/fuzz/corpus/<target>/
# (crashes found earlier live there as regression inputs).
set -u
cd "$(dirname "$0")/../.."
mode="${1:-short}"
secs=6
[ "$mode" = long ] && secs=600
shopt -s nullglob
targets=()
for t in build/fuzz/fuzz_*; do
	case "$t" in *.*) continue ;; esac # logs and exit codes beside the binaries
	[ -x "$t" ] && targets+=("$t")
done
if [ "${#targets[@]}" -eq 0 ]; then
	echo "FAIL no fuzz target was built (make \$FUZZERS)"
	exit 1
fi
# One target per core at a time (each fuzzer is single-threaded); results
# are printed in target order.
jobs=$(nproc 2>/dev/null || echo 1)
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
run_one() {
	local t=$1 name corpus
	name=$(basename "$t")
	corpus="build/fuzz/corpus/$name"
	mkdir -p "$corpus"
	[ -d "tests/fuzz/corpus/$name" ] && cp -n tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null
	"$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		"$corpus" >"build/fuzz/$name.log" 2>&1
	echo $? >"build/fuzz/$name.rc"
}
running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	rm -f "build/fuzz/$(basename "$t").rc"
	run_one "$t" &
	running=$((running + 1))
done
wait
failed=0
for t in "${targets[@]}"; do
	name=$(basename "$t")
	if [ "$(cat "build/fuzz/$name.rc" 2>/dev/null)" = 0 ]; then
		echo "PASS $name ($secs s, $(grep -o 'stat::number_of_executed_units: [0-9]*' "build/fuzz/$name.log" | awk '{print $2}') runs)"
	else
		echo "FAIL $name"
		grep -A20 'ERROR: ' "build/fuzz/$name.log" | head -40
		failed=1
	fi
done
exit "$failed"
