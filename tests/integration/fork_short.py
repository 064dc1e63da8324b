#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fork_short build/workloads/fork_short-musl
"""fork_short: what a short-lived forked child (a server forking a process per
connection) leaves in the output directory, in glibc and musl processes.
tests/workloads/fork_short.c forks children one after another.  Counts, not
times, from the files and from each process's debug line at its exit export
("file exporter: F files written, S retention scans, ..."):
  - children that exit at once have no sample of any kind, but for a CPU
    sample now and then (one that used c of CPU is sampled with probability
    c / 10 ms, its time taken at exit: a few percent): those without write
    no file and never scan the directory (no inode, no sync, no retention
    scan), at most 4 of 20 write a CPU file and nothing else, and the
    parent still writes its profiles (kinds cpu and alloc: a
    child descheduled for 10 ms on a loaded machine could take a wall
    sample, and one allocation glibc makes for our threads in the parent
    could be sampled and inherited as live heap by every child, both rightly
    written);
  - children that burn CPU write their CPU profile and scan the directory
    once each under a bound below 16, and the retention bound
    (STOWAWAY_MAX_FILES) holds; under a bound of 64 they share with their
    parent the room the last count left (64/16 = 4 files), so of 11
    processes writing one file each only every fifth counts (3 scans);
    children that all run out of room at once (released together, the
    directory far over its bound) count one at a time: fewer counts than
    files written (each used to count).  Each busy child has CPU samples even under load, when the kernel may
    send no CPU-timer signal in its 60 ms: what it passed undelivered is
    taken as it exits (`[unsampled]`, docs/architecture.md "CPU time");
  - children that each allocate half the sampling mean (256 KiB of 1 KiB
    blocks, mean 512 KiB) are sampled independently of one another: about
    1 - e^-0.5 = 39% of them write an allocation profile (binomial, 40
    children: 4..30 holds beyond 3.5 standard deviations), not all or none
    as when every child drew its sampling from the parent's generator;
  - with a parent that keeps 8 MiB allocated (about 16 samples of the
    live heap every child inherits): children that allocate nothing write
    no heap profile (their live heap is their parent's, which the parent's
    own profile shows), while children that keep 8 MiB of their own write
    one each (a child missing all of its ~16 samples: e^-16)."""
import os
import re
import subprocess
import tempfile
from checks import check, check_terse, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
LINE = re.compile(r"file exporter: (\d+) files written, (\d+) retention scans")
LEFT = re.compile(r"file exporter: \d+ files written, \d+ retention scans \((\d+) left to another")


def run(prog, out, n, burn_ms, extra=None, alloc_kb=0, keep=0, parent_kb=0, burst=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    # Each child exports itself, as one does that cannot hand its samples
    # to its parent (family.h; tests/integration/fork_family.py).
    env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               DD_SERVICE="fork_short", STOWAWAY_LOG_LEVEL="debug", STOWAWAY_CHILDREN_TO_PARENT="false",
               **(extra or {}))
    p = subprocess.run([os.path.join(WL, prog), str(n), str(burn_ms), str(alloc_kb), str(keep),
                        str(parent_kb), "0", str(burst)], env=env,
                       capture_output=True, text=True, timeout=120)
    lines = [tuple(int(x) for x in m.groups()) for m in LINE.finditer(p.stderr)]
    children = set(p.stdout.split())
    files = [f for f in os.listdir(out) if f.endswith(".pb.gz")]
    return p, lines, children, files


