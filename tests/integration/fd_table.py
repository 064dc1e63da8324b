#!/usr/bin/env python3
# needs: build/libstowaway.so build/workloads/fd_table build/workloads/fd_table-musl
"""The profiler's threads and the program's descriptor table, glibc and musl
hosts (tests/workloads/fd_table.c is a single-threaded program):
  - each thread of ours runs on a descriptor table of its own (kcmp
    KCMP_FILES against the main thread) holding none of the program's
    descriptors, so the program's descriptor system calls keep the kernel's
    single-table shortcut;
  - a daemon that closes its stdout (and moves stderr to a log file) while it
    keeps running lets `out=$(daemon)` see EOF at once: no copy of ours holds
    the pipe; our threads' `stowaway:` lines follow the program's stderr to
    its new file;
  - profiles are still uploaded to a Datadog agent and written to disk
    (periodic and at exit; each a file of its own, never a link to one of
    the program's files that a descriptor number of ours names in the
    program's table), by a parent and its forked child, and the child's
    memory guard, whose files its new scheduler opens again, still fires;
  - a seccomp filter that refuses unshare and close_range (EPERM): our
    threads share the program's table, say so in one debug line, and
    profiles are uploaded and written as before, fork included."""
import gzip
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from checks import check, finish

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
OURS = ("stowaway-sample", "stowaway-sched")  # the sampler thread serves the wall ticks too


