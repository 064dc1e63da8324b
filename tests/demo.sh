#!/usr/bin/env bash
# make demo: profiles the bundled demo workload (named threads burning CPU,
# sleeping and allocating) and prints what it produced and its top functions.
set -eu
cd "$(dirname "$0")/.."
out=profiles
rm -rf "$out"
mkdir -p "$out"
seconds="${DEMO_SECONDS:-5}"
echo "== running build/workloads/demo for ${seconds}s under libstowaway.so (profiles -> ./$out)"
DD_SERVICE=demo build/stowaway run --out "$out" --service demo -- build/workloads/demo "$seconds"
echo
echo "== files written"
ls -l "$out"
for kind in cpu wall alloc heap; do
	files=$(ls "$out"/demo.*."$kind".*.pb.gz 2>/dev/null || true)
	[ -n "$files" ] || continue
	echo
	echo "== top functions: $kind"
	build/stowaway report --top 8 $files
done
if build/stowaway flame "$out"/demo.*.cpu.*.pb.gz --html -o "$out/flame.html" 2>/dev/null; then
	echo
	echo "== CPU flame graph: $out/flame.html (open in any browser, no network needed)"
fi
