"""tbkit.claims — the classic claims (claims layer: reads an analysis,
renders nothing) about these timers, each checked against
the run's measurements, and the "which one to use" table.

A claim is fixed text (what the write-ups say, and where); its verdict is
computed here from the numbers tbkit.analysis gathered, by the rule printed
beside it.  A claim whose experiment is not in the results gets the verdict
"not tested", with what is missing.  Every comparison of two measured sets
is decided by the Mann-Whitney U test over their repetitions (tbkit.stats);
when the decisive one is not significant, or has too few repetitions to be
tested, the verdict is "undecided" and says which, with the p-value.  Where
a claim names an effect (one thing faster, or dearer, than another), the
effect must also be large enough to come back in a rerun (tbkit.stats.direction):
medians that miss that mark say the effect is not there, whatever the
p-value, so that a verdict does not wander with the p-value of an effect
near zero (two runs of a39ffc0 disagreed on three of eleven verdicts so).
"""

import math

from tbkit import analysis as AN
from tbkit import claimtext as T
from tbkit import front as F
from tbkit import jvm as J
from tbkit import libs as L
from tbkit import numbers as A
from tbkit import purgatory as PG
from tbkit import replaydata as RD
from tbkit import results as tb_results
from tbkit import stats as S
from tbkit import verdict as V
from tbkit.claimtable import (CLAIMS, HEAP_ARITY, KERNEL_LATENESS_BOUND, LEADER_WAKEUPS_MAX,
                              NETTY_EMPTY_SHARE, NETTY_IDLE_TICK_SHARE, NETTY_P50_TICKS,
                              NETTY_P99_TICKS)

# The verdicts' kinds (tbkit.verdict defines them; named here as the
# claims use them).
HOLDS, FAILS, PARTLY, UNTESTED, UNDECIDED = V.HOLDS, V.FAILS, V.PARTLY, V.UNTESTED, V.UNDECIDED


def _reps(m, counter=None):
    """Per-repetition values of m's time (or of one counter); the median
    alone when the file kept only aggregates (then too few to test)."""
    if counter is None:
        return list(m.times) if m.times else [m.median]
    vals = m.counters.get(counter)
    if vals:
        return list(vals)
    v = m.counter(counter)
    return [] if v is None else [v]


def _verdict(cid):
    """A new verdict of claim `cid`, "not tested" until decided, with the
    claim's metadata from CLAIMS."""
    m = CLAIMS[cid]
    return V.Verdict(cid, m.title, m.source, m.experiment, m.rule)


def _decided(c, kind, **facts):
    """Decides verdict `c`: its kind, and the facts (plain values) its
    renderer in tbkit.claimtext says it from.  Returns c."""
    c.kind = kind
    c.facts.update(facts)
    return c


def _case_of(c, d):
    """The index in c.cases of the case decision d recorded (by _decide):
    by the decision itself, so two comparisons that came out alike (the
    same p, effect and counts) are not taken for each other."""
    i = getattr(c, "_recorded", {}).get(id(d))
    if i is None or i >= len(c.cases):
        raise ValueError("claim %s recorded no case for this decision" % c.id)
    return i


def _undecided_at(c, d, **facts):
    """Decides verdict `c` undecided by the comparison d (one _decide
    recorded): the fact `decisive` is its case's index, for the renderer's
    tbkit.claimtext.undecided_text.  Returns c."""
    return _decided(c, UNDECIDED, decisive=_case_of(c, d), **facts)


def _decide(c, name, basis, a, b, factor=1.0, shift=0.0):
    """S.decide(a, b, factor, shift), recorded on verdict `c` as the case
    `name` (basis: the measure compared), and returned."""
    d = S.decide(a, b, factor, shift)
    thresholds = {"alpha": S.ALPHA}
    if factor != 1.0:
        thresholds["factor"] = factor
    if shift:
        thresholds["shift"] = shift
    c.cases.append(V.Case(name, basis, d.kind, d.p, d.ratio, (d.na, d.nb), thresholds,
                          {"median_a": _median(a), "median_b": _median(b)}))
    if not hasattr(c, "_recorded"):
        c._recorded = {}
    c._recorded[id(d)] = len(c.cases) - 1
    return d


def _direction(c, d, want, min_effect=S.MIN_EFFECT):
    """S.direction(d, want, min_effect), recorded on the case of `c` that
    decision d made (its direction and the minimum effect it was held
    to), and returned."""
    way = S.direction(d, want, min_effect)
    case = c.cases[_case_of(c, d)]
    case.values["direction_" + want] = way
    case.thresholds["min_effect"] = min_effect
    return way


def _median(xs):
    xs = sorted(x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x)))
    if not xs:
        return None
    k = len(xs) // 2
    return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2


def _main_workload(ctx, op, series="h2h"):
    # the heaps' worst case (workload worst) is never an operation's main
    # workload: it is judged on its own (heap_vs_wheel_growth)
    wls = [w for (o, s, w) in ctx.series if o == op and s == series and w != "worst"]
    if not wls:
        return None
    for w in ("uniform", op):
        if w in wls:
            return w
    return sorted(wls)[0]


def _lazy(ctx, backend):
    """Cancels lazily (TB_CAP_LAZY_CANCEL), by the capabilities the run's
    binary listed."""
    return "lazy_cancel" in (ctx.caps.get(backend) or ())


# ---- the registry -------------------------------------------------------------
#
# Every claim is one function below, registered by @claim with its stable
# id (the function's name, a row of CLAIMS) and the data it needs: the
# operations, and the series when only one counts.  A run that stopped
# before all their instances ran leaves the claim "not tested": a verdict
# on part of the data could be the opposite of the whole's.  A claim
# function returns a tbkit.verdict.Verdict (made by _verdict(id), decided
# by _set, its comparisons recorded as cases by _decide).

class Spec:
    """A registered claim: its id, what it needs, and its function."""

    def __init__(self, cid, ops, series, fn):
        self.id, self.ops, self.series, self.fn = cid, ops, series, fn


REGISTRY = {}


def claim(ops=(), series=None):
    """Registers the decorated claim function under its name (a row of
    CLAIMS), needing the operations `ops` (of `series` when given)."""
    def register(fn):
        if fn.__name__ in REGISTRY:
            raise ValueError("claim %s registered twice" % fn.__name__)
        if fn.__name__ not in CLAIMS:
            raise ValueError("claim %s has no row in CLAIMS" % fn.__name__)
        REGISTRY[fn.__name__] = Spec(fn.__name__, tuple(ops), series, fn)
        return fn
    return register


def ids():
    """The claims' ids, in the report's order (CLAIMS's)."""
    return list(CLAIMS)


def summary_ids():
    """(id, priority) of the claims the summary quotes among its findings,
    by CLAIMS's `summary` column."""
    return [(cid, m.summary) for cid, m in CLAIMS.items() if m.summary is not None]


def evaluate(an):
    """Every claim's verdict on the analysis `an`, in CLAIMS's order: a
    tbkit.verdict.Verdict per claim."""
    out = []
    for cid in CLAIMS:
        spec = REGISTRY[cid]
        c = spec.fn(an)
        _untested_if_partial(an, c, (spec.ops, spec.series))
        out.append(T.say(c))
    return out


def by_id(claims, cid):
    """The evaluated claim with id `cid` (a KeyError names an unknown id)."""
    for c in claims:
        if c.id == cid:
            return c
    raise KeyError("no claim %r; registered: %s" % (cid, ", ".join(ids())))


def _untested_if_partial(ctx, c, needs):
    ops, series = needs
    gone = ctx.res.missing_for(ops, series)
    if not gone:
        return
    _decided(c, UNTESTED, stopped_before=AN.missing_text(gone),
             decided=c.facts.get("decided", c.kind))


# ---- 1. heaps grow as log n, wheels stay flat --------------------------------

def _time_shape(m_lo, m_hi):
    """("grows" | "flat" | "undecided" | "too few", (ci low, ci high) or None):
    the 95 % interval of time(N_hi) / time(N_lo) against the thresholds."""
    ci = S.ratio_ci(_reps(m_hi), _reps(m_lo))
    if ci is None:
        return "too few", None
    if ci[0] >= A.GROW_RATIO:
        return "grows", ci
    if ci[1] < A.FLAT_RATIO:
        return "flat", ci
    return "undecided", ci


def _work_shape(m_lo, m_hi):
    """("grows" | "flat" | None, ratio) from the work counters (counted, so
    judged on their medians); None without counters."""
    lo, hi = A.work_total(m_lo), A.work_total(m_hi)
    if lo is None or hi is None:
        return None, None
    if lo == 0:
        return ("flat", 1.0) if hi == 0 else ("grows", math.inf)
    r = hi / lo
    return ("grows" if r >= A.GROW_RATIO else "flat"), r


def _part_verdict(heaps, wheels):
    """Verdict of one operation on one part (work or time): heaps and
    wheels are [(shape, low, high)] with low/high bounds of the ratio."""
    hs = [x[0] for x in heaps]
    ws = [x[0] for x in wheels]
    if all(h == "grows" for h in hs) and all(w == "flat" for w in ws):
        return HOLDS
    contradicted = any(h == "flat" for h in hs) or any(w == "grows" for w in ws)
    if not contradicted:
        return UNDECIDED
    # every heap grows, and more than any wheel: only the wheels' flatness fails
    if all(h == "grows" for h in hs) and min(x[1] for x in heaps) > max(x[2] for x in wheels):
        return PARTLY
    return FAILS


def _combine(verdicts):
    """One verdict from per-operation verdicts of one part.  An operation
    that fails outright decides the part when no other holds even in part:
    the claim is about every operation, and an undecided one could then
    only turn "does not hold" into "holds only in part", never into
    "holds", so a borderline operation does not hide a clear refutation
    (docs/notes/2026-12-02-bench-noise-and-reproducibility.md)."""
    vs = list(verdicts)
    if all(v == HOLDS for v in vs):
        return HOLDS
    if FAILS in vs and HOLDS not in vs and PARTLY not in vs:
        return FAILS
    if UNDECIDED in vs:
        return UNDECIDED
    return PARTLY


