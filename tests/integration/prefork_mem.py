#!/usr/bin/env python3
"""prefork_mem: what a forked worker of a prefork server pays in memory for
the profiler (default kinds: cpu, wall, alloc, heap), in glibc and musl
processes.  tests/workloads/prefork_mem.c forks 4 workers that serve small
requests (allocations, a pipe round trip); midway each reads its own
/proc/self/smaps_rollup.  Compared with the same workload without the
library, in the same run:
  - Pss_Anon added per worker <= 2048 kB (pages shared copy-on-write with
    the parent count once, split among the processes that share them);
  - Private_Dirty added per worker <= 1024 kB: a child writes only the
    tables it uses, so the parent's per-thread tables (thread registry, wall
    state, span contexts, allocation slots, sample rings) stay shared.
Memory, not time: the bounds hold on a loaded machine."""
import os
import re
import statistics
import subprocess
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
WORKERS = 4
PSS_BOUND_KB = 2048
PRIVATE_BOUND_KB = 1024


def run(prog, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    env.update(env_extra)
    proc = subprocess.run([os.path.join(WL, prog), str(WORKERS), "2"], env=env,
                          capture_output=True, text=True, timeout=120)
    workers = [line.split() for line in proc.stdout.splitlines() if line.startswith("worker ")]
    pss = [int(w[3]) for w in workers]
    priv = [int(w[5]) for w in workers]
    return proc, pss, priv


for prog in os.environ.get("STOWAWAY_VARIANTS", "prefork_mem prefork_mem-musl").split():
    with tempfile.TemporaryDirectory() as out:
        base, base_pss, base_priv = run(prog, {})
        on, on_pss, on_priv = run(prog, {"LD_PRELOAD": SO, "DD_PROFILING_ENABLED": "true",
                                         "STOWAWAY_OUTPUT_DIR": out, "DD_SERVICE": "prefork_mem",
                                         "STOWAWAY_LOG_LEVEL": "debug"})
        ok = (base.returncode == 0 and on.returncode == 0 and len(base_pss) == WORKERS and
              len(on_pss) == WORKERS)
        check(f"{prog}: parent and {WORKERS} workers exit cleanly and report, with and without "
              f"the library", ok, f"rc {base.returncode}/{on.returncode}, reports "
              f"{len(base_pss)}/{len(on_pss)}; {on.stderr[-300:]}")
        if not ok:
            continue
        added_pss = statistics.median(on_pss) - statistics.median(base_pss)
        added_priv = statistics.median(on_priv) - statistics.median(base_priv)
        check(f"{prog}: Pss_Anon added per forked worker <= {PSS_BOUND_KB} kB",
              added_pss <= PSS_BOUND_KB,
              f"+{added_pss:.0f} kB (without {statistics.median(base_pss):.0f} kB, with "
              f"{statistics.median(on_pss):.0f} kB; workers {on_pss})")
        check(f"{prog}: Private_Dirty added per forked worker <= {PRIVATE_BOUND_KB} kB",
              added_priv <= PRIVATE_BOUND_KB,
              f"+{added_priv:.0f} kB (without {statistics.median(base_priv):.0f} kB, with "
              f"{statistics.median(on_priv):.0f} kB)")
        # Each process ran seconds and allocated: CPU, wall and allocation
        # samples.  The workers exit within their first period: each hands
        # its samples to the parent (more than one inbox slot's worth: a
        # group of slots), or writes its own profiles when it cannot (the
        # debug line says why).  A worker's live heap is empty at exit
        # (every sampled block was freed).
        kinds = {}
        for f in os.listdir(out):
            if f.endswith(".pb.gz"):
                kinds.setdefault(f.split(".")[1], set()).add(f.split(".")[2])
        handed = on.stderr.count("handed this process's last samples to its parent")
        itself = re.findall(r"exporting this process's last samples itself, not through its parent: "
                            r"([^\n]*)", on.stderr)
        check(f"{prog}: the parent wrote its CPU, wall and allocation profiles, each worker its own "
              f"or handed its samples to the parent",
              handed + len(kinds) - 1 == WORKERS and
              all({"cpu", "wall", "alloc"} <= k for k in kinds.values()),
              f"{handed} handed, {len(itself)} exported themselves ({'; '.join(set(itself))}); "
              f"files: {kinds}")
        taken = re.search(r"fork family: (\d+) children's last samples taken over \((\d+) samples\), "
                          r"(\d+) malformed", on.stderr)
        slots = re.search(r"fork family: .*; in (\d+) slots", on.stderr)
        check(f"{prog}: workers handed their samples over in groups of slots, the parent took them whole",
              handed >= 1 and taken is not None and int(taken.group(1)) == handed and
              int(taken.group(3)) == 0 and slots is not None and int(slots.group(1)) > handed,
              f"{handed} handed; parent: {taken.group(0) if taken else 'no family line'}, "
              f"{slots.group(1) if slots else '?'} slots")
raise SystemExit(status())
