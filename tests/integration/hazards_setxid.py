#!/usr/bin/env python3
"""Capabilities, keep-caps and securebits are per-thread in Linux, while
setuid/setgid are process-wide: libc makes every thread, ours included, run
the same call and ends the process (glibc abort, musl SIGKILL) when one
thread's call fails after another's succeeded.  A program that changes its
capabilities on its own thread (capset, prctl) and then its ids must find
our threads changed the same way: setpriv --reuid/--regid (glibc), and
tests/workloads/hazard_setxid.c on glibc and musl, whose every step prints
whether all threads have the main thread's CapInh/CapPrm/CapEff.  Needs
root (CI runs as root)."""
import os
import subprocess
import hazards_common as hc

NOBODY = 65534
MODES = ("euid", "keepcaps", "securebits", "drop")
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
           "--inh-caps=-all"]

if os.geteuid() != 0:
    print("INFO hazards_setxid: skipped: changing uid and capabilities needs root "
          "(CI runs the suite as root)")
    hc.finish()


def our_threads_seen(err):
    """Per step the workload printed, how many threads of the profiler it saw."""
    steps = {}
    for line in err.splitlines():
        step, sep, n = line.partition(": threads of the profiler ")
        if sep:
            steps[step] = int(n)
    return steps


def check_run(name, plain, prof, out):
    hc.compare_plain(name, plain, prof)
    hc.check(f"{name}: every step leaves all threads with the main thread's capability sets",
             prof.out and "differs" not in prof.out and prof.out.count(": ok") >= 3, prof.out)
    seen = our_threads_seen(prof.err)
    hc.check(f"{name}: our threads were there at every step ({seen})",
             len(seen) >= 3 and min(seen.values()) >= 2, prof.err[-400:])
    files = hc.profiles(out, "cpu", prof.pid)
    bad = hc.pprof_accepts(files, limit=1)
    hc.check(f"{name}: cpu profile written and accepted by go tool pprof -raw ({len(files)} files)",
             not bad, str(bad))


dirs = []


def outdir():
    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    os.chmod(out, 0o777)  # the final export happens as nobody
    dirs.append(out)
    return out


for libc, sfx in hc.LIBCS:
    for mode in MODES:
        args = [hc.prog("setxid", sfx), mode, str(NOBODY)]
        out = outdir()
        plain = hc.run(args, hc.plain_env(), 30)
        prof = hc.run(args, hc.profiled_env(out), 30)
        check_run(f"setxid {mode} ({libc})", plain, prof, out)
    # Not root (setpriv runs it as nobody, itself not profiled): capset to
    # the sets it has, setresuid/setresgid to the ids it has.
    out = outdir()
    plain = hc.run(SETPRIV + [hc.prog("setxid", sfx), "unpriv"], hc.plain_env(), 30)
    env = hc.profiled_env(out)
    env.pop("LD_PRELOAD")
    prof = hc.run(SETPRIV + ["env", "LD_PRELOAD=" + hc.SO, hc.prog("setxid", sfx), "unpriv"], env, 30)
    check_run(f"setxid unprivileged ({libc})", plain, prof, out)

# setpriv itself under the library (util-linux, glibc): keep-caps, setresuid,
# capset, setresgid, setgroups, then exec.
out = outdir()
args = SETPRIV + ["id"]
plain = subprocess.run(args, env=hc.plain_env(), capture_output=True, text=True, timeout=30)
# Every allocation sampled: `id` lives a few milliseconds, and a process
# writes at its exit only the kinds it has samples of.
prof = subprocess.run(args, env=hc.profiled_env(out, STOWAWAY_ALLOC_SAMPLE_BYTES="1"), capture_output=True,
                      text=True, timeout=30)
hc.check(f"setpriv --reuid --regid --clear-groups --inh-caps under the library: exit 0, "
         f"output unchanged ({prof.stdout.strip()})",
         plain.returncode == 0 and prof.returncode == 0 and prof.stdout == plain.stdout
         and f"uid={NOBODY}" in prof.stdout,
         f"plain {plain.returncode} {plain.stdout!r}, profiled {prof.returncode} "
         f"{prof.stdout!r} {prof.stderr[-300:]!r}")
files = hc.profiles(out, "alloc")
bad = hc.pprof_accepts(files, limit=1)
hc.check(f"setpriv: the exec'd program's allocation profile written and accepted ({len(files)} files)",
         not bad, str(bad))
hc.cleanup(dirs)
hc.finish()
