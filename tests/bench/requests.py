"""Instructions per request of real servers under each profiler
configuration, counted by callgrind (valgrind): a count, not a time, so it
holds on a loaded machine where CPU time per request swings by +-30%.

Each server (programs.py's Nginx, Redis, Postgres: Debian's own binaries)
runs under `valgrind --tool=callgrind --trace-children=yes
--separate-threads=yes`, every process and thread counted, ours included.
Its client (ab with and without keep-alive, redis-benchmark, pgbench -S) runs
N and then 2N requests against fresh servers; the difference of the two
totals divided by N is the cost of one request (start-up, exit and the
profile written at exit cancel out).  Every round runs each configuration
once, in a rotated order; medians and the spread over rounds are printed.

Configurations: none (no library), off (loaded, DD_PROFILING_ENABLED=false:
the floor of being preloaded), cpu, wall, alloc (alloc,heap), default (cpu,
wall, alloc, heap).  BENCH_REQUESTS_BASE_SO adds base_wall and base_default
(BENCH_REQUESTS_BASE_CONFIGS: which): another build of the library (e.g.
main's) for before/after in one run.

The default kinds' extra instructions are split by where they run:
  app        the server's own code and libraries (no library: all of it)
  libc_cancel  glibc's cancellation switch around each cancellable system
             call (recv, writev, pread...), done only in a process with more
             than one thread: the cost of our sampler thread's existence
             (glibc's malloc also takes its locks then; that stays in app)
  wall_path  the wall interposers and their enter/leave (wall_hooks.c, wall.c);
             wall/call divides it by the calls that published a frame
             (calls to wall_call_enter), a number the server's own timing
             does not move (how often a postgres backend finds its socket
             empty and waits does)
  alloc      the allocation interposers (alloc_hooks.c, alloc.c)
  alloc_smp  a sampled allocation's stack and record (alloc_sample's callees)
  handlers   our CPU and wall signal handlers on the server's threads
  other_lib  the rest of our code on the server's threads (lazy unwind and
             symbol tables, export)
  ours       our own threads (the sampler thread: ticks, symbols, export)
app, libc_cancel, wall_path, alloc and alloc_smp follow the requests: their sum is
"per request", the firm number.  handlers, other_lib and ours are driven by
time or by samples (ticks, lazily built tables, the profile written at
exit): under valgrind a request takes several times longer than natively, so
they come out larger than in a native run, and one-off work (a module's
tables built when a sample first lands in it) does not cancel between the N
and 2N runs; they are printed apart, as measured.  Instructions are user-mode
only (callgrind does not see the kernel).

Environment: BENCH_REQUESTS_ROUNDS (2), BENCH_REQUESTS_N (2000 requests, the
smaller run), BENCH_REQUESTS_CASES (nginx-ka,nginx,redis,pg),
BENCH_REQUESTS_CONFIGS, BENCH_REQUESTS_BASE_SO, BENCH_REQUESTS_BASE_CONFIGS
(wall,default), STOWAWAY_SO.
"""
import collections, glob, os, re, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import programs as P  # noqa: E402
from callgrind import callgrind_costs  # noqa: E402

ROOT = P.ROOT
SO = P.SO
BASE_SO = os.environ.get("BENCH_REQUESTS_BASE_SO", "")
ROUNDS = int(os.environ.get("BENCH_REQUESTS_ROUNDS", "1" if P.QUICK else "2"))
N = int(os.environ.get("BENCH_REQUESTS_N", "1000" if P.QUICK else "2000"))
CASES = [c for c in os.environ.get("BENCH_REQUESTS_CASES", "nginx-ka,nginx,redis,pg").split(",") if c]
CONFIGS = ["none"] + [c for c in os.environ.get(
    "BENCH_REQUESTS_CONFIGS", "off,cpu,wall,alloc,default").split(",") if c and c != "none"]
if BASE_SO:
    CONFIGS += ["base_" + c for c in os.environ.get(
        "BENCH_REQUESTS_BASE_CONFIGS", "wall,default").split(",") if c and c != "none"]
OBJ = os.path.join(ROOT, "build/obj/collect")
HANDLERS = {"cpu_signal_handler", "wall_signal_handler"}
SAMPLED = {"alloc_sample"}
# The parts of a sampled allocation counted as alloc_smp, not alloc (they
# run only under alloc_sample).
SAMPLED_SELF = {"alloc_sample", "sample_and_record", "live_insert"}
# glibc's cancellable system-call wrappers switch cancellation on and off
# around the call once the process has a second thread (ours).
CANCEL = {"__pthread_enable_asynccancel", "__pthread_disable_asynccancel"}
PARTS = ["app", "libc_cancel", "wall_path", "alloc", "alloc_smp", "handlers", "other_lib", "ours"]
REQUEST_DRIVEN = ["app", "libc_cancel", "wall_path", "alloc", "alloc_smp"]
TIME_DRIVEN = ["handlers", "other_lib", "ours"]