def _growth_case(ctx, pick, c):
    """One case of the growth claim: the lines of insert and cancel on the
    workload `pick(op)` chooses (None: the operation is not in this case),
    each line judged a case of verdict `c`.  Returns (tested ops, parts,
    time verdicts, work verdicts, whether no line had the repetitions to
    judge its time, the heaps that count no sift levels); a part is the
    facts of one operation's lines (source, workload, op, n_lo, n_hi, and
    its lines: label, the index of its case in c.cases, the work per
    operation at n_lo and n_hi)."""
    parts, tested = [], []
    time_v, work_v = [], []
    few_only = True
    uncounted = []
    for op in ("insert", "cancel"):
        wl = pick(op)
        if wl is None:
            continue
        heaps, wheels = [], []
        for label, ms in ctx.series.get((op, "h2h", wl), {}).items():
            ms = [m for m in ms if m.median]
            if len(ms) < 2:
                continue
            b = label.split(" ")[0]
            # a lazy heap's cancel only marks the task: it is no removal
            if op == "cancel" and ("roc=off" in label or (
                    ctx.is_heap(b) and _lazy(ctx, b) and "roc=on" not in label)):
                continue
            if ctx.is_heap(b):
                heaps.append((label, ms[0], ms[-1]))
            elif ctx.is_wheel(b):
                wheels.append((label, ms[0], ms[-1]))
        if not heaps or not wheels:
            continue
        tested.append(op)
        t_rows, w_rows, lines = {}, {}, []
        for label, lo, hi in heaps + wheels:
            shape, ci = _time_shape(lo, hi)
            few_only = few_only and shape == "too few"
            r = hi.median / lo.median
            t_rows[label] = (shape, ci[0] if ci else r, ci[1] if ci else r)
            wshape, wr = _work_shape(lo, hi)
            b = label.split(" ")[0]
            if wshape is not None and ctx.is_heap(b) and A.work_total(lo) == 0 \
                    and A.work_total(hi) == 0:
                # a heap that moves nothing at any N does not count its
                # sift levels (a counter a backend does not keep reads 0)
                uncounted.append(b)
                wshape = None
            if wshape is not None:
                w_rows[label] = (wshape, wr, wr)
            lines.append({"label": label, "case": len(c.cases),
                          "work_per_op_lo": A.work_total(lo), "work_per_op_hi": A.work_total(hi)})
            c.cases.append(V.Case(
                "%s %s %s" % (wl, op, label), "time(N = %s) / time(N = %s), %d %% interval"
                % (hi.n, lo.n, round(100 * (1 - S.ALPHA))), shape, None, r,
                (len(_reps(lo)), len(_reps(hi))),
                {"grow_ratio": A.GROW_RATIO, "flat_ratio": A.FLAT_RATIO, "alpha": S.ALPHA},
                {"ci": list(ci) if ci else None, "work_shape": wshape, "work_ratio": wr,
                 "n_lo": lo.n, "n_hi": hi.n}))
        hl = [l for l, _, _ in heaps]
        wl_ = [l for l, _, _ in wheels]
        time_v.append(_part_verdict([t_rows[l] for l in hl], [t_rows[l] for l in wl_]))
        if all(l in w_rows for l in hl + wl_):
            work_v.append(_part_verdict([w_rows[l] for l in hl], [w_rows[l] for l in wl_]))
        parts.append({"source": "micro", "workload": wl, "op": op,
                      "n_lo": min(lo.n for _, lo, _ in heaps + wheels),
                      "n_hi": max(hi.n for _, _, hi in heaps + wheels), "lines": lines})
    return tested, parts, time_v, work_v, few_only, uncounted


def _counts_worst(ctx, c):
    """The worst case on Valgrind's counts (counts.json, workload worst):
    (tested ops, parts, work verdicts); the structure's work per
    operation is counted, so judged as the micro's work counters are.
    Each line judged is a case of verdict `c`; a part is the facts of one
    operation's lines (source, workload, op, and its lines: label, the
    index of its case in c.cases, the instructions per operation at the
    case's n_lo and n_hi)."""
    rows = [r for r in (ctx.res.counts or []) if not r.get("error")
            and r.get("workload") == "worst" and r.get("op") in ("insert", "cancel")]
    tested, parts, work_v = [], [], []
    for op in ("insert", "cancel"):
        by = {}
        for r in rows:
            if r["op"] != op:
                continue
            b = r["backend"]
            roc = "roc=on" in r["config"]
            if op == "cancel" and ("roc=off" in r["config"] or (
                    ctx.is_heap(b) and _lazy(ctx, b) and not roc)):
                continue
            by.setdefault((b, roc), []).append(r)
        heaps, wheels, lines = [], [], []
        for (b, roc), rs in sorted(by.items()):
            rs.sort(key=lambda r: r["n"])
            if len(rs) < 2:
                continue
            lo, hi = rs[0], rs[-1]
            wlo = sum((lo.get("work") or {}).values())
            whi = sum((hi.get("work") or {}).values())
            if wlo == 0 and whi == 0 and ctx.is_heap(b):
                continue
            if wlo == 0:
                shape = ("flat", 1.0) if whi == 0 else ("grows", math.inf)
            else:
                shape = ("grows" if whi / wlo >= A.GROW_RATIO else "flat", whi / wlo)
            row = (shape[0], shape[1], shape[1])
            if not (ctx.is_heap(b) or ctx.is_wheel(b)):
                continue
            label = b + (" roc=on" if roc else "")
            lines.append({"label": label, "case": len(c.cases),
                          "instructions_per_op_lo": lo["instructions_per_op"],
                          "instructions_per_op_hi": hi["instructions_per_op"]})
            c.cases.append(V.Case(
                "worst %s %s, Valgrind counts" % (op, label),
                "work per operation (N = %s) / work (N = %s), counted" % (hi["n"], lo["n"]),
                shape[0], None, shape[1], (), {"grow_ratio": A.GROW_RATIO},
                {"work_lo": wlo, "work_hi": whi, "n_lo": lo["n"], "n_hi": hi["n"]}))
            if ctx.is_heap(b):
                heaps.append(row)
            else:
                wheels.append(row)
        if heaps and wheels:
            tested.append(op)
            work_v.append(_part_verdict(heaps, wheels))
            parts.append({"source": "valgrind_counts", "workload": "worst", "op": op,
                          "lines": lines})
    return tested, parts, work_v


@claim(("insert", "cancel"), "h2h")
def heap_vs_wheel_growth(ctx):
    c = _verdict("heap_vs_wheel_growth")
    avg = _growth_case(ctx, lambda op: _main_workload(ctx, op), c)
    worst = _growth_case(ctx, lambda op: "worst" if (op, "h2h", "worst") in ctx.series else None, c)
    cw_tested, cw_parts, cw_work = _counts_worst(ctx, c)
    if not avg[0] and not worst[0] and not cw_tested:
        return _decided(c, UNTESTED, why="no_results")
    # facts["parts"] are in the order the figures are said: the worst case
    # on the micro's lines, the average's, the worst on Valgrind's counts
    facts = {"parts": worst[1] + avg[1] + cw_parts, "worst": None, "average": None}
    kind = None
    if worst[0] or cw_tested:
        w_tested, _, w_time, w_work, w_few, _ = worst
        if w_work and len(w_work) == len(w_tested):
            wv, basis = _combine(w_work), "work"
        elif cw_tested:
            wv, basis = _combine(cw_work), "valgrind_counts"
        else:
            wv, basis = _combine(w_time), "time"
        # on work, the time is judged too (shown beside it; a time that
        # does not follow the count is not held against the claim)
        tv = _combine(w_time) if w_time and basis != "time" else None
        facts["worst"] = {"basis": basis, "kind": wv, "time_kind": tv,
                          "time_too_few": w_few}
        kind = wv
    if avg[0]:
        tested, _, time_v, work_v, few_only, uncounted = avg
        tv = _combine(time_v)
        wv = _combine(work_v) if len(work_v) == len(tested) else None
        # today's rule: work and time; time alone without work counters
        if wv is None or tv in (UNDECIDED, wv):
            akind = tv
        else:
            akind = PARTLY
        facts["average"] = {"kind": akind, "time_kind": tv, "work_kind": wv,
                            "time_too_few": few_only,
                            "heaps_uncounted": sorted(set(uncounted))}
        if kind is None:
            kind = akind
    return _decided(c, kind, **facts)


# ---- 2. Timer's single thread ------------------------------------------------

def _max_lateness(m):
    return m.counter("max")


@claim(("interference",))
def slow_task(ctx):
    c = _verdict("slow_task")
    ms = (getattr(ctx, "rt", {}) or {}).get("interference", {}).get("ms", [])
    single = [m for m in ms if m.backend == "timerthread"]
    pool = [m for m in ms if m.backend == "heapqueue"]
    if not single or not pool:
        return _decided(c, UNTESTED, why="no_results")

    def big(ms_):
        t = [m for m in ms_ if A._num_or(m.cfg.get("threads"), 1) > 1] or ms_
        return max(t, key=lambda m: A._num_or(m.cfg.get("threads"), 1))
    s, p = big(single), big(pool)
    sm, pm = _max_lateness(s), _max_lateness(p)
    if sm is None or pm is None:
        return _decided(c, UNTESTED, why="no_max_counter")
    # facts["rows"]: the single thread's entry, then the pool's; threads is
    # the entry's config text (None when its config names none)
    facts = {"rows": [{"backend": m.backend, "threads": m.cfg.get("threads"), "max_ns": mx}
                      for m, mx in ((s, sm), (p, pm))]}
    if pm <= 0 and sm > 0:
        return _decided(c, HOLDS, **facts)
    d = _decide(c, "timerthread against heapqueue", "max lateness of the fast tasks (ns), "
                "against CLEAR_FACTOR x the pool's", _reps(s, "max"), _reps(p, "max"),
                A.CLEAR_FACTOR)
    if d.kind == "greater":
        return _decided(c, HOLDS, **facts)
    if d.kind == "less":
        return _decided(c, FAILS, **facts)
    return _undecided_at(c, d, **facts)


# ---- 3. a failing task -------------------------------------------------------

