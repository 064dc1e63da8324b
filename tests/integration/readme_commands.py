#!/usr/bin/env python3
"""Every command README.md shows, run as a user would run it: the commands
are read from the README itself (sh and dockerfile code blocks, and inline
`stowaway ...` spans), so a command added there without a way to run it here
fails the suite.  Paths and images the README leaves to the user are
replaced: /var/profiles and /target by temporary directories, my-image and
./my-program by the demo workload, the image's library path by
build/libstowaway.so.  `make test` cannot run inside itself: its dry run is
checked instead."""
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from checks import check_terse as check, finish

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "stowaway")
LIB = os.path.join(ROOT, "build", "libstowaway.so")
DEMO = os.path.join(ROOT, "build", "workloads", "demo")
KINDS = ("cpu", "wall", "alloc", "heap")  # STOWAWAY_PROFILES' default


def readme_commands():
    """(block language, command) for each command of the README, in order."""
    text = open(os.path.join(ROOT, "README.md")).read()
    out = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", body)
        for line in joined.splitlines():
            line = line.split(" #")[0].strip() if lang == "sh" else line.strip()
            if line and not line.startswith("#"):
                out.append((lang, line))
    for span in re.findall(r"`(stowaway [^`]+)`", text):
        out.append(("inline", span))
    return out


def run(cmd, cwd=None, env=None, timeout=300):
    # A make started here is a user's, not a sub-make of the make running the tests.
    full = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    full.update(env or {})
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def kinds_in(d):
    return sorted({n.split(".")[-5] for n in os.listdir(d) if n.endswith(".pb.gz")})


