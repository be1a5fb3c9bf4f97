"""A strict parser of the Prometheus text exposition format, version 0.0.4.

parse(text) -> {family: {"type", "help", "samples": [(name, labels, value)]}}
raises ValueError naming the line for anything the format does not allow
or that a careful exporter should never send:
  - a line that is not "# HELP name text", "# TYPE name type" or a sample
    (no blank lines, no other comments, no timestamps);
  - HELP or TYPE twice for a family, TYPE after the family's first sample,
    a sample without TYPE before it, a family's samples not in one group;
  - bad metric or label names, bad label escapes, a label twice, a value
    that is not a float, the same series twice;
  - histograms: a sample other than _bucket (with le) / _sum / _count;
    per label set: le ascending and ending with +Inf, buckets cumulative,
    _count equal to the +Inf bucket, _sum and _count present;
  - counters: a negative value.
Python stdlib only.
"""
import math
import re

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _labels(s, where):
    """'a="x",b="y"' -> (("a","x"),("b","y")) with escapes decoded."""
    out, i, n = [], 0, len(s)
    while i < n:
        eq = s.find("=", i)
        if eq < 0:
            raise ValueError("%s: label without '='" % where)
        name = s[i:eq]
        if not LABEL_RE.match(name):
            raise ValueError("%s: bad label name %r" % (where, name))
        if eq + 1 >= n or s[eq + 1] != '"':
            raise ValueError("%s: label value not quoted" % where)
        j, val = eq + 2, []
        while True:
            if j >= n:
                raise ValueError("%s: unterminated label value" % where)
            c = s[j]
            if c == "\\":
                if j + 1 >= n or s[j + 1] not in '\\"n':
                    raise ValueError("%s: bad escape in a label value" % where)
                val.append({"\\": "\\", '"': '"', "n": "\n"}[s[j + 1]])
                j += 2
            elif c == '"':
                j += 1
                break
            elif c == "\n":
                raise ValueError("%s: raw newline in a label value" % where)
            else:
                val.append(c)
                j += 1
        if name in dict(out):
            raise ValueError("%s: label %s twice" % (where, name))
        out.append((name, "".join(val)))
        if j < n:
            if s[j] != ",":
                raise ValueError("%s: expected ',' between labels" % where)
            j += 1
            if j >= n:
                raise ValueError("%s: trailing ',' in labels" % where)
        i = j
    return tuple(out)


def _value(v, where):
    if v in ("+Inf", "-Inf", "NaN"):
        return float(v.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.match(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z", v):
        raise ValueError("%s: bad value %r" % (where, v))
    return float(v)


def _family_of(name, fams):
    for sfx in ("_bucket", "_sum", "_count"):
        if name.endswith(sfx) and fams.get(name[:-len(sfx)], {}).get("type") in ("histogram", "summary"):
            return name[:-len(sfx)]
    return name


def parse(text):
    if not text.endswith("\n"):
        raise ValueError("the exposition does not end with a newline")
    fams, order, seen, closed = {}, [], set(), set()
    current = None
    for no, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d (%r)" % (no, line[:120])
        if line.startswith("#"):
            m = re.match(r"# (HELP|TYPE) (\S+) (.*)\Z", line)
            if not m:
                raise ValueError("%s: a comment that is neither HELP nor TYPE" % where)
            kind, name, rest = m.groups()
            if not NAME_RE.match(name):
                raise ValueError("%s: bad metric name" % where)
            f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
            if name in closed or f["samples"]:
                raise ValueError("%s: %s after the family's samples" % (where, kind))
            if kind == "HELP":
                if f["help"] is not None:
                    raise ValueError("%s: HELP twice" % where)
                f["help"] = rest
            else:
                if f["type"] is not None:
                    raise ValueError("%s: TYPE twice" % where)
                if rest not in TYPES:
                    raise ValueError("%s: unknown type" % where)
                f["type"] = rest
            if name not in order:
                order.append(name)
            if current and current != name:
                closed.add(current)
            current = name
            continue
        m = re.match(r"([^{\s]+)(\{(.*)\})? (\S+)\Z", line)
        if not m:
            raise ValueError("%s: not a sample line" % where)
        name, _, lab, val = m.groups()
        if not NAME_RE.match(name):
            raise ValueError("%s: bad metric name" % where)
        fam = _family_of(name, fams)
        f = fams.get(fam)
        if not f or not f["type"]:
            raise ValueError("%s: sample before its family's TYPE" % where)
        if fam in closed:
            raise ValueError("%s: the family's samples are not in one group" % where)
        if current and current != fam:
            closed.add(current)
        current = fam
        labels = _labels(lab, where) if lab else ()
        key = (name, labels)
        if key in seen:
            raise ValueError("%s: the same series twice" % where)
        seen.add(key)
        v = _value(val, where)
        if f["type"] == "histogram" and name == fam:
            raise ValueError("%s: a histogram sample needs _bucket, _sum or _count" % where)
        if f["type"] == "counter" and v < 0:
            raise ValueError("%s: a negative counter" % where)
        f["samples"].append((name, labels, v))
    for name, f in fams.items():
        if f["type"] == "histogram":
            _check_histogram(name, f["samples"])
    return fams


def _check_histogram(fam, samples):
    series = {}
    for name, labels, v in samples:
        d = dict(labels)
        le = d.pop("le", None)
        key = tuple(sorted(d.items()))
        s = series.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            if le is None:
                raise ValueError("%s%s: a bucket without le" % (fam, key))
            s["buckets"].append((_value(le, fam + " le"), v))
        elif le is not None:
            raise ValueError("%s%s: le on %s" % (fam, key, name))
        elif name == fam + "_sum":
            s["sum"] = v
        else:
            s["count"] = v
    for key, s in series.items():
        b = s["buckets"]
        if not b or b[-1][0] != math.inf:
            raise ValueError("%s%s: the last bucket is not +Inf" % (fam, key))
        for (l1, c1), (l2, c2) in zip(b, b[1:]):
            if not l1 < l2:
                raise ValueError("%s%s: le not ascending" % (fam, key))
            if c2 < c1:
                raise ValueError("%s%s: buckets not cumulative (%s then %s)" % (fam, key, c1, c2))
        if s["sum"] is None or s["count"] is None:
            raise ValueError("%s%s: _sum or _count missing" % (fam, key))
        if s["count"] != b[-1][1]:
            raise ValueError("%s%s: _count %s but +Inf bucket %s" % (fam, key, s["count"], b[-1][1]))


def value(fams, name, **labels):
    """The value of the sample name{labels} (exactly those labels), or None."""
    fam = _family_of(name, fams)
    want = tuple(sorted(labels.items()))
    for n, lab, v in fams.get(fam, {}).get("samples", []):
        if n == name and tuple(sorted(lab)) == want:
            return v
    return None


def histogram(fams, fam, **labels):
    """{"buckets": [(le, cumulative)], "sum", "count"} of one series, or None."""
    want = tuple(sorted(labels.items()))
    out = {"buckets": [], "sum": None, "count": None}
    found = False
    for n, lab, v in fams.get(fam, {}).get("samples", []):
        d = dict(lab)
        le = d.pop("le", None)
        if tuple(sorted(d.items())) != want:
            continue
        found = True
        if n == fam + "_bucket":
            out["buckets"].append((_value(le, "le"), v))
        elif n == fam + "_sum":
            out["sum"] = v
        elif n == fam + "_count":
            out["count"] = v
    return out if found else None
