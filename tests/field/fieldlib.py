"""Shared part of the field suite (tests/field/*.py): Debian's own programs
run unchanged under the library with the default kinds, judged by
independent tools.

Every program is run twice: once plain (the baseline) and once under
`perf record` with the library preloaded (LD_PRELOAD, DD_PROFILING_ENABLED,
STOWAWAY_OUTPUT_DIR, nothing else), so perf and our CPU profile watch the
same processes in the same run.  Checks, per program:

- the same output and exit code as the baseline, and no new error in its
  own log (stderr or log file, compared with the baseline's);
- every profile written is valid for `go tool pprof -raw` and for
  `protoc --decode_raw`, and the CPU profile has samples;
- no function name (inlined frames' included) is left mangled that c++filt
  or llvm-cxxfilt demangles;
- CPU agreement with perf: each side's CPU time is attributed to the leaf
  user-space function (perf: the first user frame of its call chain, so
  kernel time goes to the system call's caller as it does in our profile;
  samples perf takes in our own library, and in our own threads, are left
  out and reported, since our profile cannot see them).  Functions are
  compared by name where both sides name them in the same module, and by
  module otherwise (stripped code perf and we cannot name, JIT code); the
  distance is the sum of absolute share differences over the union of both
  sides' top functions, in points, against a bound of FIXED_POINTS plus
  twice the sampling noise of the two sample counts in this run.
"""
import glob
import gzip
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from checks import check, status  # noqa: E402
from pprof_traces import mangled_names  # noqa: E402
import pprof_raw  # noqa: E402

SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
# The part of the distance that is not sampling noise: what the two tools
# legitimately disagree on (the first and last milliseconds of a process,
# a signal delivered on the way out of a system call, alias names).  Redis
# measured up to 9 points above twice its noise (docs/architecture.md).
FIXED_POINTS = 20.0
TOP = 10
NOBODY = 65534


