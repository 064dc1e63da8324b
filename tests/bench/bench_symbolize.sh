#!/usr/bin/env bash
# What source lines and inlined frames cost (DWARF, src/dwarf), on a large
# -O2 -g C++ program generated here (many translation units using the
# standard library's heaviest headers: tens of MB of .debug_info).
#
#  1. The reader alone (build/tests/dwarf_query --stats): building the unit
#     index, a first pass over 2000 addresses spread over .text (units
#     decoded: the first period's cost), a second pass (cached: a later
#     period's cost), memory held by the index and the process's peak RSS;
#     and the same under a 4 MiB budget (eviction, fallback).
#  2. End to end: the process CPU time of the program profiled for 5
#     periods of 1 s, DWARF on (STOWAWAY_DEBUG_MEMORY_MB=64) against off
#     (=0), medians of interleaved runs: the added cost per period.
#  3. Constructor time: the program exits with _exit() at the top of main
#     (no exit flush), DWARF on against off against no library: reading
#     DWARF is lazy, so the constructor does not change.
set -eu
cd "$(dirname "$0")/../.."
so=${STOWAWAY_SO:-build/libstowaway.so}
query=build/tests/dwarf_query
for t in "$so" "$query"; do
	[ -e "$t" ] || make --no-print-directory -s "$t" >&2
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${BENCH_SYMBOLIZE_PROGRAM:-}" ]; then
	cp "$BENCH_SYMBOLIZE_PROGRAM" "$tmp/large"
	units=given
else
# The large program: TUs with regex, iostream, map, unordered_map, ...
units=${BENCH_SYMBOLIZE_UNITS:-12}
for i in $(seq 1 "$units"); do
	cat >"$tmp/unit$i.cc" <<CC
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
namespace unit$i {
template <typename K> struct Table {
	std::map<K, std::vector<std::string>> rows;
	std::unordered_map<std::string, K> index;
	void add(K k, const std::string &s) { rows[k].push_back(s); index[s] = k; }
	size_t score(const std::regex &re) const {
		size_t n = 0;
		for (auto &r : rows)
			for (auto &s : r.second)
				n += std::regex_search(s, re) ? s.size() : 1;
		return n;
	}
};
size_t work(int rounds) {
	Table<int> a; Table<long> b; Table<std::string> c;
	std::regex re("[a-f]+$i");
	size_t n = 0;
	for (int r = 0; r < rounds; r++) {
		std::ostringstream os; os << "k" << r * $i << "abc$i";
		a.add(r % 7, os.str()); b.add(r % 11, os.str()); c.add(os.str().substr(0, 3), os.str());
		n += a.score(re) + b.score(re) + c.score(re);
		std::vector<int> v(64);
		std::iota(v.begin(), v.end(), r);
		std::sort(v.begin(), v.end(), std::greater<int>());
		n += size_t(v[3]);
	}
	return n;
}
}
CC
done
{
	echo '#include <cstdio>'
	echo '#include <cstdlib>'
	echo '#include <cstring>'
	echo '#include <ctime>'
	echo '#include <unistd.h>'
	for i in $(seq 1 "$units"); do echo "namespace unit$i { size_t work(int); }"; done
	echo 'int main(int argc, char **argv) {'
	echo '  if (argc > 1 && strcmp(argv[1], "ctor") == 0) _exit(0);'
	echo '  double secs = argc > 1 ? atof(argv[1]) : 1; size_t n = 0; timespec ts;'
	echo '  do {'
	for i in $(seq 1 "$units"); do echo "    n += unit$i::work(40);"; done
	echo '    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);'
	echo '  } while (ts.tv_sec + ts.tv_nsec / 1e9 < secs);'
	echo '  printf("%zu\n", n); return 0; }'
} >"$tmp/main.cc"
objs=()
for f in "$tmp"/*.cc; do
	g++ -O2 -g -c "$f" -o "${f%.cc}.o"
	objs+=("${f%.cc}.o")
done
g++ -O2 -g "${objs[@]}" -o "$tmp/large"
fi
info=$(python3 -c 'import sys, subprocess
for l in subprocess.run(["readelf", "-SW", sys.argv[1]], capture_output=True, text=True).stdout.splitlines():
    f = l.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".debug_info": print(int(f[5], 16))' "$tmp/large")
echo "BENCH symbolize: program = $units C++ units, .debug_info $((info / 1024)) KiB, file $(($(stat -c %s "$tmp/large") / 1024)) KiB"

[ -n "${BENCH_SYMBOLIZE_KEEP:-}" ] && cp "$tmp/large" "$BENCH_SYMBOLIZE_KEEP"
# 1. The reader alone.
addrs=$(nm --defined-only -S "$tmp/large" | python3 -c 'import random, sys
f = [l.split() for l in sys.stdin]
f = [(int(x[0], 16), int(x[1], 16)) for x in f if len(x) == 4 and x[2] in "tTwW" and int(x[1], 16) > 0]
random.seed(1)
for _ in range(2000):
    a, n = random.choice(f)
    print(hex(a + random.randrange(n)))')
# shellcheck disable=SC2086
$query --stats "$tmp/large" $addrs 2>"$tmp/stats" >/dev/null
# shellcheck disable=SC2086
$query --stats --budget $((4 << 20)) "$tmp/large" $addrs 2>"$tmp/stats_small" >/dev/null
# shellcheck disable=SC2086
baseline_rss=$($query --stats --budget 1 "$tmp/large" 0x0 2>&1 | sed -n 's/.*maxrss_kib \([0-9]*\).*/\1/p')
STATS=$(grep '^stats:' "$tmp/stats") SMALL=$(grep '^stats:' "$tmp/stats_small") python3 - <<'PY'
import os
def parse(s):
    f = s.split()[1:]
    return {f[i]: float(f[i + 1]) for i in range(0, len(f) - 1, 2)}
