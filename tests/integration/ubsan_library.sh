#!/usr/bin/env bash
# The integration suites that exercise most of the library, rerun against
# build/ubsan/libstowaway.so: the same code with UBSan in trap mode, so any
# undefined behaviour on these paths (signal handlers, unwinder, recorder,
# encoder, hooks, exporters) kills the program and fails the suite.
# (ASan is not usable here: the library owns malloc and runs without libc,
# and the unwinder reads raw stack words that ASan would call redzones.)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SO="$ROOT/build/ubsan/libstowaway.so"
if [ ! -f "$SO" ]; then
	echo "FAIL ubsan: $SO was not built (make test-build)"
	exit 1
fi
status=0
for suite in load_matrix.sh hotspots.py fork.py wall_torture.py alloc_known.py lock_known.py export_e2e.py; do
	STOWAWAY_SO="$SO" "$ROOT/tests/integration/$suite" 2>&1 |
		sed -n -e "s/^PASS /PASS ubsan $suite: /p" -e "s/^FAIL /FAIL ubsan $suite: /p"
	[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done
exit "$status"
