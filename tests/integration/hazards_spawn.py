#!/usr/bin/env python3
"""Process creation and exit, glibc and musl, 1000 Hz sampling, 1 s exports:
vfork+execve and posix_spawn in a loop while two threads burn CPU, and
exit() from a secondary thread at moments around the periodic exports
(racing the scheduler's flush and the final one): exit status and output
unchanged, no hang, valid profiles."""
import hazards_common as hc

dirs = []
for libc, sfx in hc.LIBCS:
    for mode in ("vfork", "spawn"):
        name = f"spawn {mode} ({libc})"
        prof, out = hc.hazard(name, sfx, [mode, "200"])
        dirs.append(out)
    for ms in (950, 1000, 1020, 1500, 2001):
        name = f"spawn exitrace {ms} ms ({libc})"
        prof, out = hc.hazard(name, sfx, ["exitrace", str(ms)], ["exitrace", "10"])
        dirs.append(out)
hc.cleanup(dirs)
hc.finish()