@claim(("failure",))
def failing_task(ctx):
    c = _verdict("failing_task")
    ms = [m for m in ctx.res.select(op="failure") if not m.error]
    t = [m for m in ms if m.backend == "timerthread"]
    p = [m for m in ms if m.backend == "heapqueue"]
    if not t or not p:
        return _decided(c, UNTESTED, why="no_results")
    t, p = t[0], p[0]
    vals = {}
    for name, m in (("timerthread", t), ("heapqueue", p)):
        vals[name] = (m.counter("ran_after"), m.counter("after"), m.counter("accepted_after"))
    if any(v is None for tup in vals.values() for v in tup):
        return _decided(c, UNTESTED, why="missing_counters")
    tk = vals["timerthread"]
    pk = vals["heapqueue"]
    # c.cases are timerthread's, then heapqueue's: the renderer lists them so
    for name, v, dead in (("timerthread", tk, True), ("heapqueue", pk, False)):
        ok = (v[0] == 0 and not v[2]) if dead else (v[0] == v[1] and bool(v[2]))
        c.cases.append(V.Case(
            name, "tasks due after the failing one that ran; a new schedule accepted",
            "as claimed" if ok else "not as claimed", None, None, (),
            {"expected": "none ran, refused" if dead else "all ran, accepted"},
            {"ran_after": v[0], "after": v[1], "accepted_after": bool(v[2])}))
    if tk[0] == 0 and not tk[2] and pk[0] == pk[1] and pk[2]:
        return _decided(c, HOLDS)
    return _decided(c, FAILS)


# ---- 3b. Timer's deadlines on the wall clock ---------------------------------

def _delays(m):
    """The per-task delays (run time minus planned time, ns) of a wallstep
    entry, task 1 first; None for a task that did not run once."""
    n = int(m.counter("tasks") or 0)
    return [m.counter("delay_ns_%d" % k) for k in range(1, n + 1)]


@claim(("wallstep",))
def timer_wall_clock(ctx):
    c = _verdict("timer_wall_clock")
    ms = ctx.res.select(op="wallstep")
    got = {}
    for b in ("timerthread", "heapqueue"):
        for case in ("back", "forward"):
            m = [x for x in ms if x.backend == b and x.workload == case]
            got[(b, case)] = m[0] if m else None
    if got[("timerthread", "back")] is None or got[("heapqueue", "back")] is None:
        return _decided(c, UNTESTED, why="no_results",
                        predates_probe=bool(ctx.res.select(op="failure")))
    for b in ("timerthread", "heapqueue"):
        m = got[(b, "back")]
        if m.error:
            return _decided(c, UNTESTED, why="probe_failed", backend=b, error=m.error)
        if m.counter("step_ns") is None or not m.counter("tasks"):
            return _decided(c, UNTESTED, why="no_step_or_tasks")
    # facts["rows"]: every entry that ran, in the order of `got`
    rows = [{"backend": b, "case": case, "step_ns": m.counter("step_ns"),
             "wall_clock": m.counter("wall_clock"), "delays_ns": _delays(m)}
            for (b, case), m in got.items() if m is not None and not m.error]

    def within(delays, want, res):
        # a run is seen at the first clock step at or after it
        return all(v is not None and (v == want or want <= v < want + res) for v in delays)

    t, p = got[("timerthread", "back")], got[("heapqueue", "back")]
    late = -t.counter("step_ns")
    if late <= 0 or -p.counter("step_ns") != late:
        return _decided(c, UNTESTED, why="steps_differ", rows=rows)
    for (b, case), m in got.items():
        if m is None or m.error:
            continue
        want = (late if b == "timerthread" else 0) if case == "back" else None
        res_ns = m.counter("resolution_ns") or 0
        c.cases.append(V.Case(
            "%s %s" % (b, case), "delay of each task (run time minus planned time, ns)",
            "shown" if want is None else
            ("as claimed" if within(_delays(m), want, res_ns) else "not as claimed"),
            None, None, (), {"resolution_ns": res_ns, "expected_delay_ns": want},
            {"step_ns": m.counter("step_ns"), "delays_ns": _delays(m),
             "wall_clock": m.counter("wall_clock")}))
    # the expectations the back step broke, by code: timerthread's tasks
    # all delayed by the step, heapqueue's all on time
    missed = []
    if not within(_delays(t), late, t.counter("resolution_ns") or 0):
        missed.append("timerthread_delayed")
    if not within(_delays(p), 0, p.counter("resolution_ns") or 0):
        missed.append("heapqueue_on_time")
    facts = {"rows": rows, "step_back_ns": late, "missed": missed}
    if missed:
        return _decided(c, FAILS, **facts)
    return _decided(c, HOLDS, **facts)


# ---- 4. Netty: a tick every tick, up to a tick late --------------------------

@claim(("idle", "lateness"))
def netty_ticks(ctx):
    c = _verdict("netty_ticks")
    rt = getattr(ctx, "rt", {}) or {}
    idle = [m for m in rt.get("idle", []) if m.backend == "timerwheel"]
    light = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend == "timerwheel"
             and m.workload == "light" and m.cfg.get("slack", "default") == "default"]
    # Netty's own sleep, in whole milliseconds, is the default and is what
    # is judged; rows labelled sleep=exact wait to the nanosecond (D14) and
    # are shown beside it.  A row without the label is the default.
    late = [m for m in light if m.cfg.get("sleep", "ms") != "exact"]
    exact = [m for m in light if m.cfg.get("sleep") == "exact"]
    faithful = list(late)
    floor = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend == AN.primary_floor(ctx.floor)
             and m.cfg.get("slack", "default") == "default"]
    if not idle and not late:
        return _decided(c, UNTESTED, why="no_results")
    # facts: idle_cases, the indices in c.cases of the idle checks; lateness,
    # the judged rows in order (tested: their two cases' indices; not
    # tested: their samples); exact, the sleep=exact rows shown beside them
    idle_cases, idle_ok, late_ok, lateness, beside = [], [], [], [], []
    for m in idle:
        tick = tb_results.parse_duration_ns(m.cfg.get("tick"))
        t, e = m.counter("ticks_per_s"), m.counter("empty_ticks_per_s")
        if not tick or t is None or e is None:
            continue
        ok = t >= NETTY_IDLE_TICK_SHARE * 1e9 / tick and t > 0 and e / t >= NETTY_EMPTY_SHARE
        idle_ok.append(ok)
        idle_cases.append(len(c.cases))
        c.cases.append(V.Case(
            "timerwheel tick=%s, idle" % A.fmt_ns(tick), "ticks per second and their empty "
            "share", "yes" if ok else "no", None, None, (),
            {"idle_tick_share": NETTY_IDLE_TICK_SHARE, "empty_share": NETTY_EMPTY_SHARE},
            {"tick_ns": tick, "ticks_per_s": t, "empty_ticks_per_s": e}))
    fp50 = floor[0].counter("p50") if floor else None
    fp99 = floor[0].counter("p99") if floor else None
    tests = []
    for m in late:
        tick = tb_results.parse_duration_ns(m.cfg.get("tick"))
        p50, p99 = m.counter("p50"), m.counter("p99")
        if not tick or p50 is None or p99 is None or fp50 is None or fp99 is None:
            continue
        counts = (m.counter("count"), floor[0].counter("count"))
        if not all(S.pct_supported(n, 0.99) for n in counts):
            lateness.append({"tick_ns": tick, "tested": False, "samples_per_rep": counts[0],
                             "floor_samples_per_rep": counts[1],
                             "p99_min_samples": S.pct_min_samples(0.99)})
            continue
        # p50 more than a quarter tick over the floor's (the margin is in
        # the shift), p99 not significantly over a tick past the floor's
        where = "timerwheel tick=%s against the floor" % A.fmt_ns(tick)
        d99 = _decide(c, where + ", p99", "p99 lateness (ns) against the floor's plus "
                      "NETTY_P99_TICKS ticks", _reps(m, "p99"), _reps(floor[0], "p99"), 1.0,
                      NETTY_P99_TICKS * tick)
        d50 = _decide(c, where + ", p50", "p50 lateness (ns) against the floor's plus "
                      "NETTY_P50_TICKS ticks", _reps(m, "p50"), _reps(floor[0], "p50"), 1.0,
                      NETTY_P50_TICKS * tick)
        way = _direction(c, d50, "greater", 0.0)
        if d99.kind == "greater" or way == "no":
            ok = False
        elif way == "yes":
            ok = True
        else:
            ok = None
            tests.append(d50)
        late_ok.append(ok)
        lateness.append({"tick_ns": tick, "tested": True, "p50_ns": p50, "p99_ns": p99,
                         "p99_case": len(c.cases) - 2, "p50_case": len(c.cases) - 1})
    for m in exact:
        tick = tb_results.parse_duration_ns(m.cfg.get("tick"))
        twin = [x for x in faithful if x.cfg.get("tick") == m.cfg.get("tick")
                and x.series == m.series]
        p50, p99 = m.counter("p50"), m.counter("p99")
        if p50 is None or p99 is None:
            continue
        beside.append({"tick_ns": tick, "p50_ns": p50, "p99_ns": p99,
                       "ms_sleep_p50_ns": twin[0].counter("p50") if twin else None,
                       "ms_sleep_p99_ns": twin[0].counter("p99") if twin else None})
    facts = {"idle_cases": idle_cases, "lateness": lateness, "exact": beside,
             "floor_p50_ns": fp50, "floor_p99_ns": fp99}
    if not idle_ok and not late_ok:
        return _decided(c, UNTESTED, why="no_usable_rows", **facts)
    a = bool(idle_ok) and all(idle_ok)
    if None in late_ok and False not in late_ok:
        return _undecided_at(c, tests[0], idle_part=(HOLDS if a else FAILS if idle_ok
                                                     else None), **facts)
    b = bool(late_ok) and all(late_ok)
    if a and b:
        return _decided(c, HOLDS, **facts)
    if a:
        return _decided(c, PARTLY, part="idle", **facts)
    if b:
        return _decided(c, PARTLY, part="lateness", **facts)
    return _decided(c, FAILS, **facts)


# ---- 5. Kafka: no empty advances ---------------------------------------------

