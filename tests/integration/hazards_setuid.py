#!/usr/bin/env python3
"""Privilege drop, glibc and musl: a profiled root program calls setgid and
setuid while 1000 Hz sampling runs.  libc broadcasts the change to every
thread by signal and waits for each (glibc SIGSETXID, musl synccall); our
own threads must take part: no hang, and afterwards no thread of the process
(ours included) still has uid 0.  Needs root."""
import glob
import os
import hazards_common as hc

NOBODY = 65534


def task_uids(pid):
    rows = []
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        rows.append((fields["Name"].strip(), [int(x) for x in fields["Uid"].split()],
                     [int(x) for x in fields["Gid"].split()]))
    return rows


if os.geteuid() != 0:
    hc.check("setuid: the test runs as root", False, "run the suite as root")
    hc.finish()

dirs = []
for libc, sfx in hc.LIBCS:
    name = f"setuid ({libc})"
    seen = []

    def watch(pid, out, seen=seen):
        if "dropped" in out:
            seen.extend(task_uids(pid))
            return True
        return False

    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    os.chmod(out, 0o777)  # the final export happens as nobody
    dirs.append(out)
    args = [hc.prog("setuid", sfx), "2", str(NOBODY)]
    plain = hc.run(args, hc.plain_env(), 30)
    prof = hc.run(args, hc.profiled_env(out), 30, watch=watch)
    hc.compare_plain(name, plain, prof)
    ours = [r for r in seen if r[0].startswith("stowaway")]
    hc.check(f"{name}: our threads were there to see the change ({[r[0] for r in ours]})",
             len(ours) >= 1, str(seen))
    root = [r for r in seen if 0 in r[1] or 0 in r[2]]
    hc.check(f"{name}: no thread keeps uid or gid 0 ({len(seen)} threads)", seen and not root,
             str(root))
    files = hc.profiles(out, "cpu", prof.pid)
    bad = hc.pprof_accepts(files)
    hc.check(f"{name}: cpu profiles written and accepted by go tool pprof -raw ({len(files)} files)",
             not bad, str(bad))
hc.cleanup(dirs)
hc.finish()
