#!/usr/bin/env python3
"""Signal hazards, glibc and musl, 1000 Hz CPU sampling:
- a program that blocks every signal in every thread: runs unchanged, the
  profiles are valid and hold no CPU sample;
- a program that installs its own SIGPROF handler after we started: we stop
  CPU sampling with one log line, and its setitimer(ITIMER_PROF) handler
  keeps firing at its rate (compared with a plain run);
- the same handler installed before we start (.preinit_array on glibc; a
  stop/start through the public API on musl): we take another signal, CPU
  profiling goes on, its handler keeps its rate."""
import re
import hazards_common as hc

SIGPROF = 27


def rate(out):
    m = re.search(r"handler calls: (\d+) cpu_ms: (\d+)", out)
    if not m or int(m.group(2)) == 0:
        return None
    return int(m.group(1)) / (int(m.group(2)) / 10.0)  # calls per 10 ms of CPU


dirs = []
for libc, sfx in hc.LIBCS:
    name = f"signals blockall ({libc})"
    prof, out = hc.hazard(name, sfx, ["blockall", "2"], ["blockall", "0.2"])
    dirs.append(out)
    counts = [hc.cpu_sample_count(f) for f in hc.profiles(out, "cpu", prof.pid)]
    # Once main has blocked every signal no CPU sample can be taken; the
    # first one-second period may hold a sample or two of start-up code that
    # ran before main did so (at 1000 Hz).
    hc.check(f"{name}: no CPU samples once the program blocks all signals ({counts})",
             len(counts) >= 2 and counts[0] <= 2 and all(c == 0 for c in counts[1:]), str(counts))

    for mode in ("prof-after", "prof-before"):
        name = f"signals {mode} ({libc})"
        plain = hc.run([hc.prog("signals", sfx), mode, "3"], hc.plain_env(), 60)
        out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
        dirs.append(out)
        prof = hc.run([hc.prog("signals", sfx), mode, "3"], hc.profiled_env(out), 60)
        hc.check(f"{name}: no hang", prof.rc is not None)
        hc.check(f"{name}: exit status 0", prof.rc == 0 == plain.rc, f"{plain.rc} {prof.rc} {prof.err[-300:]}")
        hc.check(f"{name}: output lines unchanged",
                 re.sub(r"handler calls.*\n", "", prof.out) == re.sub(r"handler calls.*\n", "", plain.out),
                 prof.out)
        rp, rq = rate(plain.out), rate(prof.out)
        hc.check(f"{name}: the program's ITIMER_PROF handler keeps its rate "
                 f"(plain {rp and round(rp, 2)}, profiled {rq and round(rq, 2)} calls per 10 ms CPU)",
                 # Against the plain run's rate: the kernel's ITIMER_PROF
                 # runs 1.1-1.3 per 10 ms of CPU on a loaded machine with
                 # no library at all.
                 rp is not None and rq is not None and 0.5 < rp < 2 and 0.75 < rq / rp < 1.3,
                 plain.out + prof.out)
        files = hc.profiles(out, "cpu", prof.pid)
        bad = hc.pprof_accepts(files)
        hc.check(f"{name}: cpu profiles written and accepted by go tool pprof -raw", not bad, str(bad))
        replaced = prof.err.count("replaced the handler")
        signals = [int(s) for s in re.findall(r"CPU profiling at \d+ Hz on signal (\d+)", prof.err)]
        if mode == "prof-after":
            hc.check(f"{name}: one log line says CPU sampling stopped", replaced == 1, prof.err[-500:])
        else:
            hc.check(f"{name}: we took another signal than SIGPROF ({signals})",
                     signals and signals[-1] != SIGPROF and replaced == 0, prof.err[-500:])
            counts = [hc.cpu_sample_count(f) for f in files]
            hc.check(f"{name}: CPU profiling goes on ({sum(c or 0 for c in counts)} samples)",
                     sum(c or 0 for c in counts) > 100, str(counts))
hc.cleanup(dirs)
hc.finish()
