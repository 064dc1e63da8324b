#!/usr/bin/env python3
# needs: build/libstowaway.so build/stowaway build/workloads/memleak build/workloads/memleak-musl
"""Memory guard, end to end, in real memory-limited cgroups made by this test
(it runs as root; a machine where no memory cgroup can be made fails here,
it never passes silently).  For each cgroup version the machine has a
memory controller for:
  - a process leaking 50 MiB/s into a 192 MiB limit, with default settings
    (60 s period), glibc and musl: it is OOM-killed (SIGKILL, the cgroup's
    oom_kill counter moves) and leaves on disk a heap profile carrying the
    memory-trigger comment in which the leaking function holds >= 60% of the
    limit, judged by `go tool pprof`; `stowaway report DIR` names the newest
    memory-triggered profile;
  - a process staying at half the limit writes no memory-triggered profile,
    nor one started when a sibling already holds 85% of the limit;
  - usage crossing 80% five times within one period exports once; with a
    1 s period, each new high after a drop (in a new period) exports again;
  - a sibling's OOM kill in the cgroup is logged once and written in a
    profile's comments;
  - without any cgroup limit, the RSS is watched only against
    STOWAWAY_MEMORY_RSS_LIMIT."""
import glob
import json
import os
import re
import subprocess
import tempfile
import time
import sys
from checks import check, check_terse, finish

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_common as ec  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")
CLI = os.path.join(ROOT, "build", "stowaway")
MIB = 1024 * 1024
LIMIT = 192 * MIB


def mounts():
    """{'v1': mount point of the v1 memory hierarchy, 'v2': cgroup2 mount}."""
    found = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, sup = left.split(), right.split()
            if len(sup) < 3:
                continue
            mnt = fields[4].replace("\\040", " ")
            if sup[0] == "cgroup2" and "v2" not in found:
                found["v2"] = mnt
            elif sup[0] == "cgroup" and "memory" in sup[2].split(",") and "v1" not in found:
                found["v1"] = mnt
    return found


class Cgroup:
    """A child cgroup with a 192 MiB memory limit and no swap; removed on close."""

    def __init__(self, version, mount, tag, limit=LIMIT):
        self.version, self.path = version, None
        path = os.path.join(mount, f"stowaway-memguard-{os.getpid()}-{tag}")
        if version == "v2":
            with open(os.path.join(mount, "cgroup.controllers")) as f:
                if "memory" not in f.read().split():
                    raise OSError("the cgroup2 hierarchy has no memory controller")
            with open(os.path.join(mount, "cgroup.subtree_control")) as f:
                enabled = f.read().split()
            if "memory" not in enabled:
                with open(os.path.join(mount, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
        os.mkdir(path)
        self.path = path
        if limit is None:
            return
        if version == "v2":
            self.write("memory.max", str(limit))
            if os.path.exists(os.path.join(path, "memory.swap.max")):
                self.write("memory.swap.max", "0")
        else:
            self.write("memory.limit_in_bytes", str(limit))
            if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
                self.write("memory.memsw.limit_in_bytes", str(limit))

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def oom_kills(self):
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        with open(os.path.join(self.path, name)) as f:
            m = re.search(r"^oom_kill (\d+)", f.read(), re.M)
        return int(m.group(1)) if m else -1

    def enter(self):
        """preexec_fn: moves the child into the cgroup before exec."""
        path = self.path

        def move():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        return move

    def close(self):
        if not self.path:
            return
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.05)
        print(f"note: could not remove {self.path}")


def env_for(out, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DD_", "STOWAWAY_"))}
    env.update(DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
               DD_SERVICE="memguard", STOWAWAY_LOG_LEVEL="info")
    env.update(extra)
    return env


def comments(path):
    p = subprocess.run(["go", "tool", "pprof", "-comments", path], capture_output=True,
                       text=True, timeout=60)
    return p.stdout


def heap_by_function(path):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=50",
                          "-sample_index=heap-live-size", "-unit=B", path],
                         capture_output=True, text=True, timeout=60).stdout
    flat = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].endswith("%") and parts[4].endswith("%"):
            flat[parts[5]] = flat.get(parts[5], 0.0) + float(parts[0].rstrip("B") or 0)
    return flat


