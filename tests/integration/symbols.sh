#!/usr/bin/env bash
# needs: build/libstowaway.so
# libstowaway.so is freestanding: no NEEDED entry, only weak references to
# the reviewed host list, exports only our API and interposed functions, no
# TLS, no text relocations, no errno.
source "$(dirname "$0")/lib.sh"

allowed() { grep -v '^#' "$ROOT/tests/$1" | grep -v '^$'; }

check "no DT_NEEDED entry" test "$(readelf -d "$SO" | grep -c NEEDED)" = 0
check "no TEXTREL" test "$(readelf -d "$SO" | grep -c TEXTREL)" = 0
check "no TLS segment" test "$(readelf -lW "$SO" | grep -c ' TLS ')" = 0
check "non-executable stack" bash -c "readelf -lW '$SO' | grep GNU_STACK | grep -q ' RW '"

undef=$(nm -D --undefined-only "$SO" | awk '{print $1" "$2}')
strong=$(awk '$1 != "w" && $1 != "v"' <<<"$undef")
check "every undefined symbol is weak (${strong//$'\n'/ })" test -z "$strong"
extra=$(awk '{print $2}' <<<"$undef" | grep -vxF -f <(allowed allowed-undefined.txt))
check "undefined symbols are the reviewed host list (${extra//$'\n'/ })" test -z "$extra"
check "no errno from the host" test "$(grep -c errno <<<"$undef")" = 0

exports=$(nm -D --defined-only "$SO" | awk '{print $3}' | sed 's/@.*//')
extra=$(grep -v '^stowaway_' <<<"$exports" | grep -vxF -f <(allowed allowed-exports.txt))
check "exports only stowaway_* and interposed symbols (${extra//$'\n'/ })" test -z "$extra"
for f in stowaway_version stowaway_start stowaway_stop stowaway_flush pthread_create; do
	check "exports $f" grep -qx "$f" <<<"$exports"
done

# The runtime's own symbols stay hidden.
check "runtime internals are not exported" test "$(grep -c '^rt_' <<<"$exports")" = 0
finish
