"""The integration suites' PASS/FAIL lines, which tests/run.sh counts, and
their exit status: one copy for every suite."""
import platform
import sys

failed = 0


def _line(name, ok, detail):
    global failed
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""), flush=True)
    failed += not ok
    return ok


def check(name, ok, detail=""):
    """One PASS or FAIL line with its detail either way; returns ok."""
    return _line(name, ok, str(detail))


def check_terse(name, ok, detail=""):
    """One PASS or FAIL line, with the detail only after a failure; returns ok."""
    return _line(name, ok, "" if ok else str(detail))


def check_count(name, ok, detail, judged=None):
    """A bound on a count of instructions, which is an x86-64 count: on
    other machines, or where `judged` is False, it is printed, not judged."""
    if judged is None:
        judged = platform.machine() == "x86_64"
    if not judged:
        detail = f"{detail}; not judged on {platform.machine()} {platform.release()}"
    return _line(name, ok or not judged, str(detail))


def status():
    """The suite's exit status: 1 if any check failed."""
    return 1 if failed else 0


def finish():
    sys.exit(status())
