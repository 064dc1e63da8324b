#!/usr/bin/env bash
# What the profiler costs prefork servers: Debian's postgres under pgbench -S
# (one backend process per connection, forked by the postmaster) and nginx
# (a master and forked workers) under ab.  Standalone: needs postgresql (15),
# nginx-light and apache2-utils installed; run as root (postgres then runs as
# the `postgres` user) or as any user that may run postgres.
#
# Modes, interleaved in every round (the order rotates) and compared within
# the round:
#   off   no library
#   cpu   libstowaway.so preloaded into the server's first process (every
#         forked process inherits it), STOWAWAY_PROFILES=cpu
#   all   the default kinds (cpu, wall, alloc, heap)
#   floor (parts pgcpu/pgcpuconnect only) libstowaway.so preloaded with
#         profiling off: what loading the library alone costs
# Each run starts the server afresh with that mode's environment, drives it,
# and stops it.  Measured per run:
#   tps       throughput the client reports (pgbench: without connection time
#             for persistent connections, with it for -C; ab: requests/s)
#   cpu/tx    CPU time of the whole server (every process of it, the exited
#             ones through the first process's cutime/cstime) per transaction
#   pss_anon  Pss_Anon of /proc/PID/smaps_rollup, median over the client
#             backends alive in the middle of the run (postgres, persistent
#             connections), and over the workers (nginx)
# Prints "BENCH prefork: <metric> = <value> (...)" lines: medians over rounds
# of the ratio to the same round's `off` run, and pss_anon added per process.
# Parts pgcpu/pgcpuconnect instead keep one server per mode running, each
# in a cgroup of its own, and drive them together in every round (see
# below and docs/benchmarks.md).
# Environment: PREFORK_ROUNDS (3), PREFORK_SECONDS (4 per run),
# PREFORK_CLIENTS (4), PREFORK_PARTS ("pg pgconnect nginx pgcpu"; also
# pgcpuconnect, and pgcount: counts per transaction, needs perf, see
# below), PREFORK_PGCPU_ROUNDS (12), PREFORK_PGCPU_SECONDS (2),
# STOWAWAY_SO, PREFORK_BASE_SO (every part: a second build of
# the library, e.g. main's, run with the default kinds as mode `all_base`
# in the same rounds, for before/after ratios in one run),
# PREFORK_PREFILL_FILES (0: every profiling mode's output directory starts
# with that many old profile files, as that of a server running for a while
# sits at STOWAWAY_MAX_FILES, 1000, where each file written removes one).
set -eu
cd "$(dirname "$0")/../.."
so=${STOWAWAY_SO:-build/libstowaway.so}
[ -f "$so" ] || make --no-print-directory -s "$so" >&2
pgbin=${PG_BIN:-/usr/lib/postgresql/15/bin}
for t in "$pgbin/postgres" "$pgbin/initdb" "$pgbin/pg_ctl" /usr/bin/pgbench; do
	[ -x "$t" ] || { echo "missing $t (apt-get install postgresql)" >&2; exit 1; }
done
SO="$(realpath "$so")" PGBIN="$pgbin" exec python3 - <<'EOF'
import os, pwd, re, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

SO, PGBIN = os.environ["SO"], os.environ["PGBIN"]
ROUNDS = int(os.environ.get("PREFORK_ROUNDS", "3"))
SECONDS = float(os.environ.get("PREFORK_SECONDS", "4"))
CLIENTS = int(os.environ.get("PREFORK_CLIENTS", "4"))
PARTS = os.environ.get("PREFORK_PARTS", "pg pgconnect nginx pgcpu").split()
BASE_SO = os.environ.get("PREFORK_BASE_SO", "")
MODES = ["off", "cpu", "all"] + (["all_base"] if BASE_SO else [])
PREFILL = int(os.environ.get("PREFORK_PREFILL_FILES", "0"))
JEMALLOC = os.environ.get("JEMALLOC_SO", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
PGCPU_MODES = ["off", "cpu", "all", "floor"] + (["all_base"] if BASE_SO else [])
TICK = os.sysconf("SC_CLK_TCK")

tmp = tempfile.mkdtemp(prefix="bench_prefork.")
os.chmod(tmp, 0o755)
so_copy = os.path.join(tmp, "libstowaway.so")  # readable by the server's user
shutil.copy(SO, so_copy)
os.chmod(so_copy, 0o755)
base_copy = os.path.join(tmp, "libstowaway-base.so")
if BASE_SO:
    shutil.copy(BASE_SO, base_copy)
    os.chmod(base_copy, 0o755)

# postgres refuses to run as root: drop to the `postgres` user when we are root.
as_user = []
uid = gid = None
if os.geteuid() == 0:
    pw = pwd.getpwnam(os.environ.get("PREFORK_PG_USER", "postgres"))
    uid, gid = pw.pw_uid, pw.pw_gid
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]

def own(path):
    if uid is not None:
        os.chown(path, uid, gid)

def mode_env(mode, outdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD", "MALLOC_CONF"))}
    env["LC_ALL"] = "C"
    if mode == "floor":
        env["LD_PRELOAD"] = so_copy
    elif mode in ("je", "je_prof"):
        env["LD_PRELOAD"] = JEMALLOC
        if mode == "je_prof":
            os.makedirs(outdir, exist_ok=True)
            own(outdir)
            env["MALLOC_CONF"] = ("prof:true,lg_prof_sample:19,prof_final:true,"
                                  f"prof_prefix:{outdir}/jeprof")
    elif mode != "off":
        os.makedirs(outdir, exist_ok=True)
        own(outdir)
        for i in range(PREFILL):
            old = os.path.join(outdir, f"old.{i}.cpu.00000.00000000.pb.gz")
            open(old, "w").close()
            os.utime(old, (1e9, 1e9))
            own(old)
        env.update(LD_PRELOAD=base_copy if mode == "all_base" else so_copy,
                   DD_PROFILING_ENABLED="true", DD_SERVICE="benchprefork", STOWAWAY_OUTPUT_DIR=outdir)
        if mode == "cpu":
            env["STOWAWAY_PROFILES"] = "cpu"
        elif mode == "alloc":
            env["STOWAWAY_PROFILES"] = "alloc,heap"
    return env

def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []

def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children_of(p))
    return out