def text_symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    return {f[2].split(".")[0] for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "tT"}


class Costs:
    def __init__(self):
        self.wall_fns = text_symbols(os.path.join(OBJ, "wall_hooks.o")) | {
            "wall_call_enter", "wall_call_leave", "wall_hooks_active", "wall_signal",
            "enter_nested", "enter_handshake", "enter_unmapped", "self_slot_unmapped",
            "leave_timed", "leave_unmask", "tp_bind", "end_quiet_tick", "block_our_signal"}
        self.alloc_fns = (text_symbols(os.path.join(OBJ, "alloc_hooks.o")) |
                          text_symbols(os.path.join(OBJ, "alloc.o")))

    def split(self, outdir, libs, process_runs=None):
        """Instructions of every callgrind file in outdir, by part; with
        process_runs, only the processes that ran that function."""
        part = collections.Counter()
        files = {}
        for path in glob.glob(os.path.join(outdir, "cg.*")):
            files[path] = callgrind_costs(path, HANDLERS | SAMPLED | {"wall_call_enter"})
        pid_of = {p: re.sub(r"-\d+$", "", p) for p in files}
        kept = {pid_of[p] for p, (cost, _) in files.items()
                if process_runs is None or any(f == process_runs for _, f in cost)}
        for path, (cost, incl) in files.items():
            if pid_of[path] not in kept:
                continue
            total = sum(cost.values())
            ours = {k: v for k, v in cost.items() if k[0] in libs}
            lib = sum(ours.values())
            m = re.search(r"-(\d+)$", path)
            # Thread 1 is the process's main thread; another thread that
            # runs mostly our code is one of ours.
            if m and int(m.group(1)) != 1 and total and lib > total / 2:
                part["ours"] += total
                continue
            cancel = sum(v for (_, f), v in cost.items() if f in CANCEL)
            part["app"] += total - lib - cancel
            part["libc_cancel"] += cancel
            handlers = sum(incl[h] for h in HANDLERS)
            sampled = sum(incl[s] for s in SAMPLED)
            wall = sum(v for (_, f), v in ours.items() if str(f).split(".")[0] in self.wall_fns)
            alloc = sum(v for (_, f), v in ours.items() if str(f).split(".")[0] in self.alloc_fns
                        and str(f).split(".")[0] not in SAMPLED_SELF)
            part["wall_path"] += wall
            part["wall_calls"] += incl["calls:wall_call_enter"]
            part["alloc"] += alloc
            part["alloc_smp"] += sampled
            part["handlers"] += handlers
            part["other_lib"] += lib - wall - alloc - sampled - handlers
        return part


def config_env(cfg, outdir, service):
    kind = cfg[5:] if cfg.startswith("base_") else cfg
    if kind == "wall":
        env = dict(P.config_env("default", outdir, service), STOWAWAY_PROFILES="wall")
    else:
        env = P.config_env(kind, outdir, service)
    if cfg.startswith("base_"):
        env["LD_PRELOAD"] = BASE_SO
    return env


def nginx_client(keepalive):
    def client(port, n):
        return ["ab", "-q"] + (["-k"] if keepalive else []) + [
            "-n", str(n), "-c", "2", f"http://127.0.0.1:{port}/index.html"], n
    return client


