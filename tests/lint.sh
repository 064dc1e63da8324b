#!/usr/bin/env bash
# make lint: gcc -fanalyzer, cppcheck and clang-tidy over the library and the
# CLI, plus the freestanding include rule.  Any finding fails.
set -u
cd "$(dirname "$0")/.."
fail=0
lib_src=$(ls src/{rt,config,core,profile,encode,unwind,symbols,collect,export}/*.c 2>/dev/null)
cli_src=$(ls src/cli/*.c 2>/dev/null)
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

# 2. gcc -fanalyzer (same flags as the build, warnings are errors).
flags="-std=c11 -O1 -fPIC -ffreestanding -fno-builtin -Isrc -DSTOWAWAY_VERSION=\"lint\" -Wall -Wextra -Werror -Wvla"
for f in $lib_src; do
	extra=""
	[ -f "${f%.c}.lintflags" ] && extra=$(cat "${f%.c}.lintflags")
	if ! out=$(gcc $flags $extra -fanalyzer -c "$f" -o /dev/null 2>&1); then
		echo "$out"
		fail=1
	fi
done
for f in $cli_src; do
	if ! out=$(gcc -std=gnu11 -O1 -Isrc -DSTOWAWAY_VERSION=\"lint\" -Wall -Wextra -Werror -fanalyzer -c "$f" -o /dev/null 2>&1); then
		echo "$out"
		fail=1
	fi
done

# 3. cppcheck.
if ! cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	--inline-suppr --suppressions-list=tests/cppcheck.supp -I src \
	-DSTOWAWAY_VERSION=\"lint\" --std=c11 $lib_src $cli_src 2>build/lint/cppcheck.txt; then
	cat build/lint/cppcheck.txt
	fail=1
fi

# 4. clang-tidy with the committed .clang-tidy.
if ! clang-tidy --quiet $lib_src -- -std=c11 -ffreestanding -Isrc -DSTOWAWAY_VERSION=\"lint\" \
	>build/lint/tidy-lib.txt 2>&1; then
	grep -E 'warning:|error:' build/lint/tidy-lib.txt
	fail=1
fi
if [ -n "$cli_src" ] && ! clang-tidy --quiet $cli_src -- -std=gnu11 -Isrc \
	-DSTOWAWAY_VERSION=\"lint\" >build/lint/tidy-cli.txt 2>&1; then
	grep -E 'warning:|error:' build/lint/tidy-cli.txt
	fail=1
fi

if [ "$fail" -ne 0 ]; then
	echo "lint: FAILED"
	exit 1
fi
echo "lint: clean (gcc -fanalyzer, cppcheck, clang-tidy)"
