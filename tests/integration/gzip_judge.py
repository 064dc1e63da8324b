#!/usr/bin/env python3
# needs: build/tests/bench_gzip_driver build/tests/test_gzip
"""Independent judges of our gzip output (src/deflate/).

1. build/tests/test_gzip --corpus-dir writes the unit-test corpus (empty, one
   byte, all byte values, random 1 MiB, repetitive 4 MiB, text, matches at
   distance 32768, window edges, pprof-like bodies, 9 MiB mixed) and our
   output at every level plus a stream written in odd chunks.
2. Real pprof bodies: a tiny Go program profiles itself with runtime/pprof;
   the bodies (un-gzipped by Python) are compressed by our driver.
Each output must decode byte-exact with Python's gzip module, with zlib
(gzip wrapper, and raw inflate of the DEFLATE body between header and
trailer), and with gzip(1) (`gzip -t`, `gzip -dc`).
"""
import gzip
import os
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEST_BIN = os.path.join(ROOT, "build", "tests", "test_gzip")
DRIVER = os.path.join(ROOT, "build", "tests", "bench_gzip_driver")
failures = 0


def report(ok, name, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + name + (f" ({detail})" if detail and not ok else ""))
    if not ok:
        failures += 1


def judge(gz_path, want, label):
    data = open(gz_path, "rb").read()
    try:
        report(gzip.decompress(data) == want, f"python_gzip {label}")
    except Exception as e:  # noqa: BLE001 - any decoder error is a failure
        report(False, f"python_gzip {label}", repr(e))
    try:
        d = zlib.decompressobj(wbits=31)
        got = d.decompress(data) + d.flush()
        report(got == want and d.eof and d.unused_data == b"", f"zlib_gzip {label}")
    except zlib.error as e:
        report(False, f"zlib_gzip {label}", repr(e))
    # Header as we document it: no optional fields, OS=Unix; trailer CRC and ISIZE.
    head_ok = len(data) >= 18 and data[:4] == b"\x1f\x8b\x08\x00" and data[9] == 3
    crc, isize = struct.unpack("<II", data[-8:]) if len(data) >= 18 else (None, None)
    report(head_ok and crc == zlib.crc32(want) and isize == len(want) % (1 << 32),
           f"header_trailer {label}")
    try:
        d = zlib.decompressobj(wbits=-15)
        got = d.decompress(data[10:-8]) + d.flush()
        report(got == want and d.eof and d.unused_data == b"", f"zlib_raw_deflate {label}")
    except zlib.error as e:
        report(False, f"zlib_raw_deflate {label}", repr(e))
    t = subprocess.run(["gzip", "-t", gz_path], capture_output=True)
    report(t.returncode == 0, f"gzip_t {label}", t.stderr.decode(errors="replace").strip())
    dc = subprocess.run(["gzip", "-dc", gz_path], capture_output=True)
    report(dc.returncode == 0 and dc.stdout == want, f"gzip_dc {label}")


GO_PROGRAM = r"""
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"time"
)

var sink []byte

func work(i int) {
	m := map[string]int{}
	for k := 0; k < 200; k++ {
		m[fmt.Sprintf("key%d-%d", i, k)] = k
	}
	b, _ := json.Marshal(m)
	var back map[string]int
	_ = json.Unmarshal(b, &back)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	keys := make([]string, 0, len(back))
	for k := range back {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sink = []byte(strings.Join(keys, ","))
}

func main() {
	runtime.MemProfileRate = 512
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		work(i)
	}
	pprof.StopCPUProfile()
	f.Close()
	h, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	pprof.Lookup("allocs").WriteTo(h, 0)
	h.Close()
}
"""


def real_pprof_bodies(tmp):
    """Returns [(name, body)] of uncompressed pprof bodies written by Go."""
    src = os.path.join(tmp, "goprof")
    os.makedirs(src)
    with open(os.path.join(src, "main.go"), "w") as f:
        f.write(GO_PROGRAM)
    with open(os.path.join(src, "go.mod"), "w") as f:
        f.write("module goprof\n\ngo 1.19\n")
    env = dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="on")
    env.setdefault("GOCACHE", os.path.join(tmp, "gocache"))
    exe = os.path.join(tmp, "goprof_bin")
    b = subprocess.run(["go", "build", "-o", exe, "."], cwd=src, env=env,
                       capture_output=True, timeout=300)
    if b.returncode != 0:
        report(False, "go_build_pprof_writer", b.stderr.decode(errors="replace")[-300:])
        return []
    cpu, heap = os.path.join(tmp, "cpu.pb.gz"), os.path.join(tmp, "heap.pb.gz")
    r = subprocess.run([exe, cpu, heap], capture_output=True, timeout=120)
    report(r.returncode == 0, "go_pprof_writer_ran", r.stderr.decode(errors="replace")[-300:])
    if r.returncode != 0:
        return []
    return [("go_cpu_pprof", gzip.decompress(open(cpu, "rb").read())),
            ("go_heap_pprof", gzip.decompress(open(heap, "rb").read()))]


def main():
    for exe in (TEST_BIN, DRIVER):
        if not os.access(exe, os.X_OK):
            report(False, "built " + os.path.relpath(exe, ROOT), "run make test-build")
            return 1
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        os.makedirs(corpus)
        r = subprocess.run([TEST_BIN, "--corpus-dir", corpus], capture_output=True, text=True)
        report(r.returncode == 0, "unit_corpus_written", r.stdout[-500:] + r.stderr[-500:])
        names = sorted(f for f in os.listdir(corpus) if f.endswith(".gz"))
        report(len(names) >= 60, "corpus_outputs_present", f"{len(names)} files")
        inputs = {}
        for name in names:
            base = name.split(".")[0]
            if base not in inputs:
                inputs[base] = open(os.path.join(corpus, base + ".bin"), "rb").read()
            judge(os.path.join(corpus, name), inputs[base], name)

        for name, body in real_pprof_bodies(tmp):
            raw = os.path.join(tmp, name + ".pb")
            with open(raw, "wb") as f:
                f.write(body)
            for level in (1, 6, 9):
                out = os.path.join(tmp, f"{name}.L{level}.gz")
                c = subprocess.run([DRIVER, "compress", raw, str(level), out], capture_output=True)
                report(c.returncode == 0, f"compress {name} L{level}")
                if c.returncode == 0:
                    judge(out, body, f"{name}.L{level}.gz")
            # Level 6 stays within 5% of gzip -6 on a real profile.
            ours = os.path.getsize(os.path.join(tmp, f"{name}.L6.gz"))
            theirs = len(subprocess.run(["gzip", "-6", "-c", raw], capture_output=True,
                                        check=True).stdout)
            report(ours <= theirs * 1.05, f"size_vs_gzip6 {name}", f"{ours} vs {theirs}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
