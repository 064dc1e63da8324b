"""Shared by the integration suites: pprof's printed durations in ns, the
stacks of a profile as go tool pprof -traces prints them (an independent
decoder), and the mangled symbols left as function names in its -raw text."""
import re
import subprocess

# A mangled symbol standing as a function name (not a system name, which
# -raw prints in parentheses after s=N).
_MANGLED_NAME = re.compile(r"(?<!\S)_[ZR][\w.$]+")


def mangled_names(raw):
    """The mangled symbols (_Z..., _R...) that go tool pprof -raw prints as
    function names in its Locations section, inlined frames' lines included;
    raw must come from -symbolize=none (else pprof demangles names itself)."""
    locations = raw[raw.find("\nLocations"):raw.find("\nMappings")]
    return set(_MANGLED_NAME.findall(locations))


def to_ns(text):
    units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9, "hrs": 3600e9}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float(text)


def traces(path, env, index="wall-time"):
    """[(labels dict, [function names leaf first], value)] from pprof -traces,
    the value of sample type `index` (wall-time or cpu-time: ns)."""
    out = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=" + index, path],
                         capture_output=True, text=True, check=True, env=env).stdout
    result = []
    labels, stack, value = {}, [], None
    for line in out.splitlines():
        if line.startswith("-----------"):
            if stack:
                result.append((labels, stack, value))
            labels, stack, value = {}, [], None
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if value is None and ":" in stripped and not stripped[0].isdigit():
            key, _, val = stripped.partition(":")
            labels[key.strip()] = val.strip()
            continue
        parts = stripped.split()
        if value is None and parts[0][0].isdigit():
            value = to_ns(parts[0])
            stack.append(parts[1] if len(parts) > 1 else "")
        elif value is not None:
            stack.append(parts[0])
    if stack:
        result.append((labels, stack, value))
    return result


def unsampled_misplaced(samples, routine):
    """Of the stacks in traces() output that start at "[unsampled]" (time a thread's
    end took without knowing where), those not standing under `routine` (nor alone,
    as for the thread that ends the process): (misplaced stacks' first frames, how
    many there are in all)."""
    unsampled = [s for _, s, _ in samples if s and s[0] == "[unsampled]"]
    misplaced = [s[:3] for s in unsampled if s != ["[unsampled]"] and
                 (len(s) < 2 or s[1] != routine)]
    return misplaced, len(unsampled)