@claim(("idle",))
def kafka_no_empty_advances(ctx):
    c = _verdict("kafka_no_empty_advances")
    rt = getattr(ctx, "rt", {}) or {}
    idle = rt.get("idle", [])
    hw = [m for m in idle if m.backend == "hierwheel"]
    tw = [m for m in idle if m.backend == "timerwheel"]
    if not hw or not tw:
        return _decided(c, UNTESTED, why="no_results")
    pairs = []
    for h in hw:
        same = [t for t in tw if t.cfg.get("tick") == h.cfg.get("tick") and t.series == h.series] or \
               [t for t in tw if t.series == h.series]
        if same:
            pairs.append((h, same[0]))
    if not pairs:
        return _decided(c, UNTESTED, why="no_common_series")
    # facts["pairs"]: per series compared, the indices in c.cases of its
    # wake-ups test and of hierwheel's empty ticks check
    rows, oks, undecided = [], [], []
    for h, t in pairs:
        he, hwk, twk = h.counter("empty_ticks_per_s"), h.counter("wakeups_per_s"), t.counter("wakeups_per_s")
        if he is None or hwk is None or twk is None:
            continue
        d = _decide(c, "timerwheel against hierwheel, %s" % t.series, "wake-ups per second, "
                    "against CLEAR_FACTOR x hierwheel's", _reps(t, "wakeups_per_s"),
                    _reps(h, "wakeups_per_s"), A.CLEAR_FACTOR)
        c.cases.append(V.Case(
            "hierwheel empty ticks, %s" % h.series, "empty ticks per second (none is the claim)",
            "none" if he == 0 else "some", None, None, (), {"empty_ticks_per_s": 0},
            {"empty_ticks_per_s": he, "wakeups_per_s": hwk}))
        if he != 0 or d.kind == "less":
            ok = False
        elif d.kind == "greater" or (hwk == 0 and twk > 0 and he == 0):
            ok = True
        else:
            ok = None
            undecided.append(d)
        oks.append(ok)
        rows.append({"series": h.series, "timerwheel_wakeups_per_s": twk,
                     "wakeups_case": len(c.cases) - 2, "empty_case": len(c.cases) - 1,
                     "holds": ok})
    if not oks:
        return _decided(c, UNTESTED, why="no_counters")
    if None in oks and False not in oks:
        return _undecided_at(c, undecided[0], pairs=rows)
    if all(oks):
        return _decided(c, HOLDS, pairs=rows)
    if any(oks):
        return _decided(c, PARTLY, pairs=rows)
    return _decided(c, FAILS, pairs=rows)


# ---- 6. hierarchical levels --------------------------------------------------

def _at_largest(ctx, op, series, wl, backend):
    lines = ctx.series.get((op, series, wl), {})
    for label, ms in lines.items():
        if label.split(" ")[0] == backend and ms:
            return ms[-1]
    return None


@claim(("insert", "expire"), "h2h")
def hierarchy(ctx):
    c = _verdict("hierarchy")
    need = {}
    for op in ("insert", "expire"):
        for wl in ("short", "wide"):
            need[(op, wl)] = _at_largest(ctx, op, "h2h", wl, "hierwheel")
    missing = [("%s/%s" % k) for k, v in need.items() if v is None]
    if missing:
        return _decided(c, UNTESTED, why="no_results", missing=missing)
    ins_s, ins_w = need[("insert", "short")], need[("insert", "wide")]
    exp_s, exp_w = need[("expire", "short")], need[("expire", "wide")]
    dc = _decide(c, "insert, wide against short", "time per insert (ns), against CLEAR_FACTOR "
                 "x short's", _reps(ins_w), _reps(ins_s), A.CLEAR_FACTOR)
    de = _decide(c, "expire, wide against short", "time per expire (ns)", _reps(exp_w),
                 _reps(exp_s))
    covered = _direction(c, dc, "less", 0.0)   # the margin is in the factor
    cascades = _direction(c, de, "greater")
    tw = _at_largest(ctx, "expire", "h2h", "wide", "timerwheel")
    tws = _at_largest(ctx, "expire", "h2h", "short", "timerwheel")
    # c.cases[0] is the insert test, c.cases[1] the expire one
    facts = {"n": ins_w.n, "insert_short_ns": ins_s.median, "insert_wide_ns": ins_w.median,
             "expire_short_ns": exp_s.median, "expire_wide_ns": exp_w.median,
             "cascades_per_op_short": exp_s.counter("cascades_per_op"),
             "cascades_per_op_wide": exp_w.counter("cascades_per_op"),
             "timerwheel_expire_ns": ({"short": tws.median, "wide": tw.median}
                                      if tw and tws else None)}
    for d, v in ((dc, covered), (de, cascades)):
        if v == "undecided":
            return _undecided_at(c, d, **facts)
    covered, cascades = covered == "yes", cascades == "yes"
    if covered and cascades:
        return _decided(c, HOLDS, **facts)
    if covered:
        return _decided(c, PARTLY, part="range", **facts)
    if cascades:
        return _decided(c, PARTLY, part="cascade_cost", **facts)
    return _decided(c, FAILS, **facts)


# ---- 7. leader-follower ------------------------------------------------------

@claim(("workers",))
def leader_follower(ctx):
    c = _verdict("leader_follower")
    pairs = (getattr(ctx, "rt", {}) or {}).get("workers", [])
    if not pairs:
        return _decided(c, UNTESTED, why="no_results")
    # facts["rows"]: per backend, its counts and the index in c.cases of
    # its test by CLEAR_FACTOR (the plain test's is the next)
    rows, kinds, undecided = [], [], []
    for b, on, off in pairs:
        a, z = on.counter("timed_waits_per_task"), off.counter("timed_waits_per_task")
        if a is None or z is None:
            continue
        r = z / a if a > 0 else (math.inf if z > 0 else 1.0)
        von, voff = _reps(on, "timed_waits_per_task"), _reps(off, "timed_waits_per_task")
        at = len(c.cases)
        d2 = _decide(c, "%s leader=off against leader=on, by CLEAR_FACTOR" % b,
                     "timed waits per task", voff, von, A.CLEAR_FACTOR)
        d1 = _decide(c, "%s leader=off against leader=on" % b, "timed waits per task", voff, von)
        if d2.kind == "greater":
            kinds.append(HOLDS)
        elif d1.kind == "greater" and d2.kind == "less":
            kinds.append(PARTLY)
        elif d1.kind == "less" or (d1.kind == "undecided" and d2.kind == "less"
                                   and d1.p is not None and d1.p >= 0.5):
            kinds.append(FAILS)
        else:
            kinds.append(UNDECIDED)
            undecided.append(d2 if not d2.significant else d1)
        rows.append({"backend": b, "leader_on_timed_waits_per_task": a,
                     "leader_off_timed_waits_per_task": z,
                     "off_over_on": r if math.isfinite(r) else None,
                     "factor_case": at, "verdict": kinds[-1]})
    if not kinds:
        return _decided(c, UNTESTED, why="no_counters")
    if UNDECIDED in kinds:
        return _undecided_at(c, undecided[0], rows=rows)
    if all(k == HOLDS for k in kinds):
        return _decided(c, HOLDS, rows=rows)
    if all(k in (HOLDS, PARTLY) for k in kinds):
        return _decided(c, PARTLY, rows=rows)
    return _decided(c, FAILS, rows=rows)


# ---- 8. heaps for few, wheels for many -----------------------------------------

def _envelope(ctx, op, series, wl, pick):
    """Per N, the fastest line among backends `pick` accepts:
    {N: (time, label, measurement)}."""
    out = {}
    for label, ms in ctx.series.get((op, series, wl), {}).items():
        if not pick(label.split(" ")[0]):
            continue
        for m in ms:
            if m.n not in out or m.median < out[m.n][0]:
                out[m.n] = (m.median, label, m)
    return out


@claim(("timeouts",), "h2h")
def crossover(ctx):
    c = _verdict("crossover")
    wl = _main_workload(ctx, "timeouts")
    if wl is None:
        return _decided(c, UNTESTED, why="no_results")
    heap = _envelope(ctx, "timeouts", "h2h", wl, ctx.is_heap)
    wheel = _envelope(ctx, "timeouts", "h2h", wl, ctx.is_wheel)
    ns = sorted(set(heap) & set(wheel))
    if len(ns) < 2:
        return _decided(c, UNTESTED, why="too_few_n", workload=wl)
    lo, hi = ns[0], ns[-1]
    x = A.crossover([(n, heap[n][0]) for n in ns], [(n, wheel[n][0]) for n in ns])
    d_lo = _decide(c, "N = %d, heap against wheel" % lo, "time per operation (ns)",
                   _reps(heap[lo][2]), _reps(wheel[lo][2]))
    d_hi = _decide(c, "N = %d, wheel against heap" % hi, "time per operation (ns)",
                   _reps(wheel[hi][2]), _reps(heap[hi][2]))
    # the fastest heap and wheel at each end; c.cases[0] is the smallest
    # N's test, c.cases[1] the largest's
    facts = {"workload": wl,
             "ends": [{"n": n, "heap": heap[n][1], "heap_ns": heap[n][0],
                       "wheel": wheel[n][1], "wheel_ns": wheel[n][0]} for n in (lo, hi)],
             "crossover_n": round(x[1]) if x and x[0] == "cross" else None}
    # the opposite of the claim, significantly, at either end settles it
    if d_lo.kind == "greater" and d_hi.kind == "greater":
        return _decided(c, FAILS, why="opposite_at_both_ends", **facts)
    if d_lo.kind == "greater":
        return _decided(c, FAILS, why="wheel_faster_at_smallest", **facts)
    if d_hi.kind == "greater":
        return _decided(c, FAILS, why="heap_faster_at_largest", **facts)
    for d in (d_lo, d_hi):
        if not d.significant:
            return _undecided_at(c, d, **facts)
    # both ends significant and neither against the claim: it holds
    return _decided(c, HOLDS, **facts)


# ---- 9. a 4-ary heap beats a binary one at large N ----------------------------



def _at_n(ms, n):
    for m in ms:
        if m.n == n:
            return m
    return None


