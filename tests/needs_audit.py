#!/usr/bin/env python3
"""Checks the "# needs:" line of integration scripts against what they use.

`make test-only T=name` builds, for an integration script with a line
"# needs: PATH..." among its first ten lines, only those make targets (see
the Makefile, TEST_ONLY_NEEDS).  A path left out of that line could be run
stale, so this tool runs each given script under strace and lists every file
under build/ the run executed, loaded or read that the line does not cover
(a path covers itself; a path ending in "/" covers everything below it).

usage: tests/needs_audit.py tests/integration/SCRIPT...   (run from a built tree)
Prints "PASS needs <script>" or "FAIL needs <script>: <uncovered paths>".
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build") + "/"


def declared(script):
    with open(script, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= 10:
                break
            if line.startswith("# needs:"):
                return line[len("# needs:"):].split()
    return None


CALL = re.compile(r'^\d+\s+(execve|openat|open)\((?:AT_FDCWD, )?"([^"]*)"(.*)\)\s+=\s+(-?\d+)')


def used_paths(log):
    """build/-relative paths executed or opened for reading with success."""
    used = set()
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = CALL.match(line)
            if not m or int(m.group(4)) < 0:
                continue
            call, path, rest = m.group(1), m.group(2), m.group(3)
            if call != "execve" and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_DIRECTORY", rest):
                continue
            if path.startswith("build/"):
                path = os.path.join(ROOT, path)
            path = os.path.normpath(path)
            if path.startswith(BUILD):
                rel = "build/" + path[len(BUILD):]
                # Logs and scratch files the tests write and read back.
                if not rel.startswith(("build/test-logs/", "build/tmp")):
                    used.add(rel)
    return used


def covered(path, needs):
    for n in needs:
        if path == n or (n.endswith("/") and path.startswith(n)):
            return True
    return False


def main():
    failed = 0
    for script in sys.argv[1:]:
        name = os.path.basename(script)
        needs = declared(script)
        if needs is None:
            print("FAIL needs %s: no '# needs:' line" % name)
            failed = 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "trace")
            subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,open,openat", "-o", log,
                            os.path.abspath(script)], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            missing = sorted(p for p in used_paths(log) if not covered(p, needs))
        if missing:
            print("FAIL needs %s: uses %s" % (name, " ".join(missing)))
            failed = 1
        else:
            print("PASS needs %s" % name)
    return failed


if __name__ == "__main__":
    sys.exit(main())
