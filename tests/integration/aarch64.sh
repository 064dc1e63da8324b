#!/usr/bin/env bash
# The aarch64 build (make ARCH=aarch64), tested under qemu-user on the x86-64
# build machine: the freestanding-library checks, the load matrix, the CPU,
# allocation and wall known-answer tests, fork, upload to a loopback agent,
# and the refusal across architectures (docs/arm64.md).  Nothing is skipped:
# a missing tool or build output is a FAIL with its reason.
source "$(dirname "$0")/lib.sh"

A64="$ROOT/build/aarch64"
A64_SO="$A64/libstowaway.so"
RUN="$A64/run"
ready=1
for need in qemu-aarch64-static go readelf; do
	if ! command -v "$need" >/dev/null; then
		fail "aarch64: $need is installed (tests/deps/aarch64.txt)"
		ready=0
	fi
done
for f in "$A64_SO" "$A64/stowaway" "$RUN/cpu_split-nofp" "$RUN/hello"; do
	if [ ! -e "$f" ]; then
		fail "aarch64: $f was built (make test-build builds it)"
		ready=0
	fi
done
[ "$ready" = 1 ] || finish

# Sub-suites print PASS/FAIL lines; each is prefixed and counted here.
sub() { # sub LABEL CMD...: runs a check script, relays its lines
	local label="$1" out rc
	shift
	out=$("$@" 2>"$TMP/$label.err")
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		PASS\ *) pass "aarch64 $label: ${line#PASS }" ;;
		FAIL\ *) fail "aarch64 $label: ${line#FAIL }" ;;
		esac
	done <<<"$out"
	[ "$rc" = 0 ] || [ "$(grep -c '^FAIL ' <<<"$out")" -gt 0 ] ||
		fail "aarch64 $label: exited with $rc" "$(tail -3 "$TMP/$label.err")"
}
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# ---- the files ----
check "aarch64: the library is an aarch64 ELF" bash -c "readelf -h '$A64_SO' | grep -q 'Machine:.*AArch64'"
check "aarch64: the CLI is a static aarch64 ELF" bash -c \
	"readelf -h '$A64/stowaway' | grep -q 'Machine:.*AArch64' && ! readelf -lW '$A64/stowaway' | grep -q INTERP"
check "aarch64: the CLI runs" bash -c "qemu-aarch64-static '$A64/stowaway' --version | grep -q '^stowaway '"
sub symbols env STOWAWAY_SO="$A64_SO" "$ROOT/tests/integration/symbols.sh"

# ---- load matrix: glibc and musl programs, disabled and enabled ----
for prog in hello hello-musl; do
	out="$TMP/$prog"
	mkdir -p "$out/profiles"
	"$RUN/$prog" a 3 >"$out/plain.out" 2>"$out/plain.err"
	rc_plain=$?
	LD_PRELOAD="$A64_SO" "$RUN/$prog" a 3 >"$out/off.out" 2>"$out/off.err"
	rc_off=$?
	# 1000 Hz: the program's own CPU after our start is a few ms (under
	# qemu, most of its CPU is the translation before it); at 100 Hz a
	# run without a single sample was 1 in 6.
	DD_PROFILING_ENABLED=true STOWAWAY_CPU_HZ=1000 STOWAWAY_OUTPUT_DIR="$out/profiles" LD_PRELOAD="$A64_SO" \
		"$RUN/$prog" a 3 >"$out/on.out" 2>"$out/on.err"
	rc_on=$?
	check "aarch64 load $prog: plain run exits 3" test "$rc_plain" = 3
	check "aarch64 load $prog: disabled: same output, exit code, stderr" bash -c \
		"cmp -s '$out/plain.out' '$out/off.out' && test '$rc_off' = '$rc_plain' && cmp -s '$out/plain.err' '$out/off.err'"
	check "aarch64 load $prog: enabled: same output and exit code" bash -c \
		"cmp -s '$out/plain.out' '$out/on.out' && test '$rc_on' = '$rc_plain'"
	check "aarch64 load $prog: enabled: no stowaway warning" bash -c "! grep -q '^stowaway: \(error\|warning\)' '$out/on.err'"
	check "aarch64 load $prog: enabled: wrote a CPU profile go tool pprof reads" bash -c \
		"f=\$(ls '$out/profiles'/*.cpu.*.pb.gz | head -1) && go tool pprof -raw \"\$f\" >/dev/null 2>&1"
