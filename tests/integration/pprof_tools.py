#!/usr/bin/env python3
# needs: build/tests/pprof_sample_writer
"""Checks our pprof encoder with independent tools: go tool pprof (-raw,
-top, -traces) and protoc --decode_raw, on the profiles written by
build/tests/pprof_sample_writer (values documented in its source)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITER = os.path.join(ROOT, "build", "tests", "pprof_sample_writer")
failed = 0


def report(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name)
    if not ok:
        failed += 1
        if detail:
            print("  " + detail.replace("\n", "\n  "), file=sys.stderr)


def run(args, env, stdin=None):
    if stdin:
        with open(stdin, "rb") as f:
            p = subprocess.run(args, env=env, stdin=f, capture_output=True, timeout=120)
    else:
        p = subprocess.run(args, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def pprof(env, *args):
    return run(["go", "tool", "pprof", "-symbolize=none"] + list(args), env)


def top_rows(out):
    """function name -> (flat, cum) strings from `pprof -top`."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$", line)
        if m:
            rows[m.group(3).strip()] = (m.group(1), m.group(2))
    return rows


def main():
    if not os.access(WRITER, os.X_OK):
        report("pprof_sample_writer_built", False, WRITER + " missing (make test-build)")
        return 1
    tmp = tempfile.mkdtemp(prefix="stowaway-pprof-")
    env = dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp, GOCACHE=os.path.join(tmp, "gocache"),
               GOFLAGS="", PPROF_BINARY_PATH=tmp)
    sys.stdout.flush()
    rc = subprocess.run([WRITER, tmp]).returncode
    report("pprof_sample_writer_runs", rc == 0)
    if rc != 0:
        return 1
    cpu = os.path.join(tmp, "cpu.pprof")
    cpu_gz = os.path.join(tmp, "cpu.pb.gz")
    combined = os.path.join(tmp, "combined.pprof")
    overflow = os.path.join(tmp, "overflow.pprof")

    # -raw: sample types, period, labels, locations and mappings as encoded.
    rc, raw, err = pprof(env, "-raw", cpu)
    expect = [
        "PeriodType: cpu-time nanoseconds",
        "Period: 10000000",
        "Duration: 1m0s",
        "Comment: stowaway sample writer",
        "cpu-samples/count cpu-time/nanoseconds[dflt]",
        "thread name:[worker]",
        "span id:[77] thread id:[4242]",
        "state:[had cpu]",
    ]
    missing = [e for e in expect if e not in raw]
    report("go_pprof_raw_cpu_header_and_labels", rc == 0 and not missing, err + "missing: %s\n%s" % (missing, raw))
    samples = re.findall(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", raw, re.M)
    got = sorted((int(a), int(b), len(c.split())) for a, b, c in samples)
    want = sorted([(30, 300000000, 3), (50, 500000000, 3), (10, 100000000, 3), (4, 40000000, 3)])
    report("go_pprof_raw_cpu_samples", got == want, "got %s want %s" % (got, want))
    report("go_pprof_raw_unsymbolized_pc_keeps_module_address",
           re.search(r"^\s+\d+: 0x7f1000001234 M=2 *$", raw, re.M) is not None, raw)
    report("go_pprof_raw_synthetic_truncated_frame",
           re.search(r"^\s+\d+: 0x0 \[truncated\]", raw, re.M) is not None, raw)
    maps = re.findall(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?(.*)$", raw, re.M)
    app = [m for m in maps if m[4] == "/opt/demo/app"]
    libc = [m for m in maps if m[4] == "/lib/libc.so.6"]
    report("go_pprof_raw_mappings",
           len(maps) == 2 and len(app) == 1 and app[0][1:4] == ("0x400000", "0x500000", "0x0")
           and "aabbccddeeff00112233445566778899aabbccdd" in app[0][5] and "[FN][FL][LN]" in app[0][5]
           and len(libc) == 1 and "[FN]" not in libc[0][5], "%s" % (maps,))

    # -top: flat and cumulative values per function.
    rc, top, err = pprof(env, "-top", "-sample_index=cpu-time", cpu)
    rows = top_rows(top)
    want_rows = {"compress": ("500ms", "500ms"), "parse": ("340ms", "340ms"), "[libc.so.6]": ("100ms", "100ms"),
                 "main": ("0", "900ms"), "serve": ("0", "840ms"), "lookup": ("0", "100ms"),
                 "[truncated]": ("0", "40ms")}
    bad = {k: (rows.get(k), v) for k, v in want_rows.items() if rows.get(k) != v}
    report("go_pprof_top_cpu_time", rc == 0 and "Total samples = 940ms" in top and not bad,
           err + "mismatch %s\n%s" % (bad, top))
    rc, top_n, err = pprof(env, "-top", "-sample_index=cpu-samples", cpu)
    rows = top_rows(top_n)
    report("go_pprof_top_cpu_samples", rc == 0 and rows.get("compress") == ("50", "50")
           and rows.get("main") == ("0", "90"), err + top_n)

    # -traces: frames leaf first.
    rc, traces, err = pprof(env, "-traces", cpu)
    report("go_pprof_traces_leaf_first",
           rc == 0 and re.search(r"300ms\s+parse\n\s+serve\n\s+main\n", traces) is not None
           and re.search(r"40ms\s+parse\n\s+serve\n\s+\[truncated\]\n", traces) is not None, err + traces)

    # The gzip'ed copy (our deflate) decodes to the same profile.
    rc2, raw_gz, err2 = pprof(env, "-raw", cpu_gz)
    report("go_pprof_reads_gzip_copy", rc2 == 0 and raw_gz == raw, err2)

    # Combined: every slot side by side; per-type totals.
    rc, raw_c, err = pprof(env, "-raw", combined)
    report("go_pprof_raw_combined_types",
           rc == 0 and "cpu-samples/count cpu-time/nanoseconds[dflt] wall-samples/count wall-time/nanoseconds "
           "alloc-samples/count alloc-space/bytes" in raw_c, err + raw_c)
    for index, func, value in (("wall-time", "compress", "2s"), ("alloc-space", "parse", "8MB"),
                               ("cpu-time", "compress", "500ms")):
        rc, top_c, err = pprof(env, "-top", "-sample_index=" + index, combined)
        rows = top_rows(top_c)
        report("go_pprof_top_combined_" + index.replace("-", "_"),
               rc == 0 and rows.get(func, ("",))[0] == value, err + top_c)

    # Overflow: one [overflow] sample with the merged totals, and a comment.
    rc, raw_o, err = pprof(env, "-raw", overflow)
    report("go_pprof_overflow_sample_and_comment",
           rc == 0 and "15 samples exceeded the recorder bounds" in raw_o
           and re.search(r"^\s+15\s+15000: (\d+) *$", raw_o, re.M) is not None
           and re.search(r"^\s+\d+: 0x0 \[overflow\]", raw_o, re.M) is not None
           and "PeriodType: alloc-space bytes" in raw_o and "Period: 524288" in raw_o, err + raw_o)

    # protoc --decode_raw: the wire format itself.
    for path in (cpu, combined, overflow):
        name = os.path.basename(path).replace(".", "_")
        rc, dec, err = run(["protoc", "--decode_raw"], env, stdin=path)
        top_fields = set(int(m) for m in re.findall(r"^(\d+)[: ]", dec, re.M))
        strings = re.findall(r'^6: "(.*)"$', dec, re.M)
        report("protoc_decode_raw_" + name,
               rc == 0 and top_fields <= set(range(1, 16)) and {1, 2, 4, 5, 6} <= top_fields
               and len(strings) > 1 and strings[0] == "" and len(set(strings)) == len(strings),
               err + dec[:2000])
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