def _pairs_at_largest(c, lines_a, lines_b):
    """Every pair of lines (label, measurements) from the two groups that
    share an N, compared at the largest shared N by a Mann-Whitney U test
    over the repetitions: (label_a, label_b, shared Ns, m_a, m_b, decision),
    each decision recorded on verdict `c`."""
    for la, mas in lines_a:
        for lb, mbs in lines_b:
            common = sorted({m.n for m in mas} & {m.n for m in mbs})
            if not common:
                continue
            a, b = _at_n(mas, common[-1]), _at_n(mbs, common[-1])
            yield la, lb, common, a, b, _decide(
                c, "%s against %s, N = %d" % (la, lb, common[-1]), "time per operation (ns)",
                _reps(a), _reps(b))


@claim(("expire",), "h2h")
def four_ary_heap(ctx):
    c = _verdict("four_ary_heap")
    wl = _main_workload(ctx, "expire")
    lines = ctx.series.get(("expire", "h2h", wl), {}) if wl else {}
    quads, bins = [], []
    for label, ms in lines.items():
        ms = [m for m in ms if m.median]
        arity = HEAP_ARITY.get(label.split(" ")[0])
        if ms and arity == 4:
            quads.append((label, ms))
        elif ms and arity == 2:
            bins.append((label, ms))
    if not quads or not bins:
        return _decided(c, UNTESTED, why="no_results")
    # facts["pairs"][i] is the pair of c.cases[i]
    pairs, best = [], {}
    for ql, bl, common, q, b, d in _pairs_at_largest(c, quads, bins):
        n = common[-1]
        # each 4-ary line is judged against the fastest binary heap at the
        # largest N it shares with one
        if ql not in best or (n, -b.median) > (best[ql][0], -best[ql][1].median):
            best[ql] = (n, b, bl, d, len(pairs))
        lo = common[0]
        ql_ = _at_n(dict(quads)[ql], lo) if lo != n else None
        bl_ = _at_n(dict(bins)[bl], lo) if lo != n else None
        pairs.append({"quad": ql, "binary": bl, "n": n, "quad_ns": q.median,
                      "binary_ns": b.median,
                      "quad_sift_levels_per_op": q.counter("sift_levels_per_op"),
                      "binary_sift_levels_per_op": b.counter("sift_levels_per_op"),
                      "smallest_n": lo if lo != n else None,
                      "quad_ns_at_smallest_n": ql_.median if ql_ else None,
                      "binary_ns_at_smallest_n": bl_.median if bl_ else None})
    if not best:
        return _decided(c, UNTESTED, why="no_common_n")
    facts = {"pairs": pairs, "valgrind": None}
    # Valgrind's counts (counts.json), deterministic: shown beside the times
    counted = [r for r in (ctx.res.counts or []) if not r.get("error") and r.get("op") == "expire"
               and HEAP_ARITY.get(r.get("backend")) and "roc=on" not in r.get("config", "")]
    if counted:
        n = max(r["n"] for r in counted)
        rows = sorted((r for r in counted if r["n"] == n),
                      key=lambda r: (-HEAP_ARITY[r["backend"]], r["backend"]))
        facts["valgrind"] = {"n": n, "rows": [
            {"backend": r["backend"], "instructions_per_op": r["instructions_per_op"],
             "d1_misses_per_op": r["d1_misses_per_op"]} for r in rows]}
    votes = {ql: _direction(c, d, "less") for ql, (n, b, bl, d, i) in sorted(best.items())}
    # each 4-ary line's judgement: against which binary heap (its pair's
    # index in facts["pairs"] and c.cases) and whether it is faster
    facts["judged"] = [{"quad": ql, "binary": best[ql][2], "pair": best[ql][4],
                        "faster": way} for ql, way in votes.items()]
    yes = [ql for ql, v in votes.items() if v == "yes"]
    no = [ql for ql, v in votes.items() if v == "no"]
    if len(yes) == len(votes):
        return _decided(c, HOLDS, **facts)
    if len(no) == len(votes):
        return _decided(c, FAILS, **facts)
    if yes and no:
        return _decided(c, PARTLY, **facts)
    undecided = [best[ql][3] for ql, v in votes.items() if v == "undecided"]
    return _undecided_at(c, undecided[0], **facts)


# ---- 10. lazy deletion: cheap cancel, memory kept until cleaned --------------------

@claim(("cancel", "timeouts"), "h2h")
def lazy_deletion(ctx):
    c = _verdict("lazy_deletion")
    wl = _main_workload(ctx, "cancel")
    lines = ctx.series.get(("cancel", "h2h", wl), {}) if wl else {}
    lazy, eager = [], []
    for label, ms in lines.items():
        ms = [m for m in ms if m.median]
        b = label.split(" ")[0]
        if not ms or not ctx.is_heap(b):
            continue
        # the remove-on-cancel setting of the run says it; otherwise the caps
        roc = ms[0].cfg.get("roc")
        if roc == "on" or (roc != "off" and not _lazy(ctx, b)):
            eager.append((label, ms))
        else:
            lazy.append((label, ms))
    twl = _main_workload(ctx, "timeouts")
    held = {}
    for label, ms in (ctx.series.get(("timeouts", "h2h", twl), {}) if twl else {}).items():
        b = label.split(" ")[0]
        ms = [m for m in ms if m.counter("zombies_per_n") is not None]
        if ms and any(label_.split(" ")[0] == b for label_, _ in lazy):
            held[b] = ms[-1]
    if not lazy or not eager:
        return _decided(c, UNTESTED, why="no_cancel_results")
    if not held:
        return _decided(c, UNTESTED, why="no_zombie_counters")
    # facts["pairs"][i] is the pair of c.cases[i]; facts["held"][j] the
    # lazy heap of c.cases[len(pairs) + j]
    kinds, pairs, undecided = [], [], []
    for ll, el, common, lm, em, d in _pairs_at_largest(c, lazy, eager):
        kinds.append(d.kind)
        if not d.significant:
            undecided.append(d)
        pairs.append({"lazy": ll, "removing": el, "n": common[-1], "lazy_ns": lm.median,
                      "removing_ns": em.median})
    if not kinds:
        return _decided(c, UNTESTED, why="no_common_n")
    kept, rows = [], []
    for b, m in sorted(held.items()):
        z = m.counter("zombies_per_n")
        pend = m.counter("pending_per_n")
        bl, bp = m.counter("bytes_per_live"), m.counter("bytes_per_pending")
        kept.append(z > 0)
        c.cases.append(V.Case(
            "%s zombies, timeouts N = %s" % (b, m.n), "cancelled records still held per N "
            "(more than none is the claim's memory half)", "held" if z > 0 else "none", None,
            None, (), {"zombies_per_n": 0},
            {"zombies_per_n": z, "pending_per_n": pend, "bytes_per_live": bl,
             "bytes_per_pending": bp}))
        rows.append({"backend": b, "n": m.n})
    facts = {"pairs": pairs, "held": rows}
    cheap = all(k == "less" for k in kinds)
    slower = any(k == "greater" for k in kinds)
    keeps = all(kept)
    if undecided and not slower:
        if keeps:
            return _undecided_at(c, undecided[0], part="cancel", **facts)
        return _decided(c, PARTLY, why="no_zombies_cancel_undecided",
                        decisive=_case_of(c, undecided[0]), **facts)
    if cheap and keeps:
        return _decided(c, HOLDS, **facts)
    if cheap:
        return _decided(c, PARTLY, why="no_zombies", **facts)
    if keeps and not slower:
        return _decided(c, PARTLY, why="not_cheaper", **facts)
    if keeps:
        return _decided(c, PARTLY, why="slower", **facts)
    return _decided(c, FAILS, **facts)


# ---- 6b. the kernel's non-cascading wheel -------------------------------------



@claim(("expire",), "h2h")
def non_cascading(ctx, backend="kernelwheel"):
    c = _verdict("non_cascading")
    short = _at_largest(ctx, "expire", "h2h", "short", backend)
    wide = _at_largest(ctx, "expire", "h2h", "wide", backend)
    traces = []
    for t in getattr(ctx.res, "replay", None) or []:
        for b in t.get("backends", []):
            if b.get("backend") == backend and b.get("name") == backend \
                    and b.get("beyond_tick_frac") is not None:
                traces.append((t["name"], b["beyond_tick_frac"]))
    missing = []
    if short is None or wide is None:
        missing.append("no_short_and_wide")
    if not traces:
        missing.append("no_replayed_lateness")
    if missing:
        return _decided(c, UNTESTED, why="missing", missing=missing, backend=backend)
    d = _decide(c, "%s expire, wide against short" % backend, "time per expire (ns), against "
                "CLEAR_FACTOR x short's", _reps(wide), _reps(short), A.CLEAR_FACTOR)
    worst = max(f for _, f in traces)
    for name, f in traces:
        c.cases.append(V.Case(
            "%s lateness, trace %s" % (backend, name), "largest lateness beyond one tick, as a "
            "share of the delay", "within" if f <= KERNEL_LATENESS_BOUND else "beyond", None,
            None, (), {"kernel_lateness_bound": KERNEL_LATENESS_BOUND},
            {"beyond_tick_frac": f}))
    hw = _at_largest(ctx, "expire", "h2h", "wide", "hierwheel")
    hs = _at_largest(ctx, "expire", "h2h", "short", "hierwheel")
    # c.cases[0] is the cost's test, c.cases[1 + i] facts["traces"][i]'s lateness
    facts = {"backend": backend, "n": wide.n, "short_ns": short.median,
             "wide_ns": wide.median, "short_ticks_per_op": short.counter("ticks_per_op"),
             "wide_ticks_per_op": wide.counter("ticks_per_op"),
             "hierwheel_short_ns": hs.median if hw and hs else None,
             "hierwheel_wide_ns": hw.median if hw and hs else None,
             "traces": [name for name, _ in traces], "worst_beyond_tick_frac": worst}
    if not d.significant:
        return _undecided_at(c, d, part="flat_cost", **facts)
    flat = d.kind == "less"
    bounded = worst <= KERNEL_LATENESS_BOUND
    if flat and bounded:
        return _decided(c, HOLDS, **facts)
    if flat:
        return _decided(c, PARTLY, why="late", **facts)
    if bounded:
        return _decided(c, PARTLY, why="not_flat", **facts)
    return _decided(c, FAILS, **facts)


