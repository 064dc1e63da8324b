#!/usr/bin/env bash
# Samples known call chains with SIGPROF in test programs built six ways
# (gcc/musl/g++, with and without frame pointers), unwinds in the signal
# handler and checks the symbolized stacks (tests/workloads/unwind_driver.c).
# Relays the programs' PASS/FAIL/BENCH lines; a program that dies counts as FAIL.
set -u
cd "$(dirname "$0")/../.."
dir=build/workloads
failed=0
run() {
	local label="$1" bin="$2"
	shift 2
	if [ ! -x "$bin" ]; then
		echo "FAIL $label missing $bin (make test-build)"
		failed=1
		return
	fi
	local out rc
	out=$(timeout 120 "$bin" "$label" "$@" 2>&1)
	rc=$?
	echo "$out" | grep -E '^(PASS|FAIL|BENCH|INFO) '
	if [ "$rc" -ne 0 ]; then
		echo "$out" | grep -q '^FAIL ' || echo "FAIL $label $1 exited with status $rc"
		failed=1
	fi
}
for variant in gcc_omit gcc_fp cxx_omit cxx_fp musl_omit musl_fp; do
	libc_flag=--libc-cfi
	case "$variant" in musl_*) libc_flag= ;; esac
	for mode in chain thread recursion signal plt vdso; do
		run "$variant" "$dir/unwind_$variant" "$mode" $libc_flag
	done
done
# Frame pointers only, in the builds that keep them.
for variant in gcc_fp musl_fp; do
	for mode in chain thread recursion; do
		run "${variant}_fponly" "$dir/unwind_$variant" "$mode" --fp-only
	done
done
exit "$failed"
