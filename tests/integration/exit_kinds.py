#!/usr/bin/env python3
# needs: build/libstowaway.so
"""At its exit a process exports only the kinds it has samples of, and a
process without any sample writes nothing: each command of a shell script
or a build is such a process (`/bin/true` lives well under a millisecond,
so it is sampled by none of the four default kinds), and four empty
profiles each cost it an inode, a sync and a retention scan, and pushed
four older profiles out of the directory's bound.  200 runs of /bin/true
from bash used 530 ms of CPU against 150 ms without the library and left
808 files; they now leave a few CPU profiles (a run is sampled with
probability about 0.1), and 350 ms.  Judged by the files in the output
directory and by `go tool pprof -raw`, which must accept every profile
that is written."""
import os
import subprocess
import sys
import tempfile
from checks import check, status
from pprof_raw import samples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
RUNS = 50


def run(cmd, out, **extra):
    env = dict(os.environ, LD_PRELOAD=LIB, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out,
               STOWAWAY_LOG_LEVEL="debug", **extra)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def main():
    if not os.path.exists(LIB):
        check("exit_kinds prerequisites", False, f"needs {LIB}")
        return
    with tempfile.TemporaryDirectory() as out:
        # Sampled by no kind in most runs (a CPU sample in about one of ten):
        # whatever it writes holds samples, never an empty profile.
        r = run(["/bin/true"], out)
        exports = [l for l in r.stderr.splitlines() if l.startswith("stowaway: debug: export 0: ")]
        files = sorted(os.listdir(out))
        empty = [f for f in files if not samples(os.path.join(out, f))]
        check("exit_kinds: /bin/true exports at its exit and writes no empty profile",
              r.returncode == 0 and len(exports) == 1 and not empty,
              f"rc {r.returncode}, {len(exports)} export lines, files {files}, empty {empty}")
    with tempfile.TemporaryDirectory() as out:
        r = run(["bash", "-c", f"for i in $(seq {RUNS}); do /bin/true; done"], out)
        files = sorted(os.listdir(out))
        exports = sum(1 for l in r.stderr.splitlines() if l.startswith("stowaway: debug: export 0: "))
        # A run of /bin/true uses about a millisecond of CPU (most of it our
        # start): a CPU sample with probability about 0.1 at 100 Hz (0 to 2 of
        # 50 in five runs here), so a few write a CPU profile; none writes the
        # kinds it has no sample of.  Bound: a quarter of the runs (4 files
        # each before).
        ours = [f for f in files if f.startswith("true.")]
        check(f"exit_kinds: {RUNS} runs of /bin/true from bash write a file only for a kind sampled",
              r.returncode == 0 and exports == RUNS + 1 and len(ours) <= RUNS // 4,
              f"rc {r.returncode}, {exports} exports, {len(ours)} files of /bin/true: {ours[:8]}")
    with tempfile.TemporaryDirectory() as out:
        # a CPU-bound process with no allocation to speak of: its CPU and wall
        # kinds have samples, and what it writes is a valid profile
        r = run(["python3", "-c", "import time\nt = time.process_time() + 0.3\n"
                 "while time.process_time() < t: pass"], out, STOWAWAY_PROFILES="cpu,wall")
        files = sorted(os.listdir(out))
        kinds = {f.split(".")[-5] for f in files if f.endswith(".pb.gz")}
        bad = [f for f in files if subprocess.run(["go", "tool", "pprof", "-raw", os.path.join(out, f)],
                                                  capture_output=True).returncode != 0]
        check("exit_kinds: a process with CPU and wall samples writes both, accepted by go tool pprof",
              r.returncode == 0 and {"cpu", "wall"} <= kinds and not bad,
              f"rc {r.returncode}, kinds {sorted(kinds)}, rejected {bad}")


if __name__ == "__main__":
    main()
    sys.exit(status())
