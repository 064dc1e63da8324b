#!/usr/bin/env bash
# Real programs (Debian's redis, nginx, memcached, postgres, sqlite3, python3,
# node, ripgrep, clang, java) with no profiler, our CPU profile, our default
# kinds, our allocation profile, gperftools and jemalloc's profiler: CPU per
# unit of work and throughput as ratios to no profiler, medians of
# interleaved rounds, in one table; then start-up CPU and peak RSS against
# the code each program maps.  Workloads: tests/bench/programs.py (one class
# each); packages: tests/deps/bench.txt.  Knobs: BENCH_PROGRAMS=redis,nginx
# (a subset), BENCH_PROGRAMS_ROUNDS (3), BENCH_PROGRAMS_SCALE (work per run,
# 1; 0.5 with BENCH_QUICK=1), BENCH_PROGRAMS_CONFIGS, BENCH_STARTUP_PROGRAM_REPS.
set -eu
cd "$(dirname "$0")/../.."
for t in build/libstowaway.so build/workloads/hello; do
	[ -e "$t" ] || make --no-print-directory -s "$t" >&2
done
exec python3 tests/bench/programs.py
