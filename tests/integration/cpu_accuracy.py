#!/usr/bin/env python3
"""CPU profiles against known answers.

cpu_split measures its own per-function CPU time with the thread CPU clock;
the profile written by the preloaded library must agree: each function's
share within 3 percentage points, the total within 10% of getrusage, and
at least 99% of samples reaching their thread's entry function.  Judged
with `go tool pprof`, not with our own decoder.

Variants named PROGRAM@statx-ERRNO run under a seccomp filter refusing
statx (tests/workloads/syscall_refused.c): ENOSYS as a kernel before 4.11
answers, EPERM as a container's filter that does not list it does.  Every
module's file is identified and sized through statx; refused, the library
must fall back to fstatat and still name and unwind every frame."""
import errno
import glob
import os
import platform
import subprocess
import sys
import tempfile

from pprof_traces import to_ns
from checks import check, status
from syscall_numbers import numbers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
# STOWAWAY_WL: another build's workloads (aarch64.sh: launchers that run them under qemu).
WL = os.environ.get("STOWAWAY_WL", os.path.join(ROOT, "build", "workloads"))
# Other linkers: lld (p_vaddr != p_offset), PIE and not, and gold.
VARIANTS = os.environ.get("STOWAWAY_VARIANTS", "cpu_split-fp cpu_split-nofp cpu_split-musl-fp "
                          "cpu_split-musl-nofp cpu_split-cxx-nofp cpu_split-lld-nofp "
                          "cpu_split-lld-nopie-fp cpu_split-gold-nofp "
                          "cpu_split-nofp@statx-ENOSYS cpu_split-musl-nofp@statx-EPERM").split()
# statx's number on this machine, for the variants that refuse it.
STATX_NR = numbers().get("statx")
LEAVES = ["alpha_leaf", "beta_leaf", "gamma_leaf", "delta_leaf"]
# Each leaf's thread entry, which every one of its stacks must reach.
ENTRY = {"alpha_leaf": "worker_ab", "beta_leaf": "worker_ab", "gamma_leaf": "worker_g",
         "delta_leaf": "main"}


def traces(path):
    """(stack root-last list of function names, cpu-time ns) from go tool pprof -traces."""
    out = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=cpu-time", path],
                         capture_output=True, text=True, check=True).stdout
    result, stack, value = [], [], None
    for line in out.splitlines():
        if line.startswith("-----------"):
            if stack:
                result.append((stack, value))
            stack, value = [], None
            continue
        parts = line.split()
        if not parts or line.startswith(("File:", "Type:", "Time:", "Duration:", "Build ID:")):
            continue
        if value is None and len(parts) >= 2 and parts[0][0].isdigit():
            value = to_ns(parts[0])
            stack.append(parts[1])
        elif value is not None and not line.strip().startswith(("thread", "bytes:")) and ":" not in parts[0]:
            stack.append(parts[0])
    if stack:
        result.append((stack, value))
    return result


def run_variant(name, seconds=6.0):
    program, _, refused = name.partition("@")
    argv = [os.path.join(WL, program), str(seconds)]
    if refused:
        call, _, err = refused.partition("-")
        if call != "statx" or STATX_NR is None or not hasattr(errno, err):
            check(f"{name}: a refusal this test knows", False, f"{refused} on {platform.machine()}")
            return
        # The host's launcher and call number: under qemu-user (aarch64.sh) the
        # guest's statx reaches the host as the host's (and qemu answers a
        # host ENOSYS itself, through fstatat: there only EPERM reaches us).
        launcher = os.path.join(ROOT, "build", "workloads", "syscall_refused")
        argv = [launcher, str(STATX_NR), str(getattr(errno, err))] + argv
    with tempfile.TemporaryDirectory() as out:
        # 1000 Hz (one signal per kernel tick at most) so the shares rest on
        # enough samples for a 3-point tolerance; the overhead cap stays out
        # of the way (overhead_cap.py tests it), so the rate is what is set.
        env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
                   LD_PRELOAD=SO, DD_SERVICE="cpusplit", STOWAWAY_CPU_HZ="1000",
                   STOWAWAY_MAX_OVERHEAD_PCT="100")
        if refused:
            env["STOWAWAY_LOG_LEVEL"] = "debug"
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        check(f"{name}: runs", proc.returncode == 0, proc.stderr[-300:])
        if refused:
            check(f"{name}: statx was refused and the library said it used fstatat",
                  "statx refused" in proc.stderr, proc.stderr[-400:])
        truth, rusage = {}, None
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts[0] == "truth":
                truth[parts[1]] = int(parts[2])
            elif parts[0] == "rusage":
                rusage = int(parts[1])
        files = glob.glob(os.path.join(out, "cpusplit.*.cpu.*.pb.gz"))
        check(f"{name}: a CPU profile was written", len(files) == 1, str(files))
        if not files:
            return
        # C++ builds name functions as c++filt does ("worker_ab(void*)"):
        # the checks compare the name before the parameters.
        stacks = [([f.split("(")[0] for f in s], v) for s, v in traces(files[0])]
        total = sum(v for _, v in stacks)
        check(f"{name}: total CPU within 10% of getrusage", rusage and abs(total - rusage) <= 0.10 * rusage,
              f"profile {total/1e9:.3f}s, getrusage {rusage/1e9:.3f}s")
        true_total = sum(truth.values())
        for leaf in LEAVES:
            got = sum(v for s, v in stacks if s and s[0] == leaf) / total
            want = truth[leaf] / true_total
            check(f"{name}: {leaf} share within 3 points", abs(got - want) <= 0.03,
                  f"profile {100*got:.1f}%, truth {100*want:.1f}%")
        mid = sum(v for s, v in stacks if len(s) > 1 and s[0] == "alpha_leaf" and s[1] == "alpha_mid")
        alpha = sum(v for s, v in stacks if s and s[0] == "alpha_leaf")
        check(f"{name}: alpha_leaf is called from alpha_mid", alpha > 0 and mid / alpha >= 0.99,
              f"{100*mid/alpha if alpha else 0:.1f}%")
        leaf_total = sum(v for s, v in stacks if s and s[0] in ENTRY)
        reached = sum(v for s, v in stacks if s and s[0] in ENTRY and ENTRY[s[0]] in s)
        check(f"{name}: >= 99% of leaf samples reach their thread entry",
              leaf_total > 0 and reached / leaf_total >= 0.99,
              f"{100*reached/leaf_total if leaf_total else 0:.2f}%")


# STOWAWAY_CPU_SECONDS: a longer run (more samples) where CPU time is scarce
# (aarch64.sh: emulated code on a shared machine).
for v in sys.argv[1:] or VARIANTS:
    run_variant(v, float(os.environ.get("STOWAWAY_CPU_SECONDS", "6.0")))
sys.exit(status())
