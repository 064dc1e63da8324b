#!/usr/bin/env python3
"""Lock contention and exception profiles against known answers, judged by
`go tool pprof` (not our own decoder):
  - lock_known (glibc, musl): two static mutexes with known wait and hold
    totals measured by the program itself; lock-acquire-wait and
    lock-release-hold shares per "lock name" label within 5 points, total
    wait within 10%, and `-top` with the label as root names the hot lock;
  - lock_semantics (glibc, musl): return codes of error-checking, recursive
    and robust mutexes, timeouts and rwlocks unchanged under the library
    with every contended acquisition sampled, by default (most acquisitions
    forwarded untouched, some tried first) and with every acquisition tried
    first;
  - exception_known (C++): three exception types at known rates (one also
    rethrown); exception-samples shares per "exception type" within 3
    points, total within 10%, the rethrow site in the stacks."""
import glob
import os
import re
import subprocess
import sys
import tempfile
from checks import check_terse, status
from pprof_traces import to_ns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.environ.get("STOWAWAY_SO", os.path.join(ROOT, "build", "libstowaway.so"))
WL = os.path.join(ROOT, "build", "workloads")


def check(name, ok, detail=""):
    return check_terse(name, ok, " ".join(detail.split())[-600:])


def pprof(args, path):
    return subprocess.run(["go", "tool", "pprof"] + args + [path], capture_output=True,
                          text=True, check=True).stdout


def tag_values(path, index, key):
    """{label value: value} for one label key from `pprof -tags`, in the
    sample type's unit (ns for time, counts otherwise)."""
    out = pprof(["-tags", "-sample_index=" + index] +
                (["-unit=ns"] if index.endswith(("wait", "hold")) else []), path)
    values, in_key = {}, False
    for line in out.splitlines():
        if re.match(r"\s*" + re.escape(key) + r": Total", line):
            in_key = True
            continue
        if in_key:
            m = re.match(r"\s*([0-9.]+)(ns)?\s+\(\s*[0-9.]+%\):\s+(.+)$", line)
            if not m:
                break
            values[m.group(3).strip()] = values.get(m.group(3).strip(), 0.0) + float(m.group(1))
    return values


def profile_env(out, kinds, **extra):
    return dict(os.environ, DD_PROFILING_ENABLED="true", STOWAWAY_OUTPUT_DIR=out, LD_PRELOAD=SO,
                DD_SERVICE="lockknown", STOWAWAY_PROFILES=kinds, **extra)


def shares(d):
    total = sum(d.values())
    return {k: v / total * 100 for k, v in d.items()} if total else {}


def compare(label, measured, truth, limit):
    ms, ts = shares(measured), shares(truth)
    worst = max(abs(ms.get(k, 0.0) - ts[k]) for k in ts) if ts else 100.0
    print(f"  {label}: " + ", ".join(f"{k} {ms.get(k, 0):.1f}% (true {ts[k]:.1f}%)" for k in ts))
    check(f"{label} shares within {limit} points", worst <= limit,
          f"worst {worst:.2f}; " + ", ".join(f"{k} {ms.get(k, 0):.1f}% (true {ts[k]:.1f}%)" for k in ts))


def lock_known(exe):
    name = os.path.basename(exe)
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "2"], env=profile_env(out, "lock", STOWAWAY_LOCK_SAMPLE_NS="1000000"),
                              capture_output=True, text=True, timeout=120)
        check(f"{name}: runs", proc.returncode == 0, proc.stderr[-300:])
        wait, hold = {}, {}
        for line in proc.stdout.splitlines():
            p = line.split()
            if p and p[0] == "truth":
                wait[p[1]] = int(p[3])
                hold[p[1]] = int(p[4])
        files = sorted(glob.glob(os.path.join(out, "lockknown.*.lock.*.pb.gz")))
        check(f"{name}: lock profile written", bool(files) and len(wait) == 2, str(os.listdir(out)))
        if not files or len(wait) != 2:
            return
        mw, mh = {}, {}
        for f in files:
            for k, v in tag_values(f, "lock-acquire-wait", "lock name").items():
                mw[k] = mw.get(k, 0.0) + v
            for k, v in tag_values(f, "lock-release-hold", "lock name").items():
                mh[k] = mh.get(k, 0.0) + v
        compare(f"{name}: lock-acquire-wait by lock name", mw, wait, 5.0)
        compare(f"{name}: lock-release-hold by lock name", mh, hold, 5.0)
        tw, mt = sum(wait.values()), sum(mw.values())
        check(f"{name}: total wait within 10%", abs(mt / tw - 1) <= 0.10, f"{mt:.0f} vs {tw} ns")
        top = pprof(["-top", "-sample_index=lock-acquire-wait", "-tagroot=lock name"], files[-1])
        cum = {}
        for line in top.splitlines():
            p = line.split()
            if len(p) == 6 and p[5] in wait:
                cum[p[5]] = to_ns(p[3])
        hot = max(cum, key=cum.get) if cum else None
        check(f"{name}: pprof -top with the lock name as root names the hot lock (lock_alpha)",
              hot == "lock_alpha", top[-400:])
        check(f"{name}: stacks name the acquiring function",
              "take_alpha" in top and "take_beta" in top, top[-400:])


