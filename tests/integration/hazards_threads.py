#!/usr/bin/env python3
"""Thread hazards under 1000 Hz CPU sampling and 1 s exports, glibc and musl:
10,000 short-lived threads (memory and POSIX timers must not grow), threads
exiting (and their stacks unmapped) while sampled, recursion 10,000 frames
deep (a [truncated] frame, no crash), threads on 16 KiB and PTHREAD_STACK_MIN
stacks."""
import hazards_common as hc

dirs = []
for libc, sfx in hc.LIBCS:
    # 10,000 threads paced over 12 s (the plain run is not paced).
    name = f"threads churn ({libc})"
    prof, out = hc.hazard(name, sfx, ["churn", "10000", "12"], ["churn", "10000", "0"])
    dirs.append(out)
    hc.check_memory_flat(name, prof.mem, every=20)
    hc.check(f"{name}: POSIX timers bounded by live threads (max {prof.timers})",
             0 < prof.timers <= 32, str(prof.timers))

    name = f"threads exitread ({libc})"
    prof, out = hc.hazard(name, sfx, ["exitread", "400"])
    dirs.append(out)

    name = f"threads deep ({libc})"
    prof, out = hc.hazard(name, sfx, ["deep", "10000", "2"], ["deep", "10000", "0"])
    dirs.append(out)
    cpu = hc.profiles(out, "cpu", prof.pid)
    traces = "".join(hc.pprof("-traces", f)[1] for f in cpu)
    hc.check(f"{name}: profile shows a [truncated] frame", "[truncated]" in traces,
             traces[-400:])
    hc.check(f"{name}: the recursion is in the stacks", "recurse" in traces, traces[-400:])

    name = f"threads tiny stacks ({libc})"
    prof, out = hc.hazard(name, sfx, ["tiny", "2"], ["tiny", "0"])
    dirs.append(out)
hc.cleanup(dirs)
hc.finish()
