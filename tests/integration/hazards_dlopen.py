#!/usr/bin/env python3
"""dlopen/dlclose churn under 1000 Hz CPU sampling and 1 s exports, glibc and
musl: two threads each open a library, call into it for about a millisecond,
and close it, 8000 times; memory and the number of mappings must stay flat."""
import os
import hazards_common as hc

LIB = os.path.join(hc.WL, "hazard_dlib.so")


def count_maps(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


dirs = []
for libc, sfx in hc.LIBCS:
    name = f"dlopen churn ({libc})"
    maps = []

    def watch(pid, out, maps=maps):
        n = count_maps(pid)
        if n is not None:
            maps.append(n)
        return False

    out = hc.tempfile.mkdtemp(prefix="stowaway-hz-")
    dirs.append(out)
    args = [hc.prog("dlopen", sfx), LIB, "2", "8000"]
    plain = hc.run(args, hc.plain_env(), 120)
    prof = hc.run(args, hc.profiled_env(out), 120, watch=watch)
    hc.compare_plain(name, plain, prof)
    files = hc.profiles(out, "cpu", prof.pid)
    bad = hc.pprof_accepts(files)
    hc.check(f"{name}: cpu profiles written and accepted by go tool pprof -raw ({len(files)} files)",
             not bad, str(bad))
    hc.check_memory_flat(name, prof.mem)
    # The count swings by a dozen with timing (0 to 2 copies of the library
    # mapped, and our own read-only mappings of copies the registry has not
    # yet seen closed), so the steady level is compared, not the peaks: the
    # median of the last quarter against that of the second (half a run, 4000
    # opens, apart: a leak of one mapping per 500 opens fails it).
    n = len(maps)
    level = lambda part: sorted(part)[len(part) // 2] if part else 0
    early, late = level(maps[n // 4:n // 2]), level(maps[3 * n // 4:])
    hc.check(f"{name}: mappings do not accumulate (median {early} then {late}, max {max(maps) if maps else '?'})",
             n > 8 and late <= early + 8, str(maps[::5]))
    print(f"  {name}: plain {plain.seconds:.1f}s, profiled {prof.seconds:.1f}s", flush=True)
hc.cleanup(dirs)
hc.finish()
