"""jvm_analysis — the JVM originals beside their C renderings (issue 32):
the side-by-side rows and the claim "the C renderings rank the originals as
the originals rank themselves", from the JVM harness's JSON
(jvm/TimerBench.java, format in jvm/README.md) and the C side's samples.

Self-contained (the report's Python is being restructured): the
significance rule is a copy of report/tb_stats.py's, with its thresholds
(ALPHA, MIN_EFFECT) and its Mann-Whitney U test (scipy.stats.mannwhitneyu,
two-sided).  Pure functions; nothing here reads the clock or the machine.

    rows = side_by_side(jvm, c)      # one row per op, N and original
    claim = ranking(jvm, c)          # per op at the largest common N
    print(markdown(rows, claim))

`jvm` is the parsed JSON (None when the JDK was absent: see absent()),
`c` a plain dict backend -> op -> N -> [ns/op, one per repetition], whose
backend keys are the subjects' `c_backend` ("heapqueue/roc=on",
"timerthread", ...); c_samples(micro_json) builds it from a results
directory's micro.json (series h2h, workload uniform).

Command line: python3 jvm/jvm_analysis.py JVM.json MICRO.json [--n 1000,1000000]
[--ops insert,cancel] prints the table and the verdicts in Markdown.
"""

import json
import math
import re
import statistics
import sys

try:
    from scipy.stats import mannwhitneyu as _mwu
except ImportError:
    _mwu = None

# The report's rule (report/tb_stats.py): significance level of every
# test, and the smallest difference a rerun reproduces (10 %), below which
# two medians are "the same" whatever the p-value.
ALPHA = 0.05
MIN_EFFECT = 0.10

HOLDS, FAILS, UNDECIDED, NOT_TESTED = (
    "holds", "does not hold", "undecided at this noise", "not tested")

CLAIM = "the C renderings rank the originals as the originals rank themselves"
RULE = ("per operation at the largest N both sides measured, every pair of "
        "originals with a C rendering is ordered on each side: 'faster' or "
        "'slower' when the two-sided Mann-Whitney U test over the repetitions "
        "gives p < %g and the medians differ by at least %d %%, 'same' when "
        "they differ by less than %d %% (whatever p), else undecided; the "
        "claim holds when every pair is ordered the same way on both sides, "
        "does not hold when a pair is ordered differently (opposite, or "
        "ordered on one side and the same on the other), is undecided at this "
        "noise when no pair differs but some is undecided, and is not tested "
        "when a side is missing or has too few repetitions to test"
        % (ALPHA, MIN_EFFECT * 100, MIN_EFFECT * 100))


# ---- statistics (report/tb_stats.py's rule, copied) ----------------------

def _clean(values):
    return [float(v) for v in values or () if v is not None and math.isfinite(float(v))]


def min_p(n1, n2):
    """The smallest two-sided p any ordering of n1 against n2 gives."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def testable(n1, n2):
    return min_p(n1, n2) <= ALPHA


def mann_whitney(a, b):
    """Two-sided Mann-Whitney U p of a against b; None when too few to
    test or scipy is missing; 1 when every value is equal."""
    a, b = _clean(a), _clean(b)
    if not testable(len(a), len(b)) or _mwu is None:
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0
    p = float(_mwu(a, b, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else 1.0


def summary(samples):
    """{median, lo, hi, n} of a list of values (lo, hi: min and max), or
    None when there is none."""
    v = _clean(samples)
    if not v:
        return None
    return {"median": statistics.median(v), "lo": min(v), "hi": max(v), "n": len(v)}


def relation(a, b):
    """How sample a compares with b: ("faster" | "slower" | "same" |
    "undecided" | "too few", p, ratio of medians a/b).  faster: a takes
    less time."""
    a, b = _clean(a), _clean(b)
    if not a or not b:
        return ("too few", None, None)
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = ma / mb if mb else None
    p = mann_whitney(a, b)
    if ratio is not None and ratio < 1 + MIN_EFFECT and ratio * (1 + MIN_EFFECT) > 1:
        return ("same", p, ratio)
    if p is None:
        return ("too few", None, ratio)
    if p >= ALPHA or ratio is None:
        return ("undecided", p, ratio)
    return ("faster" if ratio < 1 else "slower", p, ratio)


# ---- the two sides ---------------------------------------------------------

def subjects(jvm):
    """The harness's subjects by name."""
    return {s["name"]: s for s in (jvm or {}).get("subjects", [])}


def jvm_reps(jvm, op, subject, n):
    """The repetitions of one JVM cell, or []."""
    for r in (jvm or {}).get("results", []):
        if r["op"] == op and r["subject"] == subject and int(r["n"]) == int(n):
            return r["reps"]
    return []


def c_key(c, backend, op, n):
    """The key of `c` that holds `backend`'s samples at op, N, or None.
    The C harness labels a policy (roc=on/off) only where it changes what
    the backend does: an unlabelled result is the default policy
    (roc=off), and stands for roc=on too only for insert, which the policy
    does not touch."""
    if not backend or not c:
        return None
    keys = [backend]
    if "/" in backend:
        bare, policy = backend.split("/", 1)
        if policy == "roc=off" or op == "insert":
            keys.append(bare)
    for key in keys:
        for k in c.get(key, {}).get(op, {}):
            if int(k) == int(n):
                return key
    return None


