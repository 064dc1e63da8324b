#!/usr/bin/env python3
# Not run by tests/run.sh on its own (not executable): aarch64.sh runs it.
"""The wall profiler's known answer under qemu-user (used by aarch64.sh).

wall_torture's threads each block in one kind of call for the whole run.
Under qemu-user the sampler cannot read other threads' stacks:
process_vm_readv is not emulated (ENOSYS, checked here), so a blocked
thread's stack is the frame its interposed call published, and raw waits
(read through /proc/<tid>/syscall, which shows qemu's registers) are not
attributable.  What the library computes without reading another thread's
memory is checked against the truth: every waiting thread's wall time is
under its own call (the C library's function, the stack's leaf), and each
thread's total is its lifetime.

QEMU 7.2's user mode copies its own thread-creation lock held into a fork
child now and then (docs/arm64.md); the child, creating our scheduler
thread, then blocks on it forever (about 1 run in 100, for this build and
the one before alike).  A hang is told apart by what the hung processes
wait on: a child whose every thread is blocked in futex on an address in
qemu's own memory (its image or the .bss after it, never guest memory) is
qemu's; that run is repeated once.  Any other hang, or a second one, fails."""
import os
import signal
import subprocess
import sys
import tempfile
import glob

from checks import check, status
from pprof_traces import to_ns

SO = os.environ["STOWAWAY_SO"]
WL = os.environ["STOWAWAY_WL"]
SECONDS = 2
# thread name (15 characters, as the kernel keeps it) -> the interposed call
LEAF = {"wait_nanosleep": "nanosleep", "wait_clock_nano": "clock_nanosleep", "wait_usleep": "usleep",
        "wait_read_pipe": "read", "wait_read_socke": "read", "wait_recv_timeo": "recv",
        "wait_accept": "accept", "wait_epoll": "epoll_wait", "wait_poll": "poll",
        "wait_select": "select", "wait_ppoll": "ppoll", "wait_sem_timedw": "sem_timedwait",
        "wait_cond_timed": "pthread_cond_timedwait", "wait_waitpid": "waitpid"}


def traces(path):
    """[(thread name, leaf, seconds)] from go tool pprof -traces."""
    out = subprocess.run(["go", "tool", "pprof", "-traces", path], capture_output=True, text=True,
                         check=True).stdout
    result, name = [], None
    lines = out.splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("thread name:"):
            name = s.split(":", 1)[1].strip()
        elif name is not None and s and s[0].isdigit() and not s.startswith("thread"):
            parts = s.split()
            if len(parts) >= 2:
                v = parts[0]
                secs = to_ns(v) / 1e9
                result.append((name, parts[1], secs))
                name = None
    return result


HOST_FUTEX = {"x86_64": 202, "aarch64": 98}.get(os.uname().machine)


def qemu_image_ranges(pid):
    """[(start, end)] of the qemu binary's mappings and the anonymous mapping right after them (its .bss)."""
    ranges, after = [], False
    try:
        lines = open(f"/proc/{pid}/maps").read().splitlines()
    except OSError:
        return []
    for line in lines:
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if len(f) >= 6 and "qemu-" in os.path.basename(f[5]):
            ranges.append((lo, hi))
            after = True
        elif after and len(f) == 5:
            ranges.append((lo, hi))
            after = False
        else:
            after = False
    return ranges


def qemu_lock_hang(pgid):
    """(True, detail) if a process of the session is blocked, every thread in
    futex, with at least one on an address in qemu's own memory."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            own, waits = qemu_image_ranges(entry), []
            for tid in os.listdir(f"/proc/{entry}/task"):
                sc = open(f"/proc/{entry}/task/{tid}/syscall").read().split()
                waits.append((tid, int(sc[0]) if sc and sc[0].lstrip("-").isdigit() else -1,
                              int(sc[1], 16) if len(sc) > 1 else 0))
        except (OSError, ValueError, IndexError):
            continue
        in_qemu = [(t, hex(a)) for t, nr, a in waits if nr == HOST_FUTEX and any(lo <= a < hi for lo, hi in own)]
        if waits and all(nr == HOST_FUTEX for _, nr, _ in waits) and in_qemu:
            return True, f"pid {entry}: {len(waits)} threads in futex, on qemu's own memory: {in_qemu}"
    return False, "no process of the run blocked on qemu's own memory"


def run_once(prog, out):
    """(returncode, stderr) of one run, or (None, why) if it hung."""
    env = dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
               DD_SERVICE="wallq", STOWAWAY_PROFILES="wall", WALL_TORTURE_GATE="1")
    # Its own session, so a hang is examined, then killed whole and reported.
    p = subprocess.Popen([os.path.join(WL, prog), str(SECONDS)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = p.communicate(timeout=60)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        qemu, why = qemu_lock_hang(p.pid)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, ("qemu " if qemu else "") + why


for prog in os.environ.get("STOWAWAY_VARIANTS", "wall_torture wall_torture-musl").split():
    with tempfile.TemporaryDirectory() as out:
        rc, err = run_once(prog, out)
        if rc is None and err.startswith("qemu "):
            check(f"{prog}: a hang was qemu's own lock copied held into a fork child; run again", True, err)
            for f in glob.glob(os.path.join(out, "*")):
                os.remove(f)
            rc, err = run_once(prog, out)
        if rc is None:
            check(f"{prog}: finishes under qemu", False, f"no exit after 60 s: {err}")
            continue
        check(f"{prog}: runs", rc == 0, err[-300:])
        files = glob.glob(os.path.join(out, "wallq.*.wall.*.pb.gz"))
        check(f"{prog}: a wall profile was written", len(files) == 1, str(files))
        if not files:
            continue
        rows = traces(files[0])
        for thread, leaf in sorted(LEAF.items()):
            total = sum(v for n, _, v in rows if n == thread)
            # The C library's entry of the call: its name holds the call's
            # (glibc's __nanosleep, __poll), never the workload's wait_ caller.
            under = sum(v for n, lf, v in rows if n == thread and leaf in lf and not lf.startswith("wait_"))
            check(f"{prog}: {thread}: >= 90% of its wall time under {leaf}",
                  total > 0 and under / total >= 0.90, f"{under:.2f}s of {total:.2f}s")
            check(f"{prog}: {thread}: its wall time is its lifetime within 10%",
                  abs(total - SECONDS) <= 0.10 * SECONDS, f"{total:.2f}s of {SECONDS}s")

# The limit above is qemu's, not ours: show it.
probe = os.path.join(WL, "pvr_probe")
if os.path.exists(probe):
    p = subprocess.run([probe], capture_output=True, text=True)
    check("qemu-user has no process_vm_readv (why deep wall stacks are not checked here)",
          "ENOSYS" in p.stdout, p.stdout.strip())
sys.exit(status())