# ---- 12. wheels for timeouts, a tree for precise timers ----------------------

# A trace imported by tools/perf2trace.py names its stream in a comment.
_STREAM = ("source: perf script of ", ", stream ")


def kernel_stream(t):
    """"timer" or "hrtimer" for a trace imported from the kernel's
    tracepoints (perf2trace's comment), else None."""
    for line in t.get("comments", []):
        line = line.lstrip("#").strip()   # as written: "# source: ..."
        if line.startswith(_STREAM[0]) and _STREAM[1] in line:
            rest = line.split(_STREAM[1], 1)[1]
            stream = rest.split(" ", 1)[0]
            if stream in ("timer", "hrtimer"):
                return stream
    return None


@claim()
def tree_and_wheel(ctx, tree="hrtree"):
    c = _verdict("tree_and_wheel")
    streams = {}
    for t in getattr(ctx.res, "replay", None) or []:
        k = kernel_stream(t)
        if k and k not in streams and isinstance(t.get("raw"), dict):
            streams[k] = t
    missing = [s for s in ("timer", "hrtimer") if s not in streams]
    if missing:
        return _decided(c, UNTESTED, why="no_stream", missing_streams=missing)
    for k, t in streams.items():
        if not RD.has_budgets(t["raw"]):
            return _decided(c, UNTESTED, why="no_budgets", stream=k)
    ticked = {b["backend"] for t in streams.values() for b in t["backends"] if b.get("ticked")}
    parts, undecided = [], None
    # timeouts: a wheel recommended
    tl = streams["timer"]
    v = RD.budget_verdict(tl["raw"])
    cands = {x["name"]: x for x in RD.candidates(tl["raw"])}
    wheel_rec = [n for n in v["recommended"] if n in cands and cands[n].get("backend") in ticked]
    other_rec = [n for n in v["recommended"] if n not in wheel_rec]
    mostly_cancelled = tl["cancel_ratio"] > 0.5
    facts = {"timer_trace": tl["name"], "timer_cancel_ratio": tl["cancel_ratio"],
             "timer_mostly_cancelled": mostly_cancelled, "recommended": list(v["recommended"]),
             "recommended_wheels": wheel_rec}
    if mostly_cancelled and wheel_rec and other_rec:
        # a wheel tied with a heap or the tree: the stream does not choose
        return _decided(c, UNDECIDED, why="timeouts_tied", tied_with=other_rec, **facts)
    parts.append(mostly_cancelled and bool(wheel_rec))
    # precise timers: the tree keeps the budgets, no cheaper wheel does
    hr = streams["hrtimer"]
    raw = hr["raw"]
    cands = RD.candidates(raw)
    by = {x["name"]: x for x in cands}
    t_entry = by.get(tree)
    mostly_expire = hr["cancel_ratio"] < 0.5
    if t_entry is None:
        return _decided(c, UNTESTED, why="tree_not_replayed", tree=tree)
    tree_kept = (t_entry.get("lateness") or {}).get("beyond_budget", 0) == 0
    main_wheels = [b for b in raw.get("backends", []) if b.get("backend") in ticked
                   and b["name"] in by]
    wheels_missed = [b["name"] for b in main_wheels
                     if (b.get("lateness") or {}).get("beyond_budget", 0) > 0]
    kept_wheels = [x for x in cands if (x.get("backend") in ticked)
                   and (x.get("lateness") or {}).get("beyond_budget", 0) == 0]
    for x in [t_entry] + main_wheels:
        beyond = (x.get("lateness") or {}).get("beyond_budget", 0)
        c.cases.append(V.Case(
            "%s budgets, hrtimer stream" % x["name"], "timers run later than their budget",
            "kept" if beyond == 0 else "missed", None, None, (), {"beyond_budget": 0},
            {"beyond_budget": beyond, "cancel_ratio": hr["cancel_ratio"]}))
    cheaper = []
    for w in kept_wheels:
        # the tree dearer than this wheel, significantly and by MIN_EFFECT
        d = _decide(c, "%s against %s" % (t_entry.get("name"), w.get("name")),
                    "CPU time per replayed event (ns)",
                    RD.per_event(t_entry).get("reps") or [RD.per_event(t_entry)["median"]],
                    RD.per_event(w).get("reps") or [RD.per_event(w)["median"]])
        way = _direction(c, d, "greater")
        if way == "yes":
            cheaper.append(w["name"])
        elif way == "undecided":
            undecided = undecided or d
    facts.update({"hrtimer_trace": hr["name"], "hrtimer_cancel_ratio": hr["cancel_ratio"],
                  "hrtimer_mostly_expire": mostly_expire, "tree": tree,
                  "tree_kept_budgets": tree_kept, "common_tick_wheels": [
                      b["name"] for b in main_wheels],
                  "common_tick_wheels_missed": wheels_missed,
                  "wheels_within_budget": [x["name"] for x in kept_wheels],
                  "wheels_cheaper_than_tree": cheaper})
    precise = mostly_expire and tree_kept and len(wheels_missed) == len(main_wheels) \
        and bool(main_wheels) and not cheaper
    if undecided is not None and mostly_expire and tree_kept and not cheaper:
        return _undecided_at(c, undecided, part="hrtimer_cost", **facts)
    parts.append(precise)
    if all(parts):
        return _decided(c, HOLDS, **facts)
    if parts[0]:
        why = ("cheaper_wheel" if cheaper else "tree_missed" if not tree_kept
               else "mostly_cancelled" if not mostly_expire else "common_tick_wheel_kept")
        return _decided(c, PARTLY, part="timeouts", why=why, **facts)
    if parts[1]:
        why = "no_wheel_recommended" if mostly_cancelled else "mostly_expire"
        return _decided(c, PARTLY, part="precise", why=why, **facts)
    return _decided(c, FAILS, **facts)


# ---- the originals themselves: the JVM's ranking against the C renderings ----

@claim(("insert", "cancel", "timeouts", "expire"), "h2h")
def jvm_ranking(ctx):
    c = _verdict("jvm_ranking")
    absent = J.absent_facts(ctx.res)
    if absent:
        return _decided(c, UNTESTED, why="not_measured", absent=absent)
    per_op = J.ranking(ctx.res.jvm, J.c_from_results(ctx.res))

    def side(x):
        return {"order": x.get("order"), "p": x.get("p"), "p_holm": x.get("p_adj"),
                "ratio": x.get("ratio"), "ci95": list(x["ci"]) if x.get("ci") else None}
    for e in per_op:
        for pr in e["pairs"]:
            c.cases.append(V.Case(
                "%s %s against %s, N = %s" % (e["op"], pr["a"], pr["b"], e["n"]),
                "time per operation: the JVM original's order against the C rendering's",
                pr["agree"], pr["jvm"].get("p_adj"), pr["jvm"].get("ratio"),
                tuple(pr["jvm"].get("n") or ()),
                {"min_effect": S.MIN_EFFECT, "alpha": S.ALPHA, "correction": "holm"},
                {"jvm": side(pr["jvm"]), "c": side(pr["c"])}))
    ctl = J.control(ctx.res.jvm)
    for r in ctl:
        c.cases.append(V.Case(
            "control: stpe insert against stpe-roc insert, N = %s" % r["n"],
            "the same schedule() on both policies: must come out the same",
            "same" if r["ok"] else r["order"], r.get("p_adj"), r.get("ratio"),
            tuple(r.get("n_reps") or ()),
            {"min_effect": S.MIN_EFFECT, "alpha": S.ALPHA, "correction": "holm"}, {}))
    facts = {"ops": [J.op_facts(e) for e in per_op],
             "control_bias": [{"n": r["n"], "ratio": r["ratio"]} for r in ctl if not r["ok"]]}
    if facts["control_bias"]:
        return _decided(c, UNDECIDED, why="control_failed", **facts)
    kinds = [e["verdict"] for e in per_op]
    held = [e["op"] for e in per_op if e["verdict"] == J.HOLDS]
    failed = [e["op"] for e in per_op if e["verdict"] == J.FAILS]
    if failed and held:
        return _decided(c, PARTLY, **facts)
    if failed:
        return _decided(c, FAILS, **facts)
    if J.UNDECIDED in kinds:
        return _decided(c, UNDECIDED, **facts)
    if held:
        return _decided(c, HOLDS, **facts)
    return _decided(c, UNTESTED, why="no_operation_tested", **facts)


@claim(ops=L.JUDGED)
def rendering_vs_library(ctx):
    c = _verdict("rendering_vs_library")
    res = ctx.res
    if not L.ran(res):
        return _decided(c, UNTESTED, why="no_libs_json")
    pairs = L.rendering_pairs(res)
    if not pairs:
        return _decided(c, UNTESTED, why="no_common_n", not_installed=L.missing(res))
    for p in pairs:
        d = p["decision"]
        c.cases.append(V.Case(
            "%s %s against %s, N = %s" % (p["op"], p["rendering"], p["library"], p["n"]),
            "time per operation: the rendering over the library of its structure (%s)"
            % p["family"], {"yes": "costs more", "no": "no more",
                            "undecided": "undecided"}[p["way"]],
            d.p, d.ratio, (d.na, d.nb),
            {"min_effect": S.MIN_EFFECT, "alpha": S.ALPHA},
            {"median_rendering": p["r"]["median"] if p["r"] else None,
             "median_library": p["l"]["median"] if p["l"] else None}))
    # facts["pairs"][i] is the pair of c.cases[i]
    facts = {"pairs": [{"op": p["op"], "n": p["n"], "rendering": p["rendering"],
                        "library": p["library"], "way": p["way"]} for p in pairs]}
    if any(p["way"] == "yes" for p in pairs):
        return _decided(c, FAILS, **facts)
    if any(p["way"] == "undecided" for p in pairs):
        return _decided(c, UNDECIDED, **facts)
    return _decided(c, HOLDS, **facts)


# ---- issue 41: the purgatory experiment ------------------------------------------

