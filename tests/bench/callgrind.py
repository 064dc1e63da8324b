"""Reading callgrind's output files: one copy for the benches and the
tests that count instructions (bench_requests.sh, wall_instructions.py)."""
import collections
import re


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