N_IDLE, N_BURN, MAX_FILES, N_ALLOC, N_HEAP, N_BURST = 20, 10, 6, 40, 10, 8
for prog in os.environ.get("STOWAWAY_VARIANTS", "fork_short fork_short-musl").split():
    with tempfile.TemporaryDirectory() as out:
        p, lines, children, files = run(prog, out, N_IDLE, 0, {"STOWAWAY_PROFILES": "cpu,alloc"})
        check_terse(f"{prog}: parent and {N_IDLE} idle children exit cleanly",
              p.returncode == 0 and len(children) == N_IDLE, f"rc {p.returncode}, "
              f"{len(children)} children; {p.stderr[-300:]}")
        pids = {f.split(".")[1] for f in files}
        child_files = [f for f in files if f.split(".")[1] in children]
        check(f"{prog}: children without samples write no file, the parent writes its own",
              len(pids - children) == 1 and len(pids & children) <= 4 and
              all(".cpu." in f for f in child_files), str(sorted(files)))
        idle = [ln for ln in lines if ln[0] == 0]
        check(f"{prog}: children without samples never scan the directory",
              len(lines) == N_IDLE + 1 and len(idle) >= N_IDLE - 4 and
              all(ln == (0, 0) for ln in idle),
              f"{len(idle)} of {len(lines)} exit lines with 0 files: {lines}")
    with tempfile.TemporaryDirectory() as out:
        p, lines, children, files = run(prog, out, N_BURN, 60, {"STOWAWAY_MAX_FILES": str(MAX_FILES),
                                                                "STOWAWAY_PROFILES": "cpu"})
        check_terse(f"{prog}: parent and {N_BURN} busy children exit cleanly",
              p.returncode == 0 and len(children) == N_BURN, f"rc {p.returncode}; {p.stderr[-300:]}")
        busy = [ln for ln in lines if ln[0] >= 1 and ln[1] == 1]
        check(f"{prog}: each process with samples writes and scans once",
              len(lines) == N_BURN + 1 and len(busy) == N_BURN + 1, str(lines))
        check(f"{prog}: at most STOWAWAY_MAX_FILES={MAX_FILES} profiles kept",
              0 < len(files) <= MAX_FILES, f"{len(files)} files: {sorted(files)}")
    with tempfile.TemporaryDirectory() as out:
        p, lines, children, files = run(prog, out, N_BURN, 60, {"STOWAWAY_MAX_FILES": "64",
                                                                "STOWAWAY_PROFILES": "cpu"})
        scans = sum(ln[1] for ln in lines)
        check(f"{prog}: under a bound of 64, parent and children share the room between counts",
              p.returncode == 0 and len(lines) == N_BURN + 1 and len(files) == N_BURN + 1 and
              scans == 3, f"rc {p.returncode}; {scans} scans for {len(files)} files: {lines}")
    with tempfile.TemporaryDirectory() as out:
        # A directory far over a bound of 16 (6000 old files; a count
        # removes at most 64, so none leaves room) and children that exit
        # together, each with a file to write: every one of them needs a
        # count, and fewer counts than writers means writers left theirs to
        # one counting already (each reads 6000 names, milliseconds).
        for i in range(6000):
            f = os.path.join(out, f"other.{i}.cpu.00000.00000000.pb.gz")
            open(f, "w").close()
            os.utime(f, (1e9, 1e9))
        p, lines, children, files = run(prog, out, N_BURST, 10, {"STOWAWAY_MAX_FILES": "16",
                                                                  "STOWAWAY_PROFILES": "cpu"},
                                        burst=1)
        left = [int(m.group(1)) for m in LEFT.finditer(p.stderr)]
        written = sum(ln[0] for ln in lines[:-1])
        scans = sum(ln[1] for ln in lines[:-1])
        check(f"{prog}: children that run out of room together leave the count to the one "
              f"counting (one count of the family at a time)",
              p.returncode == 0 and len(children) == N_BURST and written >= N_BURST - 2 and
              scans < written,
              f"rc {p.returncode}; {written} files written by {len(children)} children, "
              f"{scans} counts, {sum(left)} left to another process")
    with tempfile.TemporaryDirectory() as out:
        p, lines, children, files = run(prog, out, N_ALLOC, 0, {"STOWAWAY_PROFILES": "alloc"}, 256)
        sampled = {f.split(".")[1] for f in files if ".alloc." in f} & children
        check(f"{prog}: children sample their allocations independently",
              p.returncode == 0 and len(children) == N_ALLOC and 4 <= len(sampled) <= 30,
              f"rc {p.returncode}; {len(sampled)} of {len(children)} children wrote an allocation "
              f"profile (expected about {0.393 * N_ALLOC:.0f})")
    for keep_kb, want in ((0, 0), (8192, N_HEAP)):
        with tempfile.TemporaryDirectory() as out:
            p, lines, children, files = run(prog, out, N_HEAP, 0, {"STOWAWAY_PROFILES": "heap"},
                                            keep_kb, 1, 8192)
            heap = {f.split(".")[1] for f in files if ".heap." in f}
            what = "keep 8 MiB of their own" if keep_kb else "allocate nothing"
            check(f"{prog}: of children inheriting a live heap, those that {what} write "
                  f"{want} heap profiles, the parent its own",
                  p.returncode == 0 and len(children) == N_HEAP and
                  len(heap & children) == want and len(heap - children) == 1,
                  f"rc {p.returncode}; {len(heap & children)} of {len(children)} children and "
                  f"{len(heap - children)} other processes wrote a heap profile")
raise SystemExit(status())