def triggered_heaps(out):
    """[(path, comment text)] of heap profiles carrying the memory-trigger comment."""
    found = []
    for path in sorted(glob.glob(os.path.join(out, "*.heap.*.pb.gz"))):
        text = comments(path)
        if "memory trigger:" in text:
            found.append((path, text))
    return found


def agent_trigger_tags(recorder):
    """tags_profiler of every upload the fake agent received that has trigger:memory."""
    found = []
    for req in recorder.requests:
        parts, _ = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
        for part in parts or []:
            if part["name"] == "event":
                tags = json.loads(part["data"]).get("tags_profiler", "")
                if "trigger:memory" in tags.split(","):
                    found.append(tags)
    return found


def test_leak(cg, exe, label, agent=False):
    with tempfile.TemporaryDirectory() as out:
        kills_before = cg.oom_kills()
        extra, recorder, server = {}, None, None
        if agent:
            recorder = ec.Recorder()
            server, port = ec.start_tcp(recorder)
            extra["DD_TRACE_AGENT_URL"] = f"http://127.0.0.1:{port}"
        start = time.monotonic()
        proc = subprocess.run([exe, "leak", "50"], env=env_for(out, **extra), preexec_fn=cg.enter(),
                              capture_output=True, text=True, timeout=120)
        took = time.monotonic() - start
        kills = cg.oom_kills() - kills_before
        check(f"{label}: leaking process is OOM-killed", proc.returncode == -9 and kills >= 1,
              f"exit {proc.returncode}, oom_kill +{kills}, {took:.1f} s")
        heaps = triggered_heaps(out)
        thresholds = [re.search(r"crossed ([0-9.]+)%", t).group(1) for _, t in heaps]
        check(f"{label}: memory-triggered heap profiles on disk before the kill", len(heaps) >= 1,
              f"thresholds {thresholds}; log: {proc.stderr[-400:] if not heaps else ''}")
        if agent:
            ec.stop(server, recorder)
            tags = agent_trigger_tags(recorder)
            want = ("memory_threshold_pct:", "memory_usage_bytes:", "memory_limit_bytes:201326592")
            check(f"{label}: uploads to the agent carry trigger:memory and usage/limit tags",
                  len(tags) >= 1 and all(w in tags[-1] for w in want),
                  f"{len(tags)} of {len(recorder.requests)} uploads; last: "
                  f"{tags[-1][-160:] if tags else ''}")
        if not heaps:
            return
        newest = heaps[-1][0]
        flat = heap_by_function(newest)
        leak = flat.get("leak_block", 0.0)
        check(f"{label}: leak_block holds >= 60% of the limit in the newest one",
              leak >= 0.6 * LIMIT,
              f"{leak / MIB:.1f} MiB = {100 * leak / LIMIT:.0f}% of 192 MiB "
              f"({os.path.basename(newest)})")
        rep = subprocess.run([CLI, "report", out], capture_output=True, text=True, timeout=60)
        check(f"{label}: stowaway report names the newest memory-triggered profile",
              rep.returncode == 0 and f"the newest: {newest}" in rep.stdout,
              "".join(l for l in rep.stdout.splitlines(True) if "the newest" in l).strip() or
              rep.stdout[-300:] + rep.stderr[-300:])


def test_under(cg, exe, label):
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "hold", "96", "2"], env=env_for(out), preexec_fn=cg.enter(),
                              capture_output=True, text=True, timeout=60)
        files = glob.glob(os.path.join(out, "*.pb.gz"))
        heaps = triggered_heaps(out)
        check(f"{label}: a process at half the limit writes no memory-triggered profile",
              proc.returncode == 0 and files and not heaps and "memory trigger" not in proc.stderr,
              f"exit {proc.returncode}, {len(files)} files, {len(heaps)} triggered")