def redis_client(port, n):
    return ["redis-benchmark", "-p", str(port), "-n", str(n // 2), "-c", "2", "-t", "set,get",
            "-q"], 2 * (n // 2)


def pg_client(port, n):
    return ["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-n", "-S",
            "-c", "2", "-j", "1", "-t", str(n // 2), "postgres"], 2 * (n // 2)


# name: (server class, client, what a request is, only the processes that
# ran this function: postgres's background processes work on timers, not per
# transaction, and an autovacuum run in one of the two runs would not cancel)
CASE_DEFS = {
    "nginx-ka": (P.Nginx, nginx_client(True), "ab -k (keep-alive) request", None),
    "nginx": (P.Nginx, nginx_client(False), "ab request (a connection each)", None),
    "redis": (P.Redis, redis_client, "redis-benchmark SET/GET", None),
    "pg": (P.Postgres, pg_client, "pgbench -S transaction, backends only", "PostgresMain"),
}


def run_server(server, client, cfg, n, tmp):
    d = tempfile.mkdtemp(dir=tmp)
    os.chmod(d, 0o777)
    port = P.free_port()
    argv = server.argv(port, d)
    argv = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--separate-threads=yes",
            "--dump-instr=no", "--compress-pos=no", f"--callgrind-out-file={d}/cg.%p"] + argv
    env = dict(P.CLEAN, **config_env(cfg, d, server.name))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "server.err"), "w"), **server.popen_extra())
    try:
        P.wait_port(port, proc, timeout=120)
        server.wait_ready(port, proc)
        cargv, units = client(port, n)
        out = subprocess.run(cargv, env=P.CLEAN, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            raise RuntimeError(f"{server.name} client failed: {(out.stderr or out.stdout)[-300:]}")
    finally:
        proc.send_signal(server.stop_signal)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return d, units


def lib_paths():
    return {os.path.realpath(p) for p in [SO, BASE_SO] if p} | {p for p in [SO, BASE_SO] if p}


def main():
    if not shutil.which("valgrind"):
        print("BENCH requests: n/a (valgrind not installed; tests/deps/bench.txt)")
        return
    costs = Costs()
    libs = lib_paths()
    tmp = tempfile.mkdtemp(prefix="bench_requests.")
    os.chmod(tmp, 0o755)
    t_start = time.monotonic()
    servers, cases = {}, []
    for c in CASES:
        cls, client, what, only = CASE_DEFS[c]
        if cls not in servers:
            s = cls()
            if not os.path.exists(s.binary):
                print(f"BENCH requests_{c}: n/a ({s.binary} not installed)")
                continue
            s.setup(tmp)
            servers[cls] = s
        cases.append((c, servers[cls], client, what, only))
    per = collections.defaultdict(list)  # (case, cfg) -> [{part: instr/request, slowdown}]
    for r in range(ROUNDS):
        for i, (c, server, client, _, only) in enumerate(cases):
            k = (r + i) % len(CONFIGS)
            for cfg in CONFIGS[k:] + CONFIGS[:k]:
                runs = []
                for mult in (1, 2):
                    d, units = run_server(server, client, cfg, N * mult, tmp)
                    runs.append((costs.split(d, libs, only), units))
                    shutil.rmtree(d, ignore_errors=True)
                (a, ua), (b, ub) = runs
                n = ub - ua
                row = {p: (b[p] - a[p]) / n for p in PARTS}
                row["total"] = sum(row[p] for p in PARTS)
                row["per_request"] = sum(row[p] for p in REQUEST_DRIVEN)
                calls = b["wall_calls"] - a["wall_calls"]
                row["wall_per_call"] = (b["wall_path"] - a["wall_path"]) / calls if calls > 0 else float("nan")
                per[(c, cfg)].append(row)
        print(f"requests: round {r + 1}/{ROUNDS} done at {time.monotonic() - t_start:.0f} s, "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    print(f"\nInstructions per request (user mode, every process and thread of the server, "
          f"callgrind; N={N} vs {2 * N} requests; median of {ROUNDS} rounds, [min..max] of "
          f"the ratio; 'per request' = app + wall_path + alloc + alloc_smp)")
    for c, _, _, what, _ in cases:
        base = med([x["per_request"] for x in per[(c, "none")]])
        print(f"{c}: {what}; no library {base:.0f} instructions")
        head = ["config", "per request", "ratio", "spread"] + REQUEST_DRIVEN + ["time-driven"] + \
            TIME_DRIVEN + ["all", "wall/call"]
        rows = []
        for cfg in CONFIGS:
            xs = per.get((c, cfg))
            if not xs:
                continue
            m = {p: med([x[p] for x in xs]) for p in PARTS + ["total", "per_request", "wall_per_call"]}
            ratios = [x["per_request"] / base for x in xs]
            td = sum(m[p] for p in TIME_DRIVEN)
            rows.append([cfg, f"{m['per_request']:.0f}", f"x{m['per_request'] / base:.4f}",
                         f"[{min(ratios):.4f}..{max(ratios):.4f}]"] +
                        [f"{m[p]:.0f}" for p in REQUEST_DRIVEN] + [f"{td:.0f}"] +
                        [f"{m[p]:.0f}" for p in TIME_DRIVEN] + [f"{m['total']:.0f}"] +
                        [f"{m['wall_per_call']:.1f}" if m["wall_per_call"] == m["wall_per_call"] else "-"])
            per_call = (f" ({m['wall_per_call']:.1f} per published call)"
                        if m["wall_per_call"] == m["wall_per_call"] else "")
            if cfg != "none":
                print(f"BENCH requests_{c}: {cfg}_instr_ratio = {m['per_request'] / base:.4f} "
                      f"(user-mode instructions per request that follow the requests, vs no "
                      f"library, callgrind, median of {len(xs)}: app {m['app']:.0f}, wall path "
                      f"{m['wall_path']:.0f}{per_call}, alloc "
                      f"{m['alloc'] + m['alloc_smp']:.0f}; "
                      f"time-driven {td:.0f} more under valgrind)")
        widths = [max(len(str(r[j])) for r in [head] + rows) for j in range(len(head))]
        for row in [head] + rows:
            print("  " + "  ".join(str(v).rjust(widths[j]) for j, v in enumerate(row)))
    print(f"requests: total {time.monotonic() - t_start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
