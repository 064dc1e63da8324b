#!/usr/bin/env bash
# make demo: profiles the bundled demo workload (named threads burning CPU,
# sleeping and allocating) and prints what it produced, the top functions of
# each kind and a CPU flame graph, with the commands the README shows.
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
# The README's air-gapped commands, on the directory of every kind.
echo
echo "== stowaway report $out (top functions of each kind)"
build/stowaway report --top 8 "$out"
echo
echo "== stowaway flame $out --html -o $out/flame.html"
build/stowaway flame "$out" --html -o "$out/flame.html"
echo "CPU flame graph: $out/flame.html (open in any browser, no network needed)"