_PAIR_KIND = {PG.BELOW: HOLDS, PG.ABOVE: FAILS}
_FREQ_KIND = {PG.WORSE: HOLDS, PG.NOT_WORSE: FAILS}


def _iv_values(iv):
    if iv is None:
        return None
    return {"lo": iv.lo, "hi": iv.hi, "lo_wide": iv.lo_wide, "top": iv.top,
            "limited": iv.limited, "mixed": [list(x) for x in iv.mixed]}


@claim()
def purgatory_saturation(ctx):
    c = _verdict("purgatory_saturation")
    play = PG.load(ctx.res)
    if not play.ran():
        return _decided(c, UNTESTED, why="not_run",
                        absent=[play.absent[n] for n in sorted(play.absent)])
    pairs, freq = PG.claim_cases(play)
    rule = {"sat_rate_shortfall": PG.SAT_RATE_SHORTFALL,
            "sat_lag_growth_ns": PG.SAT_LAG_GROWTH_NS,
            "sat_expiry_shortfall": PG.SAT_EXPIRY_SHORTFALL, "drain_ns": PG.DRAIN_NS,
            "sat_lateness_growth_ns": PG.SAT_LATENESS_GROWTH_NS,
            "sat_min_window": PG.SAT_MIN_WINDOW}
    for p in pairs:
        c.cases.append(V.Case(
            p["name"], "saturation rate interval (target requests/s): the delay queue's "
            "against the wheel's", p["decision"], thresholds=dict(rule),
            values={"delay_queue": _iv_values(p["dq"]), "wheel": _iv_values(p["wheel"]),
                    "why": p["why"], "why_facts": PG.why_facts(p)}))
    for f in freq:
        c.cases.append(V.Case(
            f["name"], "the delay queue's saturation interval in many against few, "
            "beside the wheel's; failing that, its CPU per request many over few "
            "divided by the wheel's, at the highest rate both ran unsaturated",
            f["decision"], effect=f["ratio"],
            thresholds=dict(rule, frequent_cpu_worse=PG.FREQUENT_CPU_WORSE,
                            frequent_cpu_same=PG.FREQUENT_CPU_SAME),
            values={"few": _iv_values(f["few"]), "many": _iv_values(f["many"]),
                    "wheel_few": _iv_values(f["wheel_few"]),
                    "wheel_many": _iv_values(f["wheel_many"]),
                    "basis": f["basis"], "rate": f["rate"], "cpu_ns_few": f["cpu_few"],
                    "cpu_ns_many": f["cpu_many"], "wheel_cpu_ns_few": f["wheel_cpu_few"],
                    "wheel_cpu_ns_many": f["wheel_cpu_many"], "why": f["why"],
                    "why_facts": PG.why_facts(f)}))

    def kind(cases, table):
        ks = [table.get(x["decision"], UNDECIDED) for x in cases
              if x["decision"] != PG.NOT_TESTED]
        return _combine(ks) if ks else UNTESTED
    k_pairs, k_freq = kind(pairs, _PAIR_KIND), kind(freq, _FREQ_KIND)
    # c.cases are the pairs' cases (facts["pairs"], in order), then the
    # frequent ones; the indices below are into c.cases
    cases = pairs + freq
    facts = {"pairs": [{"side": p["side"], "shape": p["shape"], "dq_subject": p["dq_subject"],
                        "wheel_subject": p["wheel_subject"]} for p in pairs],
             "saturates_first": k_pairs, "frequent_worse": k_freq,
             "not_tested": [i for i, x in enumerate(cases) if x["decision"] == PG.NOT_TESTED]}
    if k_pairs == UNTESTED:
        return _decided(c, UNTESTED, why="no_pair_tested", **facts)
    # the saturation part is the claim; the frequent part qualifies it, so
    # it can narrow a verdict the first part reached, never make one
    if k_pairs in (FAILS, UNDECIDED) or k_freq == UNTESTED:
        overall = k_pairs
    else:
        overall = _combine([k_pairs, k_freq])
    facts["open"] = [i for i, x in enumerate(cases) if x["decision"] != PG.NOT_TESTED
                     and x["decision"] not in (_PAIR_KIND if i < len(pairs) else _FREQ_KIND)]
    facts["sides_not_tested"] = [
        side for side, _, _, _ in PG.PAIRS
        if all(x["decision"] == PG.NOT_TESTED for x in cases if x["side"] == side)]
    return _decided(c, overall, **facts)


# ---- issue 29: single runners, an STPE of one thread, heap maintenance, signal() --

def _threads(m):
    return A._num_or(m.cfg.get("threads"), 1)


def _pool_of(ms):
    """heapqueue's interference run with the most threads requested (more
    than one), the pool every single runner is held against; or None."""
    pool = [m for m in ms if m.backend == "heapqueue" and _threads(m) > 1
            and m.counter("max") is not None]
    return max(pool, key=_threads) if pool else None


@claim(("interference",))
def single_runner_delay(ctx):
    c = _verdict("single_runner_delay")
    inter = (getattr(ctx, "rt", {}) or {}).get("interference", {})
    ms = inter.get("ms", [])
    labels = inter.get("labels", {})
    pool = _pool_of(ms)
    single = [m for m in ms if m.backend not in ctx.floor and _threads(m) == 1
              and m.counter("max") is not None]
    if pool is None or not single:
        return _decided(c, UNTESTED, why="no_results")
    # facts["rows"][i] is the single runner of c.cases[i]
    facts = {"pool": {"backend": pool.backend, "threads": pool.cfg.get("threads"),
                      "max_ns": pool.counter("max")},
             "rows": []}
    yes, no, undecided = [], [], []
    for m in single:
        label = labels.get(id(m), m.backend)
        i = len(c.cases)
        d = _decide(c, "%s against the pool" % label, "max lateness of the fast tasks (ns), "
                    "against CLEAR_FACTOR x the pool's", _reps(m, "max"), _reps(pool, "max"),
                    A.CLEAR_FACTOR)
        if d.kind == "greater":
            yes.append(label)
        elif d.kind == "less":
            no.append(label)
        else:
            undecided.append(i)
        facts["rows"].append({"label": label, "max_ns": m.counter("max")})
    facts["delayed"], facts["not_delayed"] = yes, no
    if undecided and not no:
        # the index itself: two runners alike in p, effect and n would
        # make _case_of's search name the later one
        return _decided(c, UNDECIDED, decisive=undecided[0], **facts)
    if not no:
        return _decided(c, HOLDS, **facts)
    if yes:
        return _decided(c, PARTLY, **facts)
    return _decided(c, FAILS, **facts)


def _same(c, name, basis, a, b):
    """"same" when the medians of the two sets of repetitions are within
    S.MIN_EFFECT of each other either way, "differ" when a significantly
    differs by more, else "undecided"; with the Decision, recorded on
    verdict `c` as case `name`."""
    d = _decide(c, name, basis, a, b)
    up, down = _direction(c, d, "greater"), _direction(c, d, "less")
    if up == "yes" or down == "yes":
        return "differ", d
    if up == "no" and down == "no":
        return "same", d
    return "undecided", d


@claim(("interference", "failing"))
def stpe_one_thread_like_timer(ctx):
    c = _verdict("stpe_one_thread_like_timer")
    rt = getattr(ctx, "rt", {}) or {}
    inter = rt.get("interference", {}).get("ms", [])

    def one(ms, b):
        got = [m for m in ms if m.backend == b and _threads(m) == 1 and m.series in ("h2h", "-")]
        got = got or [m for m in ms if m.backend == b and _threads(m) == 1]
        return got[0] if got else None

    s_h, s_t = one(inter, "heapqueue"), one(inter, "timerthread")
    fail = rt.get("failing", [])
    f_h, f_t = one(fail, "heapqueue"), one(fail, "timerthread")
    if s_h is None or s_t is None or f_h is None or f_t is None:
        missing = [w for w, ok in (("interference", s_h and s_t), ("failing", f_h and f_t))
                   if not ok]
        return _decided(c, UNTESTED, why="no_results", missing=missing)
    hm, tm = s_h.counter("max"), s_t.counter("max")
    keys = ("ran_after", "after", "accepted_after", "failed")
    fh = [f_h.counter(k) for k in keys]
    ft = [f_t.counter(k) for k in keys]
    if hm is None or tm is None or None in fh or None in ft:
        return _decided(c, UNTESTED, why="counters_missing")
    same, d = _same(c, "slow task, heapqueue threads=1 against timerthread",
                    "max lateness of the fast tasks (ns)", _reps(s_h, "max"), _reps(s_t, "max"))
    differs = bool(fh[0] == fh[1] and fh[2] and ft[0] == 0 and not ft[2])
    facts = {"slow": {"heapqueue_max_ns": hm, "timerthread_max_ns": tm},
             "failing": [dict(zip(("subject",) + keys, (name,) + tuple(v)))
                         for name, v in (("heapqueue threads=1", fh), ("timerthread", ft))],
             "slow_task": same, "failing_differs": differs}
    if same == "undecided":
        return _undecided_at(c, d, **facts)
    alike = same == "same"
    if alike and differs:
        return _decided(c, HOLDS, **facts)
    if alike or differs:
        return _decided(c, PARTLY, **facts)
    return _decided(c, FAILS, **facts)


