#!/usr/bin/env bash
# Runs every test program and integration script, counts "PASS"/"FAIL" lines,
# and ends with "N passed, N failed".  A program that exits non-zero without a
# FAIL line, or prints no PASS/FAIL line at all, counts as one failure.
# Usage: tests/run.sh [FILTER...]   (a test runs when its name, e.g.
# unit/test_rt or integration/cli_run.sh, contains any FILTER; none: all)
set -u
cd "$(dirname "$0")/.."
filters=("$@")
passed=0
failed=0
failures=()
failed_lines=()
logdir=build/test-logs
mkdir -p "$logdir"
timeout_s="${STOWAWAY_TEST_TIMEOUT:-600}"

run_one() {
	local name="$1"
	shift
	if [ "${#filters[@]}" -gt 0 ]; then
		local f hit=0
		for f in "${filters[@]}"; do
			case "$name" in *"$f"*) hit=1 ;; esac
		done
		[ "$hit" -eq 1 ] || return 0
	fi
	local log="$logdir/$(echo "$name" | tr '/ ' '__').log"
	local start=$SECONDS
	timeout --kill-after=10 "$timeout_s" "$@" >"$log" 2>&1
	local rc=$?
	local p f
	p=$(grep -c '^PASS ' "$log")
	f=$(grep -c '^FAIL ' "$log")
	grep -E '^(PASS|FAIL) ' "$log" | sed "s|^|[$name] |"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL [$name] exited with status $rc"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL [$name] ran no check"
		f=1
	fi
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		local first
		first=$(grep -m 3 -E '^FAIL ' "$log" | cut -c1-400 | sed "s|^|[$name] |")
		failed_lines+=("${first:-[$name] exited with status $rc}")
		echo "---- last lines of $log ----"
		tail -n 30 "$log"
		echo "----"
	fi
	echo "     [$name] $((SECONDS - start))s"
	passed=$((passed + p))
	failed=$((failed + f))
}

if [ "${STOWAWAY_LINT:-0}" = 1 ]; then
	run_one "lint" tests/lint.sh
fi
# Only binaries whose source still exists (a renamed test leaves its old
# binary behind in build/).
for bin in build/tests/test_*; do
	[ -x "$bin" ] && [ -f "tests/unit/$(basename "$bin").c" ] || continue
	run_one "unit/$(basename "$bin")" "$bin"
done
for bin in build/tests/san/test_*; do
	[ -x "$bin" ] && [ -f "tests/unit/$(basename "$bin").c" ] || continue
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		run_one "asan/$(basename "$bin")" "$bin"
done
for script in tests/integration/*.sh tests/integration/*.py; do
	[ -x "$script" ] || continue
	run_one "integration/$(basename "$script")" "$script"
done
# The field suite: Debian's own programs under the library (tests/field/).
for script in tests/field/*.sh tests/field/*.py; do
	[ -x "$script" ] || continue
	run_one "field/$(basename "$script")" "$script"
done
if [ -x tests/fuzz/run.sh ]; then
	run_one "fuzz/short" tests/fuzz/run.sh short
fi

if [ "${#failures[@]}" -gt 0 ]; then
	# Repeated last: a CI log may keep only its tail.
	printf '%s\n' "${failed_lines[@]}"
	echo "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
