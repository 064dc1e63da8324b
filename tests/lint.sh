#!/usr/bin/env bash
# make lint: gcc -fanalyzer, cppcheck and clang-tidy over the library and the
# CLI, plus the freestanding include rule and the include layering.  Any
# finding fails.
set -u
cd "$(dirname "$0")/.."
fail=0
# Every source the Makefile builds, as it lists them.
sources=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory print-sources)
lib_src=$(echo "$sources" | sed -n 's/^LIB //p')
cli_src=$(echo "$sources" | sed -n 's/^CLI //p')
mkdir -p build/lint

# 1. Library code includes no libc header: only our headers, compiler
#    freestanding headers and kernel UAPI headers.
allowed='^(stddef|stdint|stdbool|stdarg|stdatomic|limits|stdalign|stdnoreturn|float)\.h$|^(linux|asm|asm-generic)/'
bad=$(grep -HnE '^\s*#\s*include\s*<' $lib_src src/*/*.h 2>/dev/null | grep -v '^src/cli/' |
	sed -E 's/.*<([^>]+)>.*/\0 \1/' | awk '{print $NF" "$0}' |
	while read -r hdr rest; do echo "$hdr" | grep -qE "$allowed" || echo "$rest"; done)
if [ -n "$bad" ]; then
	echo "lint: library code includes libc headers:"
	echo "$bad"
	fail=1
fi

# 1b. Includes follow the folder order of tests/allowed-includes.txt, and no
#     files include each other in a circle.
if ! tests/layering.sh; then
	fail=1
fi

# 1c. Architecture tests live only in the per-architecture layer
#     (src/rt/arch.h, src/rt/arch/*.h): nowhere else in the library.
bad=$(grep -HnE '__(x86_64|aarch64|i386|arm)__' $lib_src src/*/*.h 2>/dev/null | grep -v '^src/cli/' |
	grep -v '^src/rt/arch\.h:')
if [ -n "$bad" ]; then
	echo "lint: architecture test outside src/rt/arch.h and src/rt/arch/:"
	echo "$bad"
	fail=1
fi

# Extra flags for one file (e.g. a vendored include path) live beside it in
# <file>.lintflags and apply to every tool.
# (Printed as is and split on spaces by the caller: quotes stay literal, as
# in -DNAME="file.h".)
extra_flags() { [ -f "${1%.c}.lintflags" ] && cat "${1%.c}.lintflags"; }

# 2. gcc -fanalyzer (same flags as the build, warnings are errors), two
#    files at a time.
analyze_one() {
	case "$1" in
	src/cli/*) flags="-std=gnu11 -O1 -Isrc" ;;
	*) flags="-std=c11 -O1 -fPIC -ffreestanding -fno-builtin -Isrc -Wvla" ;;
	esac
	gcc $flags -DSTOWAWAY_VERSION=\"lint\" -Wall -Wextra -Werror $(extra_flags "$1") \
		-fanalyzer -c "$1" -o /dev/null 2>&1
	return 0
}
export -f analyze_one extra_flags
printf '%s\n' $lib_src $cli_src | xargs -P 2 -I{} bash -c 'analyze_one {}' >build/lint/analyzer.txt
if [ -s build/lint/analyzer.txt ]; then
	cat build/lint/analyzer.txt
	fail=1
fi

# 2b. The library's other architecture: the files whose code depends on
#     src/rt/arch/aarch64.h, analysed with the aarch64 cross compiler.
if command -v aarch64-linux-gnu-gcc >/dev/null; then
	analyze_aarch64_one() {
		aarch64-linux-gnu-gcc -std=c11 -O1 -fPIC -ffreestanding -fno-builtin -Isrc -Wvla \
			-mno-outline-atomics -DSTOWAWAY_VERSION=\"lint\" -Wall -Wextra -Werror \
			-fanalyzer -c "$1" -o /dev/null 2>&1
		return 0
	}
	export -f analyze_aarch64_one
	printf '%s\n' src/rt/*.c src/unwind/*.c src/symbols/symbols.c src/collect/sample.c \
		src/collect/wall_hooks.c | xargs -P 2 -I{} bash -c 'analyze_aarch64_one {}' \
		>build/lint/analyzer-aarch64.txt
	if [ -s build/lint/analyzer-aarch64.txt ]; then
		cat build/lint/analyzer-aarch64.txt
		fail=1
	fi
else
	echo "lint: aarch64-linux-gnu-gcc not found (tests/deps/aarch64.txt)"
	fail=1
fi

# 3. cppcheck, one file at a time so each gets its own flags, two at a time.
cppcheck_one() {
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
		--inline-suppr --suppressions-list=tests/cppcheck.supp -I src -D__x86_64__ -D__linux__ \
		-D__GNUC__ "-D__attribute__(x)=" -DSTOWAWAY_VERSION=\"lint\" --std=c11 $(extra_flags "$1") "$1" \
		2>&1 || echo "cppcheck: $1 failed"
	return 0
}
export -f cppcheck_one
printf '%s\n' $lib_src $cli_src | xargs -P 2 -I{} bash -c 'cppcheck_one {}' >build/lint/cppcheck.txt
if [ -s build/lint/cppcheck.txt ]; then
	cat build/lint/cppcheck.txt
	fail=1
fi

# 4. clang-tidy with the committed .clang-tidy, two files at a time.
tidy_one() {
	case "$1" in
	src/cli/*) std="-std=gnu11" ;;
	*) std="-std=c11 -ffreestanding" ;;
	esac
	clang-tidy --quiet "$1" -- $std -Isrc -DSTOWAWAY_VERSION=\"lint\" $(extra_flags "$1") 2>&1 |
		grep -E -A3 'warning:|error:'
	return 0
}
export -f tidy_one
printf '%s\n' $lib_src $cli_src | xargs -P 2 -I{} bash -c 'tidy_one {}' >build/lint/tidy.txt
if [ -s build/lint/tidy.txt ]; then
	cat build/lint/tidy.txt
	fail=1
fi

if [ "$fail" -ne 0 ]; then
	echo "FAIL lint"
	exit 1
fi
echo "PASS lint (layering, gcc -fanalyzer, cppcheck, clang-tidy)"
