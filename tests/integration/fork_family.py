#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fork_short build/workloads/fork_short-musl
"""A forked child hands the samples of its last period to its parent
(src/profile/family.h): tests/workloads/fork_short forks 20 children one
after another, each burning 60 ms of CPU in burn() and allocating 2 MiB
(kept, so each has live heap at its exit).  Judged by go tool pprof
-traces on the files and by the processes' debug lines, in glibc and musl
processes:
  - the children write no file; the parent's debug line says it took over
    all 20 deliveries;
  - the parent's CPU profile holds the children's burn() time (at least
    half of their 1.2 s, under load), aggregated without a thread id (the
    parent's own samples keep its own) and no child's pid; its allocation
    profile holds their allocations (at least half of their 40 MiB in all)
    the same way;
  - the live heap of an exited child is not handed over: the parent, which
    keeps nothing, writes no heap profile;
  - with STOWAWAY_CHILDREN_TO_PARENT=false every child writes its own
    profiles and the parent's carry no child's pid."""
import os
import re
import subprocess
import sys
import tempfile

from checks import check, status
from pprof_traces import traces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
N, BURN_MS, ALLOC_KB = 20, 60, 2048
TAKEN = re.compile(r"fork family: (\d+) children's last samples taken over \((\d+) samples\), "
                   r"(\d+) malformed")


def run(prog, out, to_parent):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               DD_SERVICE="fork_family", STOWAWAY_LOG_LEVEL="debug",
               STOWAWAY_CHILDREN_TO_PARENT="true" if to_parent else "false")
    p = subprocess.run([os.path.join(WL, prog), str(N), str(BURN_MS), str(ALLOC_KB), "1"], env=env,
                       capture_output=True, text=True, timeout=120)
    return p, set(p.stdout.split())


def pids_of(out, kind):
    """{pid in the file name: path} of the profiles of one kind."""
    files = {}
    for f in os.listdir(out):
        parts = f.split(".")
        if len(parts) > 3 and parts[2] == kind and f.endswith(".pb.gz"):
            files[parts[1]] = os.path.join(out, f)
    return files


def by_thread(path, out, index):
    """{thread id: (value, stacks)} of one profile."""
    got = {}
    for labels, stack, value in traces(path, dict(os.environ, HOME=out, PPROF_TMPDIR=out), index):
        tid = labels.get("thread id", "").strip("[]")
        v, stacks = got.get(tid, (0.0, []))
        got[tid] = (v + (value or 0.0), stacks + [(stack, value or 0.0)])
    return got


def alloc_space(path, out):
    """{thread id ("" for none): bytes} of an allocation profile, from go
    tool pprof -traces (sizes printed with units)."""
    text = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=alloc-space", path],
                          capture_output=True, text=True,
                          env=dict(os.environ, HOME=out, PPROF_TMPDIR=out)).stdout
    units = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
    got, tid = {}, ""
    for line in text.splitlines():
        if line.startswith("-----------"):
            tid = ""
            continue
        m = re.match(r"\s*thread id:\s*\[?(\d+)", line)
        if m:
            tid = m.group(1)
            continue
        m = re.match(r"\s*([\d.]+)(B|kB|MB|GB)\s", line)
        if m:
            got[tid] = got.get(tid, 0) + float(m.group(1)) * units[m.group(2)]
    return got


def main():
    for prog in ("fork_short", "fork_short-musl"):
        with tempfile.TemporaryDirectory() as out:
            p, children = run(prog, out, True)
            ok = check(f"{prog}: runs and names its {N} children", p.returncode == 0 and len(children) == N,
                       f"rc {p.returncode}; {p.stderr[-300:]}")
            if not ok:
                continue
            writers = {pid for kind in ("cpu", "alloc", "heap", "wall") for pid in pids_of(out, kind)}
            parent = writers - children
            check(f"{prog}: the children write no file, the parent its own", not (writers & children)
                  and len(parent) == 1, f"writers {sorted(writers)}")
            m = TAKEN.search(p.stderr)
            check(f"{prog}: the parent took over all {N} children's samples, none malformed",
                  m is not None and int(m.group(1)) == N and int(m.group(3)) == 0,
                  m.group(0) if m else p.stderr[-400:])
            if len(parent) != 1:
                continue
            pid = parent.pop()
            cpu = by_thread(pids_of(out, "cpu")[pid], out, "cpu-time")
            in_burn = sum(v for s, v in cpu.get("", (0, []))[1] if "burn" in s)
            check(f"{prog}: the parent's CPU profile holds the children's burn() time without a "
                  f"thread id ({in_burn / 1e6:.0f} ms of {N * BURN_MS} ms), under no child's pid",
                  in_burn >= N * BURN_MS * 1e6 / 2 and not (set(cpu) & children), sorted(cpu))
            alloc = alloc_space(pids_of(out, "alloc")[pid], out)
            check(f"{prog}: the parent's allocation profile holds the children's allocations without "
                  f"a thread id ({alloc.get('', 0) / 2**20:.1f} MiB of {N * ALLOC_KB / 1024:.0f} MiB), "
                  f"under no child's pid",
                  alloc.get("", 0) >= N * ALLOC_KB * 1024 / 2 and not (set(alloc) & children),
                  {k: v for k, v in alloc.items()})
            check(f"{prog}: no child's live heap is handed over", "heap" not in
                  {f.split(".")[2] for f in os.listdir(out)}, os.listdir(out))
        with tempfile.TemporaryDirectory() as out:
            p, children = run(prog, out, False)
            writers = set(pids_of(out, "cpu"))
            check(f"{prog}, STOWAWAY_CHILDREN_TO_PARENT=false: every child writes its own CPU profile",
                  p.returncode == 0 and children and children <= writers,
                  f"{len(children & writers)} of {len(children)}")
            parent = writers - children
            leaked = []
            for pid in parent:
                leaked += [t for t in by_thread(pids_of(out, "cpu")[pid], out, "cpu-time") if t in children]
            check(f"{prog}, STOWAWAY_CHILDREN_TO_PARENT=false: the parent's profile carries no child's pid",
                  len(parent) == 1 and not leaked, leaked)


main()
sys.exit(status())
