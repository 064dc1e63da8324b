#!/usr/bin/env bash
# The library loads into every kind of process our users run, enabled and
# disabled, and never changes what the program prints or its exit code.
source "$(dirname "$0")/lib.sh"

# run_case NAME CMD...: compares stdout and exit status of a plain run with a
# preloaded-disabled and a preloaded-enabled run.
run_case() {
	local name="$1"
	shift
	local out="$TMP/$name"
	mkdir -p "$out/profiles"
	"$@" >"$out/plain.out" 2>"$out/plain.err"
	local rc_plain=$?
	LD_PRELOAD="$SO" "$@" >"$out/off.out" 2>"$out/off.err"
	local rc_off=$?
	DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$out/profiles" STOWAWAY_LOG_LEVEL=debug \
		LD_PRELOAD="$SO" "$@" >"$out/on.out" 2>"$out/on.err"
	local rc_on=$?
	check "$name: disabled: same output" cmp -s "$out/plain.out" "$out/off.out"
	check "$name: disabled: same exit code ($rc_plain)" test "$rc_plain" = "$rc_off"
	check "$name: disabled: silent on stderr" cmp -s "$out/plain.err" "$out/off.err"
	check "$name: enabled: same output" cmp -s "$out/plain.out" "$out/on.out"
	check "$name: enabled: same exit code ($rc_plain)" test "$rc_plain" = "$rc_on"
	if grep -q '^stowaway: \(error\|warning\)' "$out/on.err"; then
		fail "$name: enabled: no stowaway warning" "$(grep '^stowaway' "$out/on.err" | head -3)"
	else
		pass "$name: enabled: no stowaway warning"
	fi
	# The exit export ran in every process: it writes the kinds that have
	# samples (a process this short may have none of some, or of any).
	local exports written
	exports=$(grep -c '^stowaway: debug: export [0-9]*: ' "$out/on.err")
	written=$(ls "$out/profiles" | grep -c '\.[0-9]*\.[0-9a-f]*\.pb\.gz$')
	check "$name: enabled: the exit export ran ($exports exports, $written files written)" test "$exports" -ge 1
}

run_case glibc-c "$WL/hello" a 3
run_case musl-c "$WL/hello-musl" a 3
run_case cxx-exceptions "$WL/throw"
run_case fork-exec "$WL/forkexec"
run_case python3 python3 -c 'import sys, threading; t = threading.Thread(target=print, args=("py thread",)); t.start(); t.join(); print(sum(range(1000))); sys.exit(5)'
run_case bash bash -c 'x=$(echo sub); echo "bash $x"; exit 4'
finish