def lock_semantics(exe):
    name = os.path.basename(exe)
    with tempfile.TemporaryDirectory() as out:
        plain = subprocess.run([exe], capture_output=True, text=True, timeout=120)
        env = profile_env(out, "lock", STOWAWAY_LOCK_SAMPLE_NS="1")
        hooked = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=120)
        env = profile_env(out, "lock", STOWAWAY_LOCK_SAMPLE_NS="1", STOWAWAY_LOCK_CHECK_EVERY="1")
        checked = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=120)
        off = subprocess.run([exe], env=dict(os.environ, LD_PRELOAD=SO), capture_output=True,
                             text=True, timeout=120)
    n = plain.stdout.count("PASS ")
    check(f"{name}: passes without the library", plain.returncode == 0 and n > 20, plain.stdout[-300:])
    check(f"{name}: same results with every contention sampled",
          hooked.returncode == 0 and hooked.stdout == plain.stdout, hooked.stdout[-400:])
    check(f"{name}: same results with every acquisition tried first (STOWAWAY_LOCK_CHECK_EVERY=1)",
          checked.returncode == 0 and checked.stdout == plain.stdout, checked.stdout[-400:])
    check(f"{name}: same results with the library loaded, profile off",
          off.returncode == 0 and off.stdout == plain.stdout, off.stdout[-400:])


def exception_known(exe):
    name = os.path.basename(exe)
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([exe, "300000"], env=profile_env(out, "exception",
                                                              STOWAWAY_EXCEPTION_SAMPLE_EVERY="10"),
                              capture_output=True, text=True, timeout=300)
        check(f"{name}: runs", proc.returncode == 0, proc.stderr[-300:])
        truth = {}
        for line in proc.stdout.splitlines():
            if line.startswith("truth "):
                t, n = line[6:].rsplit(" ", 1)
                truth[t] = int(n)
        files = sorted(glob.glob(os.path.join(out, "lockknown.*.exception.*.pb.gz")))
        check(f"{name}: exception profile written", bool(files) and len(truth) == 3,
              str(os.listdir(out)))
        if not files or len(truth) != 3:
            return
        measured = {}
        for f in files:
            for k, v in tag_values(f, "exception-samples", "exception type").items():
                measured[k] = measured.get(k, 0.0) + v
        compare(f"{name}: exception-samples by exception type", measured, truth, 3.0)
        tt, mt = sum(truth.values()), sum(measured.values())
        check(f"{name}: total exception-samples within 10%", abs(mt / tt - 1) <= 0.10,
              f"{mt:.0f} vs {tt}")
        top = pprof(["-top"], files[-1])
        check(f"{name}: throw and rethrow sites in the stacks",
              all(f in top for f in ("throw_runtime", "throw_parse", "throw_timeout", "relay_timeout")),
              top[-500:])


def main():
    if not os.path.exists(SO):
        check("lock_known: library built", False, SO)
        return 1
    lock_known(os.path.join(WL, "lock_known"))
    lock_known(os.path.join(WL, "lock_known-musl"))
    lock_semantics(os.path.join(WL, "lock_semantics"))
    lock_semantics(os.path.join(WL, "lock_semantics-musl"))
    exception_known(os.path.join(WL, "exception_known"))
    return status()


if __name__ == "__main__":
    sys.exit(main())