done

# ---- refusal across architectures: the loader says so, the program runs ----
"$WL/hello" a 3 >"$TMP/x86.plain" 2>/dev/null
rc_plain=$?
LD_PRELOAD="$A64_SO" DD_PROFILING_ENABLED=true "$WL/hello" a 3 >"$TMP/x86.out" 2>"$TMP/x86.err"
rc=$?
check "aarch64 library in an x86-64 process: the program runs unchanged" bash -c \
	"cmp -s '$TMP/x86.plain' '$TMP/x86.out' && test '$rc' = '$rc_plain'"
check "aarch64 library in an x86-64 process: the loader names it and ignores it" \
	grep -q "libstowaway.so.*cannot be preloaded.*ignored" "$TMP/x86.err"
LD_PRELOAD="$SO" DD_PROFILING_ENABLED=true "$RUN/hello" a 3 >"$TMP/a64.out" 2>"$TMP/a64.err"
rc=$?
check "x86-64 library in an aarch64 process: the program runs unchanged" bash -c \
	"cmp -s '$TMP/hello/plain.out' '$TMP/a64.out' && test '$rc' = 3"
check "x86-64 library in an aarch64 process: the loader names it and ignores it" \
	grep -q "libstowaway.so.*cannot be preloaded.*ignored" "$TMP/a64.err"

# A musl loader does not check the ELF machine (it fails relocating the
# foreign library and stops the program), so `stowaway install`, what init
# containers run, refuses a library of another architecture than its own.
mkdir -p "$TMP/mixed/bin" "$TMP/mixed/target"
cp "$ROOT/build/stowaway" "$A64_SO" "$TMP/mixed/bin/"
"$TMP/mixed/bin/stowaway" install "$TMP/mixed/target" >"$TMP/mixed/out" 2>"$TMP/mixed/err"
rc=$?
check "stowaway install refuses a library of another architecture (exit $rc, nothing installed)" bash -c \
	"test '$rc' != 0 && test -z \"\$(ls -A '$TMP/mixed/target')\" && grep -q 'built for ELF machine 183, this node runs machine 62' '$TMP/mixed/err'"
qemu-aarch64-static "$A64/stowaway" install "$TMP/mixed/target" >/dev/null 2>"$TMP/mixed/err2"
rc=$?
check "the aarch64 stowaway install refuses the x86-64 library beside it" bash -c \
	"mkdir -p '$TMP/mixed/t2' && cp '$SO' '$TMP/mixed/libstowaway.so' && cp '$A64/stowaway' '$TMP/mixed/stowaway' && ! qemu-aarch64-static '$TMP/mixed/stowaway' install '$TMP/mixed/t2' 2>/dev/null && test -z \"\$(ls -A '$TMP/mixed/t2')\""
check "the aarch64 stowaway install installs its own library (exit $rc)" bash -c \
	"test '$rc' = 0 && cmp -s '$TMP/mixed/target/libstowaway.so' '$A64_SO'"

# ---- known answers, fork, upload: the x86-64 suites on the aarch64 build ----
export STOWAWAY_SO="$A64_SO" STOWAWAY_WL="$RUN"
# 10 s per run: under emulation on a shared machine a 6 s run gets 2-4 s of
# CPU, too few samples for the 3-point bound.
STOWAWAY_CPU_SECONDS=10 STOWAWAY_VARIANTS="cpu_split-nofp cpu_split-musl-nofp cpu_split-fp cpu_split-musl-fp cpu_split-pac cpu_split-nofp@statx-EPERM" \
	sub cpu "$ROOT/tests/integration/cpu_accuracy.py"
STOWAWAY_ALLOC_DEFAULT_RUN=0 STOWAWAY_VARIANTS="alloc_known alloc_known-musl" sub alloc "$ROOT/tests/integration/alloc_known.py"
# Wall: what qemu-user lets us check (aarch64_wall.py says why not more).
STOWAWAY_VARIANTS="wall_torture wall_torture-musl" sub wall python3 "$ROOT/tests/integration/aarch64_wall.py"
# Fork: 4 s per process, as thread creation under emulation costs more.
STOWAWAY_FORK_SECONDS=4 STOWAWAY_VARIANTS="prefork prefork-musl" sub fork "$ROOT/tests/integration/fork.py"
STOWAWAY_VARIANTS="hello hello-musl" sub upload python3 "$ROOT/tests/integration/aarch64_upload.py"
finish
