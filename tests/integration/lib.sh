# Shared helpers for integration scripts (source it).  Each check prints
# "PASS <name>" or "FAIL <name>"; finish() exits non-zero if any failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SO="${STOWAWAY_SO:-$ROOT/build/libstowaway.so}"
WL="$ROOT/build/workloads"
TMP=$(mktemp -d /tmp/stowaway-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
n_failed=0

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1${2:+: $2}"
	n_failed=$((n_failed + 1))
}
check() { # check NAME CONDITION-COMMAND...
	local name="$1"
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
finish() { [ "$n_failed" -eq 0 ]; exit $?; }
# Profiling environment with no network sink.
profile_env() { # profile_env OUTDIR -> prints env assignments
	echo "DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR=$1"
}
