"""tbkit.jvm — the JVM originals beside their C renderings (analysis
layer, issue 32): plain data from the JVM harness's document
(jvm/TimerBench.java, format `timerbench-jvm/2` in jvm/README.md, read by
tbkit.results into `Results.jvm`) and the C side's repetitions, nothing
rendered.

    c = c_from_results(res)          # or c_samples(micro_json)
    rows = side_by_side(res.jvm, c)  # one row per op, N and original
    per_op = ranking(res.jvm, c)     # "the C renderings rank the originals
                                     #  as the originals rank themselves"
    cover = coverage(res.jvm, c)     # which N each side has, and full's

`c` is a plain dict backend -> op -> N -> [ns/op, one per repetition],
whose backend keys are the subjects' `c_backend` ("heapqueue/roc=on",
"timerthread", ...).  Pairs are decided by the suite's rule (tbkit.stats:
the Mann-Whitney U test at ALPHA and an effect of at least MIN_EFFECT).
The claim itself, over every operation, is tbkit.claims.jvm_ranking; the
section is tbkit.sec_jvm.
"""

import math
import re
import statistics

from tbkit import stats as S

HOLDS, FAILS, UNDECIDED, NOT_TESTED = (
    "holds", "does not hold", "undecided at this noise", "not tested")

# The harness's operations, in the order the section shows them.
OPS = ("insert", "cancel", "timeouts", "expire")
FORMAT = "timerbench-jvm/2"

# The C workload each JVM operation is set beside: insert and cancel on
# uniform 1 ms - 1000 s (the harness draws the same), timeouts on its own,
# expire on short (1 ms - 500 ms, the JVM side's own workload since issue
# 37); all on the head-to-head configuration.  timeouts on the series
# `caller` (bench/micro.c): the caller's schedule and cancel with the clock
# moved untimed, since on the JVM the expiry, the tick walk and the inbox
# transfer run on the originals' worker threads, off the caller's; the C
# side's whole cost (series h2h) stands beside the JVM's caller plus
# worker CPU (C_WHOLE).
C_WORKLOAD = {"insert": "uniform", "cancel": "uniform", "timeouts": "timeouts",
              "expire": "short"}
C_SERIES = "h2h"
C_OP_SERIES = {"timeouts": "caller"}
C_WHOLE = "timeouts+worker"


