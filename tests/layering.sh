#!/usr/bin/env bash
# The include layering of src/ (run by tests/lint.sh):
#  1. every #include "DIR/..." from a file in another folder of src/ is an
#     edge listed in tests/allowed-includes.txt;
#  2. the listed edges have no cycle (a one-way order of folders);
#  3. no circle between the files of src/: a file includes another module's
#     header only if that module does not, directly or not, include its own.
# Prints what is wrong and exits 1, else exits 0 quietly.
set -u
cd "$(dirname "$0")/.."
allowed=tests/allowed-includes.txt
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -vE '^\s*(#|$)' "$allowed" | awk '{print $1" "$2}' | sort -u >"$tmp/allowed"

# "from-folder to-folder file:line" for every include of another src/ folder,
# and "from-module to-module" (module: folder/name without extension).
for f in src/*/*.[ch]; do
	from=${f#src/}
	from=${from%%/*}
	mod=${f#src/}
	mod=${mod%.*}
	grep -nE '^\s*#\s*include\s*"[a-z_0-9]+/[a-z_0-9]+\.h"' "$f" |
		sed -E 's/^([0-9]+):.*"([a-z_0-9]+)\/([a-z_0-9]+)\.h".*/\1 \2 \3/' |
		while read -r line dir name; do
			[ -d "src/$dir" ] || continue
			[ "$dir/$name" != "$mod" ] && echo "$mod $dir/$name" >>"$tmp/modules"
			[ "$dir" != "$from" ] && echo "$from $dir $f:$line"
		done
done >"$tmp/edges"
touch "$tmp/modules"

bad=$(while read -r from to where; do
	grep -qx "$from $to" "$tmp/allowed" || echo "  $where includes $to/ (not in $allowed)"
done <"$tmp/edges")
if [ -n "$bad" ]; then
	echo "layering: includes against the folder order:"
	echo "$bad"
	fail=1
fi

if ! tsort "$tmp/allowed" >/dev/null 2>"$tmp/tsort"; then
	echo "layering: $allowed has a cycle:"
	sed 's/^/  /' "$tmp/tsort"
	fail=1
fi

sort -u "$tmp/modules" -o "$tmp/modules"
if ! tsort "$tmp/modules" >/dev/null 2>"$tmp/tsort"; then
	echo "layering: files include each other in a circle:"
	sed 's/^/  /' "$tmp/tsort"
	fail=1
fi
exit "$fail"