def test_settings(cg, exe, label):
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "saw", "40", "164", "300"],
                              env=env_for(out, STOWAWAY_MEMORY_GUARD="false"),
                              preexec_fn=cg.enter(), capture_output=True, text=True, timeout=60)
        heaps = triggered_heaps(out)
        check(f"{label}: STOWAWAY_MEMORY_GUARD=false exports nothing at 85%",
              proc.returncode == 0 and not heaps and "memory guard" not in proc.stderr,
              f"exit {proc.returncode}, {len(heaps)} triggered")
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "hold", "110", "1"],
                              env=env_for(out, STOWAWAY_MEMORY_THRESHOLDS="50"),
                              preexec_fn=cg.enter(), capture_output=True, text=True, timeout=60)
        heaps = triggered_heaps(out)
        check(f"{label}: STOWAWAY_MEMORY_THRESHOLDS=50 exports once at 57%",
              proc.returncode == 0 and len(heaps) == 1 and "crossed 50.00%" in heaps[0][1],
              f"exit {proc.returncode}, {len(heaps)} triggered")


def test_started_full(cg, exe, label):
    """A process started in a cgroup already past 80% (a sibling holds it) has
    crossed nothing: it exports nothing at start."""
    plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    holder = subprocess.Popen([exe, "hold", "160", "3"], env=plain, preexec_fn=cg.enter(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    holder.stdout.readline()  # "holding 160 MiB"
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "hold", "2", "1"], env=env_for(out), preexec_fn=cg.enter(),
                              capture_output=True, text=True, timeout=60)
        heaps = triggered_heaps(out)
        check(f"{label}: started in a cgroup already at 85%, nothing is exported at start",
              proc.returncode == 0 and not heaps, f"exit {proc.returncode}, {len(heaps)} triggered")
    holder.wait(timeout=30)


def test_rss(version, mount, exe, label):
    """No cgroup limit: the RSS against STOWAWAY_MEMORY_RSS_LIMIT."""
    top = os.path.join(mount, "memory.max" if version == "v2" else "memory.limit_in_bytes")
    if os.path.exists(top):
        with open(top) as f:
            value = f.read().strip()
        if value != "max" and int(value) < 1 << 62:
            print(f"note: {version}: the hierarchy's root has a limit ({value}): "
                  "the RSS mode cannot be reached here")
            return
    cg = Cgroup(version, mount, "rss", limit=None)
    try:
        env = dict(STOWAWAY_MEMORY_RSS_LIMIT="192M", STOWAWAY_MEMORY_THRESHOLDS="50")
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([exe, "hold", "110", "1"], env=env_for(out, **env),
                                  preexec_fn=cg.enter(), capture_output=True, text=True,
                                  timeout=60)
            heaps = triggered_heaps(out)
            check(f"{label}: no cgroup limit: RSS past 50% of STOWAWAY_MEMORY_RSS_LIMIT exports once",
                  proc.returncode == 0 and len(heaps) == 1 and "RSS memory limit" in heaps[0][1],
                  f"exit {proc.returncode}, {len(heaps)} triggered")
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([exe, "hold", "110", "1"], env=env_for(out), preexec_fn=cg.enter(),
                                  capture_output=True, text=True, timeout=60)
            heaps = triggered_heaps(out)
            check(f"{label}: no cgroup limit and no RSS limit: nothing is watched",
                  proc.returncode == 0 and not heaps and "not watching memory" in proc.stderr,
                  f"exit {proc.returncode}, {len(heaps)} triggered")
    finally:
        cg.close()