def c_lookup(c, backend, op, n):
    """The C samples of `backend` at op, N (c_key's rule), or []."""
    key = c_key(c, backend, op, n)
    if key is None:
        return []
    got = c[key][op]
    return _clean(next(v for k, v in got.items() if int(k) == int(n)))


def side_by_side(jvm, c):
    """One row per (op, N, original) the JVM harness measured, in its
    order: {op, n, subject, original, c_backend, c: summary or None, jvm:
    summary, bytes_per_op (median over the repetitions), gc_ms (median per
    repetition), gc_ms_total, gc_count}.  `c` may lack an N (then c is None:
    not measured at that N) or the subject may have no C rendering
    (DelayQueue)."""
    subj = subjects(jvm)
    rows = []
    for r in (jvm or {}).get("results", []):
        s = subj.get(r["subject"], {})
        reps = r["reps"]
        ns = [x.get("ns_per_op") for x in reps]
        gc = _clean([x.get("gc_ms") for x in reps])
        rows.append({
            "op": r["op"], "n": int(r["n"]), "subject": r["subject"],
            "original": s.get("original"), "config": s.get("config"),
            "c_backend": s.get("c_backend"),
            "c": summary(c_lookup(c, s.get("c_backend"), r["op"], r["n"])),
            "jvm": summary(ns),
            "bytes_per_op": statistics.median(_clean([x.get("bytes_per_op") for x in reps]) or [math.nan]),
            "gc_ms": statistics.median(gc) if gc else None,
            "gc_ms_total": sum(gc) if gc else None,
            "gc_count": sum(int(x.get("gc_count", 0)) for x in reps),
        })
    rows.sort(key=lambda x: (x["op"], x["n"], x["subject"]))
    return rows


def ranking(jvm, c, ops=None):
    """The claim, per operation: [{op, n, verdict, why, pairs}], each pair
    {a, b, jvm: relation, c: relation, agree}.  Only originals with a C
    rendering and data on both sides take part; N is the largest at which
    all of them have both.  Without the JVM's results every operation is
    "not tested" (absent() says why)."""
    out = []
    subj = subjects(jvm)
    all_ops = ops or sorted({r["op"] for r in (jvm or {}).get("results", [])}
                            | {op for b in (c or {}).values() for op in b})
    for op in all_ops:
        entry = {"op": op, "n": None, "pairs": [], "verdict": NOT_TESTED, "why": ""}
        out.append(entry)
        if not jvm:
            entry["why"] = "the JVM originals were not measured"
            continue
        # the originals with a C rendering measured on both sides at some N
        both = {}
        for name, sj in subj.items():
            if not sj.get("c_backend"):
                continue
            have = {int(r["n"]) for r in jvm.get("results", [])
                    if r["op"] == op and r["subject"] == name
                    and c_lookup(c, sj["c_backend"], op, r["n"])}
            if have:
                both[name] = have
        with_data = list(both)
        common = set.intersection(*both.values()) if both else set()
        if len(with_data) < 2 or not common:
            entry["why"] = ("fewer than two originals with a C rendering were measured "
                            "on both sides" if len(with_data) < 2 else
                            "no N at which every original and its C rendering were both measured")
            continue
        n = max(common)
        entry["n"] = n
        kinds = []
        for i, a in enumerate(with_data):
            for b in with_data[i + 1:]:
                if c_key(c, subj[a]["c_backend"], op, n) == c_key(c, subj[b]["c_backend"], op, n):
                    # one C instance stands for both (insert: no policy)
                    continue
                ja = [x.get("ns_per_op") for x in jvm_reps(jvm, op, a, n)]
                jb = [x.get("ns_per_op") for x in jvm_reps(jvm, op, b, n)]
                ca = c_lookup(c, subj[a]["c_backend"], op, n)
                cb = c_lookup(c, subj[b]["c_backend"], op, n)
                rj, rc = relation(ja, jb), relation(ca, cb)
                if "too few" in (rj[0], rc[0]):
                    kind = NOT_TESTED
                elif "undecided" in (rj[0], rc[0]):
                    kind = UNDECIDED
                else:
                    kind = HOLDS if rj[0] == rc[0] else FAILS
                kinds.append(kind)
                entry["pairs"].append({"a": a, "b": b, "jvm": rj, "c": rc, "agree": kind})
        if not kinds:
            entry["why"] = "one C instance stands for every original measured"
            continue
        if FAILS in kinds:
            bad = [p for p in entry["pairs"] if p["agree"] == FAILS]
            entry["verdict"] = FAILS
            entry["why"] = "; ".join(
                "%s vs %s: JVM %s, C %s" % (p["a"], p["b"], p["jvm"][0], p["c"][0]) for p in bad)
        elif NOT_TESTED in kinds:
            entry["verdict"] = NOT_TESTED
            entry["why"] = "too few repetitions to test (or scipy missing) for some pair"
        elif UNDECIDED in kinds:
            entry["verdict"] = UNDECIDED
            entry["why"] = "no pair ordered differently, but some pair not significant"
        else:
            entry["verdict"] = HOLDS
            entry["why"] = "all %d pairs ordered alike" % len(kinds)
    return out