@claim(("lateness",))
def heap_maintenance_precision(ctx):
    c = _verdict("heap_maintenance_precision")
    rt = getattr(ctx, "rt", {}) or {}
    ms = rt.get("lateness", {}).get("ms", [])

    def pick(b, wl):
        got = [m for m in ms if m.backend == b and m.workload == wl
               and m.cfg.get("slack", "default") == "default" and m.counter("p99") is not None]
        return got[0] if got else None

    light, loaded = pick("heapqueue", "light"), pick("heapqueue", "loaded")
    floor = pick(AN.primary_floor(ctx.floor), "light") if ctx.floor else None
    if light is None or loaded is None or floor is None:
        return _decided(c, UNTESTED, why="no_results")
    fr = _reps(floor, "p99")
    spread = max(fr) - min(fr)
    # c.cases[0]: loaded against light plus the floor's spread (the
    # decisive one); c.cases[1]: loaded against light alone
    d = _decide(c, "heapqueue loaded against light, beyond the floor's spread",
                "p99 lateness (ns), against light's plus the floor's spread", _reps(loaded, "p99"),
                _reps(light, "p99"), 1.0, spread)
    plain = _decide(c, "heapqueue loaded against light", "p99 lateness (ns)",
                    _reps(loaded, "p99"), _reps(light, "p99"))
    above = _direction(c, plain, "greater")
    facts = {"pending": loaded.n or None,
             "light_p99_ns": light.counter("p99"), "loaded_p99_ns": loaded.counter("p99"),
             "light_p50_ns": light.counter("p50"), "loaded_p50_ns": loaded.counter("p50"),
             "floor_p99_ns": floor.counter("p99"), "floor_spread_ns": spread,
             "floor_reps": len(fr)}
    if d.kind == "greater":
        return _decided(c, HOLDS, **facts)
    if above == "no":
        return _decided(c, FAILS, why="not_above_light", **facts)
    if d.kind == "too few":
        # case 0 by its index: with no spread the two cases are alike in
        # p, effect and n, and _case_of would name the other
        return _decided(c, UNDECIDED, decisive=0, **facts)
    return _decided(c, UNDECIDED, why="within_floor_spread", **facts)


@claim(("workers",))
def leader_wakes_one(ctx):
    c = _verdict("leader_wakes_one")
    pairs = [(b, on, off) for b, on, off in (getattr(ctx, "rt", {}) or {}).get("workers", [])
             if on.counter("wakeups_per_task") is not None
             and off.counter("wakeups_per_task") is not None]
    if not pairs:
        return _decided(c, UNTESTED, why="no_results")
    # facts["rows"][i] is the pair of c.cases[i]
    facts = {"wakeups_per_task_max": LEADER_WAKEUPS_MAX, "rows": []}
    kinds, undecided = [], []
    for b, on, off in pairs:
        won, woff = on.counter("wakeups_per_task"), off.counter("wakeups_per_task")
        i = len(c.cases)
        d = _decide(c, "%s leader=on against leader=off" % b, "wake-ups per task",
                    _reps(on, "wakeups_per_task"), _reps(off, "wakeups_per_task"))
        fewer = _direction(c, d, "less")
        if won > LEADER_WAKEUPS_MAX or fewer == "no":
            kinds.append(FAILS)
        elif fewer == "yes":
            kinds.append(HOLDS)
        else:
            kinds.append(UNDECIDED)
            undecided.append(i)
        facts["rows"].append({
            "backend": b, "threads": on.cfg.get("threads"), "verdict": kinds[-1],
            "wakeups_per_task_leader": won, "wakeups_per_task_no_leader": woff,
            "timed_waits_per_task_leader": on.counter("timed_waits_per_task"),
            "timed_waits_per_task_no_leader": off.counter("timed_waits_per_task")})
    if FAILS in kinds:
        return _decided(c, FAILS, **facts)
    if UNDECIDED in kinds:
        # the index itself: pairs alike in p, effect and n would make
        # _case_of's search name the later one
        return _decided(c, UNDECIDED, decisive=undecided[0], **facts)
    return _decided(c, HOLDS, **facts)


# ---- which one to use ----------------------------------------------------------

def _best_per_backend(ctx, op, series, wl, n):
    """{backend: (time, label)} at N = n: each backend's fastest line."""
    out = {}
    for label, ms in ctx.series.get((op, series, wl), {}).items():
        b = label.split(" ")[0]
        for m in ms:
            if m.n == n and (b not in out or m.median < out[b][0]):
                out[b] = (m.median, label)
    return out


def tied_with_best(cands):
    """The labels of the sorted (value, label) candidates within
    S.MIN_EFFECT of the best, lower being better: closer than two runs of
    one commit differ (tbkit.stats), so no order among them is a finding."""
    if not cands or cands[0][0] is None:
        return []
    best = cands[0][0]
    return [cands[0][1]] + [l for v, l in cands[1:]
                            if v is not None and v <= best + abs(best) * S.MIN_EFFECT]


# The rows of "Which one to use" a run can decide, in the order they are
# listed; tbkit.claimtext.PICK_WORDS says each (its name, what it compares).
PICKS = ("few", "many", "timeouts", "periodic", "wide", "punctual", "interference",
         "idle", "memory")


def _pick(key, cands, unit, ctx=None, n=None, **params):
    """cands: [(value, label)], lower is better.  The decided row (a
    tbkit.verdict.Pick): the candidates best first, the best label and
    every label tied with it; with ctx, whether a recommended label is a
    granular wheel (the row then says its lateness).  None without a
    candidate."""
    cands = sorted(c for c in cands if c[0] is not None)
    if not cands:
        return None
    tied = tied_with_best(cands)
    return V.Pick(key, n, cands, tied, unit, caveat=ctx is not None,
                  granular=ctx is not None and AN.is_granular(ctx, tied), params=params)


def _partial(ctx, gaps, key, ops, series=None, workload=None):
    """True (and (key, what is missing) added to `gaps`, for Limitations)
    when instances of a row's evidence are missing: that row is not given
    rather than decided on part of it."""
    gone = ctx.res.missing_for(ops, series, workload)
    if gone:
        gaps.append((key, gone))
    return bool(gone)


def recommend(ctx):
    """(The decided rows of "Which one to use" (tbkit.verdict.Pick, in
    PICKS's order), [(key, missing instances)]): a row per workload whose
    evidence is whole, and the rows left out for what is missing."""
    gaps = []
    rows = []

    def keep(p, key, *partial):
        if p and not _partial(ctx, gaps, key, *partial):
            rows.append(p)

    ops = [o for o in ("insert", "cancel", "expire", "timeouts") if _main_workload(ctx, o)]
    if ops:
        all_n = sorted({m.n for o in ops for ms in ctx.series.get((o, "h2h", _main_workload(ctx, o)), {}).values()
                        for m in ms})
        for n, key in ((all_n[0] if all_n else None, "few"),
                       (all_n[-1] if all_n else None, "many")):
            if n is None:
                continue
            per = {}
            for o in ops:
                for b, (t, l) in _best_per_backend(ctx, o, "h2h", _main_workload(ctx, o), n).items():
                    per.setdefault(b, []).append(t)
            cands = [(A.geomean(v), b) for b, v in per.items() if len(v) == len(ops)]
            keep(_pick(key, cands, "ns", ctx, n, ops=ops), key, ops, "h2h")
    for op in ("timeouts", "periodic"):
        wl = _main_workload(ctx, op)
        if not wl:
            continue
        ns = sorted({m.n for ms in ctx.series.get((op, "h2h", wl), {}).values() for m in ms})
        if not ns:
            continue
        per = _best_per_backend(ctx, op, "h2h", wl, ns[-1])
        keep(_pick(op, [(t, l) for t, l in per.values()], "ns", ctx, ns[-1], op=op),
             op, (op,), "h2h", wl)
    wl = "wide"
    if ("expire", "h2h", wl) in ctx.series:
        ns = sorted({m.n for ms in ctx.series[("expire", "h2h", wl)].values() for m in ms})
        if ns:
            per = _best_per_backend(ctx, "expire", "h2h", wl, ns[-1])
            keep(_pick("wide", [(t, l) for t, l in per.values()], "ns", ctx, ns[-1]),
                 "wide", ("expire",), "h2h", wl)
    rt = getattr(ctx, "rt", {}) or {}
    lat = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend not in ctx.floor
           and m.workload == "light" and m.cfg.get("slack", "default") == "default"]
    # the highest percentile every candidate has enough samples for
    key = next((k for k in ("p99", "p90", "p50")
                if lat and all(S.pct_supported(m.counter("count"), AN.PCT_Q[k])
                               for m in lat)), None)
    if lat and key:
        labels = rt["lateness"]["labels"]
        keep(_pick("punctual", [(m.counter(key), labels[id(m)]) for m in lat], "ns",
                   pct=key), "punctual", ("lateness",))
    inter = [m for m in rt.get("interference", {}).get("ms", []) if m.backend not in ctx.floor]
    if inter:
        labels = rt["interference"]["labels"]
        keep(_pick("interference", [(m.counter("max"), labels[id(m)]) for m in inter], "ns"),
             "interference", ("interference",))
    idle = [m for m in rt.get("idle", []) if m.backend not in ctx.floor]
    if idle:
        labels = rt.get("idle_labels", {})
        keep(_pick("idle", [(m.counter("wakeups_per_s"), labels.get(id(m), m.backend))
                            for m in idle], "count"), "idle", ("idle",))
    if getattr(ctx, "memory_main", None):
        n, wl, cands = ctx.memory_main
        keep(_pick("memory", cands, "bytes", n=n, workload=wl),
             "memory", ("fill", "timeouts"), None, wl)
    return rows, gaps


def recommend_replay(ctx):
    """A tbkit.verdict.ReplayPick per replayed trace: its verdict (budgets
    kept), every backend's cost, and the cheapest candidate in each
    precision class."""
    out = []
    for t in ctx.res.replay:
        names, _ = RD.verdict_text(t)
        v = RD.precision_verdict(t)
        cands = sorted(t["backends"], key=lambda b: RD.per_event(b)["median"])
        classes = []
        pcands = F.replay_candidates(t, RD.per_event)
        if any(c["sweep"] for c in pcands):
            classes = [(label, cnames, best["max_ns"], best["name"], best["cost"])
                       for label, cnames, best in F.cheapest_by_class(pcands)
                       if best is not None and label != "any"]
        out.append(V.ReplayPick(
            RD.trace_label(t), t["events"], t["cancel_ratio"], list(names),
            v.get("kind") if v else RD.TIED, len(names) > 1, AN.is_granular(ctx, names),
            RD.precision_facts(t, names), RD.budgeted(t),
            [(b["name"], RD.per_event(b)["median"]) for b in cands], classes))
    return out


# Every row of CLAIMS has its function: a row without one would be listed
# and never decided.
_unregistered = [cid for cid in CLAIMS if cid not in REGISTRY]
if _unregistered:
    raise ImportError("claims without a function: %s" % ", ".join(_unregistered))