def _clean(values):
    out = []
    for v in values or ():
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


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
    less time.  "same": the medians differ by less than MIN_EFFECT on a
    log scale, whatever p; "too few" also when scipy is missing."""
    a, b = _clean(a), _clean(b)
    if not a or not b:
        return ("too few", None, None)
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = ma / mb if mb else None
    if ratio is not None and ratio < 1 + S.MIN_EFFECT and ratio * (1 + S.MIN_EFFECT) > 1:
        return ("same", None, ratio)
    p = S.mann_whitney(a, b) if S.have_scipy() else None
    if p is None:
        return ("too few", None, ratio)
    if p >= S.ALPHA or ratio is None:
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


def usable(rep, op):
    """Whether a JVM repetition counts: not dropped (a JIT compilation
    finished inside it), for timeouts one whose ring kept its pace
    (revisited at half the timeout, as in C; `paced`), and for expire one
    whose worker spent more than its idle ticking would have: the harness
    clamps the difference at 0 (jvm/TimerBench.java expirePhase), and a 0
    with idle time taken out is the idle estimate's noise, not a cost
    (Netty's 100 ms ticks at 10^2 tasks)."""
    if rep.get("dropped"):
        return False
    if op == "expire" and (rep.get("idle_cpu_ns_per_task") or 0) > 0 \
            and not (rep.get("ns_per_op") or 0) > 0:
        return False
    return not (op == "timeouts" and rep.get("paced") is False)


def value(rep, op):
    """A JVM repetition's figure: ns per operation on the caller's thread;
    for timeouts the repetition's sum over its operations (mean_ns_per_op,
    where a worker contending with the caller shows) rather than the batch
    median, which hides it; for expire the worker's CPU per task."""
    if op == "timeouts" and rep.get("mean_ns_per_op") is not None:
        return rep["mean_ns_per_op"]
    return rep.get("ns_per_op")


def jvm_values(jvm, op, subject, n):
    """The figures of a JVM cell's usable repetitions (usable(), value())."""
    return [value(x, op) for x in jvm_reps(jvm, op, subject, n) if usable(x, op)]


def cell_facts(reps, op):
    """What a cell's repetitions say of themselves: {forks: distinct forks
    among the usable, dropped: repetitions dropped for JIT, unpaced:
    timeouts repetitions that lost the pace, fired_share: median share
    of the operations' timeouts that fired (timeouts), gc_count: the
    usable repetitions' collections}."""
    ok = [x for x in reps if usable(x, op)]
    fs = _clean([x.get("fired_share") for x in ok])
    return {"forks": len({x.get("fork") for x in ok if x.get("fork") is not None}),
            "dropped": sum(1 for x in reps if x.get("dropped")),
            "unpaced": sum(1 for x in reps if op == "timeouts" and x.get("paced") is False),
            "fired_share": statistics.median(fs) if fs else None,
            "gc_count": sum(int(x.get("gc_count") or 0) for x in ok)}


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
    """One row per (op, N, original) the JVM harness measured, in OPS
    order: {op, n, subject, original, config, c_backend, c: summary or
    None, jvm: summary, bytes_per_op (median over the repetitions, None
    when unrecorded), gc_ms (median per repetition), gc_ms_total,
    gc_count}.  `c` may lack an N (then c is None: not measured at that
    N) or the subject may have no C rendering (DelayQueue)."""
    subj = subjects(jvm)
    rows = []
    for r in (jvm or {}).get("results", []):
        s = subj.get(r["subject"], {})
        reps = [x for x in r["reps"] if usable(x, r["op"])]
        gc = _clean([x.get("gc_ms") for x in reps])
        by = _clean([x.get("bytes_per_op") for x in reps])
        rows.append({
            "facts": cell_facts(r["reps"], r["op"]),
            "op": r["op"], "n": int(r["n"]), "subject": r["subject"],
            "original": s.get("original"), "config": s.get("config"),
            "c_backend": s.get("c_backend"),
            "c": summary(c_lookup(c, s.get("c_backend"), r["op"], r["n"])),
            "jvm": summary([value(x, r["op"]) for x in reps]),
            # timeouts: the caller's and the worker's CPU per operation on
            # the JVM, beside the C side's whole cost (series h2h)
            "jvm_cpu": summary([x.get("cpu_ns_per_op") for x in reps]),
            "c_whole": summary(c_lookup(c, s.get("c_backend"), C_WHOLE, r["n"]))
            if r["op"] == "timeouts" else None,
            "bytes_per_op": statistics.median(by) if by else None,
            "gc_ms": statistics.median(gc) if gc else None,
            "gc_ms_total": sum(gc) if gc else None,
            "gc_count": sum(int(x.get("gc_count") or 0) for x in reps),
        })
    order = {op: i for i, op in enumerate(OPS)}
    names = list(subj)
    rows.sort(key=lambda x: (order.get(x["op"], len(OPS)), x["op"], x["n"],
                             names.index(x["subject"]) if x["subject"] in names else 99))
    return rows


def holm(ps):
    """Holm's step-down adjustment of a family of p-values (None stays
    None): the adjusted p of the k-th smallest of m is max over j <= k of
    min(1, (m - j + 1) p_j)."""
    idx = sorted((i for i, p in enumerate(ps) if p is not None), key=lambda i: ps[i])
    m = len(idx)
    out = list(ps)
    run = 0.0
    for j, i in enumerate(idx):
        run = max(run, min(1.0, (m - j) * ps[i]))
        out[i] = run
    return out


def _side(a, b):
    """One side's comparison of a with b before the family's correction:
    {ratio, p, ci (95 % interval of the ratio a/b, or None), n: (len a,
    len b), same: the medians within MIN_EFFECT}."""
    a, b = _clean(a), _clean(b)
    if not a or not b:
        return {"ratio": None, "p": None, "ci": None, "n": (len(a), len(b)), "same": False}
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = ma / mb if mb else None
    same = ratio is not None and ratio < 1 + S.MIN_EFFECT and ratio * (1 + S.MIN_EFFECT) > 1
    p = S.mann_whitney(a, b) if S.have_scipy() else None
    return {"ratio": ratio, "p": p, "ci": S.ratio_ci(a, b), "n": (len(a), len(b)), "same": same}


def _order(side):
    """A side's order once its p is corrected: faster / slower (corrected
    p < ALPHA and at least MIN_EFFECT apart), same (within MIN_EFFECT,
    whatever p), undecided, or too few (no test possible)."""
    if side["same"]:
        return "same"
    if side["p_adj"] is None or side["ratio"] is None:
        return "too few"
    if side["p_adj"] >= S.ALPHA:
        return "undecided"
    return "faster" if side["ratio"] < 1 else "slower"


def _excludes(ci, order):
    """Whether an interval of a/b rules out `order`.  An order is an
    effect of at least MIN_EFFECT (faster: a/b at most 1 / (1 +
    MIN_EFFECT)), so an interval rules it out when it lies beyond that
    bound: a side that measured the two within MIN_EFFECT, tightly,
    contradicts a side that ordered them."""
    if ci is None:
        return False
    if order == "faster":
        return ci[0] * (1 + S.MIN_EFFECT) > 1
    if order == "slower":
        return ci[1] < 1 + S.MIN_EFFECT
    return False


def _pair_kind(j, c):
    """How the two sides' orders of one pair meet: ALIKE, CONTRADICTION
    (opposite orders, or one side ordered while the other's interval rules
    that order out), OPPOSITE_NS (point estimates on opposite sides of 1,
    neither a contradiction: named, never folded into undecided), TOO_FEW
    or UNDECIDED."""
    oj, oc = j["order"], c["order"]
    if "too few" in (oj, oc):
        return TOO_FEW
    if oj == oc and oj in ("faster", "slower", "same"):
        return ALIKE
    if {oj, oc} == {"faster", "slower"}:
        return CONTRADICTION
    if (oj in ("faster", "slower") and _excludes(c["ci"], oj)) or \
            (oc in ("faster", "slower") and _excludes(j["ci"], oc)):
        return CONTRADICTION
    # both point estimates beyond the MIN_EFFECT band, on opposite sides
    # of 1: a 0.99 against a 1.2 is not two orders
    if j["ratio"] and c["ratio"] and (j["ratio"] - 1) * (c["ratio"] - 1) < 0 \
            and not (j["same"] or c["same"]):
        return OPPOSITE_NS
    return UNDECIDED_PAIR


ALIKE, CONTRADICTION, OPPOSITE_NS, TOO_FEW, UNDECIDED_PAIR = (
    "alike", "contradiction", "opposite, not significant", "too few", "undecided")


def control(jvm):
    """The harness's control: STPE's insert with removeOnCancel off and on
    runs the same schedule(), so the two must come out the same at every
    N.  [{n, n_reps, ratio (stpe / stpe-roc), p, p_adj (Holm over the N),
    ci, order, ok}]; ok is False when the two differ significantly by
    at least MIN_EFFECT, which is the harness's own bias (the section words
    a row's order by tbkit.claimtext.jvm_control_said).  [] when either is
    missing."""
    ns = sorted({int(r["n"]) for r in (jvm or {}).get("results", [])
                 if r["op"] == "insert" and r["subject"] in ("stpe", "stpe-roc")})
    rows = []
    for n in ns:
        a, b = jvm_values(jvm, "insert", "stpe", n), jvm_values(jvm, "insert", "stpe-roc", n)
        if a and b:
            x = _side(a, b)
            x["n_reps"], x["n"] = x["n"], n
            rows.append(x)
    for r, pa in zip(rows, holm([r["p"] for r in rows])):
        r["p_adj"] = pa
        r["order"] = _order(r)
        r["ok"] = r["order"] not in ("faster", "slower")
    return rows


def ranking(jvm, c, ops=None):
    """The claim, per operation: [{op, n, verdict, why (a code: NOT_MEASURED,
    ...; op_facts and tbkit.claimtext.jvm_op_why say it), pairs}], each pair
    {a, b, jvm: side, c: side, agree}, a side {ratio (a/b), p, p_adj
    (Holm over the operation's pairs, per side), ci, n, order}.  Only
    originals with a C rendering and data on both sides take part; N is
    the largest at which all of them have both.  An operation does not
    hold when some pair is a contradiction, holds when every pair is
    alike, is not tested when some pair has too few repetitions, else is
    undecided (its opposite-but-not-significant pairs are those whose
    `agree` is OPPOSITE_NS).  Without the JVM's results every operation is "not tested"
    (absent() says why)."""
    out = []
    subj = subjects(jvm)
    have_ops = {r["op"] for r in (jvm or {}).get("results", [])}
    all_ops = ops or [op for op in OPS if op in have_ops] + sorted(have_ops - set(OPS)) \
        or list(OPS)
    for op in all_ops:
        entry = {"op": op, "n": None, "pairs": [], "verdict": NOT_TESTED, "why": NOT_MEASURED}
        out.append(entry)
        if not jvm:
            continue
        # the originals with a C rendering measured on both sides at some N
        both = {}
        for name, sj in subj.items():
            if not sj.get("c_backend"):
                continue
            have = {int(r["n"]) for r in jvm.get("results", [])
                    if r["op"] == op and r["subject"] == name
                    and jvm_values(jvm, op, name, r["n"])
                    and c_lookup(c, sj["c_backend"], op, r["n"])}
            if have:
                both[name] = have
        with_data = list(both)
        common = set.intersection(*both.values()) if both else set()
        if len(with_data) < 2 or not common:
            entry["why"] = FEWER_THAN_TWO if len(with_data) < 2 else NO_COMMON_N
            continue
        n = max(common)
        entry["n"] = n
        for i, a in enumerate(with_data):
            for b in with_data[i + 1:]:
                if c_key(c, subj[a]["c_backend"], op, n) == c_key(c, subj[b]["c_backend"], op, n):
                    # one C instance stands for both (insert: no policy)
                    continue
                entry["pairs"].append({
                    "a": a, "b": b,
                    "jvm": _side(jvm_values(jvm, op, a, n), jvm_values(jvm, op, b, n)),
                    "c": _side(c_lookup(c, subj[a]["c_backend"], op, n),
                               c_lookup(c, subj[b]["c_backend"], op, n))})
        pairs = entry["pairs"]
        if not pairs:
            entry["why"] = ONE_C_INSTANCE
            continue
        for where in ("jvm", "c"):
            for p, pa in zip(pairs, holm([p[where]["p"] for p in pairs])):
                p[where]["p_adj"] = pa
                p[where]["order"] = _order(p[where])
        for p in pairs:
            p["agree"] = _pair_kind(p["jvm"], p["c"])
        kinds = [p["agree"] for p in pairs]
        if CONTRADICTION in kinds:
            entry["verdict"], entry["why"] = FAILS, CONTRADICTED
        elif all(k == ALIKE for k in kinds):
            entry["verdict"], entry["why"] = HOLDS, ALL_ALIKE
        elif TOO_FEW in kinds:
            entry["verdict"], entry["why"] = NOT_TESTED, TOO_FEW_REPS
        else:
            entry["verdict"], entry["why"] = UNDECIDED, NOT_SIGNIFICANT
    return out


# Why an operation of ranking() reached its verdict (its `why`): codes,
# put into words by tbkit.claimtext.jvm_op_why.
(NOT_MEASURED, FEWER_THAN_TWO, NO_COMMON_N, ONE_C_INSTANCE, CONTRADICTED, ALL_ALIKE,
 TOO_FEW_REPS, NOT_SIGNIFICANT) = (
    "not_measured", "fewer_than_two", "no_common_n", "one_c_instance", "contradiction",
    "all_alike", "too_few", "not_significant")


def op_facts(entry):
    """An operation of ranking() as plain values (for a verdict's facts and
    tbkit.claimtext.jvm_op_why): {op, n, verdict, why (a code above),
    pairs: [{a, b, agree, jvm_order, jvm_ratio, c_order, c_ratio}]}."""
    return {"op": entry["op"], "n": entry["n"], "verdict": entry["verdict"],
            "why": entry["why"],
            "pairs": [{"a": p["a"], "b": p["b"], "agree": p.get("agree"),
                       "jvm_order": p["jvm"].get("order"), "jvm_ratio": p["jvm"].get("ratio"),
                       "c_order": p["c"].get("order"), "c_ratio": p["c"].get("ratio")}
                      for p in entry["pairs"]]}


def coverage(jvm, c):
    """Per operation (OPS order, those either side has): {op, jvm: sorted
    N the harness measured, c: sorted N the C renderings have (any of the
    subjects' c_backend), only_c, only_jvm, full: N of the full size the
    document says it left out (from its `n_full`; [] at full or when the
    document does not say)}."""
    out = []
    subj = subjects(jvm)
    full = (jvm or {}).get("n_full")
    full = full if isinstance(full, dict) else {}
    for op in OPS:
        jn = sorted({int(r["n"]) for r in (jvm or {}).get("results", []) if r["op"] == op})
        cn = set()
        for s in subj.values():
            b = s.get("c_backend")
            if not b:
                continue
            for key in {b, b.split("/", 1)[0]}:
                cn |= {int(k) for k in (c or {}).get(key, {}).get(op, {})}
        if not subj:     # no JVM document: what the C side has of the renderings
            for key in ("heapqueue", "heapqueue/roc=off", "heapqueue/roc=on",
                        "timerthread", "timerwheel"):
                cn |= {int(k) for k in (c or {}).get(key, {}).get(op, {})}
        cn = sorted(cn)
        if not jn and not cn:
            continue
        fn = [int(x) for x in full.get(op, []) if isinstance(x, (int, float))]
        out.append({"op": op, "jvm": jn, "c": cn,
                    "only_c": [n for n in cn if n not in jn],
                    "only_jvm": [n for n in jn if n not in cn],
                    "full": [n for n in fn if n not in jn]})
    return out


# ---- reading the C side ------------------------------------------------------

def c_from_results(res):
    """backend -> op -> N -> [ns/op per repetition] from a results
    directory's measurements (tbkit.results): each operation's C_WORKLOAD,
    series h2h (timeouts: series caller; timeouts' series h2h under the
    op name C_WHOLE), no error; heapqueue's roc=on/off become
    "heapqueue/roc=on" and "heapqueue/roc=off"."""
    out = {}
    for op, wl in list(C_WORKLOAD.items()) + [(C_WHOLE, "timeouts")]:
        for m in res.select(op=op.split("+")[0], workload=wl):
            want = C_SERIES if op == C_WHOLE else C_OP_SERIES.get(op, C_SERIES)
            if m.error or m.series != want or m.n is None:
                continue
            t = _clean(m.times) or _clean([m.median])
            if not t:
                continue
            key = m.backend + ("/roc=" + m.cfg["roc"] if "roc" in m.cfg else "")
            out.setdefault(key, {}).setdefault(op, {}).setdefault(int(m.n), []).extend(t)
    return out


_NAME = re.compile(r"^(?P<op>[a-z]+)/(?P<backend>[a-z0-9_]+)/(?P<workload>[a-z0-9_]+)/"
                   r"(?P<config>[^/]*)/N:(?P<n>\d+)")
_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def c_samples(micro, workload=None, series=None):
    """As c_from_results, from a micro.json document (Google Benchmark
    JSON) read as it is: the series' iterations of the workload (by
    default each op's in C_WORKLOAD, on its C_OP_SERIES)."""
    out = {}
    for b in micro.get("benchmarks", []):
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        m = _NAME.match(b.get("name", ""))
        if not m or m["workload"] != (workload or C_WORKLOAD.get(m["op"])):
            continue
        conf = dict(kv.split("=", 1) for kv in m["config"].split(",") if "=" in kv)
        if conf.get("series") != (series or C_OP_SERIES.get(m["op"], C_SERIES)):
            continue
        key = m["backend"] + ("/roc=" + conf["roc"] if "roc" in conf else "")
        t = float(b["real_time"]) * _UNIT.get(b.get("time_unit", "ns"), 1.0)
        out.setdefault(key, {}).setdefault(m["op"], {}).setdefault(int(m["n"]), []).append(t)
    return out


def absent_facts(res):
    """Why a results directory has no JVM results, as plain values (None
    when it has them): {"why": "run_note", "note": the run's own note
    (machine.json run.jvm: the JDK or Netty missing, the harness
    failed)}, {"why": "jvm_problem", "problem": jvm.json's problem (as
    tbkit.results words it)}, or {"why": "no_jvm_json"} (a run from
    before the JVM step, the quick profile, or one that stopped before
    it); tbkit.claimtext.jvm_absent_why says it."""
    if res.jvm:
        return None
    note = res.run.get("jvm")
    if isinstance(note, dict) and isinstance(note.get("why"), str):
        return {"why": "run_note", "note": note["why"]}
    if res.jvm_problem:
        return {"why": "jvm_problem", "problem": res.jvm_problem}
    return {"why": "no_jvm_json"}