def absent(reason=None):
    """The section's wording when the JDK or Netty is absent."""
    why = reason or "the JDK (default-jdk-headless) or Netty (libnetty-java) is not installed"
    return ("The JVM originals (ScheduledThreadPoolExecutor, java.util.Timer, "
            "DelayQueue, Netty's HashedWheelTimer) were not measured: %s. Both "
            "README commands install them as root; everything else in this "
            "report ran as usual. The claim \"%s\" is not tested." % (why, CLAIM))


# ---- reading the C side ------------------------------------------------------

_NAME = re.compile(r"^(?P<op>[a-z]+)/(?P<backend>[a-z0-9_]+)/(?P<workload>[a-z0-9_]+)/"
                   r"(?P<config>[^/]*)/N:(?P<n>\d+)")
_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# The C workload each JVM operation is set beside: insert and cancel on
# uniform 1 ms - 1000 s (the harness draws the same), timeouts on its own,
# expire on short (1 ms - 500 ms in 1 ms steps: the nearest to a batch due
# inside a short window).
C_WORKLOAD = {"insert": "uniform", "cancel": "uniform", "timeouts": "timeouts",
              "expire": "short"}


def c_samples(micro, workload=None, series="h2h"):
    """backend -> op -> N -> [ns/op per repetition] from a micro.json
    document (Google Benchmark JSON): the series' iterations of the
    workload (by default each op's in C_WORKLOAD); heapqueue's roc=on/off
    become "heapqueue/roc=on" and "heapqueue/roc=off"."""
    out = {}
    for b in micro.get("benchmarks", []):
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        m = _NAME.match(b.get("name", ""))
        if not m or m["workload"] != (workload or C_WORKLOAD.get(m["op"])):
            continue
        conf = dict(kv.split("=", 1) for kv in m["config"].split(",") if "=" in kv)
        if conf.get("series") != series:
            continue
        key = m["backend"] + ("/roc=" + conf["roc"] if "roc" in conf else "")
        t = float(b["real_time"]) * _UNIT.get(b.get("time_unit", "ns"), 1.0)
        out.setdefault(key, {}).setdefault(m["op"], {}).setdefault(int(m["n"]), []).append(t)
    return out


# ---- Markdown ---------------------------------------------------------------

def _cell(s):
    if not s:
        return "not measured"
    return "%.3g (%.3g-%.3g, n=%d)" % (s["median"], s["lo"], s["hi"], s["n"])


def markdown(rows, claim, ns=None, ops=None):
    """The side-by-side table (optionally only some N and ops) and the
    verdicts, in Markdown."""
    lines = ["| op | N | original | C rendering | C ns/op median (min-max, reps) "
             "| JVM ns/op median (min-max, reps) | JVM bytes/op | GC ms per rep (median) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if (ns and r["n"] not in ns) or (ops and r["op"] not in ops):
            continue
        lines.append("| %s | %d | %s | %s | %s | %s | %.1f | %s |" % (
            r["op"], r["n"], r["subject"], r["c_backend"] or "none", _cell(r["c"]),
            _cell(r["jvm"]), r["bytes_per_op"],
            "%.1f" % r["gc_ms"] if r["gc_ms"] is not None else "n/a"))
    lines.append("")
    lines.append("Claim: %s. Rule: %s." % (CLAIM, RULE))
    lines.append("")
    for e in claim:
        if ops and e["op"] not in ops:
            continue
        lines.append("- **%s** at N = %s: %s (%s)" % (e["op"], e["n"], e["verdict"], e["why"]))
        for p in e["pairs"]:
            lines.append("  - %s vs %s: JVM %s (ratio %s, p %s), C %s (ratio %s, p %s): %s" % (
                p["a"], p["b"], p["jvm"][0], _f(p["jvm"][2]), _f(p["jvm"][1]),
                p["c"][0], _f(p["c"][2]), _f(p["c"][1]), p["agree"]))
    return "\n".join(lines)


def _f(v):
    return "n/a" if v is None else "%.2g" % v


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        jvm = json.load(f)
    with open(argv[2]) as f:
        c = c_samples(json.load(f))
    ns = ops = None
    rest = argv[3:]
    while rest:
        if rest[0] == "--n" and len(rest) > 1:
            ns = {int(x) for x in rest[1].split(",")}
        elif rest[0] == "--ops" and len(rest) > 1:
            ops = rest[1].split(",")
        else:
            sys.stderr.write("jvm_analysis: unknown argument %s\n" % rest[0])
            return 2
        rest = rest[2:]
    print(markdown(side_by_side(jvm, c), ranking(jvm, c, ops), ns, ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
