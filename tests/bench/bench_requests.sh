#!/usr/bin/env bash
# Instructions per request of Debian's nginx (ab, with and without
# keep-alive), redis (redis-benchmark) and postgres (pgbench -S) under no
# library, the library off, CPU only, wall only, alloc+heap and the default
# kinds, counted by callgrind over every process and thread of the server
# (a count: it holds on a loaded machine), N vs 2N requests, medians of
# interleaved rounds; the default kinds' extra split by where it runs.
# Workloads: tests/bench/requests.py (knobs there); packages:
# tests/deps/bench.txt (valgrind).
set -eu
cd "$(dirname "$0")/../.."
[ -e build/libstowaway.so ] || make --no-print-directory -s build/libstowaway.so >&2
exec python3 tests/bench/requests.py