def stat_cpu(pid, with_children):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    t = int(fields[11]) + int(fields[12])  # utime, stime
    if with_children:
        t += int(fields[13]) + int(fields[14])  # cutime, cstime: reaped children
    return t / TICK

def server_cpu(root):
    """CPU seconds of every process of the server, living or reaped."""
    return sum(stat_cpu(p, True) for p in tree(root))

def pss_anon(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss_Anon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None

def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

def read_later(root, select, delay, read, out):
    """After `delay` seconds, read(pid) of every process under root whose
    command line `select` accepts, into out (None readings left out)."""
    time.sleep(delay)
    vals = []
    for p in tree(root):
        if p != root and select(cmdline(p)):
            v = read(p)
            if v is not None:
                vals.append(v)
    out.extend(vals)

# ---------------------------------------------------------------- postgres
pgdir = os.path.join(tmp, "pg")
os.makedirs(pgdir)
own(pgdir)
pgdata = os.path.join(pgdir, "data")
PORT = str(int(os.environ.get("PREFORK_PG_PORT", str(20000 + os.getpid() % 20000))))

def pg(*args, env=None, check=True, procs=None):
    # The environment is set after the user switch: setpriv itself must not
    # carry the library (glibc aborts a threaded process whose setresgid
    # fails in one thread after capset restored the main thread's caps only).
    # procs: a cgroup's cgroup.procs the command (and all it forks) joins first.
    env = env if env is not None else {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    envargs = ["env", "-i"] + [f"{k}={v}" for k, v in env.items()]
    join = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs] if procs else []
    return subprocess.run(join + as_user + envargs + list(args), check=check, capture_output=True,
                          text=True, cwd=pgdir)

def pg_start(mode, rnd, data=pgdata, port=PORT, procs=None):
    env = mode_env(mode, os.path.join(pgdir, f"prof.{mode}.{rnd}"))
    log = os.path.join(pgdir, f"log.{mode}.{rnd}")
    pg(f"{PGBIN}/pg_ctl", "-D", data, "-l", log, "-w", "-o",
       f"-p {port} -k {pgdir} -c listen_addresses= -c max_connections=100", "start", env=env,
       procs=procs)
    with open(os.path.join(data, "postmaster.pid")) as f:
        return int(f.readline())

def pg_stop(data=pgdata):
    pg(f"{PGBIN}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop", check=False)

def pgbench(*args, port=PORT):
    r = pg("/usr/bin/pgbench", "-h", pgdir, "-p", port, *args, "postgres")
    return r.stdout

def pg_run(mode, rnd, connect):
    root = pg_start(mode, rnd)
    try:
        pgbench("-S", "-c", str(CLIENTS), "-j", "2", "-T", "1")  # warm the caches
        pss = []
        sampler = None
        if not connect:
            sampler = threading.Thread(target=read_later, args=(
                root, lambda c: "[local]" in c, SECONDS / 2, pss_anon, pss))
            sampler.start()
        c0 = server_cpu(root)
        args = ["-S", "-c", str(CLIENTS), "-j", "2", "-T", str(int(SECONDS))]
        if connect:
            args.insert(0, "-C")
        out = pgbench(*args)
        if sampler:
            sampler.join()
        time.sleep(0.2)  # let the postmaster reap the backends of -C
        c1 = server_cpu(root)
    finally:
        pg_stop()
    tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out) if not connect else \
        re.search(r"tps = ([\d.]+) \(including connections establishing\)", out) or \
        re.search(r"tps = ([\d.]+)", out)
    return {"tps": float(m.group(1)), "cpu_per_tx_us": (c1 - c0) / tx * 1e6,
            "pss_anon_kb": statistics.median(pss) if pss else None}

# ---------------------------------------------------------------- nginx
ngdir = os.path.join(tmp, "nginx")
NGPORT = str(int(PORT) + 1)

def ng_setup():
    os.makedirs(os.path.join(ngdir, "html"))
    with open(os.path.join(ngdir, "html", "index.html"), "w") as f:
        f.write("<html><body>" + "x" * 600 + "</body></html>\n")
    for d in (ngdir, os.path.join(ngdir, "html")):
        os.chmod(d, 0o755)
    with open(os.path.join(ngdir, "nginx.conf"), "w") as f:
        f.write(f"""daemon off;
worker_processes 2;
pid {ngdir}/nginx.pid;
error_log {ngdir}/error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {ngdir}/body; proxy_temp_path {ngdir}/proxy;
  fastcgi_temp_path {ngdir}/fastcgi; uwsgi_temp_path {ngdir}/uwsgi; scgi_temp_path {ngdir}/scgi;
  server {{ listen 127.0.0.1:{NGPORT}; root {ngdir}/html; }}
}}
""")

