#!/usr/bin/env bash
# The library's size and what loading it costs.
#
# Size: file bytes and text/data/bss from size(1).  Cost: a trivial program
# (build/workloads/hello: one thread, a few allocations, exits) is run many
# times, interleaved, without the library, with it preloaded but disabled,
# and preloaded and enabled (default kinds, files written at exit); the
# medians of wall time and of the child's CPU time (wait4 rusage) are
# compared.  "Enabled" therefore includes the constructor (configuration,
# module registry, unwind tables, threads, timers) and the final export at
# exit (encode, gzip, write, fsync of one file per kind).
set -eu
cd "$(dirname "$0")/../.."
so=${STOWAWAY_SO:-build/libstowaway.so}
hello=build/workloads/hello
for t in "$so" "$hello"; do
	[ -e "$t" ] || make --no-print-directory -s "$t" >&2
done

bytes=$(stat -c %s "$so")
read -r text data bss _ < <(size "$so" | awk 'NR == 2')
echo "BENCH startup: library_bytes = $bytes (text $text, data $data, bss $bss bytes; $(basename "$so") with debug info: see stripped)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
strip -o "$tmp/stripped.so" "$so"
echo "BENCH startup: library_stripped_bytes = $(stat -c %s "$tmp/stripped.so") (strip --strip-all of the same file)"

SO="$PWD/$so" HELLO="$PWD/$hello" TMP="$tmp" python3 - <<'EOF'
import os, statistics, subprocess, time

SO, HELLO, TMP = os.environ["SO"], os.environ["HELLO"], os.environ["TMP"]
REPS = int(os.environ.get("BENCH_STARTUP_REPS", "200"))
clean = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}

def run(kind, i):
    env = dict(clean)
    if kind != "base":
        env["LD_PRELOAD"] = SO
    if kind == "enabled":
        d = os.path.join(TMP, f"out{i}")
        os.mkdir(d)
        env.update(DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=d, DD_SERVICE="hello")
    t0 = time.monotonic_ns()
    p = subprocess.Popen([HELLO], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic_ns() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{kind}: hello failed: {p.stderr.read()[-300:]}")
    p.stderr.close()
    return wall / 1e3, (ru.ru_utime + ru.ru_stime) * 1e6

kinds = ["base", "disabled", "enabled"]
res = {k: [] for k in kinds}
for i in range(REPS):
    for k in kinds[i % 3:] + kinds[:i % 3]:
        res[k].append(run(k, i))

def med(k, j):
    return statistics.median(r[j] for r in res[k])

def quart(k, j):
    q = statistics.quantiles([r[j] for r in res[k]], n=4)
    return f"{q[0]:.0f}..{q[2]:.0f}"

print(f"BENCH startup: base_wall_us = {med('base', 0):.0f} (build/workloads/hello without the library, "
      f"median of {REPS}, quartiles {quart('base', 0)} us; CPU {med('base', 1):.0f} us)")
for k, what in [("disabled", "preloaded, disabled: the constructor reads the environment and stops"),
                ("enabled", "preloaded, enabled with default kinds: constructor, threads, and the "
                            "final export of 4 files at exit")]:
    print(f"BENCH startup: {k}_added_wall_us = {med(k, 0) - med('base', 0):.0f} ({what}; median "
          f"{med(k, 0):.0f} us, quartiles {quart(k, 0)} us, {REPS} runs)")
    print(f"BENCH startup: {k}_added_cpu_us = {med(k, 1) - med('base', 1):.0f} (same runs, child CPU "
          f"time from wait4: median {med(k, 1):.0f} us vs {med('base', 1):.0f} us)")
EOF