class Field:
    """One program's run: a scratch directory every user can write, the
    processes started (killed at the end, whatever happened), the checks."""

    def __init__(self, name):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix="stowaway-field-%s-" % name)
        os.chmod(self.tmp, 0o777)
        self.out = self.path("profiles")
        os.mkdir(self.out)
        os.chmod(self.out, 0o777)
        self.procs = []
        self.started = time.monotonic()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, _frame):
        self.cleanup()
        sys.exit(128 + signum)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def lib_env(self, base=None, **extra):
        env = dict(base if base is not None else os.environ)
        env.update(LD_PRELOAD=SO, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=self.out,
                   DD_SERVICE=self.name)
        env.update(extra)
        return env

    def plain_env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DD_", "STOWAWAY_")) and k != "LD_PRELOAD"}
        env.update(extra)
        return env

    def perf_argv(self, data):
        return ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o", data, "--"]

    @staticmethod
    def as_user(argv, user):
        """argv run as `user` (a uid) when we are root; as ourselves otherwise."""
        if user is None or os.geteuid() != 0:
            return argv
        return ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups", "--"] + argv

    def start(self, argv, env, stdout=None, stderr=None, cwd=None):
        """A long-running process in its own process group, killed by cleanup()."""
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                             stdout=stdout or subprocess.DEVNULL, stderr=stderr or subprocess.DEVNULL,
                             cwd=cwd or self.tmp, start_new_session=True)
        self.procs.append(p)
        return p

    def run(self, argv, env, timeout=120, cwd=None, stdin_data=None):
        """(exit code, stdout bytes, stderr bytes); a hang is killed and reported as -9."""
        p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd or self.tmp,
                             start_new_session=True)
        self.procs.append(p)
        try:
            out, err = p.communicate(stdin_data, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return -9, out, err + b"\n(killed after %ds)" % timeout
        return p.returncode, out, err

    @staticmethod
    def workload_pid(p):
        """The server's pid: p's, or under perf record, perf's child (the
        workload: env and setpriv exec it in place)."""
        if os.path.basename(p.args[0]) != "perf":
            return p.pid
        try:
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                kids = f.read().split()
            return int(kids[0]) if kids else None
        except OSError:
            return None

    def stop(self, p, sig=signal.SIGTERM, timeout=30, settle=0.0):
        """Sends sig to the server (not to perf) after `settle` seconds in
        which it may exit by itself, and waits; returns its (or perf's) exit
        code (None: it had to be killed)."""
        try:
            return p.wait(settle) if settle else p.wait(0.01)
        except subprocess.TimeoutExpired:
            pass
        pid = self.workload_pid(p)
        if p.poll() is None and pid is not None:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return None

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        self.procs = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, etype, value, tb):
        if etype is not None and not issubclass(etype, SystemExit):
            import traceback
            check("%s: the suite ran to its end" % self.name, False,
                  "".join(traceback.format_exception(etype, value, tb))[-1500:])
        self.finish()

    def finish(self):
        print("     %s: %.1f s" % (self.name, time.monotonic() - self.started), flush=True)
        self.cleanup()
        sys.exit(status())

    # ---- judging --------------------------------------------------------

    def profiles(self, kind=None):
        pattern = "%s.*.%s.*.pb.gz" % (self.name, kind or "*")
        return sorted(glob.glob(os.path.join(self.out, pattern)))

    def check_profiles_valid(self, kinds=("cpu", "wall", "alloc")):
        """Every file written is read by go tool pprof -raw and protoc
        --decode_raw; each of `kinds` was written at least once.  The live
        heap is not required: a run shorter than the upload period exports
        only at exit, where a process writes the kinds it has samples of, and
        a server's processes may hold no sampled allocation then."""
        files = self.profiles()
        written = sorted({kind_of(f) for f in files})
        check("%s: a profile of each kind required was written" % self.name,
              all(k in written for k in kinds), "kinds %s in %d files" % (written, len(files)))
        bad, mangled = [], set()
        for f in files:
            # -symbolize=none: pprof would otherwise demangle the names itself.
            p = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", f],
                               capture_output=True, text=True, timeout=120, env=go_env(self.tmp))
            if p.returncode != 0 or "Samples:" not in p.stdout:
                bad.append("pprof %s: %s" % (os.path.basename(f), p.stderr[-200:]))
                continue
            mangled |= mangled_names(p.stdout)
            if not main_mapping_first(p.stdout):
                bad.append("%s: mapping 1 is not the program's (profile.proto: mapping[0] is the main "
                           "binary)" % os.path.basename(f))
            with gzip.open(f, "rb") as g:
                data = g.read()
            q = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True, timeout=120)
            if q.returncode != 0:
                bad.append("protoc %s: %s" % (os.path.basename(f), q.stderr[-200:]))
        check("%s: every profile is valid for go tool pprof -raw and protoc --decode_raw" % self.name,
              files and not bad, "%d files; %s" % (len(files), bad[:3]))
        self.check_names_readable(mangled)
        return files

    def check_names_readable(self, mangled):
        """Every function name (inlined frames' too) that the independent
        demanglers read is written readable: a name still mangled in our
        profiles must be one c++filt (Itanium, Rust legacy) and llvm-cxxfilt
        (Rust v0) leave as it is too."""
        names = sorted(mangled)
        readable = set()
        for cmd in (["c++filt"], ["llvm-cxxfilt"]):
            if not names:
                break
            out = subprocess.run(cmd, input="\n".join(names) + "\n", capture_output=True, text=True,
                                 timeout=120).stdout.splitlines()
            readable |= {n for n, o in zip(names, out) if o != n}
        readable = sorted(readable)
        check("%s: no function name is left mangled that c++filt or llvm-cxxfilt demangles" % self.name,
              not readable, "%d of %d mangled names, e.g. %s" % (len(readable), len(names),
                                                                  [n[:160] for n in readable[:3]]))

    def check_log_clean(self, what, base_text, lib_text, error_re):
        """No line matching error_re under the library that the baseline did not have
        (lines compared after numbers are blanked), and no `stowaway:` line."""
        def lines(text):
            return {re.sub(r"\d+", "N", l).strip() for l in text.splitlines() if re.search(error_re, l)}
        ours = [l for l in lib_text.splitlines() if "stowaway:" in l]
        new = sorted(lines("\n".join(l for l in lib_text.splitlines() if "stowaway:" not in l))
                     - lines(base_text))
        check("%s: no new error or warning in %s" % (self.name, what), not new, "new: %s" % new[:4])
        # Our own one-line reports (stderr is the program's): a warning is
        # information (the overhead governor, a setting), as are the
        # unprefixed information and debug lines of a raised log level; an
        # error is a failure.
        errors = [l for l in ours if "stowaway: error:" in l]
        for l in ours:
            print("  %s said: %s" % (what, l.strip()[:300]))
        check("%s: no stowaway: error line in %s" % (self.name, what), not errors, errors[:3])

    def check_cpu_agrees_with_perf(self, perf_data, pids=None, note=""):
        """Leaf shares of our CPU profile(s) against perf's, same processes, same run."""
        cpu = self.profiles("cpu")
        if pids is not None:
            cpu = [f for f in cpu if pid_of(f) in pids]
        ours, n_ours = our_leaves(cpu, self.tmp)
        perf, n_perf, lib_share = perf_leaves(perf_data, pids)
        if not check("%s: perf and our CPU profile both have samples" % self.name, n_ours > 0 and n_perf > 0,
                     "ours %d, perf %d" % (n_ours, n_perf)):
            return None
        keys, level = comparable_keys(ours, perf)
        po, pp = shares(ours, keys), shares(perf, keys)
        top = set(sorted(po, key=po.get, reverse=True)[:TOP]) | set(sorted(pp, key=pp.get, reverse=True)[:TOP])
        dist = 100.0 * sum(abs(po.get(k, 0.0) - pp.get(k, 0.0)) for k in top)
        noise = 100.0 * sum(math.sqrt(max(po.get(k, 0.0), pp.get(k, 0.0)) * (1 - max(po.get(k, 0.0), pp.get(k, 0.0)))
                                      * (1.0 / n_ours + 1.0 / n_perf)) for k in top)
        bound = FIXED_POINTS + 2.0 * noise
        rows = sorted(top, key=lambda k: -max(po.get(k, 0.0), pp.get(k, 0.0)))
        print("  %s CPU leaf shares, ours (%d samples) vs perf (%d samples), %s:" % (
            self.name, n_ours, n_perf, level_summary(level, po)))
        for k in rows:
            print("    %6.1f%% %6.1f%%  %-8s %s" % (100 * po.get(k, 0.0), 100 * pp.get(k, 0.0),
                                                 level.get(k, "module"), display(k)))
        only_o, only_p = debug_unmatched(ours, perf)
        if only_o or only_p:
            print("  named only by us: %s" % "; ".join(only_o))
            print("  named only by perf: %s" % "; ".join(only_p))
        print("  perf saw %.2f%% of the CPU in our library and its threads (left out)%s" % (
            100 * lib_share, "; " + note if note else ""))
        # Code we leave without a module (no mapping known at encode time) is
        # only what perf cannot place either (JIT code, anonymous memory).
        anon = ("[anonymous]", None)
        ao, ap = po.get(anon, 0.0), pp.get(anon, 0.0)
        anon_bound = 0.05 + 2.0 * math.sqrt(max(ao, ap) * (1 - max(ao, ap)) * (1.0 / n_ours + 1.0 / n_perf))
        check("%s: our profile leaves no more code without a module than perf (anonymous memory)" % self.name,
              ao - ap <= anon_bound, "ours %.1f%%, perf %.1f%% (bound +%.1f points)" % (100 * ao, 100 * ap,
                                                                                    100 * anon_bound))
        check("%s: CPU profile agrees with perf (sum of |share difference| over the top functions)"
              % self.name, dist <= bound,
              "%.1f points (bound %.1f = %.0f + 2 x noise %.1f; %d keys)" % (dist, bound, FIXED_POINTS, noise,
                                                                           len(top)))
        return dist

    def check_wall_not_in_library(self):
        """No frame of any wall sample is in our library: neither in its mapping nor,
        without a mapping, named as one of its own (not exported) functions."""
        internal = library_internal_names()
        total, bad, examples = 0, 0, []
        for f in self.profiles("wall"):
            for stack, value, frames in raw_samples(f, self.tmp):
                total += value
                hit = [fr for fr in frames if fr[0] == SO or fr[0].endswith("/libstowaway.so")
                       or (fr[0] == "[anonymous]" and any(n in internal for n in fr[1]))]
                if hit:
                    bad += value
                    if len(examples) < 3:
                        examples.append(hit[0][1][-1:] or [hex(0)])
        check("%s: no wall sample has a frame of our library" % self.name, total > 0 and bad == 0,
              "%.2f%% of %.1f s wall time in our frames, e.g. %s" % (100.0 * bad / total if total else 0,
                                                                    total / 1e9, examples))