def ng_run(mode, rnd):
    env = mode_env(mode, os.path.join(ngdir, f"prof.{mode}.{rnd}"))
    if mode != "off":
        os.chmod(os.path.join(ngdir, f"prof.{mode}.{rnd}"), 0o777)  # workers run as nobody
    p = subprocess.Popen(["/usr/sbin/nginx", "-p", ngdir, "-c", os.path.join(ngdir, "nginx.conf")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{NGPORT}/index.html"
    try:
        for _ in range(100):
            if len(children_of(p.pid)) >= 2 and subprocess.run(
                    ["ab", "-q", "-n", "1", url], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        subprocess.run(["ab", "-q", "-c", str(CLIENTS), "-t", "1", "-n", "1000000", url],
                       capture_output=True)  # warm
        pss = []
        sampler = threading.Thread(target=read_later, args=(
            p.pid, lambda c: "worker" in c, SECONDS / 2, pss_anon, pss))
        sampler.start()
        snap = []
        reader = threading.Thread(target=read_later, args=(
            p.pid, lambda c: "worker" in c, SECONDS * 0.85, task_stats, snap))
        reader.start()
        c0 = server_cpu(p.pid)
        out = subprocess.run(["ab", "-q", "-c", str(CLIENTS), "-t", str(int(SECONDS)), "-n",
                              "10000000", url], capture_output=True, text=True).stdout
        sampler.join()
        reader.join()
        c1 = server_cpu(p.pid)
    finally:
        p.send_signal(signal.SIGQUIT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    n = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    shares, wakes = ours_shares(snap)
    return {"tps": rps, "cpu_per_tx_us": (c1 - c0) / n * 1e6,
            "pss_anon_kb": statistics.median(pss) if pss else None,
            "ours_pct": 100 * statistics.median(shares) if shares else None,
            "ours_wakes": statistics.median(wakes) if wakes else None}

# ------------------------------------- postgres, CPU per transaction (pgcpu)
# Four servers (off, floor, cpu, all; all_base too with PREFORK_BASE_SO) started
# once, each in a cgroup of its own,
# driven by many short pgbench runs.  In every round the servers are
# driven at the same time, each by its own pgbench (started in a rotating
# order), so whatever else loads the machine loads them all alike.  A
# server's CPU per transaction is its cgroup's CPU time (every process,
# exited backends included, at nanosecond resolution) over the transactions
# of its run; each round gives one ratio per mode against the same round's
# `off` server.  Throughput on a shared 2-core machine moves with whatever
# else runs; CPU per transaction in the same seconds moves far less.
PGCPU_ROUNDS = int(os.environ.get("PREFORK_PGCPU_ROUNDS", "12"))
PGCPU_SECONDS = int(os.environ.get("PREFORK_PGCPU_SECONDS", "2"))

def cgroup_make(name):
    """(directory, reader of its CPU nanoseconds) of a new cgroup, or None."""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        d = os.path.join("/sys/fs/cgroup", name)
        def read():
            with open(os.path.join(d, "cpu.stat")) as f:
                return int(f.read().split("usage_usec")[1].split()[0]) * 1000
    elif os.path.isdir("/sys/fs/cgroup/cpuacct"):
        d = os.path.join("/sys/fs/cgroup/cpuacct", name)
        def read():
            with open(os.path.join(d, "cpuacct.usage")) as f:
                return int(f.read())
    else:
        return None
    try:
        os.mkdir(d)
        read()
    except OSError:
        return None
    return d, read

def cgroup_procs(d):
    with open(os.path.join(d, "cgroup.procs")) as f:
        return len(f.read().split())

def pgcpu_rounds(subs):
    servers = {}
    port = int(PORT) + 2
    try:
        for mode in PGCPU_MODES:
            data = f"{pgdata}.{mode}"
            subprocess.run(["cp", "-a", pgdata, data], check=True)
            cg = cgroup_make(f"stowaway-bench-{os.getpid()}-{mode}")
            root = pg_start(mode, "pgcpu", data, str(port), os.path.join(cg[0], "cgroup.procs")
                            if cg else None)
            if cg:
                usage, procs = cg[1], (lambda d=cg[0]: cgroup_procs(d))
            else:  # no cgroup: ticks of the process tree, exited backends through cutime
                usage = lambda r=root: server_cpu(r) * 1e9
                procs = lambda r=root: len(tree(r))
            servers[mode] = {"data": data, "port": str(port), "usage": usage, "procs": procs,
                             "cg": cg[0] if cg else None}
            port += 1
        for mode, sv in servers.items():
            pgbench("-S", "-c", str(CLIENTS), "-j", "2", "-T", "1", port=sv["port"])  # warm
        time.sleep(0.5)
        for sv in servers.values():
            sv["idle"] = sv["procs"]()
        res = {(sub, m): [] for sub in subs for m in PGCPU_MODES}
        for rnd in range(PGCPU_ROUNDS):
            order = PGCPU_MODES[rnd % len(PGCPU_MODES):] + PGCPU_MODES[:rnd % len(PGCPU_MODES)]
            for sub in subs:
                args = ["-S", "-c", str(CLIENTS), "-j", "2", "-T", str(PGCPU_SECONDS)]
                if sub == "pgcpuconnect":
                    args.insert(0, "-C")
                u0 = {m: servers[m]["usage"]() for m in order}
                outs = {}
                def drive(m):
                    outs[m] = pgbench(*args, port=servers[m]["port"])
                drivers = [threading.Thread(target=drive, args=(m,)) for m in order]
                for d in drivers:
                    d.start()
                for d in drivers:
                    d.join()
                for mode in order:
                    sv = servers[mode]
                    # The backends of this run exit (and export) after the
                    # client leaves: their CPU is this run's.
                    for _ in range(300):
                        if sv["procs"]() <= sv["idle"]:
                            break
                        time.sleep(0.01)
                    u1 = sv["usage"]()
                    out = outs[mode]
                    tx = int(re.search(r"number of transactions actually processed: (\d+)",
                                       out).group(1))
                    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
                    res[(sub, mode)].append({"cpu_per_tx_us": (u1 - u0[mode]) / tx / 1e3,
                                             "tps": tps})
        return res, any(sv["cg"] for sv in servers.values())
    finally:
        for sv in servers.values():
            pg_stop(sv["data"])
            if sv["cg"]:
                for _ in range(100):
                    try:
                        os.rmdir(sv["cg"])
                        break
                    except OSError:
                        time.sleep(0.05)

def quartiles(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) >= 2 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]

def pgcpu_report(res, by_cgroup):
    what = {"pgcpu": f"pgbench -S -c {CLIENTS} (persistent connections)",
            "pgcpuconnect": f"pgbench -S -C -c {CLIENTS} (a backend per transaction)"}
    how = "cgroup CPU time" if by_cgroup else "process-tree CPU ticks"
    subs = sorted({sub for sub, _ in res})
    for sub in subs:
        base = res[(sub, "off")]
        print(f"BENCH prefork: {sub}_off_cpu_per_tx_us = "
              f"{statistics.median(r['cpu_per_tx_us'] for r in base):.1f} (postgres, {what[sub]}: "
              f"server CPU per transaction from {how}, no profiler; median of {PGCPU_ROUNDS} "
              f"runs of {PGCPU_SECONDS} s, the servers driven together, long-lived)")
        for mode in ("floor", "cpu", "all") + (("all_base",) if BASE_SO else ()):
            for metric, label in (("cpu_per_tx_us", "cpu_per_tx"), ("tps", "tps")):
                rs = [r[metric] / b[metric] for r, b in zip(res[(sub, mode)], base)]
                q1, med, q3 = quartiles(rs)
                print(f"BENCH prefork: {sub}_{mode}_{label}_ratio = {med:.3f} ({names[mode]}: "
                      f"{'server CPU per transaction' if metric != 'tps' else 'throughput'} "
                      f"{pct(med)} vs no profiler in the same round; middle half {pct(q1)}..{pct(q3)}, "
                      f"all {pct(min(rs))}..{pct(max(rs))}, {len(rs)} rounds)")

# ------------------------------ postgres, kernel events per transaction (pgcount)
# What each mode adds that user-mode instruction counts do not see, counted
# by the kernel's tracepoints (perf record on the server's processes, the
# backends forked during the run included): system calls by number, signals
# delivered, context switches (voluntary: the thread went to sleep), page
# faults and CPU time, per transaction, split into the host's threads and
# ours (named stowaway-*), and the processes that serve no client
# (postmaster, checkpointer, walwriter, ...) per second.  Counts do not
# depend on how loaded the machine is; CPU time does somewhat.
PGCOUNT_TX = int(os.environ.get("PREFORK_PGCOUNT_TX", "5000"))  # per client
# PREFORK_PGCOUNT_PROFILE=DIR: also record the server's CPU (perf record -g
# -e cpu-clock) into DIR/pgcount.MODE.perf.data, for perf report, and print
# our share of its samples by entry point (perf_share_of).
PGCOUNT_PROFILE = os.environ.get("PREFORK_PGCOUNT_PROFILE", "")
# PREFORK_PGCOUNT_TRACE=0 (with PREFORK_PGCOUNT_PROFILE): the tracepoints
# are not recorded, only that CPU profile.  Recording every system call
# slows each down and adds to the processes' CPU time, which the library's
# debug-information allowance grows with (configuration.md): with it, a
# backend's exit export may read DWARF it would not read untraced.
PGCOUNT_TRACE = os.environ.get("PREFORK_PGCOUNT_TRACE", "1") not in ("", "0") or not PGCOUNT_PROFILE
# PREFORK_PGCOUNT_CONNECT=1: pgbench -C (a backend per transaction).
PGCOUNT_CONNECT = os.environ.get("PREFORK_PGCOUNT_CONNECT", "") not in ("", "0")
# PREFORK_PGCOUNT_SETTLE=S: the server runs S seconds idle after its warm-up
# before the counted run (61: the postmaster has made its first periodic
# export, so the counted backends fork from a parent that has built what
# that export needed, as in a server up for more than a period).
PGCOUNT_SETTLE = float(os.environ.get("PREFORK_PGCOUNT_SETTLE", "1.5"))
# PREFORK_PGCOUNT_SHARE_SECONDS=S (0: skipped): first, per profiling mode, a
# pgbench -T S run read from /proc (no tracer): our threads' CPU in % of the
# host thread's in each client backend, and their wake-ups per second.
PGCOUNT_SHARE_SECONDS = float(os.environ.get("PREFORK_PGCOUNT_SHARE_SECONDS", "4"))
# PREFORK_PGCOUNT_SHARE_RATE=TPS (0: as fast as it goes): that run's pgbench
# is held to TPS transactions a second in all (-R), for lightly loaded
# backends, which wait most of the time between short runs.
PGCOUNT_SHARE_RATE = int(os.environ.get("PREFORK_PGCOUNT_SHARE_RATE", "0"))
# PREFORK_PGCOUNT_JEMALLOC=0 (with PREFORK_PGCOUNT_PROFILE, default 1): no
# allocation-profile reference.  Otherwise three more modes, alloc (our
# allocation and heap kinds alone), je (jemalloc preloaded) and je_prof
# (jemalloc's own profiler at our 512 KiB mean), give in one run what our
# allocation profile and jemalloc's cost this server (pgcount_report).
PGCOUNT_JEMALLOC = (bool(PGCOUNT_PROFILE) and os.path.exists(JEMALLOC) and
                    os.environ.get("PREFORK_PGCOUNT_JEMALLOC", "1") not in ("", "0"))
PGCOUNT_MODES = (["off", "floor", "cpu", "all"] + (["all_base"] if BASE_SO else []) +
                 (["alloc", "je", "je_prof"] if PGCOUNT_JEMALLOC else []))
# Whose frames a mode's perf share counts (perf_share_of): ours, or the
# allocator's (jemalloc, and libgcc's unwinder its profiler calls).
ALLOCATOR_DSOS = ("libjemalloc", "libgcc_s")
PGCOUNT_EVENTS = ("raw_syscalls:sys_enter,signal:signal_deliver,sched:sched_switch,"
                  "sched:sched_stat_runtime,exceptions:page_fault_user")

def syscall_names():
    names = {}
    try:
        with open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h") as f:
            for line in f:
                m = re.match(r"#define __NR_(\w+) (\d+)", line)
                if m:
                    names[int(m.group(2))] = m.group(1)
    except OSError:
        pass
    return names

def pgcount_run(mode, data, port):
    root = pg_start(mode, "pgcount", data, port)
    perf_data = os.path.join(tmp, f"pgcount.{mode}.data")
    try:
        pgbench("-S", "-c", str(CLIENTS), "-j", "2", "-T", "1", port=port)  # warm
        time.sleep(PGCOUNT_SETTLE)  # the warm-up's backends have exited
        idle = {p: cmdline(p) for p in tree(root)}
        rec = subprocess.Popen(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-o", perf_data,
                                "-e", PGCOUNT_EVENTS,
                                "-p", ",".join(map(str, idle))],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) \
            if PGCOUNT_TRACE else None
        prof = None
        if PGCOUNT_PROFILE:
            prof_data = os.path.join(PGCOUNT_PROFILE, f"pgcount.{mode}.perf.data")
            prof = subprocess.Popen(["perf", "record", "-q", "-g", "-e", "cpu-clock", "-o",
                                     prof_data, "-p", ",".join(map(str, idle))],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)
        t0 = time.monotonic()
        out = pgbench(*(["-C"] if PGCOUNT_CONNECT else []), "-S", "-c", str(CLIENTS), "-j", "2",
                      "-t", str(PGCOUNT_TX), port=port)
        t_end = time.monotonic()  # what follows is the backends' exit (and export)
        time.sleep(0.3)
        seconds = time.monotonic() - t0
        for r in (rec, prof):
            if r:
                r.send_signal(signal.SIGINT)
                r.wait(timeout=60)
    finally:
        pg_stop(data)
    tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    share = perf_share_of(prof_data, ALLOCATOR_DSOS if mode.startswith("je") else ("libstowaway",)) \
        if prof else None
    if not rec:
        return {"tx": tx, "seconds": seconds, "counts": {}, "share": share, "backends": 0}
    script = subprocess.run(["perf", "script", "-i", perf_data, "-F", "pid,tid,time,event,trace"],
                            capture_output=True, text=True).stdout
    comm = subprocess.run(["perf", "script", "-i", perf_data, "--show-task-events", "-F",
                           "tid,event"], capture_output=True, text=True).stdout
    os.unlink(perf_data)
    # Our threads by name (PERF_RECORD_COMM), the processes by role.
    ours = set()
    for m in re.finditer(r"PERF_RECORD_COMM(?: exec)?: (\S+):(\d+)/(\d+)", comm):
        if m.group(1).startswith("stowaway-"):
            ours.add(int(m.group(3)))
    role = {p: ("postmaster" if p == root else
                re.sub(r"^postgres: (\d+/)?", "", c).strip() or "other") for p, c in idle.items()}
    counts = {}
    pids_seen = set()
    def add(pid, tid, key, n=1):
        pids_seen.add(pid)
        who = (role.get(pid, "backend"), "ours" if tid in ours else "host")
        d = counts.setdefault(who, {})
        d[key] = d.get(key, 0) + n
    for line in script.splitlines():
        m = re.match(r"\s*(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
        if not m:
            continue
        pid, tid, ev, rest = int(m.group(1)), int(m.group(2)), m.group(4), m.group(5)
        at_exit = float(m.group(3)) >= t_end
        if ev == "raw_syscalls:sys_enter":
            add(pid, tid, "sys:" + rest.split()[1])
            add(pid, tid, "syscalls")
        elif ev == "signal:signal_deliver":
            add(pid, tid, "signals")
        elif ev == "sched:sched_switch":
            st = re.search(r"prev_state=(\S+)", rest).group(1)
            add(pid, tid, "sleeps" if st not in ("R", "R+") else "preempted")
        elif ev == "sched:sched_stat_runtime":
            ns = int(re.search(r"runtime=(\d+)", rest).group(1))
            add(pid, tid, "exit_cpu_ns" if at_exit else "cpu_ns", ns)
        elif ev == "exceptions:page_fault_user":
            add(pid, tid, "faults")
    return {"tx": tx, "seconds": seconds, "counts": counts, "share": share,
            "backends": len({p for p in pids_seen if p not in idle})}

def merge_pgcount_runs(a, b):
    """Two pgcount_run results of one mode as one: counts, transactions,
    seconds and backends added, perf shares weighted by their samples."""
    counts = {}
    for run in (a, b):
        for who, d in run["counts"].items():
            t = counts.setdefault(who, {})
            for k, v in d.items():
                t[k] = t.get(k, 0) + v
    share = a["share"] or b["share"]
    if a["share"] and b["share"]:
        (sa, na, ea), (sb, nb, eb) = a["share"], b["share"]
        n = na + nb
        entries = {k: (ea.get(k, 0) * na + eb.get(k, 0) * nb) / n for k in set(ea) | set(eb)}
        share = ((sa * na + sb * nb) / n, n, entries)
    return {"tx": a["tx"] + b["tx"], "seconds": a["seconds"] + b["seconds"], "counts": counts,
            "share": share, "backends": a["backends"] + b["backends"]}

def perf_share_of(data, dsos):
    """(share, samples, {entry point: share}) of a server's CPU samples
    (perf record -g -e cpu-clock) that are ours: on one of our threads
    (stowaway-*, entry "our threads"), or with the innermost user-mode frame
    in one of dsos (libstowaway.so: our code running, or the kernel serving
    it; the entry is the outermost frame in dsos, e.g. malloc_sample_now,
    profiler_stop).  A host call our interposer forwards counts as the
    host's once the forwarded function's frame (libc's) is innermost; a
    system call our interposer makes for the host counts as ours, a slight
    overcount."""
    text = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                          capture_output=True, text=True, errors="replace").stdout
    total = ours = 0
    entries = {}
    def mine(dso):
        return any(d in dso for d in dsos)
    for block in text.split("\n\n"):
        lines = [l.split() for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        total += 1
        if lines[0][0].startswith("stowaway"):
            key = "our threads"
        else:
            frames = [(l[1] if len(l) > 1 else "?", l[-1]) for l in lines[1:]]
            user = [f for f in frames if "kernel" not in f[1]]
            if not user or not mine(user[0][1]):
                continue
            key = [f for f in frames if mine(f[1])][-1][0]
        ours += 1
        entries[key] = entries.get(key, 0) + 1
    if not total:
        return None
    return ours / total, total, {k: n / total for k, n in entries.items()}

def task_stats(pid):
    """{tid: (comm, CPU ns, voluntary switches, age in s)} of a process's threads."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
    except OSError:
        return out
    for tid in tids:
        try:
            base = f"/proc/{pid}/task/{tid}"
            with open(base + "/comm") as f:
                name = f.read().strip()
            with open(base + "/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(base + "/status") as f:
                vol = int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", f.read()).group(1))
            with open(base + "/stat") as f:
                start = int(f.read().rsplit(")", 1)[1].split()[19]) / TICK
            out[int(tid)] = (name, ns, vol, up - start)
        except (OSError, AttributeError, ValueError, IndexError):
            pass
    return out

def pgshare_run(mode, data, port, seconds):
    """Our threads' CPU over the host thread's in each client backend, and
    their wake-ups per second, read from /proc late in a pgbench -T run (no
    tracer attached: nothing else slows the system calls down)."""
    root = pg_start(mode, "pgshare", data, port)
    snap = []
    try:
        pgbench("-S", "-c", str(CLIENTS), "-j", "2", "-T", "1", port=port)  # warm
        t = threading.Thread(target=read_later, args=(
            root, lambda c: "[local]" in c, seconds * 0.85, task_stats, snap))
        t.start()
        rate = ["-R", str(PGCOUNT_SHARE_RATE)] if PGCOUNT_SHARE_RATE > 0 else []
        pgbench("-S", "-c", str(CLIENTS), "-j", "2", "-T", str(int(seconds)), *rate, port=port)
        t.join()
    finally:
        pg_stop(data)
    return ours_shares(snap)

def ours_shares(snap):
    """Per process of a /proc snapshot (task_stats): our threads' CPU over
    its own threads', and our threads' wake-ups a second over their life."""
    shares, wakes = [], []
    for tasks in snap:
        host = sum(ns for name, ns, _, _ in tasks.values() if not name.startswith("stowaway-"))
        ours = [(ns, vol, age) for name, ns, vol, age in tasks.values()
                if name.startswith("stowaway-")]
        if host and ours:
            shares.append(sum(o[0] for o in ours) / host)
            wakes.append(sum(o[1] / max(o[2], 0.01) for o in ours))
    return shares, wakes

def pgcount_summary(runs):
    """One line per mode: what our threads cost every process of the server
    per transaction, and what the host threads of the backends pay."""
    def total(run, key, side=None, role=None):
        return sum(d.get(key, 0) for (r, s), d in run["counts"].items()
                   if (side is None or s == side) and (role is None or r == role))
    off = runs["off"]
    off_cpu = total(off, "cpu_ns") / off["tx"]
    for mode, run in runs.items():
        if mode == "off":
            continue
        tx = run["tx"]
        ours_cpu = total(run, "cpu_ns", "ours") / tx
        ours_idle = sum(d.get("cpu_ns", 0) for (r, s), d in run["counts"].items()
                        if s == "ours" and r != "backend") / tx
        exit_ms = total(run, "exit_cpu_ns", "host", "backend") / 1e6 / max(run["backends"], 1)
        print(f"BENCH prefork: pgcount_{mode}_ours_cpu_per_tx_us = {ours_cpu / 1e3:.3f} "
              f"({names_of(mode)}: our threads' CPU in all server processes per transaction, "
              f"{100 * ours_cpu / off_cpu if off_cpu else float('nan'):.2f}% of the server's CPU per transaction without the "
              f"library ({off_cpu / 1e3:.1f} us), {ours_idle / 1e3:.3f} us of it in the processes "
              f"that serve no client; our threads per transaction: "
              f"{total(run, 'sleeps', 'ours') / tx:.4f} wake-ups, "
              f"{total(run, 'syscalls', 'ours') / tx:.4f} system calls, "
              f"{total(run, 'faults', 'ours') / tx:.4f} page faults; the backends' own threads: "
              f"{total(run, 'signals', 'host', 'backend') / tx:.4f} signals per transaction, "
              f"{exit_ms:.2f} ms of CPU each after the client left)")

def pgcount_report(runs):
    if PGCOUNT_TRACE:
        pgcount_summary(runs)
    for mode, run in runs.items():
        if mode == "off" or not run["share"]:
            continue
        share, samples, entries = run["share"]
        if mode.startswith("je"):
            print(f"BENCH prefork: pgcount_{mode}_allocator_share_pct = {share * 100:.2f} "
                  f"({names_of(mode)}: the allocator's share of every server process's CPU "
                  f"samples by perf, frames of jemalloc and of libgcc's unwinder innermost; "
                  f"{samples} samples)")
            continue
        top = sorted(entries.items(), key=lambda kv: -kv[1])[:8]
        print(f"BENCH prefork: pgcount_{mode}_perf_share_pct = {share * 100:.2f} ({names_of(mode)}: "
              f"our share of every server process's CPU samples by perf, the backends' exit "
              f"included; {samples} samples; by entry point: "
              f"{', '.join(f'{k} {v * 100:.2f}' for k, v in top)})")
        # The exit export runs once per backend (per connection), not per
        # transaction: apart, what each transaction pays while its
        # connection lasts.
        at_exit = entries.get("profiler_stop", 0.0)
        print(f"BENCH prefork: pgcount_{mode}_perf_share_serving_pct = {(share - at_exit) * 100:.2f} "
              f"({names_of(mode)}: the same without the backends' exit export, "
              f"profiler_stop {at_exit * 100:.2f}, which a backend pays once per connection)")
    alloc_vs_jemalloc_prof(runs)
    names = syscall_names()
    base = runs["off"]
    def per(run, who, key):
        c = run["counts"].get(who, {}).get(key, 0)
        return c / run["tx"] if who[0] == "backend" else c / run["seconds"]
    whos = sorted({w for r in runs.values() for w in r["counts"]})
    for mode, run in runs.items():
        for who in whos:
            d = run["counts"].get(who, {})
            if not d:
                continue
            unit = "per transaction" if who[0] == "backend" else "per second"
            tag = f"{who[0].replace(' ', '_')}_{who[1]}"
            parts_txt = []
            for key in ("syscalls", "signals", "sleeps", "preempted", "faults"):
                parts_txt.append(f"{key} {per(run, who, key):.3f}")
            parts_txt.append(f"cpu {per(run, who, 'cpu_ns') / 1e3:.2f} us")
            if who[0] == "backend":
                at_exit_ms = d.get("exit_cpu_ns", 0) / 1e6 / max(run["backends"], 1)
                parts_txt.append(f"after the client left {at_exit_ms:.2f} ms per backend")
            sys_top = sorted(((per(run, who, k) - per(base, who, k), k) for k in d
                              if k.startswith("sys:")), reverse=True)[:6]
            extra = ", ".join(f"{names.get(int(k[4:]), k[4:])} {v:+.3f}" for v, k in sys_top
                              if abs(v) >= 0.0005)
            print(f"BENCH prefork: pgcount_{mode}_{tag}_syscalls = {per(run, who, 'syscalls'):.3f} "
                  f"({names_of(mode)}, {who[0]} processes, {who[1]} threads, {unit}: "
                  f"{', '.join(parts_txt)}; system calls beyond no profiler: {extra or 'none'}; "
                  f"{run['tx']} transactions in {run['seconds']:.1f} s)")

def alloc_vs_jemalloc_prof(runs):
    """What our allocation profile adds to the server's CPU (alloc's share
    over floor's: the interposers are there in both) against what jemalloc's
    profiler adds to jemalloc (je_prof's allocator share over je's), in
    percentage points of the server's CPU samples, from the same run."""
    share = {m: r["share"][0] for m, r in runs.items() if r.get("share")}
    if not all(m in share for m in ("floor", "alloc", "je", "je_prof")):
        return
    ours = share["alloc"] - share["floor"]
    theirs = share["je_prof"] - share["je"]
    print(f"BENCH prefork: pgcount_alloc_vs_jemalloc_prof = {ours * 100:.2f} vs {theirs * 100:.2f} "
          f"(percentage points of the server's CPU samples: our allocation and heap profiles, "
          f"alloc {share['alloc'] * 100:.2f} over the library loaded idle {share['floor'] * 100:.2f}, "
          f"against jemalloc's profiler at the same 512 KiB mean, jemalloc's frames "
          f"{share['je_prof'] * 100:.2f} with it over {share['je'] * 100:.2f} without; "
          f"{'ours costs no more' if ours <= theirs else 'ours costs MORE'})")

def names_of(mode):
    return "no profiler" if mode == "off" else names[mode]

def pgcount_all():
    if not shutil.which("perf"):
        print("part pgcount needs perf (apt-get install linux-perf)", file=sys.stderr)
        return
    if PGCOUNT_SHARE_SECONDS:
        port = int(PORT) + 20
        for mode in ("cpu", "all") + (("all_base",) if BASE_SO else ()):
            data = f"{pgdata}.share.{mode}"
            subprocess.run(["cp", "-a", pgdata, data], check=True)
            shares, wakes = pgshare_run(mode, data, str(port), PGCOUNT_SHARE_SECONDS)
            port += 1
            if shares:
                print(f"BENCH prefork: pgshare_{mode}_ours_cpu_pct = "
                      f"{statistics.median(shares) * 100:.2f} ({names_of(mode)}: CPU of our threads "
                      f"in % of the host thread's, median over {len(shares)} client backends late "
                      f"in a {PGCOUNT_SHARE_SECONDS:g} s pgbench -S run"
                      f"{f' held to {PGCOUNT_SHARE_RATE} transactions a second' if PGCOUNT_SHARE_RATE > 0 else ''}; range "
                      f"{min(shares) * 100:.2f}..{max(shares) * 100:.2f}; our threads woke "
                      f"{statistics.median(wakes):.0f} times a second)")
    runs = {}
    port = int(PORT) + 10
    # With a base build, the two default-kind builds run twice, in the order
    # all, all_base, all_base, all: a single run each read the one run
    # first 0.06 to 0.16 points of share higher, whichever build it was.
    order = PGCOUNT_MODES + (["all_base", "all"] if BASE_SO else [])
    for i, mode in enumerate(order):
        data = f"{pgdata}.count.{mode}.{i}"
        subprocess.run(["cp", "-a", pgdata, data], check=True)
        run = pgcount_run(mode, data, str(port))
        runs[mode] = merge_pgcount_runs(runs[mode], run) if mode in runs else run
        port += 1
    pgcount_report(runs)

# ---------------------------------------------------------------- rounds
parts = {}
if {"pg", "pgconnect", "pgcpu", "pgcpuconnect", "pgcount"} & set(PARTS):
    pg(f"{PGBIN}/initdb", "-D", pgdata, "-A", "trust", "--no-sync")
    pg_start("off", -1)
    try:
        pgbench("-i", "-s", "2", "-q")
    finally:
        pg_stop()
if "pg" in PARTS:
    parts["pg"] = (lambda mode, rnd: pg_run(mode, rnd, False),
                   f"postgres, pgbench -S -c {CLIENTS} (persistent connections: one backend each)")
if "pgconnect" in PARTS:
    parts["pgconnect"] = (lambda mode, rnd: pg_run(mode, rnd, True),
                          f"postgres, pgbench -S -C -c {CLIENTS} (a new backend per transaction)")
if "nginx" in PARTS:
    ng_setup()
    parts["nginx"] = (ng_run, f"nginx (2 workers), ab -c {CLIENTS}, 650-byte file")

results = {(p, m): [] for p in parts for m in MODES}
for rnd in range(ROUNDS):
    for part, (fn, _) in parts.items():
        order = MODES[rnd % len(MODES):] + MODES[:rnd % len(MODES)]
        for mode in order:
            results[(part, mode)].append(fn(mode, rnd))

def pct(x):
    return f"{(x - 1) * 100:+.1f}%"

names = {"cpu": "cpu profile only", "all": "default kinds cpu+wall+alloc+heap",
         "floor": "library loaded, profiling off",
         "alloc": "allocation and heap profiles only",
         "je": f"jemalloc ({JEMALLOC}), no profiler",
         "je_prof": "jemalloc's profiler, prof:true,lg_prof_sample:19",
         "all_base": f"default kinds with PREFORK_BASE_SO={BASE_SO}"}
if "pgcount" in PARTS:
    pgcount_all()
pgcpu_subs = [p for p in ("pgcpu", "pgcpuconnect") if p in PARTS]
if pgcpu_subs:
    pgcpu_report(*pgcpu_rounds(pgcpu_subs))
for part, (_, what) in parts.items():
    base = results[(part, "off")]
    print(f"BENCH prefork: {part}_off_tps = {statistics.median(r['tps'] for r in base):.0f} "
          f"({what}; no profiler; CPU {statistics.median(r['cpu_per_tx_us'] for r in base):.1f} "
          f"us per transaction, all server processes; median of {ROUNDS} rounds of {SECONDS:g} s)")
    for mode in MODES[1:]:
        runs = results[(part, mode)]
        for metric, label in (("tps", "throughput"), ("cpu_per_tx_us", "server CPU per transaction")):
            rs = [r[metric] / b[metric] for r, b in zip(runs, base)]
            print(f"BENCH prefork: {part}_{mode}_{'tps' if metric == 'tps' else 'cpu_per_tx'}_ratio = "
                  f"{statistics.median(rs):.3f} ({names[mode]}: {label} {pct(statistics.median(rs))} vs "
                  f"no profiler, spread {pct(min(rs))}..{pct(max(rs))})")
        ours = [r["ours_pct"] for r in runs if r.get("ours_pct") is not None]
        if ours:
            print(f"BENCH prefork: {part}_{mode}_ours_cpu_pct = {statistics.median(ours):.2f} "
                  f"({names[mode]}: CPU of our threads in % of the worker's own, median over "
                  f"rounds of the median worker late in the run; spread {min(ours):.2f}.."
                  f"{max(ours):.2f}; our threads woke "
                  f"{statistics.median(r['ours_wakes'] for r in runs if r.get('ours_wakes') is not None):.0f} "
                  f"times a second)")
        adds = [r["pss_anon_kb"] - b["pss_anon_kb"] for r, b in zip(runs, base)
                if r["pss_anon_kb"] is not None and b["pss_anon_kb"] is not None]
        if adds:
            print(f"BENCH prefork: {part}_{mode}_pss_anon_added_kb = {statistics.median(adds):.0f} "
                  f"({names[mode]}: Pss_Anon added per forked process, median over rounds of the "
                  f"median process; off {statistics.median(b['pss_anon_kb'] for b in base if b['pss_anon_kb']):.0f} kB; "
                  f"spread {min(adds):.0f}..{max(adds):.0f} kB)")
if os.environ.get("PREFORK_KEEP"):
    print(f"kept {tmp}", file=sys.stderr)
else:
    shutil.rmtree(tmp, ignore_errors=True)
EOF
