#!/usr/bin/env bash
# needs: build/libstowaway.so build/stowaway build/tests/cli_fake_lib.so build/workloads/hello
# stowaway version / help / run / install and their errors.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI="$ROOT/build/stowaway"
FAKE="$ROOT/build/tests/cli_fake_lib.so"
TMP=$(mktemp -d /tmp/stowaway-cli-run.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
failed=0
check() { # check NAME COMMAND...
	local name="$1"
	shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failed=$((failed + 1)); fi
}
# An error: exit status 1..127 (not a signal), one line starting "stowaway: " on stderr.
clean_error() { # clean_error COMMAND...
	"$@" >"$TMP/err.out" 2>"$TMP/err.txt"
	local rc=$?
	[ "$rc" -ge 1 ] && [ "$rc" -le 127 ] && [ "$(wc -l <"$TMP/err.txt")" -eq 1 ] &&
		grep -q '^stowaway: ' "$TMP/err.txt"
}

version=$(cat "$ROOT/VERSION")
check version [ "$("$CLI" version)" = "stowaway $version" ]
check help_lists_commands bash -c "'$CLI' help | grep -q '^  run ' && '$CLI' help | grep -q '^  install ' && '$CLI' help | grep -q '^  report '"
check unknown_command clean_error "$CLI" frobnicate
check no_command bash -c "! '$CLI' 2>/dev/null"

# run: the command's output and exit status pass through; the environment is set.
mkdir -p "$TMP/bin"
cp "$CLI" "$TMP/bin/stowaway"
cp "$FAKE" "$TMP/bin/libstowaway.so"
out=$(CLI_FAKE_LIB_MARK="$TMP/mark1" LD_PRELOAD= "$TMP/bin/stowaway" run -- sh -c 'echo "out:$DD_PROFILING_ENABLED:$LD_PRELOAD"; echo err >&2; exit 7' 2>"$TMP/run.err")
rc=$?
check run_exit_status [ "$rc" -eq 7 ]
check run_stdout [ "$out" = "out:true:$TMP/bin/libstowaway.so" ]
check run_stderr [ "$(cat "$TMP/run.err")" = "err" ]
check run_library_loaded [ -e "$TMP/mark1" ]
out=$(LD_PRELOAD=/nonexistent/other.so STOWAWAY_LIB="$FAKE" "$CLI" run --out "$TMP/profiles/x" --service shop -- \
	sh -c 'echo "$LD_PRELOAD|$STOWAWAY_OUTPUT_DIR|$DD_SERVICE"' 2>/dev/null)
check run_prepends_preload_and_sets_env [ "$out" = "$FAKE:/nonexistent/other.so|$TMP/profiles/x|shop" ]
check run_creates_out_dir [ -d "$TMP/profiles/x" ]
check run_missing_command clean_error "$TMP/bin/stowaway" run -- /nonexistent/cmd
"$TMP/bin/stowaway" run -- /nonexistent/cmd 2>/dev/null
check run_missing_command_127 [ $? -eq 127 ]
check run_no_command clean_error "$TMP/bin/stowaway" run --out "$TMP/p"
check run_bad_option clean_error "$TMP/bin/stowaway" run --bogus -- true
mkdir -p "$TMP/alone"
cp "$CLI" "$TMP/alone/stowaway"
check run_library_missing clean_error env -u STOWAWAY_LIB "$TMP/alone/stowaway" run -- true
check run_stowaway_lib_missing clean_error env STOWAWAY_LIB=/nonexistent.so "$CLI" run -- true

# run on a statically linked program (the CLI itself, readelf: no INTERP): it
# runs unchanged, and one line says no loader will preload the library.
out=$(STOWAWAY_LIB="$FAKE" "$CLI" run --out "$TMP/static" -- "$CLI" version 2>"$TMP/static.err")
rc=$?
check run_static_judged_by_readelf bash -c "! readelf -lW '$CLI' | grep -q INTERP"
check run_static_runs_unchanged [ "$rc:$out" = "0:stowaway $version" ]
check run_static_says_unprofiled bash -c "[ \"\$(wc -l <'$TMP/static.err')\" -eq 1 ] && grep -q '^stowaway: $CLI is statically linked: no dynamic loader reads LD_PRELOAD' '$TMP/static.err'"
STOWAWAY_LIB="$FAKE" "$CLI" run -- "$ROOT/build/workloads/hello" >/dev/null 2>"$TMP/dynamic.err"
check run_dynamic_no_static_line bash -c "readelf -lW '$ROOT/build/workloads/hello' | grep -q INTERP && ! grep -q 'statically linked' '$TMP/dynamic.err'"
STOWAWAY_LIB="$FAKE" PATH="$(dirname "$CLI"):$PATH" "$CLI" run -- stowaway version >/dev/null 2>"$TMP/path.err"
check run_static_found_in_path grep -q "^stowaway: $CLI is statically linked" "$TMP/path.err"

# install: both files copied atomically, executable, identical; errors are clean.
mkdir -p "$TMP/dest"
"$TMP/bin/stowaway" install "$TMP/dest" >/dev/null
check install_copies_library cmp -s "$TMP/dest/libstowaway.so" "$FAKE"
check install_copies_cli cmp -s "$TMP/dest/stowaway" "$CLI"
check install_mode_0755 [ "$(stat -c %a "$TMP/dest/libstowaway.so") $(stat -c %a "$TMP/dest/stowaway")" = "755 755" ]
check install_no_temp_files [ "$(ls "$TMP/dest" | wc -l)" -eq 2 ]
"$TMP/bin/stowaway" install "$TMP/dest" >/dev/null
check install_overwrites cmp -s "$TMP/dest/libstowaway.so" "$FAKE"
check install_missing_dir clean_error "$TMP/bin/stowaway" install "$TMP/nonexistent"
check install_usage clean_error "$TMP/bin/stowaway" install
chmod 0555 "$TMP/dest"
if [ "$(id -u)" -ne 0 ]; then
	check install_readonly_dir clean_error "$TMP/bin/stowaway" install "$TMP/dest"
fi
chmod 0755 "$TMP/dest"

# With the real library: the installed copy runs a program unchanged.
if [ -f "$ROOT/build/libstowaway.so" ] && [ -x "$ROOT/build/workloads/hello" ]; then
	mkdir -p "$TMP/real"
	STOWAWAY_LIB="$ROOT/build/libstowaway.so" "$CLI" install "$TMP/real" >/dev/null
	want=$("$ROOT/build/workloads/hello" a b 2>&1; echo "rc=$?")
	got=$("$TMP/real/stowaway" run --out "$TMP/real/profiles" -- "$ROOT/build/workloads/hello" a b 2>&1; echo "rc=$?")
	check run_real_library_output_unchanged [ "$want" = "$got" ]
fi
[ "$failed" -eq 0 ]