def _file_fields(path):
    """(pid, kind) from <service>.<pid>.<kind>.<seq>.<id>.pb.gz."""
    m = re.search(r"\.(\d+)\.([a-z]+)\.\d+\.[0-9a-f]+\.pb\.gz$", path)
    return (int(m.group(1)), m.group(2)) if m else (-1, "?")


def main_mapping_first(raw):
    """Whether mapping 1 of go tool pprof -raw output is an executable
    whenever one of its mappings is: a file that is not a shared object."""
    files = re.findall(r"^\s*\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+)", raw.split("\nMappings", 1)[-1], re.M)
    def executable(name):
        return name.startswith("/") and not re.search(r"\.so(\.[\d.]+)?$", name)
    return not any(executable(f) for f in files) or executable(files[0])


def pid_of(path):
    return _file_fields(path)[0]


def kind_of(path):
    return _file_fields(path)[1]


def go_env(tmp):
    return dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp, GOFLAGS="",
                GOCACHE=os.environ.get("GOCACHE", os.path.join(os.path.expanduser("~"), ".cache", "go-build")))


def raw_samples(path, tmp):
    """(location ids, first value, [(mapping file, [names innermost first])]) per sample,
    from go tool pprof -raw (the judge is go's reader, not ours)."""
    text = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True,
                          timeout=120, env=go_env(tmp)).stdout
    maps = {m.group(1): m.group(2) for m in
            re.finditer(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+)", text, re.M)}
    locs = {}
    for i, (mapping, lines) in pprof_raw.located(text).items():
        names = [re.sub(r" \S*:\d+ s=\d+.*$", "", t).strip() for t in lines]
        locs[i] = (maps.get(mapping, "[anonymous]"), [n for n in names if n])
    out = []
    samples = text[text.find("Samples:"):text.find("\nLocations")]
    for m in re.finditer(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", samples, re.M):
        ids = m.group(3).split()
        out.append((ids, int(m.group(2)), [locs.get(i, ("[anonymous]", [])) for i in ids]))
    return out


def norm_name(name):
    """A function name as both tools can spell it: no parameters, no glibc
    internal prefixes (__GI_, __libc_), no version, no leading underscores."""
    if not name or name.startswith("[") or "@plt" in name:
        return None
    name = name.split("@")[0].replace("(anonymous namespace)", "{anon}")
    # C++: no parameters, no return type (c++filt prints one for templates, perf does not).
    depth, cut, last_space = 0, len(name), -1
    for i, c in enumerate(name):
        if c in "<(":
            if c == "(" and depth == 0 and i > 0:
                cut = i
                break
            depth += 1
        elif c in ">)":
            depth = max(0, depth - 1)
        elif c == " " and depth == 0:
            last_space = i
    name = name[last_space + 1:cut]
    name = re.sub(r"^__GI_", "", name).lstrip("_")
    name = re.sub(r"^libc_", "", name)
    # glibc aliases at one address, which perf and we may pick differently.
    name = {"cfree": "free", "llseek": "lseek"}.get(name, re.sub(r"^memcpy_", "memmove_", name))
    name = re.sub(r"(?<=[a-z])64$", "", name)  # fstatat64 and fstatat, lseek64 and lseek
    return name or None


def module_of(path):
    base = os.path.basename(path) if path else "[anonymous]"
    if not path or path in ("[unknown]", "//anon") or path.startswith(("/memfd:", "[anon", "/tmp/perf-")):
        return "[anonymous]"
    return base


def our_leaves(files, tmp):
    """{(module, name or None): cpu ns} of the leaf physical function, and the sample count."""
    acc, n = {}, 0
    for f in files:
        for _ids, value, frames in raw_samples(f, tmp):
            if not frames:
                continue
            mod, names = frames[0]
            if names == ["[unsampled]"]:
                continue  # CPU time counted at a thread's end, not located: perf has no such leaf
            key = (module_of(mod), norm_name(names[-1]) if names else None)
            acc[key] = acc.get(key, 0) + value
            n += 1
    return acc, n


def perf_leaves(data, pids=None):
    """{(module, name or None): samples} of the first user frame of each perf
    sample, the sample count, and the share perf saw in our library/threads."""
    p = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,ip,sym,dso", "--max-stack", "64"],
                       capture_output=True, text=True, timeout=300)
    acc, n, ours, total = {}, 0, 0, 0
    for block in p.stdout.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        head = re.match(r"\s*(.*?)\s+(\d+)/(\d+)\s*$", lines[0])
        if not head:
            continue
        comm, pid = head.group(1), int(head.group(2))
        if pids is not None and pid not in pids:
            continue
        total += 1
        user = None
        for l in lines[1:]:
            m = re.match(r"\s*([0-9a-f]+) (.*) \((.*)\)\s*$", l)
            if m and m.group(3) != "[kernel.kallsyms]" and int(m.group(1), 16) < 0xffff800000000000:
                user = m
                break
        if comm.startswith("stowaway-") or (user and (user.group(3) == SO or user.group(3).endswith("/libstowaway.so"))):
            ours += 1
            continue
        if user is None:
            continue
        sym = user.group(2)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        key = (module_of(user.group(3)), norm_name(sym) if sym != "[unknown]" else None)
        acc[key] = acc.get(key, 0) + 1
        n += 1
    return acc, n, (ours / total if total else 0.0)


def comparable_keys(ours, perf):
    """The keys compared by function: every named function of a module in
    which both sides name functions (a name one side sampled and the other
    did not still counts: the side with fewer samples misses part of the long
    tail).  Everything else is compared by module."""
    both = {k[0] for k in ours if k[1]} & {k[0] for k in perf if k[1]}
    named = {k for k in list(ours) + list(perf) if k[1] and k[0] in both}
    return named, {k: "function" for k in named}


def shares(acc, named):
    merged = {}
    for (mod, name), v in acc.items():
        key = (mod, name) if (mod, name) in named else (mod, None)
        merged[key] = merged.get(key, 0) + v
    total = float(sum(merged.values())) or 1.0
    return {k: v / total for k, v in merged.items()}


def level_summary(level, po):
    by_name = sum(v for k, v in po.items() if level.get(k) == "function")
    return "%.0f%% of our CPU compared by function name, the rest by module" % (100 * by_name)


def display(key):
    mod, name = key
    return "%s [%s]" % (name, mod) if name else "[%s] (module level)" % mod


_INTERNAL = None


def library_internal_names():
    """Our library's own function names (defined, not exported: the exported
    ones are the public API and the interposed libc names)."""
    global _INTERNAL
    if _INTERNAL is None:
        every = subprocess.run(["nm", "--defined-only", SO], capture_output=True, text=True).stdout
        exported = subprocess.run(["nm", "-D", "--defined-only", SO], capture_output=True, text=True).stdout
        ex = {l.split()[-1] for l in exported.splitlines() if l.strip()}
        _INTERNAL = {l.split()[-1] for l in every.splitlines()
                     if len(l.split()) == 3 and l.split()[1] in "tT" and l.split()[-1] not in ex}
    return _INTERNAL


def free_port():
    import socket
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def wait_until(predicate, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if predicate():
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def same_output(field, what, base, lib):
    """base and lib are (rc, stdout, stderr): same exit code and stdout."""
    check("%s: %s exits as without the library" % (field.name, what), base[0] == lib[0],
          "without %s, with %s: %s" % (base[0], lib[0], lib[2][-300:]))
    check("%s: %s prints the same output as without the library" % (field.name, what), base[1] == lib[1],
          "without %d bytes, with %d bytes; first difference at %d" % (
              len(base[1]), len(lib[1]), next((i for i, (a, b) in enumerate(zip(base[1], lib[1])) if a != b),
                                              min(len(base[1]), len(lib[1])))))


def batch(field, argv, stdin_data=None, timeout=120, error_re=r"(?i)error|fatal|abort|segmentation",
          perf_note="", env_extra=None, sort_output=False, out_file=None):
    """A batch program: baseline, then the same command under perf with the
    library; output (stdout, sorted by line when the program's order is its
    threads' order; and out_file's bytes), exit code, stderr, profiles, perf
    agreement."""
    extra = env_extra or {}

    def one(argv_run, env):
        if out_file and os.path.exists(out_file):
            os.unlink(out_file)
        rc, out, err = field.run(argv_run, env, timeout=timeout, stdin_data=stdin_data)
        if sort_output:
            out = b"\n".join(sorted(out.splitlines()))
        if out_file:
            with open(out_file, "rb") as f:
                out += b"\n--- " + out_file.encode() + b" ---\n" + f.read()
        return rc, out, err
    base = one(argv, field.plain_env(**extra))
    data = field.path("perf.data")
    lib = one(field.perf_argv(data) + ["env"] + ["%s=%s" % kv for kv in field.lib_env({}, **extra).items()]
              + argv, field.plain_env())
    check("%s: the baseline run succeeds" % field.name, base[0] == 0, base[2][-300:])
    same_output(field, argv[0], base, lib)
    field.check_log_clean("stderr", base[2].decode(errors="replace"), lib[2].decode(errors="replace"), error_re)
    # One export, at exit, which writes only the kinds it has samples of: a
    # batch program may end having freed everything (no live heap to show).
    field.check_profiles_valid()
    field.check_cpu_agrees_with_perf(data, note=perf_note)
    return base, lib


def debug_unmatched(ours, perf, limit=8):
    """The biggest names one side has and the other does not (to read a disagreement)."""
    named_o = {k for k in ours if k[1]}
    named_p = {k for k in perf if k[1]}
    to = float(sum(ours.values())) or 1.0
    tp = float(sum(perf.values())) or 1.0
    only_o = sorted(named_o - named_p, key=lambda k: -ours[k])[:limit]
    only_p = sorted(named_p - named_o, key=lambda k: -perf[k])[:limit]
    return (["%.1f%% %s" % (100 * ours[k] / to, display(k)) for k in only_o],
            ["%.1f%% %s" % (100 * perf[k] / tp, display(k)) for k in only_p])
