#!/usr/bin/env bash
# needs: build/libstowaway.so build/workloads/introspect build/workloads/introspect-musl
# Disabled means nothing: no thread, no signal handler, no timer, no file.
# Enabled starts exactly our threads (scheduler and sampler, plus the wall
# sampler when wall is on), one handler per signal-based collector, and a
# CPU timer for the main thread.  Our symbol lookups leave nothing for the
# program's dlerror().
source "$(dirname "$0")/lib.sh"

for libc in glibc musl; do
	prog="$WL/introspect"
	[ "$libc" = musl ] && prog="$WL/introspect-musl"
	base=$("$prog" 50)
	for value in "" false 0 no FALSE; do
		got=$(DD_PROFILING_ENABLED="$value" STOWAWAY_OUTPUT_DIR="$TMP/off" LD_PRELOAD="$SO" "$prog" 50 2>&1)
		check "$libc: DD_PROFILING_ENABLED='$value' changes nothing ($got)" test "$got" = "$base"
	done
	got=$(env -u DD_PROFILING_ENABLED LD_PRELOAD="$SO" "$prog" 50 2>&1)
	check "$libc: unset changes nothing" test "$got" = "$base"
	check "$libc: disabled wrote no file" test ! -e "$TMP/off"
	got=$(DD_PROFILING_ENABLED=true STOWAWAY_PROFILES=cpu STOWAWAY_OUTPUT_DIR="$TMP/on-$libc" LD_PRELOAD="$SO" "$prog" 300 2>&1)
	check "$libc: cpu only runs our two threads ($got)" grep -q '^threads=3 ' <<<"$got"
	check "$libc: cpu only installs one handler" grep -q ' handlers=1 ' <<<"$got"
	check "$libc: cpu only arms a CPU timer for the main thread" grep -q ' timers=1 ' <<<"$got"
	got=$(DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$TMP/on-$libc" LD_PRELOAD="$SO" "$prog" 300 2>&1)
	# The sampler thread also serves the wall ticks: no thread of its own.
	check "$libc: default kinds add no thread to the CPU profile's two ($got)" grep -q '^threads=3 ' <<<"$got"
	check "$libc: default kinds install the CPU and wall handlers" grep -q ' handlers=2 ' <<<"$got"
	got=$(DD_PROFILING_ENABLED=true STOWAWAY_PROFILES=cpu,wall,alloc,heap,lock,exception \
		STOWAWAY_OUTPUT_DIR="$TMP/on-$libc" LD_PRELOAD="$SO" "$prog" 100 2>&1)
	check "$libc: every kind on leaves no error for the program's dlerror() ($got)" grep -q ' dlerror=none$' <<<"$got"
done
finish
