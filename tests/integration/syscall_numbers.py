"""This machine's system call numbers, read from its kernel headers (shared by
the suites that refuse calls through tests/workloads/syscall_refused)."""
import os
import platform

UNISTD = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
          "aarch64": "/usr/include/aarch64-linux-gnu/asm/unistd.h"}.get(platform.machine())


def numbers():
    """{name: number} of this machine's system calls; {} without the headers."""
    out = {}
    if UNISTD is None or not os.path.exists(UNISTD):
        return out
    with open(UNISTD) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "#define" and w[1].startswith("__NR_") and w[2].isdigit():
                out[w[1][5:]] = int(w[2])
    return out