class Session:
    def __init__(self, tmp):
        self.tmp = tmp
        self.profiles = os.path.join(tmp, "var-profiles")  # the README's /var/profiles
        self.docker_env = {}  # from the Dockerfile block's ENV

    def path(self, p):
        if p == "/var/profiles":
            return self.profiles
        if p.startswith("/opt/stowaway/"):
            return LIB
        return p

    def make(self, words, name):
        if words == ["make", "test"]:
            r = run(["make", "-n", "test"], cwd=ROOT)
            check(name + "_dry_run", r.returncode == 0 and "tests/run.sh" in r.stdout, r.stderr[-300:])
            return
        if words == ["make", "demo"]:
            r = run(["make", "demo"], cwd=ROOT, env={"DEMO_SECONDS": "2"})
            out = os.path.join(ROOT, "profiles")
            check(name + "_exit_0", r.returncode == 0, (r.stdout + r.stderr)[-600:])
            check(name + "_default_kinds", os.path.isdir(out) and kinds_in(out) == sorted(KINDS),
                  os.listdir(out) if os.path.isdir(out) else "no ./profiles")
            page = os.path.join(out, "flame.html")
            check(name + "_flame_page", os.path.isfile(page) and "<html" in open(page).read(2000).lower())
            shown = re.findall(r"^kind: (\S+)", r.stdout, re.M)
            check(name + "_report_every_kind", len(shown) == len(KINDS) and
                  all(any(s.startswith(k + "-") for s in shown) for k in KINDS), shown)
            return
        check(name + "_known", False, "README command not exercised here: " + " ".join(words))

    def dockerfile(self, line, name):
        words = shlex.split(line)
        if words[0] == "COPY":
            check(name + "_source_exists", os.path.isfile(os.path.join(ROOT, words[1])), words[1])
        elif words[0] == "ENV":
            for w in words[1:]:
                k, _, v = w.partition("=")
                self.docker_env[k] = self.path(v)
            check(name + "_preloads_library", self.docker_env.get("LD_PRELOAD") == LIB, self.docker_env)
            # The image's program under these settings: no destination given,
            # so the agent on localhost:8126, absent here; the program is unchanged.
            env = dict(self.docker_env, DD_TRACE_AGENT_URL="http://127.0.0.1:9")
            r = run([DEMO, "1"], env=env, timeout=60)
            check(name + "_program_runs", r.returncode == 0 and r.stdout.startswith("demo: small "),
                  (r.stdout + r.stderr)[-300:])
        else:
            check(name + "_known", False, "README Dockerfile line not exercised here: " + line)

    def docker_run(self, words, name):
        # docker run -v HOST:CTR -e K=V ... IMAGE: the image's program runs
        # here with the same environment, CTR mapped to HOST.
        env, mounts, i = {}, {}, 2
        while i < len(words) and words[i].startswith("-"):
            if words[i] == "-v":
                host, ctr = words[i + 1].split(":")[:2]
                mounts[ctr] = self.path(host)
            elif words[i] == "-e":
                k, _, v = words[i + 1].partition("=")
                env[k] = v
            i += 2
        for k, v in env.items():
            env[k] = mounts.get(v, self.path(v))
        os.makedirs(self.profiles, exist_ok=True)
        env.setdefault("DD_SERVICE", "readme")
        r = run([DEMO, "2"], env=env, timeout=60)
        check(name + "_program_runs", r.returncode == 0 and r.stdout.startswith("demo: small "),
              (r.stdout + r.stderr)[-300:])
        check(name + "_default_kinds_written", kinds_in(self.profiles) == sorted(KINDS),
              os.listdir(self.profiles))

    def stowaway(self, words, name):
        args = [self.path(w) for w in words[1:]]
        cmd = args[0]
        if cmd == "report":
            r = run([CLI] + args, cwd=self.tmp)
            shown = re.findall(r"^kind: (\S+)", r.stdout, re.M)
            check(name + "_exit_0", r.returncode == 0, r.stderr[-300:])
            check(name + "_every_kind", len(shown) == len(KINDS) and
                  all(any(s.startswith(k + "-") for s in shown) for k in KINDS), shown)
        elif cmd == "flame":
            r = run([CLI] + args, cwd=self.tmp)
            out = os.path.join(self.tmp, args[args.index("-o") + 1])
            page = open(out).read() if os.path.isfile(out) else ""
            check(name + "_exit_0", r.returncode == 0, r.stderr[-300:])
            check(name + "_html_page", "<html" in page.lower() and "hash_block" in page, page[:200])
            check(name + "_says_cpu_chosen", "showing cpu-time" in r.stderr, r.stderr)
        elif cmd == "install":
            target = os.path.join(self.tmp, "target")  # the init container's emptyDir
            os.makedirs(target)
            r = run([CLI, "install", target])
            ok = all(os.access(os.path.join(target, f), os.X_OK) for f in ("libstowaway.so", "stowaway"))
            check(name + "_installs_both", r.returncode == 0 and ok, r.stderr[-300:])
        elif cmd == "run":
            prog = args.index("--")
            argv = [DEMO, "1"] if args[prog + 1] == "./my-program" else args[prog + 1:]
            r = run([CLI] + args[:prog + 1] + argv, cwd=self.tmp, timeout=60)
            out = os.path.join(self.tmp, "profiles")
            check(name + "_program_runs", r.returncode == 0 and r.stdout.startswith("demo: small "),
                  (r.stdout + r.stderr)[-300:])
            check(name + "_writes_profiles", os.path.isdir(out) and kinds_in(out) == sorted(KINDS),
                  os.listdir(out) if os.path.isdir(out) else "no profiles")
        else:
            check(name + "_known", False, "README command not exercised here: " + " ".join(words))


def main():
    tmp = tempfile.mkdtemp(prefix="stowaway-readme.")
    try:
        s = Session(tmp)
        commands = readme_commands()
        check("readme_has_commands", len(commands) >= 8, commands)
        for n, (lang, line) in enumerate(commands):
            words = shlex.split(line)
            name = "readme_%02d_%s" % (n, re.sub(r"\W+", "_", " ".join(words[:2])).strip("_"))
            if lang == "dockerfile":
                s.dockerfile(line, name)
            elif words[0] == "make":
                s.make(words, name)
            elif words[:2] == ["docker", "run"]:
                s.docker_run(words, name)
            elif words[0] == "stowaway":
                s.stowaway(words, name)
            else:
                check(name + "_known", False, "README command not exercised here: " + line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
