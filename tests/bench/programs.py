"""Real programs under each profiler, as ratios to no profiler in one run.

Each workload below is one small class: `setup` (once), `run(env, outdir)`
(one measured unit of work under the given environment) returning
{"cpu": seconds, "units": n, "wall": seconds, "rss_mb": peak or None}.
Servers are started under the profiler and loaded by their own benchmark
client (run without any profiler); their CPU is the whole process tree's
(each process's CPU clock, in nanoseconds, plus what reaped children used)
over the load only.  Batch programs are measured by wait4's rusage (the child and every
descendant it waited for).  Every round runs each configuration once in a
rotated order; each configuration's value is divided by the no-profiler
value of the same round and the median of those ratios is printed.

Configurations:
  none      no profiler
  off       libstowaway.so loaded, DD_PROFILING_ENABLED=false (the floor of
            being preloaded: interposers that test one flag)
  cpu       libstowaway.so, STOWAWAY_PROFILES=cpu
  default   libstowaway.so, the default kinds (cpu, wall, alloc, heap)
  alloc     libstowaway.so, STOWAWAY_PROFILES=alloc,heap (512 KiB mean)
  gperf     gperftools' libprofiler.so, CPUPROFILE, 100 Hz (setitimer:
            forked children are not profiled)
  je        jemalloc preloaded, no profiling (the allocator change alone)
  je_prof   jemalloc, MALLOC_CONF=prof:true,lg_prof_sample:19 (512 KiB
            mean), final dump at exit
The allocation profile's cost is alloc/none; jemalloc's profiler's cost is
je_prof/je (its allocator's own speed set apart).
"""
import os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SO = os.path.abspath(os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build/libstowaway.so")))
SO_NAME = "/" + os.path.basename(SO) + ")"  # how perf script names its frames' object
GPERF = os.environ.get("GPERF_SO", "/usr/lib/x86_64-linux-gnu/libprofiler.so.0")
JEMALLOC = os.environ.get("JEMALLOC_SO", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
SCALE = float(os.environ.get("BENCH_PROGRAMS_SCALE", "0.5" if QUICK else "1"))
ROUNDS = int(os.environ.get("BENCH_PROGRAMS_ROUNDS", "3"))
CONFIGS = ["none"] + [c for c in os.environ.get("BENCH_PROGRAMS_CONFIGS",
                                          "off,cpu,default,alloc,gperf,je,je_prof").split(",")
                      if c and c != "none"]
# Another build's library: its default kinds run as the column "base", for a
# before/after ratio in the same rounds.
BASE_SO = os.environ.get("BENCH_PROGRAMS_BASE_SO", "")
if BASE_SO:
    BASE_SO = os.path.abspath(BASE_SO)
    CONFIGS.append("base")
TICK = os.sysconf("SC_CLK_TCK")
CLEAN = {k: v for k, v in os.environ.items()
         if not k.startswith(("DD_", "STOWAWAY_", "LD_PRELOAD", "CPUPROFILE", "MALLOC_CONF"))}


def config_env(cfg, outdir, service):
    on = {"LD_PRELOAD": SO, "DD_PROFILING_ENABLED": "true", "STOWAWAY_OUTPUT_DIR": outdir,
          "DD_SERVICE": service}
    return {
        "none": {},
        "off": dict(on, DD_PROFILING_ENABLED="false"),
        "cpu": dict(on, STOWAWAY_PROFILES="cpu"),
        "default": on,
        "base": dict(on, LD_PRELOAD=BASE_SO),
        "alloc": dict(on, STOWAWAY_PROFILES="alloc,heap"),
        "gperf": {"LD_PRELOAD": GPERF, "CPUPROFILE": os.path.join(outdir, "gperf.prof"),
                  "CPUPROFILE_FREQUENCY": "100"},
        "je": {"LD_PRELOAD": JEMALLOC},
        "je_prof": {"LD_PRELOAD": JEMALLOC, "MALLOC_CONF":
                    f"prof:true,lg_prof_sample:19,prof_final:true,prof_prefix:{outdir}/jeprof"},
        # The reference tools for the CPU and allocation kinds at once,
        # judged against "je": what profiling those kinds costs with them.
        "refs": {"LD_PRELOAD": f"{JEMALLOC} {GPERF}",
                 "CPUPROFILE": os.path.join(outdir, "gperf.prof"), "CPUPROFILE_FREQUENCY": "100",
                 "MALLOC_CONF": f"prof:true,lg_prof_sample:19,prof_final:true,"
                                f"prof_prefix:{outdir}/jeprof"},
    }[cfg]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def process_cpu(pid):
    """Parent pid and CPU seconds of a live process: every thread's, exited
    ones too, from its CPU clock (nanoseconds), plus what its reaped children
    used (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    own = time.clock_gettime(((~pid) << 3) | 2)  # the process's CPUCLOCK_SCHED clock
    return int(fields[1]), own + (int(fields[13]) + int(fields[14])) / TICK


def tree_cpu(root):
    """CPU seconds of root and its live descendants, with what they reaped."""
    procs = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                procs[int(d)] = process_cpu(int(d))
            except OSError:
                continue
    total, todo = 0.0, [root]
    while todo:
        p = todo.pop()
        if p in procs:
            total += procs[p][1]
            todo.extend(c for c, (pp, _) in procs.items() if pp == p)
    return total


def run_batch(argv, env, cwd=None, stdin=None):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[0]} failed: {err[-300:].decode(errors='replace')}")
    return {"cpu": ru.ru_utime + ru.ru_stime, "wall": wall, "rss_mb": ru.ru_maxrss / 1024}


class Server:
    """Start `argv` under env, wait for its port, run the client, stop it."""
    name = "server"
    client_unit = "request"

    def load(self, port, env, outdir, proc):
        t0 = time.monotonic()
        before = tree_cpu(proc.pid)
        out = subprocess.run(self.client(port), env=CLEAN, capture_output=True, text=True,
                             timeout=300)
        after = tree_cpu(proc.pid)
        if out.returncode != 0:
            raise RuntimeError(f"{self.name} client failed: {(out.stderr or out.stdout)[-300:]}")
        self.check(out.stdout)
        return {"cpu": after - before, "wall": time.monotonic() - t0, "rss_mb": None}

    def check(self, stdout):
        pass

    def run(self, env, outdir):
        port = free_port()
        proc = subprocess.Popen(self.argv(port, outdir), env=env, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(outdir, "server.err"), "w"),
                                **self.popen_extra())
        try:
            wait_port(port, proc)
            self.wait_ready(port, proc)
            r = self.load(port, env, outdir, proc)
        finally:
            proc.send_signal(self.stop_signal)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        r["units"] = self.units
        return r

    stop_signal = signal.SIGTERM

    def wait_ready(self, port, proc):
        pass

    def popen_extra(self):
        return {}


class Redis(Server):
    name, binary = "redis", "/usr/bin/redis-server"

    def setup(self, tmp):
        self.n = int(30000 * SCALE)
        self.units = 2 * self.n

    def argv(self, port, outdir):
        return [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", outdir]

    def client(self, port):
        return ["redis-benchmark", "-p", str(port), "-n", str(self.n), "-c", "8", "-t", "set,get",
                "-q"]


class Nginx(Server):
    name, binary = "nginx", "/usr/sbin/nginx"
    stop_signal = signal.SIGQUIT

    def setup(self, tmp):
        self.dir = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(self.dir, "html"))
        with open(os.path.join(self.dir, "html", "index.html"), "w") as f:
            f.write("<html><body>" + "stowaway bench " * 64 + "</body></html>\n")
        self.n = int(10000 * SCALE)
        self.units = self.n

    def argv(self, port, outdir):
        conf = os.path.join(outdir, "nginx.conf")
        d = self.dir
        with open(conf, "w") as f:
            f.write(f"""daemon off; master_process on; worker_processes 1; user root;
pid {outdir}/nginx.pid; error_log {outdir}/error.log;
events {{ worker_connections 256; }}
http {{ access_log off; client_body_temp_path {outdir}/body; proxy_temp_path {outdir}/proxy;
  fastcgi_temp_path {outdir}/fcgi; uwsgi_temp_path {outdir}/uwsgi; scgi_temp_path {outdir}/scgi;
  server {{ listen 127.0.0.1:{port}; root {d}/html; }} }}
""")
        return [self.binary, "-p", outdir, "-c", conf, "-e", f"{outdir}/error.log"]

    def client(self, port):
        return ["ab", "-q", "-n", str(self.n), "-c", "8", f"http://127.0.0.1:{port}/index.html"]

    def check(self, stdout):
        if "Failed requests:        0" not in stdout:
            raise RuntimeError("nginx: ab reports failed requests")


class Memcached(Server):
    name, binary = "memcached", "/usr/bin/memcached"

    def setup(self, tmp):
        self.n = int(6000 * SCALE)
        self.units = 4 * self.n

    def argv(self, port, outdir):
        return [self.binary, "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                "-t", "2", "-m", "64"]

    def client(self, port):
        return ["memcslap", f"--servers=127.0.0.1:{port}", "--concurrency=4",
                f"--execute-number={self.n}", "--test=get", "--binary"]


class Postgres(Server):
    name = "postgres"
    binary = "/usr/lib/postgresql/15/bin/postgres"
    stop_signal = signal.SIGINT  # fast shutdown
    client_unit = "transaction"

    def demote(self):
        return {"user": "postgres", "group": "postgres"}

    def popen_extra(self):
        return self.demote()

    def wait_ready(self, port, proc):
        end = time.monotonic() + 20
        while subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)],
                             env=CLEAN).returncode != 0:
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError("postgres never became ready")
            time.sleep(0.05)

    def setup(self, tmp):
        self.dir = os.path.join(tmp, "pgdata")
        os.makedirs(self.dir)
        shutil.chown(self.dir, "postgres", "postgres")
        subprocess.run(["/usr/lib/postgresql/15/bin/initdb", "-D", self.dir, "-A", "trust",
                        "-U", "postgres", "--no-sync"], env=CLEAN, check=True,
                       capture_output=True, **self.demote())
        self.tx = int(3000 * SCALE)
        self.units = 4 * self.tx
        port = free_port()
        p = subprocess.Popen(self.argv(port, tmp), env=CLEAN, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, **self.demote())
        try:
            wait_port(port, p)
            self.wait_ready(port, p)
            subprocess.run(["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                            "-i", "-s", "2", "postgres"], env=CLEAN, check=True,
                           capture_output=True)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait()

    def argv(self, port, outdir):
        return [self.binary, "-D", self.dir, "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                "-c", f"unix_socket_directories={self.dir}", "-c", "fsync=off"]

    def client(self, port):
        return ["pgbench", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-n", "-S",
                "-c", "4", "-j", "2", "-t", str(self.tx), "postgres"]


class Batch:
    client_unit = "run"
    units = 1

    def run(self, env, outdir):
        r = run_batch(self.argv(outdir), env, cwd=outdir)
        r["units"] = self.units
        return r


class Sqlite(Batch):
    name, binary = "sqlite3", "/usr/bin/sqlite3"

    def setup(self, tmp):
        n = int(300000 * SCALE)
        self.sql = (f"create table t(a integer primary key, b text, c real);"
                    f"with recursive s(i) as (select 1 union all select i+1 from s where i<{n}) "
                    f"insert into t select i, hex(randomblob(16)), i*0.5 from s;"
                    f"create index tb on t(b); select count(*), sum(c) from t where b like 'A%';"
                    f"select b, count(*) from t group by substr(b,1,3) order by 2 desc limit 5;")

    def argv(self, outdir):
        return [self.binary, ":memory:", self.sql]


class Python(Batch):
    name, binary = "python3", "/usr/bin/python3"

    def setup(self, tmp):
        self.code = (f"import json\nfor k in range({int(15 * SCALE)}):\n"
                     "  d = {str(i): [i, str(i) * 3, {'x': i}] for i in range(20000)}\n"
                     "  s = json.dumps(d)\n  assert len(json.loads(s)) == 20000\n")

    def argv(self, outdir):
        return [self.binary, "-c", self.code]


class Node(Batch):
    name, binary = "node", "/usr/bin/node"

    def setup(self, tmp):
        self.code = (f"for (let k = 0; k < {int(15 * SCALE)}; k++) {{ const d = {{}};"
                     "for (let i = 0; i < 20000; i++) d['k' + i] = [i, String(i).repeat(3), {x: i}];"
                     "const s = JSON.stringify(d); if (Object.keys(JSON.parse(s)).length !== 20000)"
                     " process.exit(1); }")

    def argv(self, outdir):
        return [self.binary, "-e", self.code]


class Ripgrep(Batch):
    name, binary = "ripgrep", "/usr/bin/rg"

    def setup(self, tmp):
        self.reps = max(1, int(2 * SCALE))

    def argv(self, outdir):
        # A shell loop runs the search self.reps times (its own CPU is negligible).
        return ["sh", "-c", f"for i in $(seq {self.reps}); do rg -c -j2 '[A-Z][a-z]+_[a-z]+\\(' "
                "/usr/include >/dev/null || exit 1; done"]


class Clang(Batch):
    name, binary = "clang", "/usr/bin/clang"

    def setup(self, tmp):
        self.src = os.path.join(tmp, "unit.cpp")
        with open(self.src, "w") as f:
            f.write("#include <map>\n#include <string>\n#include <vector>\n"
                    "#include <iostream>\n#include <algorithm>\n"
                    "int count(const std::vector<std::string>& v) {"
                    " std::map<std::string, int> m; for (auto& s : v) if (s.find(\"ab\") == 0)"
                    " m[s]++; std::vector<int> w; for (auto& [k, n] : m) w.push_back(n);"
                    " std::sort(w.begin(), w.end()); for (int x : w) std::cout << x;"
                    " return (int)w.size(); }\n")

    def argv(self, outdir):
        return ["/usr/bin/clang++", "-O1", "-c", self.src, "-o", os.path.join(outdir, "unit.o")]


class Java(Batch):
    name, binary = "java", "/usr/bin/java"

    def setup(self, tmp):
        self.dir = os.path.join(tmp, "java")
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "Bench.java"), "w") as f:
            f.write("import java.util.*;\npublic class Bench { public static void main(String[] a) {"
                    " int rounds = Integer.parseInt(a[0]); long sum = 0;"
                    " for (int k = 0; k < rounds; k++) { HashMap<String, List<Integer>> m ="
                    " new HashMap<>(); for (int i = 0; i < 100000; i++) m.computeIfAbsent("
                    "\"k\" + (i % 5000), x -> new ArrayList<>()).add(i); StringBuilder b ="
                    " new StringBuilder(); for (List<Integer> l : m.values()) b.append(l.size());"
                    " sum += b.length(); } if (sum == 0) System.exit(1); } }\n")
        subprocess.run(["javac", "-d", self.dir, os.path.join(self.dir, "Bench.java")],
                       env=CLEAN, check=True, capture_output=True)
        self.rounds = int(25 * SCALE)

    def argv(self, outdir):
        return [self.binary, "-cp", self.dir, "Bench", str(self.rounds)]


WORKLOADS = [Redis, Nginx, Memcached, Postgres, Sqlite, Python, Node, Ripgrep, Clang, Java]

# ---- start-up: CPU and peak RSS of a trivial run against the code mapped ----
STARTUP = [
    ("hello (C)", [os.path.join(ROOT, "build/workloads/hello")], []),
    ("python3", ["/usr/bin/python3", "-c", "pass"], []),
    ("node", ["/usr/bin/node", "-e", "0"], []),
    ("clang", ["/usr/bin/clang", "--version"], []),
    ("java", ["/usr/bin/java", "-version"],
     ["/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"]),
]
STARTUP_CONFIGS = [c for c in ["none", "off", "cpu", "default", "gperf"] if c in CONFIGS]

# Issue #22's targets for the default kinds: extra CPU per unit of work.
# Each is judged against the floors measured in the same rounds (library
# loaded but off; CPU profile only), so a miss shows how much is ours.
TARGETS = {"clang": 1.05, "nginx": 1.02, "postgres": 1.02}


PERF_RUNS = int(os.environ.get("BENCH_PERF_SHARE_RUNS", "3" if QUICK else "5"))


def quartiles(xs):
    """(first, third) quartile of xs (NaN when fewer than 2 values)."""
    if len(xs) < 2:
        return float("nan"), float("nan")
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def target_verdict(q1, q3, median, target):
    """The middle half of the rounds decides: a median on either side of the
    target with quartiles straddling it is noise, not a verdict (without
    quartiles, the median decides)."""
    if q1 != q1:
        return "met" if median <= target else "NOT MET"
    return "met" if q3 <= target else "NOT MET" if q1 > target else "within noise"


def perf_share(w, tmp):
    """The share of a batch program's CPU samples that are ours, by perf:
    samples with a frame in STOWAWAY_SO (by its file name, which need not
    be libstowaway.so) anywhere in the call chain (kernel work done for our
    calls included) or on one of our threads (stowaway-*),
    over PERF_RUNS runs with the default kinds.  A lower bound of our cost:
    the kernel's side of delivering our signals runs with the program's own
    frames below it, and cache effects are not in any frame.  Also the
    share of those in the export at exit (profiler_stop: naming, encoding,
    compressing and writing the process's profiles, paid once per process).
    None without perf."""
    if not shutil.which("perf"):
        return None
    ours = total = at_exit = 0
    for i in range(PERF_RUNS):
        d = tempfile.mkdtemp(dir=tmp)
        data = os.path.join(tmp, f"perf.{i}.data")
        env = dict(CLEAN, **config_env("default", d, w.name))
        try:
            r = subprocess.run(["perf", "record", "-q", "-g", "-F", "997", "-e", "cpu-clock", "-o",
                                data, "--"] + w.argv(d), env=env, cwd=d, capture_output=True,
                               timeout=600)
            if r.returncode != 0:
                return None
            text = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                                  capture_output=True, text=True, errors="replace",
                                  timeout=600).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        finally:
            shutil.rmtree(d, ignore_errors=True)
            if os.path.exists(data):
                os.unlink(data)
        for block in text.split("\n\n"):
            lines = [l for l in block.splitlines() if l.strip()]
            if not lines:
                continue
            total += 1
            mine = [l for l in lines[1:] if SO_NAME in l]
            if lines[0].split()[0].startswith("stowaway") or mine:
                ours += 1
            if any(" profiler_stop" in l for l in mine):
                at_exit += 1
    return (ours / total, total, at_exit / total) if total else None


TOGETHER_ROUNDS = int(os.environ.get("BENCH_TOGETHER_ROUNDS", "5" if QUICK else "11"))


def together(w, tmp):
    """CPU per run of a batch program with its configurations run at the
    same time: each round starts every configuration at once, so a machine
    whose speed drifts between runs (other work, a neighbour on the host)
    slows every configuration of the round alike;
    each run's CPU is its own (wait4).  Returns {cfg: [ratio to the same
    round's none, ...]}, or None when a run failed."""
    cfgs = [c for c in ("none", "off", "cpu", "default", "alloc", "gperf", "je", "je_prof", "base")
            if c in CONFIGS]
    if "gperf" in cfgs and "je" in cfgs and "je_prof" in cfgs:
        cfgs.append("refs")
    out = {c: [] for c in cfgs if c != "none"}
    for r in range(TOGETHER_ROUNDS):
        procs = {}
        order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
        for cfg in order:
            d = tempfile.mkdtemp(dir=tmp)
            os.chmod(d, 0o777)
            err = open(os.path.join(d, "stderr"), "wb")
            env = dict(CLEAN, **config_env(cfg, d, w.name))
            procs[cfg] = (subprocess.Popen(w.argv(d), env=env, cwd=d, stdout=subprocess.DEVNULL,
                                           stderr=err), d, err)
        cpu = {}
        failed = False
        for cfg, (p, d, err) in procs.items():
            _, status, ru = os.wait4(p.pid, 0)
            err.close()
            cpu[cfg] = ru.ru_utime + ru.ru_stime
            failed = failed or os.waitstatus_to_exitcode(status) != 0
            shutil.rmtree(d, ignore_errors=True)
        if failed:
            return None
        for cfg in out:
            out[cfg].append(cpu[cfg] / cpu["none"])
    return out


def mapped_bytes(argv, extra):
    """Bytes of the executable, the libraries ldd lists, and the named extras."""
    files = {os.path.realpath(argv[0])} | {os.path.realpath(e) for e in extra}
    out = subprocess.run(["ldd", argv[0]], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > parts.index("=>") + 1:
            path = parts[parts.index("=>") + 1]
            if path.startswith("/"):
                files.add(os.path.realpath(path))
    return sum(os.path.getsize(f) for f in files if os.path.exists(f))


def bench_startup(tmp, reps):
    res = {}
    for r in range(reps):
        for name, argv, _ in STARTUP:
            k = r % len(STARTUP_CONFIGS)
            order = STARTUP_CONFIGS[k:] + STARTUP_CONFIGS[:k]
            for cfg in order:
                d = tempfile.mkdtemp(dir=tmp)
                env = dict(CLEAN, **config_env(cfg, d, "startup"))
                res.setdefault((name, cfg), []).append(run_batch(argv, env, cwd=d))
                shutil.rmtree(d, ignore_errors=True)
    rows = []
    for name, argv, extra in STARTUP:
        base_cpu = statistics.median(x["cpu"] for x in res[(name, "none")]) * 1e3
        base_rss = statistics.median(x["rss_mb"] for x in res[(name, "none")])
        row = [name, f"{mapped_bytes(argv, extra) / 1e6:.1f}", f"{base_cpu:.0f}", f"{base_rss:.0f}"]
        for cfg in STARTUP_CONFIGS[1:]:
            cpu = statistics.median(x["cpu"] for x in res[(name, cfg)]) * 1e3 - base_cpu
            rss = statistics.median(x["rss_mb"] for x in res[(name, cfg)]) - base_rss
            row.append(f"{cpu:+.0f} ms {rss:+.1f} MB")
            print(f"BENCH startup_{name.split()[0]}: {cfg}_added_cpu_ms = {cpu:.1f} (peak RSS "
                  f"{rss:+.1f} MB; no profiler {base_cpu:.0f} ms, {base_rss:.0f} MB; median of {reps})")
        rows.append(row)
    return rows


def main():
    for f in (SO, GPERF, JEMALLOC):
        if not os.path.exists(f):
            sys.exit(f"missing {f} (see tests/deps/bench.txt)")
    only = [w for w in os.environ.get("BENCH_PROGRAMS", "").split(",") if w]
    tmp = tempfile.mkdtemp(prefix="bench_programs.")
    os.chmod(tmp, 0o755)
    t_start = time.monotonic()
    workloads = []
    for cls in WORKLOADS:
        w = cls()
        if only and w.name not in only:
            continue
        if not os.path.exists(w.binary):
            print(f"BENCH programs: {w.name} = n/a ({w.binary} not installed)")
            continue
        try:
            w.setup(tmp)
            w.run(dict(CLEAN), tmp)  # warm-up: page cache, first-run costs
        except (RuntimeError, subprocess.SubprocessError, OSError) as e:
            print(f"BENCH programs: {w.name} = n/a (setup failed: {str(e)[-200:]})")
            continue
        workloads.append(w)
    res = {}
    failed = set()
    for r in range(ROUNDS):
        for w in workloads:
            if w.name in failed:
                continue
            order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
            for cfg in order:
                d = tempfile.mkdtemp(dir=tmp)
                os.chmod(d, 0o777)
                env = dict(CLEAN, **config_env(cfg, d, w.name))
                try:
                    res.setdefault((w.name, cfg), []).append(w.run(env, d))
                except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                    print(f"BENCH programs: {w.name} = failed ({cfg}: {e})")
                    failed.add(w.name)
                    break
                finally:
                    shutil.rmtree(d, ignore_errors=True)
        print(f"programs: round {r + 1}/{ROUNDS} done at {time.monotonic() - t_start:.0f} s, "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)

    def ratios(name, cfg, metric, base="none"):
        if (name, cfg) not in res or (name, base) not in res:
            return []
        return [a[metric] / a["units"] / (b[metric] / b["units"])
                for a, b in zip(res[(name, cfg)], res[(name, base)]) if b[metric] > 0]

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    header = ["program", "metric", "none"] + CONFIGS[1:] + ["alloc vs je_prof", "default target"]
    table = []
    for w in workloads:
        if w.name in failed:
            continue
        n = len(res[(w.name, "none")])
        base_cpu = med([x["cpu"] / x["units"] for x in res[(w.name, "none")]])
        base_wall = med([x["wall"] / x["units"] for x in res[(w.name, "none")]])
        per = w.client_unit
        cpu_row = [w.name, f"CPU/{per}", f"{base_cpu * 1e6:.1f} us" if w.units > 1
                   else f"{base_cpu:.2f} s"]
        thr_row = [w.name, "throughput" if w.units > 1 else "wall",
                   f"{1 / base_wall:.0f}/s" if w.units > 1 else f"{base_wall:.2f} s"]
        for cfg in CONFIGS[1:]:
            rc = med(ratios(w.name, cfg, "cpu"))
            rw = med(ratios(w.name, cfg, "wall"))
            rt = 1 / rw if w.units > 1 else rw
            cpu_row.append(f"x{rc:.3f}")
            thr_row.append(f"x{rt:.3f}")
            print(f"BENCH programs_{w.name}: {cfg}_cpu_ratio = {rc:.4f} (CPU per {per} vs no "
                  f"profiler, median of {n} interleaved rounds; "
                  f"{'throughput' if w.units > 1 else 'wall'} x{rt:.4f})")
        ours = med(ratios(w.name, "alloc", "cpu"))
        theirs = med(ratios(w.name, "je_prof", "cpu", base="je"))
        if ours == ours and theirs == theirs:  # both measured (not NaN)
            verdict = "ok" if ours <= theirs * 1.02 else "MORE"
            cpu_row.append(f"x{ours:.3f} vs x{theirs:.3f} {verdict}")
            print(f"BENCH programs_{w.name}: alloc_vs_jemalloc_prof = {ours / theirs:.4f} (CPU: "
                  f"our alloc+heap profile x{ours:.4f} vs no profiler; jemalloc's profiler "
                  f"x{theirs:.4f} vs jemalloc without it; target <= 1, 2% noise allowance: "
                  f"{verdict})")
        else:
            cpu_row.append("")
        if (w.name, "base") in res and (w.name, "default") in res:
            after = ratios(w.name, "default", "cpu", base="base")
            q1, q3 = quartiles(after)
            print(f"BENCH programs_{w.name}: default_vs_base = {med(after):.4f} (CPU per {per}: "
                  f"this build's default kinds over {BASE_SO}'s, same rounds; middle half "
                  f"x{q1:.3f}..x{q3:.3f})")
        target = TARGETS.get(w.name)
        dflt = med(ratios(w.name, "default", "cpu"))
        if target and dflt == dflt:
            floors = [f"{c} x{med(ratios(w.name, c, 'cpu')):.3f}" for c in ("off", "cpu")
                      if (w.name, c) in res]
            q1, q3 = quartiles(ratios(w.name, "default", "cpu"))
            verdict = target_verdict(q1, q3, dflt, target)
            cpu_row.append(f"<=x{target:.2f} {verdict}")
            print(f"BENCH programs_{w.name}: default_target = {verdict} (default kinds "
                  f"x{dflt:.4f} CPU per {per}, middle half of the rounds x{q1:.3f}..x{q3:.3f}, "
                  f"target <= x{target:.2f}; floors in the same rounds: {', '.join(floors)})")
            tog = together(w, tmp) if w.units == 1 else None
            if tog:
                q1, q3 = quartiles(tog["default"])
                tmed = med(tog["default"])
                verdict = target_verdict(q1, q3, tmed, target)
                floors = ", ".join(f"{c} x{med(v):.3f}" for c, v in tog.items()
                                   if c not in ("default", "refs"))
                if "refs" in tog and "je" in tog:
                    refs = [a / b for a, b in zip(tog["refs"], tog["je"])]
                    rq1, rq3 = quartiles(refs)
                    floors += f", refs over je x{med(refs):.3f}"
                    print(f"BENCH programs_{w.name}: reference_profilers_together = "
                          f"{med(refs):.4f} (gperftools' CPU profiler at 100 Hz and jemalloc's "
                          f"profiler at the same 512 KiB mean, loaded at once, CPU per {per} over "
                          f"jemalloc alone, middle half x{rq1:.3f}..x{rq3:.3f}, same rounds; our "
                          f"default kinds x{tmed:.4f}, which add the wall kind and name and "
                          f"compress every profile in the process; theirs write raw addresses)")
                if "je" in tog and "je_prof" in tog and "alloc" in tog:
                    theirs = [a / b for a, b in zip(tog["je_prof"], tog["je"])]
                    ok = med(tog["alloc"]) <= med(theirs) * 1.02
                    print(f"BENCH programs_{w.name}: alloc_vs_jemalloc_prof_together = "
                          f"{med(tog['alloc']) / med(theirs):.4f} (our alloc+heap x{med(tog['alloc']):.4f}"
                          f" vs none; jemalloc's profiler x{med(theirs):.4f} vs jemalloc, same "
                          f"rounds run at once: {'ok' if ok else 'MORE'})")
                print(f"BENCH programs_{w.name}: default_target_together = {verdict} (default "
                      f"kinds x{tmed:.4f} CPU per {per}, middle half x{q1:.3f}..x{q3:.3f}, with "
                      f"every configuration of a round run at once, {TOGETHER_ROUNDS} rounds; "
                      f"target <= x{target:.2f}; the same rounds: {floors})")
                if "base" in tog:
                    after = [a / b for a, b in zip(tog["default"], tog["base"])]
                    q1, q3 = quartiles(after)
                    print(f"BENCH programs_{w.name}: default_vs_base_together = {med(after):.4f} "
                          f"(middle half x{q1:.3f}..x{q3:.3f})")
            share = perf_share(w, tmp) if w.units == 1 else None
            if share:
                print(f"BENCH programs_{w.name}: default_perf_share = {share[0] * 100:.2f}% "
                      f"(x{1 / (1 - share[0]):.4f} if the rest is the program's own work; "
                      f"{share[1]} perf samples over {PERF_RUNS} runs with a libstowaway frame "
                      f"or on our threads; a lower bound: our signals' kernel delivery and "
                      f"cache effects are in no frame of ours; of it, the export at exit "
                      f"{share[2] * 100:.2f}%, profiling while the program runs "
                      f"{(share[0] - share[2]) * 100:.2f}%)")
        else:
            cpu_row.append("")
        thr_row += ["", ""]
        table += [cpu_row, thr_row]
        if w.units == 1:
            rss = [w.name, "peak RSS", f"{med([x['rss_mb'] for x in res[(w.name, 'none')]]):.0f} MB"]
            for cfg in CONFIGS[1:]:
                d = med([a["rss_mb"] - b["rss_mb"] for a, b in
                         zip(res[(w.name, cfg)], res[(w.name, "none")])])
                rss.append(f"{d:+.1f} MB")
            table.append(rss + ["", ""])

    reps = int(os.environ.get("BENCH_STARTUP_PROGRAM_REPS", "5" if QUICK else "9"))
    srows = bench_startup(tmp, reps)
    shutil.rmtree(tmp, ignore_errors=True)

    def show(head, rows):
        widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
        for r in [head] + rows:
            print("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)).rstrip())

    print(f"\nReal programs: ratios to no profiler (median of {ROUNDS} interleaved rounds; "
          f"CPU per unit of work; throughput for servers, wall for batch runs; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    show(header, table)
    print(f"\nStart-up: CPU and peak RSS of one trivial run (median of {reps}), added by each "
          f"profiler, against the code it maps")
    show(["program", "mapped MB", "none ms", "none MB"] + [f"+{c}" for c in STARTUP_CONFIGS[1:]],
         srows)
    print(f"programs: total {time.monotonic() - t_start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
