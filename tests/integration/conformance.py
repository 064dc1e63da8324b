"""Receivers that refuse what the real servers refuse (not a test itself).

Pyroscope rules, read from grafana/pyroscope (see docs/backends.md for the
files and versions): the /ingest handler's name parsing (api/model/labelset),
the series name derived from sample types (pkg/og/convert/pprof/profile.go,
metricName, with the default sample-type mapping of
pkg/og/storage/tree/pprof.go or the form's sample_type_config), the split of
string sample labels into series labels without span_id/trace_id
(pkg/model/pprofsplit), label validation (pkg/validation/validate.go:
1.x SanitizeLabelName / legacy metric names, 2.x UTF-8 names) and the
default limits (pkg/validation/limits.go).

Datadog agent rules: POST <prefix>/profiling/v1/input, multipart with the
event.json and the attachments it names, an entity id header as libdatadog
sends it, no API key.
"""
import gzip
import json
import re
import urllib.parse

import export_common as ec

# ---- a small protobuf reader for perftools.profiles.Profile ----


def _varint(b, i):
    shift = result = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if not c & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated field")
            v = b[i:i + n]
            i += n
        elif wire == 1:
            v = b[i:i + 8]
            i += 8
        elif wire == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        yield field, wire, v


def _packed(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def decode_pprof(raw):
    p = {"sample_type": [], "samples": [], "strings": [], "locations": [], "functions": [],
         "mappings": [], "time_nanos": 0, "duration_nanos": 0}
    for f, w, v in _fields(raw):
        if f == 1:
            t = dict((ff, vv) for ff, _, vv in _fields(v))
            p["sample_type"].append((t.get(1, 0), t.get(2, 0)))
        elif f == 2:
            s = {"locs": [], "values": [], "labels": []}
            for ff, ww, vv in _fields(v):
                if ff == 1:
                    s["locs"] += _packed(ww, vv)
                elif ff == 2:
                    s["values"] += [_signed(x) for x in _packed(ww, vv)]
                elif ff == 3:
                    lab = {1: 0, 2: 0, 3: 0, 4: 0}
                    lab.update((fff, vvv) for fff, _, vvv in _fields(vv))
                    s["labels"].append((lab[1], lab[2], _signed(lab[3]), lab[4],
                                        any(fff == 3 for fff, _, _ in _fields(vv))))
            p["samples"].append(s)
        elif f == 3:
            p["mappings"].append(dict((ff, vv) for ff, _, vv in _fields(v) if ff == 1).get(1, 0))
        elif f == 4:
            loc = {"id": 0, "functions": []}
            for ff, _, vv in _fields(v):
                if ff == 1:
                    loc["id"] = vv
                elif ff == 4:
                    line = dict((fff, vvv) for fff, _, vvv in _fields(vv))
                    loc["functions"].append(line.get(1, 0))
            p["locations"].append(loc)
        elif f == 5:
            fn = dict((ff, vv) for ff, _, vv in _fields(v) if ff in (1, 2))
            p["functions"].append((fn.get(1, 0), fn.get(2, 0)))
        elif f == 6:
            p["strings"].append(v.decode("utf-8", "surrogateescape"))
        elif f == 9:
            p["time_nanos"] = v
        elif f == 10:
            p["duration_nanos"] = v
    return p


def sample_labels(p, s):
    """{key: value} of a decoded sample (str or int)."""
    st = p["strings"]
    out = {}
    for key, sv, num, _unit, is_num in s["labels"]:
        out[st[key]] = num if is_num else st[sv]
    return out


def function_names(p):
    names = {fid: p["strings"][name] for fid, name in p["functions"]}
    return {loc["id"]: [names.get(f, "?") for f in loc["functions"]] for loc in p["locations"]}


# ---- Pyroscope ----

LEGACY_METRIC = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
DEFAULT_DISPLAY = {"samples": "cpu", "goroutine": "goroutines", "contentions": "mutex_count",
                   "delay": "mutex_duration"}
MAX_SAMPLES = 16000
MAX_BYTES = 4 * 1024 * 1024
MAX_SERIES_LABELS = 30
MAX_SAMPLE_LABELS = 100


def _label_name_rune_ok(c):
    return c.isascii() and (c.isalnum() or c in "_.")


def _service_rune_ok(c):
    return c in "-./" or _label_name_rune_ok(c)


def parse_app_name(name):
    """labelset.Parse + its validation: (labels, error)."""
    labels = {}
    brace = name.find("{")
    service = (name if brace < 0 else name[:brace]).strip()
    if not service:
        return None, "service name is required"
    bad = [c for c in service if not _service_rune_ok(c)]
    if bad:
        return None, "invalid service name %r: character %r" % (service, bad[0])
    labels["__name__"] = service
    if brace >= 0:
        body = name[brace + 1:]
        end = body.find("}")
        body = body if end < 0 else body[:end]
        for item in filter(None, body.split(",")):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq:
                continue
            if not key or not all(_label_name_rune_ok(c) for c in key):
                return None, "invalid label name %r" % key
            labels[key] = value.strip()
    return labels, None


def metric_name(type_names, config):
    mapping = config if config is not None else {k: {"display-name": v}
                                                  for k, v in DEFAULT_DISPLAY.items()}
    st = ""
    for t in type_names:
        if t == "wall":
            return t
    for t in type_names:
        st = t
        disp = (mapping.get(t) or {}).get("display-name")
        if disp:
            st = disp
        if "cpu" in st:
            return "process_cpu"
        if "alloc_" in st or "inuse_" in st or st in ("space", "objects"):
            return "memory"
        if "mutex_" in st:
            return "mutex"
        if "block_" in st:
            return "block"
        if "goroutines" in st:
            return "goroutines"
    return st


def sanitize_legacy(name):
    """SanitizeLabelName (1.x): (sanitized, ok)."""
    if not name:
        return name, False
    for i, c in enumerate(name):
        if not (c.isascii() and (c.isalpha() or c == "_" or (c.isdigit() and i > 0))):
            if c != ".":
                return name, False
    return name.replace(".", "_"), True


def valid_utf8_name(name):
    return bool(name)


class PyroscopeRules:
    def __init__(self, version, max_samples=MAX_SAMPLES, max_bytes=MAX_BYTES, now=None):
        assert version in ("1.x", "2.x")
        self.version = version
        self.max_samples = max_samples
        self.max_bytes = max_bytes
        self.now = now

    def _validate_series(self, labels):
        errors = []
        if len(labels) > MAX_SERIES_LABELS:
            errors.append("series has %d label names; limit %d" % (len(labels),
                                                                   MAX_SERIES_LABELS))
        metric = labels.get("__name__", "")
        if self.version == "1.x" and not LEGACY_METRIC.match(metric):
            errors.append("invalid metric name %r" % metric)
        seen = set()
        for name, value in labels.items():
            if len(name) > 1024 or len(value) > 2048:
                errors.append("label %r too long" % name)
            if self.version == "1.x":
                new, ok = sanitize_legacy(name)
                if not ok:
                    errors.append("invalid label name %r" % name)
                    continue
                name = new
            elif not valid_utf8_name(name):
                errors.append("invalid label name %r" % name)
            if name in seen:
                errors.append("duplicate label name %r" % name)
            seen.add(name)
        return errors

    def check(self, target, content_type, body):
        """Errors the server answers 4xx for, and what it files: (errors, info)."""
        errors, info = [], {}
        url = urllib.parse.urlsplit(target)
        q = urllib.parse.parse_qs(url.query)
        if not url.path.endswith("/ingest"):
            return ["path %r" % url.path], info
        if q.get("format", ["pprof"])[0] != "pprof":
            errors.append("format %r" % q.get("format"))
        app, err = parse_app_name(q.get("name", [""])[0])
        if err:
            return ["name: " + err], info
        config = None
        if content_type and content_type.startswith("multipart/form-data"):
            parts, perr = ec.parse_multipart(content_type, body)
            if perr:
                return ["multipart: " + perr], info
            files = {p["name"]: p for p in parts if p["filename"] is not None}
            if "profile" not in files:
                return ["multipart without a profile file"], info
            body = files["profile"]["data"]
            if "sample_type_config" in files:
                try:
                    config = json.loads(files["sample_type_config"]["data"])
                except ValueError as e:
                    return ["sample_type_config: %s" % e], info
        try:
            raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
        except (OSError, EOFError) as e:
            return ["gzip: %s" % e], info
        if len(raw) > self.max_bytes:
            errors.append("profile of %d bytes over the %d byte limit" % (len(raw),
                                                                         self.max_bytes))
        try:
            p = decode_pprof(raw)
        except (ValueError, IndexError, UnicodeDecodeError) as e:
            return errors + ["malformed profile: %s" % e], info
        st = p["strings"]
        if not st or st[0] != "":
            return errors + ["string 0 should be empty string"], info
        try:
            types = [st[t] for t, _ in p["sample_type"]]
        except IndexError:
            return errors + ["sample type string out of range"], info
        if not types:
            errors.append("empty profile")
        for t in types:
            if "-" in t:
                errors.append("sample type contains - (%r)" % t)
        if len(p["samples"]) > self.max_samples:
            errors.append("%d samples over the %d sample limit" % (len(p["samples"]),
                                                                   self.max_samples))
        if any(loc["id"] == 0 for loc in p["locations"]):
            errors.append("location id is 0")
        if any(fid == 0 for fid, _ in p["functions"]):
            errors.append("function id is 0")
        for s in p["samples"]:
            if len(s["values"]) != len(types):
                errors.append("sample value length mismatch")
                break
            if len(s["labels"]) > MAX_SAMPLE_LABELS:
                errors.append("sample labels over %d" % MAX_SAMPLE_LABELS)
                break
        # The series a sample goes to: the app labels, the standard ones, and
        # its string labels other than span_id/trace_id (app labels win).
        metric = metric_name(types, config)
        base = dict(app)
        service = base.pop("__name__")
        base.update({"__name__": metric, "__delta__": "false", "pyroscope_spy": "stowaway",
                     "service_name": service})
        series = {}
        number_labels = 0
        bad_span_ids = 0
        for s in p["samples"]:
            labels = dict(base)
            for key, sv, _num, _unit, is_num in s["labels"]:
                if is_num or sv <= 0:
                    number_labels += 1
                    continue
                name, value = st[key], st[sv]
                if name == "span_id":
                    if not re.fullmatch(r"[0-9a-fA-F]{16}", value):
                        bad_span_ids += 1
                    continue
                if name == "trace_id":
                    continue
                labels.setdefault(name, value)
            key = tuple(sorted(labels.items()))
            series.setdefault(key, 0)
            series[key] += 1
        for key in series:
            for e in self._validate_series(dict(key)):
                if e not in errors:
                    errors.append(e)
        if self.now is not None and p["time_nanos"]:
            t = p["time_nanos"] / 1e9
            if not (self.now - 3600 < t < self.now + 600):
                errors.append("profile time %s outside the ingestion window" % t)
        info = {"metric": metric, "types": types, "samples": len(p["samples"]),
                "series": len(series), "number_labels": number_labels,
                "bad_span_ids": bad_span_ids, "profile": p}
        return errors, info


class PyroscopeReceiver(ec.Recorder):
    """Answers 200 or, when the rules refuse the upload, 400 with the reason."""

    def __init__(self, rules):
        super().__init__([200])
        self.rules = rules
        self.results = []

    def handle(self, conn):
        req = ec.read_http_request(conn)
        if req is None:
            return
        errors, info = self.rules.check(req["target"], ec.header(req, "Content-Type"),
                                        req["body"])
        with self.lock:
            self.requests.append(req)
            self.results.append((errors, info))
        status = 400 if errors else 200
        body = ("; ".join(errors) if errors else "ok").encode()
        conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n%s" % (status, b"Bad Request" if errors else b"OK",
                                                       len(body), body))