def test_crossings(cg, exe, label):
    # 80% of 192 MiB is 153.6 MiB: peaks of 156..164 MiB of heap cross it five
    # times.  Only that threshold is set: what the process holds besides its
    # heap (our symbol and line tables, the page cache of debug files, all
    # charged to the cgroup) varies by several MiB and may reach 90%.
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "saw", "40", "156,158,160,162,164", "200"],
                              env=env_for(out, STOWAWAY_MEMORY_THRESHOLDS="80"), preexec_fn=cg.enter(),
                              capture_output=True, text=True, timeout=60)
        heaps = triggered_heaps(out)
        at80 = [p for p, t in heaps if "crossed 80.00%" in t]
        check(f"{label}: five crossings of 80% in one 60 s period export once",
              proc.returncode == 0 and len(at80) == 1 and len(heaps) == 1,
              f"exit {proc.returncode}, {len(at80)} at 80%, {len(heaps)} in all")
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "saw", "40", "156,160,164", "700"],
                              env=env_for(out, DD_PROFILING_UPLOAD_PERIOD="1",
                                          STOWAWAY_MEMORY_THRESHOLDS="80"),
                              preexec_fn=cg.enter(), capture_output=True, text=True, timeout=60)
        at80 = [p for p, t in triggered_heaps(out) if "crossed 80.00%" in t]
        check(f"{label}: with a 1 s period, new highs after drops export again",
              proc.returncode == 0 and 2 <= len(at80) <= 3,
              f"exit {proc.returncode}, {len(at80)} exports at 80% for 3 rising peaks")


def test_sibling_oom(cg, label):
    with tempfile.TemporaryDirectory() as out:
        watcher = subprocess.Popen([os.path.join(WL, "memleak"), "hold", "16", "4"],
                                   env=env_for(out, DD_PROFILING_UPLOAD_PERIOD="1"),
                                   preexec_fn=cg.enter(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        # the leaker starts once the watcher has read the cgroup's counters
        early = []
        for line in watcher.stderr:
            early.append(line)
            if "memory guard: watching" in line:
                break
        plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        leaker = subprocess.run([os.path.join(WL, "memleak"), "leak", "100"], env=plain,
                                preexec_fn=cg.enter(), capture_output=True, timeout=60)
        _, err = watcher.communicate(timeout=60)
        err = "".join(early) + err
        noted = [p for p in glob.glob(os.path.join(out, "*.heap.*.pb.gz"))
                 if "OOM kill(s)" in comments(p)]
        check(f"{label}: a sibling's OOM kill is logged once and noted in a profile",
              leaker.returncode == -9 and watcher.returncode == 0 and
              err.count("was OOM-killed") == 1 and len(noted) == 1,
              f"leaker exit {leaker.returncode}, watcher exit {watcher.returncode}, "
              f"{err.count('was OOM-killed')} log lines, {len(noted)} heap profiles noting it")


def main():
    found = mounts()
    made = 0
    for version in ("v2", "v1"):
        if version not in found:
            print(f"note: no cgroup {version} memory hierarchy is mounted on this machine")
            continue
        try:
            cg = Cgroup(version, found[version], "a")
        except OSError as e:
            print(f"note: cgroup {version}: cannot make a memory-limited cgroup here: {e}")
            continue
        made += 1
        try:
            for exe, libc in (("memleak", "glibc"), ("memleak-musl", "musl")):
                start = time.monotonic()
                test_leak(cg, os.path.join(WL, exe), f"{version} {libc}", agent=libc == "glibc")
                print(f"note: {version} {libc} leak took {time.monotonic() - start:.1f} s")
            test_under(cg, os.path.join(WL, "memleak"), f"{version} glibc")
            test_crossings(cg, os.path.join(WL, "memleak"), f"{version} glibc")
            test_settings(cg, os.path.join(WL, "memleak"), f"{version} glibc")
            test_started_full(cg, os.path.join(WL, "memleak"), f"{version} glibc")
            test_sibling_oom(cg, f"{version} glibc")
        finally:
            cg.close()
        test_rss(version, found[version], os.path.join(WL, "memleak"), f"{version} glibc")
    check_terse("a memory-limited cgroup could be made (v1 or v2)", made > 0,
          "needs root and a memory controller; see the notes above")
    finish()


if __name__ == "__main__":
    main()
