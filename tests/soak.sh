#!/usr/bin/env bash
# make soak: minutes, not in CI.  A multithreaded allocation- and
# syscall-heavy program (build/workloads/hazard_soak) runs first without the
# library (baseline, SOAK_BASELINE_S seconds) and then profiled at high rates
# (CPU 1000 Hz, allocation sample every 4 KiB, exports every second) for
# SOAK_SECONDS.  Every SOAK_EVERY_S seconds it prints the process's VmRSS,
# VmData and mapping count, and the profiler's share (profiled minus the
# baseline's steady value).  Fails if, after warm-up (the first third), RSS
# or VmData grow by more than SOAK_BOUND_KB, or the run crashes or hangs.
# Env: SOAK_SECONDS (180), SOAK_LIBC (glibc|musl, glibc), SOAK_THREADS (4).
set -u
cd "$(dirname "$0")/.."
seconds="${SOAK_SECONDS:-180}"
baseline_s="${SOAK_BASELINE_S:-20}"
every="${SOAK_EVERY_S:-5}"
bound_kb="${SOAK_BOUND_KB:-4096}"
threads="${SOAK_THREADS:-4}"
prog=build/workloads/hazard_soak
[ "${SOAK_LIBC:-glibc}" = musl ] && prog=build/workloads/hazard_soak-musl
so="$PWD/build/libstowaway.so"
out=$(mktemp -d /tmp/stowaway-soak.XXXXXX)
trap 'rm -rf "$out"' EXIT

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status" 2>/dev/null; }

# sample PID SECONDS LABEL -> prints rows, leaves "t rss data maps" rows in $out/LABEL.tsv
sample() {
	local pid=$1 secs=$2 label=$3 t=0
	: >"$out/$label.tsv"
	while [ "$t" -le "$secs" ] && kill -0 "$pid" 2>/dev/null; do
		local rss data maps
		rss=$(field VmRSS "$pid")
		data=$(field VmData "$pid")
		maps=$(wc -l <"/proc/$pid/maps" 2>/dev/null)
		[ -n "$rss" ] || break
		echo "$t $rss $data $maps" >>"$out/$label.tsv"
		printf '%-9s t=%4ss  VmRSS %7s kB  VmData %8s kB  maps %5s\n' "$label" "$t" "$rss" "$data" "$maps"
		sleep "$every"
		t=$((t + every))
	done
}

echo "soak: $prog, $threads threads; baseline ${baseline_s}s, profiled ${seconds}s"
"$prog" "$threads" "$((baseline_s + 2))" >/dev/null &
pid=$!
sleep 1
sample "$pid" "$baseline_s" plain
wait "$pid"
base_rc=$?

env LD_PRELOAD="$so" DD_PROFILING_ENABLED=true STOWAWAY_OUTPUT_DIR="$out" STOWAWAY_CPU_HZ=1000 \
	DD_PROFILING_UPLOAD_PERIOD=1 STOWAWAY_ALLOC_SAMPLE_BYTES=4096 \
	"$prog" "$threads" "$((seconds + 3))" >"$out/stdout" 2>"$out/stderr" &
pid=$!
sleep 1
sample "$pid" "$seconds" profiled
# The program stops by itself 3 s later; give it the exit timeout and more.
rc=
for _ in $(seq 1 300); do
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		rc=$?
		break
	fi
	sleep 0.1
done
if [ -z "$rc" ]; then
	kill -9 "$pid" 2>/dev/null
	echo "FAIL soak: the profiled program did not exit (hang)"
	exit 1
fi

files=$(ls "$out" | grep -c '\.pb\.gz$')
awk -v bound="$bound_kb" -v rc="$rc" -v base_rc="$base_rc" -v files="$files" '
	FNR == 1 { file++ }
	file == 1 { prss = $2; pdata = $3 }          # baseline: steady (last) value
	file == 2 { t[n] = $1; rss[n] = $2; data[n] = $3; maps[n] = $4; n++ }
	END {
		if (n < 6) { print "FAIL soak: too few samples (" n ")"; exit 1 }
		warm = int(n / 3)
		rmax_w = 0; dmax_w = 0
		for (i = warm; i < int(n * 2 / 3); i++) { if (rss[i] > rmax_w) rmax_w = rss[i]; if (data[i] > dmax_w) dmax_w = data[i] }
		rmax_l = 0; dmax_l = 0
		for (i = int(n * 2 / 3); i < n; i++) { if (rss[i] > rmax_l) rmax_l = rss[i]; if (data[i] > dmax_l) dmax_l = data[i] }
		printf "baseline (no profiler, steady): VmRSS %d kB, VmData %d kB\n", prss, pdata
		printf "profiled after warm-up (t=%ds): VmRSS %d kB, VmData %d kB, maps %d\n", t[warm], rss[warm], data[warm], maps[warm]
		printf "profiled at the end    (t=%ds): VmRSS %d kB, VmData %d kB, maps %d\n", t[n-1], rss[n-1], data[n-1], maps[n-1]
		printf "profiler share at the end: VmRSS %+d kB, VmData %+d kB (profiled - baseline)\n", rss[n-1] - prss, data[n-1] - pdata
		printf "growth after warm-up (max of last third - max of middle third): VmRSS %+d kB, VmData %+d kB (bound %d kB)\n", rmax_l - rmax_w, dmax_l - dmax_w, bound
		printf "profiles written: %d; exit status %d (baseline %d)\n", files, rc, base_rc
		bad = 0
		if (rc != base_rc) { print "FAIL soak: exit status changed"; bad = 1 }
		if (files < 3) { print "FAIL soak: profiles missing"; bad = 1 }
		if (rmax_l - rmax_w > bound || dmax_l - dmax_w > bound) { print "FAIL soak: memory grows after warm-up"; bad = 1 }
		if (!bad) print "PASS soak: memory flat after warm-up, clean exit"
		exit bad
	}' "$out/plain.tsv" "$out/profiled.tsv"
status=$?
grep -v '^stowaway: \(CPU\|allocation\|wall\|profiling\)' "$out/stderr" | head -5
exit $status