# ---- Datadog agent ----

ENTITY_ID = re.compile(r"^(ci-[0-9a-f]{64}|ci-[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_]"
                       r"[0-9a-f]{4}[-_][0-9a-f]{12}|ci-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                       r"[0-9a-f]{4}-[0-9a-f]{4}|ci-[0-9a-f]{32}-\d+|in-\d+)$")
BUILTIN_TAGS = ("service", "env", "version", "language", "runtime-id", "profiler_version",
                "host", "process_id")


def check_datadog_agent(req, prefix="", require_entity=True, decode_profile=True):
    """Errors an agent (and the intake behind it) would refuse or misfile."""
    errors = []
    if req["method"] != "POST" or req["target"] != prefix + "/profiling/v1/input":
        errors.append("target %s %s" % (req["method"], req["target"]))
    if ec.header(req, "DD-API-KEY") is not None:
        errors.append("an API key was sent to the agent")
    return _check_datadog_request(req, errors, require_entity, decode_profile)


def check_datadog_intake(req, api_key, path="/api/v2/profile", decode_profile=True):
    """Errors the agentless intake would answer 4xx for or misfile."""
    errors = []
    if req["method"] != "POST" or req["target"] != path:
        errors.append("target %s %s" % (req["method"], req["target"]))
    if ec.header(req, "DD-API-KEY") != api_key:
        errors.append("DD-API-KEY %r" % (ec.header(req, "DD-API-KEY"),))
    return _check_datadog_request(req, errors, False, decode_profile)


