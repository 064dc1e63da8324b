#!/usr/bin/env bash
# needs: build/libstowaway.so build/workloads/hello
# Malformed settings give one clear "stowaway:" line and a safe fallback; the
# program's output and exit code never change.
source "$(dirname "$0")/lib.sh"

expect_warning() { # NAME PATTERN ENV...
	local name="$1" pattern="$2"
	shift 2
	local out err rc
	out=$(env DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$TMP/p" "$@" LD_PRELOAD="$SO" "$WL/hello" x 7 2>"$TMP/err")
	rc=$?
	check "$name: exit code unchanged" test "$rc" = 7
	check "$name: output unchanged" test "$out" = "$(printf 'thread ok\nhello 3 x')"
	local lines
	lines=$(grep -c "$pattern" "$TMP/err")
	check "$name: one stowaway line ($(head -c 200 "$TMP/err"))" test "$lines" = 1
	check "$name: every stderr line is ours and prefixed" test "$(grep -vc '^stowaway: ' "$TMP/err")" = 0
}

expect_warning "upload period abc" '^stowaway: warning: DD_PROFILING_UPLOAD_PERIOD="abc"' DD_PROFILING_UPLOAD_PERIOD=abc
expect_warning "upload period 0" '^stowaway: warning: DD_PROFILING_UPLOAD_PERIOD="0"' DD_PROFILING_UPLOAD_PERIOD=0
expect_warning "unknown profile kind" '^stowaway: warning: STOWAWAY_PROFILES="cpu,bogus"' STOWAWAY_PROFILES=cpu,bogus
expect_warning "10 KB of DD_TAGS" '^stowaway: warning: DD_TAGS is longer' "DD_TAGS=$(head -c 10240 /dev/zero | tr '\0' 'a' | sed 's/a\{20\}/&,/g')"
expect_warning "bad log level" '^stowaway: warning: STOWAWAY_LOG_LEVEL' STOWAWAY_LOG_LEVEL=loud
expect_warning "bad agent port" '^stowaway: warning: DD_TRACE_AGENT_PORT' DD_TRACE_AGENT_PORT=99999 DD_AGENT_HOST=127.0.0.1
expect_warning "overhead limit with 5 decimals" '^stowaway: warning: STOWAWAY_MAX_OVERHEAD_PCT="0.00001"' STOWAWAY_MAX_OVERHEAD_PCT=0.00001
expect_warning "bad enabled value" '^stowaway: warning: DD_PROFILING_ENABLED' DD_PROFILING_ENABLED=maybe

# An unwritable output directory: one line, profiling goes on, nothing written.
mkdir -p "$TMP/ro" && chmod 0555 "$TMP/ro"
out=$(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR=/proc/stowaway-nope LD_PRELOAD="$SO" "$WL/hello" x 0 2>"$TMP/err")
check "unwritable output dir: output unchanged" test "$out" = "$(printf 'thread ok\nhello 3 x')"
check "unwritable output dir: one line ($(head -c 200 "$TMP/err"))" test "$(grep -c '^stowaway: warning: STOWAWAY_OUTPUT_DIR=/proc/stowaway-nope' "$TMP/err")" = 1
check "unwritable output dir: nothing else on stderr" test "$(grep -vc 'STOWAWAY_OUTPUT_DIR' "$TMP/err")" = 0

# Profiles written: the enabled run with a good configuration is silent.
out=$(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$TMP/good" DD_TAGS="team:a, tier:b" LD_PRELOAD="$SO" "$WL/hello" 2>"$TMP/err")
check "good configuration is silent" test ! -s "$TMP/err"
finish
