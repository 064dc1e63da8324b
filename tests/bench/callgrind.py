"""Running callgrind and reading its output files: one copy for the benches
and the tests that count instructions (bench_requests.sh, the *_cost.py and
*_instructions.py checks)."""
import collections
import os
import re
import subprocess


def callgrind_self_costs(argv, toggle, out, env=None, stdin=None, timeout=120):
    """Runs argv under callgrind, counting only inside function `toggle` and
    what it calls, into file `out`.  Returns (the finished run, self cost by
    (object, function)); the costs are None when the run failed or wrote
    no file."""
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        "--compress-pos=no", f"--toggle-collect={toggle}"] + argv,
                       env=env, input=stdin, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 or not os.path.exists(out):
        return r, None
    return r, callgrind_costs(out, set())[0]


def callgrind_costs(path, inclusive_of):
    """Self cost by (object, function), and inclusive cost of and calls to
    the named functions, from one callgrind output file (--compress-pos=no)."""
    names = {"ob": {}, "fn": {}, "fl": {}}
    self_cost = collections.Counter()
    incl = collections.Counter()
    ob = fn = callee = None
    after_call = False

    def name(table, val):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", val)
        if not m:
            return val
        if m.group(2) is not None:
            names[table][m.group(1)] = m.group(2)
        return names[table].get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                if len(parts) < 2:
                    continue
                v = int(parts[1])
                if fn in inclusive_of:
                    incl[fn] += v
                if after_call:
                    after_call = False
                else:
                    self_cost[(ob, fn)] += v
                continue
            key, _, val = line.rstrip("\n").partition("=")
            if key == "ob":
                ob = name("ob", val)
            elif key == "cob":
                name("ob", val)
            elif key == "fn":
                fn = name("fn", val)
            elif key == "cfn":
                callee = name("fn", val)
            elif key in ("fl", "fi", "fe", "cfi", "cfl"):
                name("fl", val)
            elif key == "calls":
                after_call = True
                if callee in inclusive_of:
                    incl["calls:" + callee] += int(val.split()[0])
    return self_cost, incl