def _check_datadog_request(req, errors, require_entity, decode_profile):
    if not req["complete"]:
        errors.append("incomplete body")
    eid = ec.header(req, "Datadog-Entity-ID")
    if require_entity and (not isinstance(eid, str) or not ENTITY_ID.match(eid)):
        errors.append("Datadog-Entity-ID %r" % (eid,))
    parts, err = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
    if err:
        return errors + ["multipart: " + err], None
    by_name = {p["name"]: p for p in parts}
    if "event" not in by_name:
        return errors + ["no event part"], None
    try:
        event = json.loads(by_name["event"]["data"])
    except ValueError as e:
        return errors + ["event.json: %s" % e], None
    for key in ("attachments", "tags_profiler", "start", "end", "family", "version"):
        if key not in event:
            errors.append("event without %s" % key)
    for name in event.get("attachments", []):
        if name not in by_name or by_name[name]["filename"] != name:
            errors.append("attachment %r missing" % name)
    if event.get("version") != "4":
        errors.append("event version %r" % event.get("version"))
    counts = event.get("endpoint_counts", {})
    if not isinstance(counts, dict) or not all(isinstance(v, int) and v > 0
                                               for v in counts.values()):
        errors.append("endpoint_counts %r" % (counts,))
    tags = [t.split(":", 1) for t in event.get("tags_profiler", "").split(",") if t]
    keys = [k for k, _ in tags]
    for k in BUILTIN_TAGS:
        if keys.count(k) > 1:
            errors.append("tag %s appears %d times" % (k, keys.count(k)))
    for name in event.get("attachments", []) if decode_profile else []:
        data = by_name.get(name, {}).get("data", b"")
        try:
            decode_pprof(gzip.decompress(data))
        except (OSError, EOFError, ValueError, IndexError) as e:
            errors.append("%s: %s" % (name, e))
    return errors, event
