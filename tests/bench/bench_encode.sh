#!/usr/bin/env bash
# Recorder + pprof encoder + gzip on a 10k-stack, depth-30 profile, then the
# same profile re-encoded by Go's pprof (`go tool pprof -proto`) as a
# baseline for size.  Prints "BENCH encode: <metric> = <value> (<details>)".
set -eu
cd "$(dirname "$0")/../.."
bin=build/bench/bench_encode
[ -x "$bin" ] || make --no-print-directory -s "$bin" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" "$tmp/ours.pb.gz"
if command -v go >/dev/null 2>&1; then
	start=$(date +%s%N)
	HOME=$tmp PPROF_TMPDIR=$tmp go tool pprof -proto -symbolize=none "$tmp/ours.pb.gz" >"$tmp/go.pb.gz" 2>"$tmp/go.err"
	end=$(date +%s%N)
	ours=$(stat -c %s "$tmp/ours.pb.gz")
	theirs=$(stat -c %s "$tmp/go.pb.gz")
	echo "BENCH encode: gz_size_vs_go = $(awk -v a="$ours" -v b="$theirs" 'BEGIN{printf "%.2f", a/b}') ($ours bytes ours, $theirs bytes after go tool pprof -proto re-encode; go parse+encode took $(( (end - start) / 1000000 )) ms incl. process start)"
fi