a, b = parse(os.environ["STATS"]), parse(os.environ["SMALL"])
n = a["lookups"]
print("BENCH symbolize: index_build_ms = %.1f (unit table of the whole program)" % a["index_ms"])
print("BENCH symbolize: first_period_us_per_pc = %.1f (%d distinct pcs, units decoded on first use: %.0f ms)" % (1000 * a["first_pass_ms"] / n, n, a["first_pass_ms"]))
print("BENCH symbolize: later_period_us_per_pc = %.2f (same pcs, units cached: %.1f ms)" % (1000 * a["second_pass_ms"] / n, a["second_pass_ms"]))
print("BENCH symbolize: index_peak_mib = %.1f (budget 64 MiB; held at the end %.1f MiB)" % (a["peak_bytes"] / 2**20, a["bytes"] / 2**20))
print("BENCH symbolize: small_budget_4mib peak_mib = %.2f, first_pass_ms = %.0f, second_pass_ms = %.0f, lookups_over_budget = %d" % (
    b["peak_bytes"] / 2**20, b["first_pass_ms"], b["second_pass_ms"], b["over_budget"]))
PY
echo "BENCH symbolize: query_tool_maxrss_kib = $(sed -n 's/.*maxrss_kib \([0-9]*\).*/\1/p' "$tmp/stats") (file mapped and read; $baseline_rss with nothing decoded)"

# 2 and 3: end to end and constructor, interleaved medians.
SO="$PWD/$so" BIN="$tmp/large" TMP="$tmp" python3 - <<'PY'
import os, resource, statistics, subprocess, time
SO, BIN, TMP = os.environ["SO"], os.environ["BIN"], os.environ["TMP"]
clean = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}

def run(args, mb, lib=True):
    env = dict(clean)
    if lib:
        out = os.path.join(TMP, "out")
        os.makedirs(out, exist_ok=True)
        env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="1", STOWAWAY_OUTPUT_DIR=out, STOWAWAY_PROFILES="cpu",
                   DD_PROFILING_UPLOAD_PERIOD="1", STOWAWAY_DEBUG_MEMORY_MB=str(mb))
    t = time.monotonic()
    p = subprocess.Popen([BIN] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss

cpu = {0: [], 64: []}
rss = {0: [], 64: []}
for i in range(int(os.environ.get("BENCH_SYMBOLIZE_REPS", "3"))):
    for mb in (0, 64):
        _, c, r = run(["5"], mb)
        cpu[mb].append(c)
        rss[mb].append(r)
off, on = statistics.median(cpu[0]), statistics.median(cpu[64])
print("BENCH symbolize: process_cpu_s dwarf_off = %.3f, dwarf_on = %.3f, ratio = %.4f, added_ms_per_period = %.1f (5 CPU s, 1 s periods)" % (
    off, on, on / off, 1000 * (on - off) / 5))
print("BENCH symbolize: process_maxrss_kib dwarf_off = %d, dwarf_on = %d (added %d KiB)" % (
    statistics.median(rss[0]), statistics.median(rss[64]), statistics.median(rss[64]) - statistics.median(rss[0])))
walls = {"none": [], 0: [], 64: []}
for i in range(int(os.environ.get("BENCH_SYMBOLIZE_CTOR_REPS", "40"))):
    walls["none"].append(run(["ctor"], 0, lib=False)[0])
    for mb in (0, 64):
        walls[mb].append(run(["ctor"], mb)[0])
m = {k: statistics.median(v) * 1000 for k, v in walls.items()}
print("BENCH symbolize: constructor_ms no_library = %.2f, dwarf_off = %.2f, dwarf_on = %.2f, on/off = %.3f (start to _exit at main)" % (
    m["none"], m[0], m[64], m[64] / m[0]))
PY
