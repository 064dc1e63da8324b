#!/usr/bin/env python3
"""The library preloaded into host programs built with ASan+UBSan, every
profile on at high rates: allocations of every kind (malloc family, aligned,
realloc growth, C++ new/delete and throws), thread churn, every
kind of wait under the wall sampler, and the pthread lock semantics.  ASan
checks the host's own memory accesses, so a hook of ours that forwards a
wrong size, frees a block twice or through the wrong allocator, or corrupts
a pthread object is caught where the host touches it.  Each program must
exit as it does without the library, with no sanitizer report, and leave
profiles (so the library really ran in it)."""
import glob
import os
import subprocess
import sys
import tempfile
from checks import check, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
HOSTS = os.path.join(ROOT, "build", "asan-hosts")
# ASan wants its runtime first in the library list; ours comes first on
# purpose (it forwards every allocation to the next definition: ASan's).
ASAN = "verify_asan_link_order=0:detect_leaks=0:abort_on_error=0:halt_on_error=1"
RUNS = [
    ("alloc_known", ["0.02"]),
    # No forks here: a fork while other threads allocate can deadlock the
    # child inside ASan's own allocator, with or without us (seen once in 300 s
    # of the reference run).  fork.py and alloc tests cover forks unsanitized.
    ("alloc_churn", ["3", "0"]),
    ("wall_torture", ["2"]),
    ("lock_semantics", []),
    ("hazard_threads", ["churn", "300", "2"]),
    ("exception_known", ["20000"]),
]


def run(prog, args, env):
    """(exit status, stdout, stderr); status None if it hung (then stderr says so)."""
    try:
        p = subprocess.run([prog] + args, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "", "hung: killed after 120 s"
    return p.returncode, p.stdout, p.stderr


def sanitizer_report(err):
    return [l for l in err.splitlines()
            if "AddressSanitizer" in l or "runtime error:" in l or "LeakSanitizer" in l][:3]


for name, args in RUNS:
    prog = os.path.join(HOSTS, name)
    if not os.path.exists(prog):
        check(f"{name}: built", False, f"missing {prog} (make test-build)")
        continue
    plain = dict(os.environ, ASAN_OPTIONS=ASAN)
    plain.pop("LD_PRELOAD", None)
    rc0, _, err0 = run(prog, args, plain)
    with tempfile.TemporaryDirectory() as out:
        env = dict(plain, LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   STOWAWAY_PROFILES="cpu,wall,alloc,heap,lock,exception", STOWAWAY_CPU_HZ="1000",
                   STOWAWAY_WALL_HZ="1000", STOWAWAY_ALLOC_SAMPLE_BYTES="65536",
                   STOWAWAY_MAX_OVERHEAD_PCT="100", DD_SERVICE="asanhost")
        rc, _, err = run(prog, args, env)
        files = glob.glob(os.path.join(out, "asanhost.*.pb.gz"))
    check(f"{name}: clean without the library (the reference)",
          rc0 is not None and not sanitizer_report(err0), " | ".join(sanitizer_report(err0)) or err0[-300:])
    check(f"{name}: no sanitizer report with the library", not sanitizer_report(err),
          " | ".join(sanitizer_report(err)) or err[-300:])
    check(f"{name}: exit status unchanged ({rc0})", rc is not None and rc == rc0,
          "" if rc == rc0 else f"{rc} with the library: {err[-300:]}")
    # At exit a kind without samples writes no file; each of these runs long enough for CPU samples.
    check(f"{name}: profiles written for the kinds sampled, the CPU profile among them ({len(files)} files)",
          len(files) >= 2 and any(".cpu." in f for f in files), "" if files else err[-300:])
sys.exit(status())