def env_for(out, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD"))}
    env.update({"LD_PRELOAD": SO, "DD_PROFILING_ENABLED": "true", "STOWAWAY_OUTPUT_DIR": out,
                "DD_SERVICE": "fd_table"})
    env.update(extra)
    return env


def tasks(text):
    """{comm: (same, fds, host)} of the `task` lines."""
    found = {}
    for m in re.finditer(r"^task \d+ (\S+) same=(\d) fds=(\d+) host=(\d+)$", text, re.M):
        found[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    return found


def closed_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def private_tables(prog):
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([os.path.join(WL, prog), "tables", "400"], env=env_for(out),
                           capture_output=True, text=True, timeout=30)
        seen = tasks(r.stdout)
        ours = {c: seen.get(c) for c in OURS}
        check(f"{prog}: each of our threads has a descriptor table of its own (kcmp), holding "
              f"none of the program's descriptors",
              r.returncode == 0 and all(v is not None and v[0] == 0 and v[2] == 0
                                        for v in ours.values()),
              f"rc {r.returncode}; {ours}; {r.stderr[-300:]}")


def daemon_pipe(prog):
    with tempfile.TemporaryDirectory() as out:
        log = os.path.join(out, "daemon.log")
        env = env_for(out, DD_TRACE_AGENT_URL=f"http://127.0.0.1:{closed_port()}",
                      DD_PROFILING_UPLOAD_PERIOD="1")
        env.pop("STOWAWAY_OUTPUT_DIR")
        live_ms = 2000
        p = subprocess.Popen([os.path.join(WL, prog), "daemon", log, str(live_ms)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        data, eof_after, ready_at = b"", None, None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                eof_after = time.monotonic() - ready_at if ready_at else None
                break
            data += chunk
            if ready_at is None and b"ready\n" in data:
                ready_at = time.monotonic()
        alive_at_eof = p.poll() is None
        rc = p.wait(timeout=20)
        check(f"{prog}: a daemon that closes its stdout and stderr lets the reader of the pipe see "
              f"EOF while it keeps running",
              rc == 0 and eof_after is not None and eof_after < live_ms / 2000 and alive_at_eof,
              f"rc {rc}, EOF {eof_after if eof_after is None else round(eof_after, 2)} s after "
              f"ready (daemon lives {live_ms / 1000} s), alive then: {alive_at_eof}")
        text = open(log).read() if os.path.exists(log) else ""
        before_exit = text.split("exiting\n")[0]
        check(f"{prog}: our thread's `stowaway:` line (periodic upload failure) goes to the "
              f"program's stderr as it is now (its log file)",
              re.search(r"^stowaway: warning: datadog: cannot upload", before_exit, re.M) is not None,
              repr(text[-400:]))


def exports(prog, refused=False):
    """refused: under the seccomp filter, our threads sharing the program's table."""
    how = " (table shared: unshare refused)" if refused else ""
    rec = ec.Recorder(statuses=[202])
    server, port = ec.start_tcp(rec)
    try:
        with tempfile.TemporaryDirectory() as out:
            env = env_for(out, DD_TRACE_AGENT_URL=f"http://127.0.0.1:{port}",
                          DD_PROFILING_UPLOAD_PERIOD="1", STOWAWAY_MEMORY_RSS_LIMIT="96M",
                          STOWAWAY_MEMORY_THRESHOLDS="50")
            args = [os.path.join(WL, prog), "fork", "1800", "64"]
            if refused:
                env["FDT_PRELOAD"] = env.pop("LD_PRELOAD")
                args = [os.path.join(WL, "fd_table"), "seccomp"] + args
            # stdout and stderr regular files (and the program's descriptors
            # 3 to 14 copies of stdout): a descriptor number of ours looked up
            # in the program's table would name one of them
            stdout_path, stderr_path = os.path.join(out, "stdout.txt"), os.path.join(out, "stderr.txt")
            with open(stdout_path, "w") as stdout, open(stderr_path, "w") as stderr:
                r = subprocess.run(args, env=env, stdout=stdout, stderr=stderr, timeout=60)
            r.stderr = open(stderr_path).read()
            m = re.search(r"^child (\d+)$", open(stdout_path).read(), re.M)
            child = int(m.group(1)) if m else -1
            stdout_links = max(os.stat(stdout_path).st_nlink, os.stat(stderr_path).st_nlink)
            files = [f for f in os.listdir(out) if f.endswith(".pb.gz")]
            not_gzip = [f for f in files if open(os.path.join(out, f), "rb").read(2) != b"\x1f\x8b"]
            triggered = []
            for f in files:
                try:
                    if b"memory trigger:" in gzip.decompress(open(os.path.join(out, f), "rb").read()):
                        triggered.append(f)
                except (OSError, EOFError):
                    pass
            with rec.lock:
                bodies = [q["body"] for q in rec.requests]
    finally:
        ec.stop(server, rec)
    pids = {}
    for b in bodies:
        pm = re.search(rb"process_id:(\d+)", b)
        if pm:
            pids.setdefault(int(pm.group(1)), []).append(b)
    parent = next((p for p in pids if p != child), None)
    # (at least one each: a periodic upload's 1 s deadline may pass on a loaded machine)
    check(f"{prog}{how}: a parent and its forked child each upload to the agent",
          r.returncode == 0 and child in pids and parent is not None and len(bodies) >= 3,
          f"rc {r.returncode}; uploads per pid {({p: len(v) for p, v in pids.items()})}, child "
          f"{child}; {r.stderr[-300:]}")
    # (the profile on disk: an upload's 1 s deadline may pass on a loaded machine)
    check(f"{prog}{how}: the child's memory guard (its files opened again by its scheduler) fires",
          any(f".{child}." in f for f in triggered), f"memory-triggered profiles: {triggered}")
    by_pid = {}
    for f in files:
        fm = re.search(r"\.(\d+)\.", f)
        if fm:
            by_pid[int(fm.group(1))] = by_pid.get(int(fm.group(1)), 0) + 1
    check(f"{prog}{how}: the parent and the child write profiles to disk too, each a gzip file "
          f"of its own (never a link to a file of the program's)",
          child in by_pid and len(by_pid) >= 2 and not not_gzip and stdout_links == 1,
          f"files per pid {by_pid}; not gzip: {not_gzip[:3]}; links to the program's stdout or stderr file: "
          f"{stdout_links}")


def seccomp_fallback(prog):
    wrapper = os.path.join(WL, "fd_table")  # the glibc build installs the filter
    with tempfile.TemporaryDirectory() as out:
        env = env_for(out, STOWAWAY_LOG_LEVEL="debug", FDT_PRELOAD=SO)
        env.pop("LD_PRELOAD")
        r = subprocess.run([wrapper, "seccomp", os.path.join(WL, prog), "tables", "400"], env=env,
                           capture_output=True, text=True, timeout=30)
        ours = {c: tasks(r.stdout).get(c) for c in OURS}
        said = r.stderr.count("share the program's descriptor table")
        check(f"{prog}: unshare refused by seccomp (EPERM): our threads share the program's "
              f"table, one debug line says so, profiles are written",
              r.returncode == 0 and all(v is not None and v[0] == 1 for v in ours.values())
              and said == 1 and any(f.endswith(".pb.gz") for f in os.listdir(out)),
              f"rc {r.returncode}; {ours}; debug lines {said}; {r.stderr[-300:]}")


for variant in os.environ.get("STOWAWAY_VARIANTS", "fd_table fd_table-musl").split():
    private_tables(variant)
    daemon_pipe(variant)
    exports(variant)
    seccomp_fallback(variant)
    exports(variant, refused=True)
finish()
