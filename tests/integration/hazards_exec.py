#!/usr/bin/env python3
"""exec, glibc and musl, 1000 Hz sampling while two threads burn CPU:
- the program execs /bin/sh (a CPU-burning loop) with LD_PRELOAD removed by
  the program itself: the new image must not die of a signal of ours;
- default (STOWAWAY_FOLLOW_EXEC unset): the exec'd shell is profiled too
  (profile files of its own service name under the same pid);
- STOWAWAY_FOLLOW_EXEC=false, through execve, execv, execvp, execvpe,
  fork+execve, posix_spawn, posix_spawnp and the calls that exec inside
  libc (execl, execle, execlp, system, popen): the exec'd program's
  LD_PRELOAD keeps the other entries but not our library, nothing of it is
  profiled, and the program's own LD_PRELOAD is edited the same way
  (that is what carries the choice through libc-internal execs);
- STOWAWAY_FOLLOW_EXEC=false with only our library preloaded: the variable
  is gone from the program's environment and the child's."""
import os
import re
import hazards_common as hc

OTHER = os.path.join(hc.WL, "hazard_dlib.so")
SHELL_LOOP = ('echo "child LD_PRELOAD=[$LD_PRELOAD]"; i=0; '
              'while [ $i -lt %d ]; do i=$((i+1)); done; echo burned')
# Burns CPU for a given time, not a count: a count that takes a few periods
# on one machine ends within the first period on a faster one.
SHELL_TIMED = ('echo "child LD_PRELOAD=[$LD_PRELOAD]"; end=$(($(date +%%s) + %d)); '
               'while [ "$(date +%%s)" -lt $end ]; do i=0; '
               'while [ $i -lt 50000 ]; do i=$((i+1)); done; done; echo burned')


def run_exec(sfx, how, env, reps=1, loops=200000, seconds=None, burn="0.5"):
    script = SHELL_TIMED % seconds if seconds else SHELL_LOOP % loops
    results = []
    for _ in range(reps):
        results.append(hc.run([hc.prog("exec", sfx), how, burn, "--", "/bin/sh", "-c",
                               script], env, 60))
    return results


def child_preload(out):
    m = re.search(r"child LD_PRELOAD=\[(.*)\]", out)
    return m.group(1) if m else None


dirs = []
for libc, sfx in hc.LIBCS:
    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    dirs.append(out)
    name = f"exec clean image ({libc})"
    runs = run_exec(sfx, "execve-clean", hc.profiled_env(out), reps=4)
    bad = [(r.rc, r.err[-200:]) for r in runs if r.rc != 0 or "burned" not in r.out]
    hc.check(f"{name}: the exec'd unprofiled shell runs to the end, 4 times", not bad, str(bad))
    hc.check(f"{name}: it saw no LD_PRELOAD", all(child_preload(r.out) == "" for r in runs),
             runs[0].out)

    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    dirs.append(out)
    name = f"exec follow ({libc})"
    # exec replaces the image without a final export (execve may run in a
    # vfork child, where writing a profile is unsafe), and dash leaves with
    # _exit: the program burns, and the shell loops, for three periods or
    # more, whatever the machine's speed or load.
    r = run_exec(sfx, "execve", hc.profiled_env(out), seconds=4, burn="3.5")[0]
    hc.check(f"{name}: exit 0", r.rc == 0 and "burned" in r.out, f"{r.rc} {r.err[-300:]}")
    hc.check(f"{name}: the exec'd program inherits LD_PRELOAD", child_preload(r.out) == hc.SO, r.out)
    mine = [f for f in hc.profiles(out, "cpu", r.pid) if os.path.basename(f).startswith("hazard_exec")]
    theirs = [f for f in hc.profiles(out, "cpu", r.pid) if not os.path.basename(f).startswith("hazard_exec")]
    hc.check(f"{name}: both images wrote CPU profiles under pid {r.pid} "
             f"({len(mine)} + {len(theirs)})", mine and theirs, str(os.listdir(out)))
    bad = hc.pprof_accepts(mine + theirs)
    hc.check(f"{name}: profiles accepted by go tool pprof -raw", not bad, str(bad))

    for how in ("execve", "execv", "execvp", "execvpe", "fork-execve", "spawn", "spawnp",
                "execl", "execle", "execlp", "system", "popen"):
        out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
        dirs.append(out)
        name = f"exec no-follow {how} ({libc})"
        env = hc.profiled_env(out, STOWAWAY_FOLLOW_EXEC="false", LD_PRELOAD=hc.SO + " " + OTHER)
        r = run_exec(sfx, how, env)[0]
        hc.check(f"{name}: exit 0", r.rc == 0 and "burned" in r.out, f"{r.rc} {r.err[-300:]}")
        hc.check(f"{name}: the program's own LD_PRELOAD keeps only the other entry",
                 f"own LD_PRELOAD=[{OTHER}]" in r.out, r.out)
        hc.check(f"{name}: the exec'd program gets LD_PRELOAD without us",
                 child_preload(r.out) == OTHER, r.out)
        others = [f for f in os.listdir(out) if not f.startswith("hazard_exec")]
        hc.check(f"{name}: the exec'd program is not profiled", not others, str(others))
        if how in ("spawn", "system", "popen"):
            # The program itself is still profiled: stripping the variable
            # happens after the library is loaded.
            mine = hc.profiles(out, "cpu", r.pid)
            hc.check(f"{name}: the program itself wrote CPU profiles", mine, str(os.listdir(out)))

    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    dirs.append(out)
    name = f"exec no-follow, only us preloaded ({libc})"
    r = run_exec(sfx, "system", hc.profiled_env(out, STOWAWAY_FOLLOW_EXEC="false"))[0]
    hc.check(f"{name}: exit 0", r.rc == 0 and "burned" in r.out, f"{r.rc} {r.err[-300:]}")
    hc.check(f"{name}: LD_PRELOAD is gone from the program and the child",
             "own LD_PRELOAD=[]" in r.out and child_preload(r.out) == "", r.out)
    others = [f for f in os.listdir(out) if not f.startswith("hazard_exec")]
    hc.check(f"{name}: the child is not profiled", not others, str(others))
hc.cleanup(dirs)
hc.finish()
