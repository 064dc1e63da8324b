#!/usr/bin/env bash
# Our gzip (src/deflate/) against gzip(1) -6 and -1 on the same
# synthetic pprof bodies in the same run: output size ratio and speed ratio.
# Each compressor runs REPS times per body, the fastest run counts; gzip(1)
# is timed around its process (start-up is about 1 ms of ~100 ms).
# Targets: level 6 within 1.05x the size of gzip -6 and >= 2x its speed.
# Then our decompressors against zlib's, in the same process, interleaved
# (bench_gzip_driver inflate): libc6-dbg's compressed DWARF sections (zlib
# streams) and the system's largest gzip files, output MB/s of each (the
# fastest of REPS runs; the driver checks both give the same bytes).
set -eu
cd "$(dirname "$0")/../.."
drv=build/tests/bench_gzip_driver
[ -x "$drv" ] || make --no-print-directory -s "$drv" >&2
reps="${GZIP_BENCH_REPS:-7}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$drv" pprof 4000000 12 "$tmp/body1.pb"
"$drv" pprof 8000000 13 "$tmp/body2.pb"
"$drv" pprof 1000000 14 "$tmp/body3.pb"

python3 - "$drv" "$reps" "$tmp"/body*.pb <<'EOF'
import subprocess, sys, time

drv, reps, bodies = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def ours(path, level):
    out = subprocess.run([drv, "time", path, str(level), str(reps)], check=True,
                         capture_output=True, text=True).stdout
    fields = dict(kv.split("=") for kv in out.split())
    return int(fields["size"]), int(fields["best_ns"]) / 1e9

def gzip(path, level):
    best, size = None, None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = subprocess.run(["gzip", f"-{level}", "-c", path], check=True,
                             stdout=subprocess.PIPE).stdout
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
        size = len(out)
    return size, best

total_in = 0
acc = {}
for path in bodies:
    n = len(open(path, "rb").read())
    total_in += n
    # Interleave so a busy machine slows both sides alike.
    for name, fn, level in (("ours6", ours, 6), ("gzip6", gzip, 6),
                            ("ours1", ours, 1), ("gzip1", gzip, 1)):
        size, secs = fn(path, level)
        s, t = acc.get(name, (0, 0.0))
        acc[name] = (s + size, t + secs)

mb = total_in / 1e6
def speed(name): return mb / acc[name][1]
print(f"BENCH gzip: size_ratio_vs_gzip6 = {acc['ours6'][0] / acc['gzip6'][0]:.3f} "
      f"(level 6: {acc['ours6'][0]} bytes vs gzip -6 {acc['gzip6'][0]} bytes from {total_in} "
      f"bytes of pprof bodies; target <= 1.05)")
print(f"BENCH gzip: speed_ratio_vs_gzip6 = {speed('ours6') / speed('gzip6'):.2f} "
      f"(level 6: {speed('ours6'):.1f} MB/s vs gzip -6 {speed('gzip6'):.1f} MB/s; target >= 2)")
print(f"BENCH gzip: size_ratio_fast_vs_gzip1 = {acc['ours1'][0] / acc['gzip1'][0]:.3f} "
      f"(level 1: {acc['ours1'][0]} bytes vs gzip -1 {acc['gzip1'][0]} bytes)")
print(f"BENCH gzip: speed_ratio_fast_vs_gzip1 = {speed('ours1') / speed('gzip1'):.2f} "
      f"(level 1: {speed('ours1'):.1f} MB/s vs gzip -1 {speed('gzip1'):.1f} MB/s)")
print(f"BENCH gzip: speed_ratio_fast_vs_gzip6 = {speed('ours1') / speed('gzip6'):.2f} "
      f"(level 1 vs gzip -6; compression ratio {total_in / acc['ours1'][0]:.2f}x vs "
      f"{total_in / acc['gzip6'][0]:.2f}x)")
EOF

python3 - "$drv" "$reps" "$tmp" <<'EOF'
import os, subprocess, sys
sys.path.insert(0, "tests/bench")
from zsections import compressed_sections, gzip_files, libc_debug_file

drv, reps, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
inputs = {"dwarf": [], "gzip": []}
debug = libc_debug_file()
for name, stream, _ in compressed_sections(debug) if debug else []:
    path = os.path.join(tmp, "libc" + name + ".z")
    with open(path, "wb") as f:
        f.write(stream)
    inputs["dwarf"].append(path)
seen = set()
for path in gzip_files(40):
    key = os.stat(path).st_ino
    if key not in seen and len(inputs["gzip"]) < 4:
        seen.add(key)
        inputs["gzip"].append(path)
for kind, paths in inputs.items():
    if not paths:
        print(f"BENCH inflate_{kind}: skipped (no input: libc6-dbg, /usr/share/doc/*/*.gz)")
        continue
    out = ours = zlib = 0
    for path in paths:
        r = subprocess.run([drv, "inflate", path, reps], check=True, capture_output=True, text=True)
        f = dict(kv.split("=") for kv in r.stdout.split())
        out += int(f["out"])
        ours += int(f["ours_ns"]) / 1e9
        zlib += int(f["zlib_ns"]) / 1e9
    mb = out / 1e6
    print(f"BENCH inflate_{kind}: speed_ratio_vs_zlib = {(mb / ours) / (mb / zlib):.2f} "
          f"(ours {mb / ours:.0f} MB/s vs zlib {mb / zlib:.0f} MB/s of output, {mb:.1f} MB "
          f"from {len(paths)} streams, same bytes)")
EOF
