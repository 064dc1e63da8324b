#!/usr/bin/env bash
# Recorder + pprof encoder + gzip on a 10k-stack, depth-30 profile.
# Prints "BENCH encode: <metric> = <value> (<details>)" lines.
set -eu
cd "$(dirname "$0")/../.."
bin=build/bench/bench_encode
[ -x "$bin" ] || make --no-print-directory -s "$bin" >&2
"$bin"
