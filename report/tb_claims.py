"""tb_claims — the classic claims about these timers, each checked against
the run's measurements, and the "which one to use" table.

A claim is fixed text (what the write-ups say, and where); its verdict is
computed here from the numbers the sections gathered, by the rule printed
beside it.  A claim whose experiment is not in the results gets the verdict
"not tested", with what is missing.
"""

import math

import tb_analysis as A
import tb_experiments
import tb_results
from tb_doc import Code

HOLDS = "holds"
FAILS = "does not hold"
PARTLY = "holds only in part"
UNTESTED = "not tested"


def _claim(claim, source, experiment, rule):
    return {"claim": claim, "source": source, "experiment": experiment,
            "rule": rule, "measured": ("",), "verdict": UNTESTED,
            "verdict_kind": UNTESTED}


def _set(c, kind, verdict, measured):
    c["verdict_kind"] = kind
    c["verdict"] = verdict
    c["measured"] = measured if isinstance(measured, tuple) else (measured,)
    return c


def _join(items, sep="; "):
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(sep)
        out.extend(it if isinstance(it, tuple) else (it,))
    return tuple(out)


def _main_workload(ctx, op, series="h2h"):
    wls = [w for (o, s, w) in ctx.series if o == op and s == series]
    if not wls:
        return None
    for w in ("uniform", op):
        if w in wls:
            return w
    return sorted(wls)[0]


def _lazy(ctx, backend):
    c = ctx.caps.get(backend)
    if c is not None:
        return "lazy_cancel" in c
    return backend == "timerthread"


def evaluate(ctx):
    return [heap_vs_wheel_growth(ctx), slow_task(ctx), failing_task(ctx),
            netty_ticks(ctx), kafka_no_empty_advances(ctx), hierarchy(ctx),
            leader_follower(ctx), crossover(ctx)]


# ---- 1. heaps grow as log n, wheels stay flat --------------------------------

def heap_vs_wheel_growth(ctx):
    c = _claim("Heap insert and removal grow as log n while a timing wheel's stay constant",
               "Varghese & Lauck, \"Hashed and Hierarchical Timing Wheels\" (SOSP 1987); "
               "Netty HashedWheelTimer Javadoc",
               "micro-benchmarks insert and cancel, series h2h, main workload",
               "holds for an operation when every heap line grows (time at the largest N "
               "at least %s the time at the smallest) and every wheel line stays flat "
               "(under %s); holds only in part when every heap grows more than every wheel "
               "but a wheel is not flat; removal is a cancel that takes the task out of the heap "
               "(remove-on-cancel on), since a lazy cancel only marks it"
               % (A.fmt_ratio(A.GROW_RATIO), A.fmt_ratio(A.FLAT_RATIO)))
    parts, held, tested, steeper = [], [], [], []
    for op in ("insert", "cancel"):
        wl = _main_workload(ctx, op)
        if wl is None:
            continue
        heaps, wheels = [], []
        for (o, s, w, label), g in ctx.growth.items():
            if o != op or s != "h2h" or w != wl or not g.ok:
                continue
            b = label.split(" ")[0]
            if op == "cancel" and ("roc=off" in label or (_lazy(ctx, b) and "roc=on" not in label)):
                continue
            if ctx.is_heap(b):
                heaps.append((label, g))
            elif ctx.is_wheel(b):
                wheels.append((label, g))
        if not heaps or not wheels:
            continue
        tested.append(op)
        ok = all(g.grows() for _, g in heaps) and all(g.flat() for _, g in wheels)
        if ok:
            held.append(op)
        elif min(g.ratio for _, g in heaps) > max(g.ratio for _, g in wheels):
            steeper.append(op)
        n_lo = min(g.n_lo for _, g in heaps + wheels)
        n_hi = max(g.n_hi for _, g in heaps + wheels)
        parts.append(("%s, N %s to %s: " % (op, A.fmt_n(n_lo), A.fmt_n(n_hi)),) +
                     tuple(_join([(Code(l), " %s" % A.fmt_ratio(g.ratio)) for l, g in heaps + wheels], ", ")))
    if not tested:
        return _set(c, UNTESTED, UNTESTED + ": no insert or cancel results for both a heap and a wheel",
                    "no data")
    measured = _join(parts)
    if len(held) == len(tested) == 2:
        return _set(c, HOLDS, HOLDS, measured)
    if held:
        return _set(c, PARTLY, "holds only for %s" % " and ".join(held), measured)
    if steeper:
        return _set(c, PARTLY, "holds only in part: for %s every heap grows more than every "
                    "wheel, but the wheels do not stay flat" % " and ".join(steeper), measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 2. Timer's single thread ------------------------------------------------

def _max_lateness(m):
    return m.counter("max")


def slow_task(ctx):
    c = _claim("A slow task in java.util.Timer delays every other task; a pool does not",
               "java.util.Timer Javadoc (\"timer tasks should complete quickly\"); "
               "Goetz et al., Java Concurrency in Practice, 6.2.5",
               "interference",
               "holds when the single-thread backend's maximum lateness of the fast "
               "tasks, with a pool size of more than one requested, is at least %s "
               "that of the pool backend with the same request" % A.fmt_ratio(A.CLEAR_FACTOR))
    ms = (getattr(ctx, "rt", {}) or {}).get("interference", {}).get("ms", [])
    single = [m for m in ms if m.backend == "timerthread"]
    pool = [m for m in ms if m.backend == "heapqueue"]
    if not single or not pool:
        return _set(c, UNTESTED, UNTESTED + ": no interference results for both timerthread and heapqueue",
                    "no data")

    def big(ms_):
        t = [m for m in ms_ if A._num_or(m.cfg.get("threads"), 1) > 1] or ms_
        return max(t, key=lambda m: A._num_or(m.cfg.get("threads"), 1))
    s, p = big(single), big(pool)
    sm, pm = _max_lateness(s), _max_lateness(p)
    if sm is None or pm is None:
        return _set(c, UNTESTED, UNTESTED + ": the interference results have no max counter", "no data")
    measured = (Code("timerthread threads=%s" % s.cfg.get("threads", "?")),
                ": max lateness %s; " % A.fmt_ns(sm),
                Code("heapqueue threads=%s" % p.cfg.get("threads", "?")),
                ": %s (%s)" % (A.fmt_ns(pm), A.fmt_ratio(sm / pm) if pm > 0 else "n/a"))
    if pm <= 0 or sm >= A.CLEAR_FACTOR * pm:
        return _set(c, HOLDS, HOLDS, measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 3. a failing task -------------------------------------------------------

def failing_task(ctx):
    c = _claim("A task that throws kills a java.util.Timer, but not a thread pool",
               "java.util.Timer Javadoc; Goetz et al., Java Concurrency in Practice, 6.2.5 "
               "(\"thread leakage\")",
               "failure (probe, virtual clock)",
               "holds when, after one failing task, the Timer backend runs none of the "
               "tasks due after it and refuses new ones, while the pool backend runs all "
               "of them and accepts new ones")
    ms = [m for m in ctx.res.select(op="failure") if not m.error]
    t = [m for m in ms if m.backend == "timerthread"]
    p = [m for m in ms if m.backend == "heapqueue"]
    if not t or not p:
        return _set(c, UNTESTED, UNTESTED + ": no failure results for both timerthread and heapqueue",
                    "no data")
    t, p = t[0], p[0]
    vals = {}
    for name, m in (("timerthread", t), ("heapqueue", p)):
        vals[name] = (m.counter("ran_after"), m.counter("after"), m.counter("accepted_after"))
    if any(v is None for tup in vals.values() for v in tup):
        return _set(c, UNTESTED, UNTESTED + ": the failure results lack ran_after / after / accepted_after",
                    "no data")
    measured = _join([(Code(n), ": %s of the %s tasks due after the failing one ran, a new schedule was %s"
                       % (A.fmt_num(v[0]), A.fmt_num(v[1]), "accepted" if v[2] else "refused"))
                      for n, v in vals.items()])
    tk = vals["timerthread"]
    pk = vals["heapqueue"]
    if tk[0] == 0 and not tk[2] and pk[0] == pk[1] and pk[2]:
        return _set(c, HOLDS, HOLDS, measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 4. Netty: a tick every tick, up to a tick late --------------------------

def netty_ticks(ctx):
    c = _claim("Netty's HashedWheelTimer wakes every tick even when idle, and fires up to a tick late",
               "Netty HashedWheelTimer Javadoc (\"does not execute the scheduled TimerTask on time\")",
               "idle; lateness (light load)",
               "the idle part holds when the wheel's ticks per second are at least half of "
               "one per tick and most of them are empty; the lateness part holds when its "
               "p99 lateness is at most one tick plus the floor's p99 and its p50 is at "
               "least a quarter of a tick more than the floor's p50")
    rt = getattr(ctx, "rt", {}) or {}
    idle = [m for m in rt.get("idle", []) if m.backend == "timerwheel"]
    late = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend == "timerwheel"
            and m.workload == "light" and m.cfg.get("slack", "default") == "default"]
    floor = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend == tb_experiments.primary_floor(ctx)
             and m.cfg.get("slack", "default") == "default"]
    if not idle and not late:
        return _set(c, UNTESTED, UNTESTED + ": no idle or lateness results for timerwheel", "no data")
    parts, idle_ok, late_ok = [], [], []
    for m in idle:
        tick = tb_results.parse_duration_ns(m.cfg.get("tick"))
        t, e = m.counter("ticks_per_s"), m.counter("empty_ticks_per_s")
        if not tick or t is None or e is None:
            continue
        ok = t >= 0.5 * 1e9 / tick and t > 0 and e / t >= 0.5
        idle_ok.append(ok)
        parts.append(("idle, tick %s: %s ticks/s, %s empty" % (A.fmt_ns(tick), A.fmt_num(t),
                                                             A.fmt_pct(e / t if t else None)),))
    fp50 = floor[0].counter("p50") if floor else None
    fp99 = floor[0].counter("p99") if floor else None
    for m in late:
        tick = tb_results.parse_duration_ns(m.cfg.get("tick"))
        p50, p99 = m.counter("p50"), m.counter("p99")
        if not tick or p50 is None or p99 is None or fp50 is None or fp99 is None:
            continue
        ok = p99 <= tick + fp99 and p50 >= fp50 + tick / 4
        late_ok.append(ok)
        parts.append(("lateness, tick %s: p50 %s, p99 %s (floor p50 %s, p99 %s)" % (
            A.fmt_ns(tick), A.fmt_ns(p50), A.fmt_ns(p99), A.fmt_ns(fp50), A.fmt_ns(fp99)),))
    if not idle_ok and not late_ok:
        return _set(c, UNTESTED, UNTESTED + ": the timerwheel results lack tick, ticks or percentile data",
                    _join(parts) if parts else "no data")
    measured = _join(parts)
    a = bool(idle_ok) and all(idle_ok)
    b = bool(late_ok) and all(late_ok)
    if a and b:
        return _set(c, HOLDS, HOLDS, measured)
    if a:
        return _set(c, PARTLY, "holds only for the idle ticking" + (
            "" if late_ok else " (lateness not measured)"), measured)
    if b:
        return _set(c, PARTLY, "holds only for the lateness" + (
            "" if idle_ok else " (idle not measured)"), measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 5. Kafka: no empty advances ---------------------------------------------

def kafka_no_empty_advances(ctx):
    c = _claim("Kafka's delay queue of buckets removes the empty clock advances of a ticking wheel",
               "Yasuhiro Matsuda, \"Apache Kafka, Purgatory, and Hierarchical Timing Wheels\" "
               "(Confluent blog, 2015)",
               "idle",
               "holds when the hierarchical wheel has no empty ticks while idle and wakes at "
               "most 1/%s as often as the ticking wheel at the same tick"
               % A.fmt_num(A.CLEAR_FACTOR))
    rt = getattr(ctx, "rt", {}) or {}
    idle = rt.get("idle", [])
    hw = [m for m in idle if m.backend == "hierwheel"]
    tw = [m for m in idle if m.backend == "timerwheel"]
    if not hw or not tw:
        return _set(c, UNTESTED, UNTESTED + ": no idle results for both hierwheel and timerwheel", "no data")
    pairs = []
    for h in hw:
        same = [t for t in tw if t.cfg.get("tick") == h.cfg.get("tick") and t.series == h.series] or \
               [t for t in tw if t.series == h.series]
        if same:
            pairs.append((h, same[0]))
    if not pairs:
        return _set(c, UNTESTED, UNTESTED + ": no hierwheel and timerwheel idle results in the same series",
                    "no data")
    parts, oks = [], []
    for h, t in pairs:
        he, hwk, twk = h.counter("empty_ticks_per_s"), h.counter("wakeups_per_s"), t.counter("wakeups_per_s")
        if he is None or hwk is None or twk is None:
            continue
        ok = he == 0 and hwk * A.CLEAR_FACTOR <= twk
        oks.append(ok)
        parts.append(("series %s: " % h.series, Code("hierwheel"),
                      " %s empty ticks/s, %s wake-ups/s; " % (A.fmt_num(he), A.fmt_num(hwk)),
                      Code("timerwheel"), " %s wake-ups/s" % A.fmt_num(twk)))
    if not oks:
        return _set(c, UNTESTED, UNTESTED + ": the idle results lack wake-up counters", "no data")
    measured = _join(parts)
    if all(oks):
        return _set(c, HOLDS, HOLDS, measured)
    if any(oks):
        return _set(c, PARTLY, "holds only in some series", measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 6. hierarchical levels --------------------------------------------------

def _at_largest(ctx, op, series, wl, backend):
    lines = ctx.series.get((op, series, wl), {})
    for label, ms in lines.items():
        if label.split(" ")[0] == backend and ms:
            return ms[-1]
    return None


def hierarchy(ctx):
    c = _claim("Hierarchical levels cover long ranges with few buckets, at the price of cascades",
               "Varghese & Lauck 1987 (scheme 7); Matsuda, Confluent blog, 2015",
               "micro-benchmarks insert and expire, workloads short and wide, series h2h",
               "holds when the hierarchical wheel's insert on the wide workload costs under "
               "%s its insert on the short one at the largest N (the range is covered), "
               "and its expire per task on wide costs more than on short beyond the noise "
               "(the cascades)" % A.fmt_ratio(A.CLEAR_FACTOR))
    need = {}
    for op in ("insert", "expire"):
        for wl in ("short", "wide"):
            need[(op, wl)] = _at_largest(ctx, op, "h2h", wl, "hierwheel")
    missing = [("%s/%s" % k) for k, v in need.items() if v is None]
    if missing:
        return _set(c, UNTESTED, UNTESTED + ": no hierwheel results for " + ", ".join(missing)
                    + " (the wide workload runs in the standard and full profiles)", "no data")
    ins_s, ins_w = need[("insert", "short")], need[("insert", "wide")]
    exp_s, exp_w = need[("expire", "short")], need[("expire", "wide")]
    ins_ratio = ins_w.median / ins_s.median
    exp_ratio = exp_w.median / exp_s.median
    covered = ins_ratio < A.CLEAR_FACTOR
    cascades = exp_ratio > 1 and not A.within_noise(exp_w.median, exp_s.median, exp_w.cv, exp_s.cv)
    measured = ((Code("hierwheel"), " at N = %s: insert %s (short) against %s (wide), %s; "
                 "expire per task %s against %s, %s" % (
                     A.fmt_n(ins_w.n), A.fmt_ns(ins_s.median), A.fmt_ns(ins_w.median),
                     A.fmt_ratio(ins_ratio), A.fmt_ns(exp_s.median), A.fmt_ns(exp_w.median),
                     A.fmt_ratio(exp_ratio))),)
    tw = _at_largest(ctx, "expire", "h2h", "wide", "timerwheel")
    tws = _at_largest(ctx, "expire", "h2h", "short", "timerwheel")
    if tw and tws:
        measured = measured + ("; ", Code("timerwheel"), " expire %s (short) against %s (wide)" % (
            A.fmt_ns(tws.median), A.fmt_ns(tw.median)))
    measured = _join([measured])
    if covered and cascades:
        return _set(c, HOLDS, HOLDS, measured)
    if covered:
        return _set(c, PARTLY, "holds only for the range: no measurable cascade cost", measured)
    if cascades:
        return _set(c, PARTLY, "holds only for the cascade cost: the wide range costs more to insert",
                    measured)
    return _set(c, FAILS, FAILS, measured)


# ---- 7. leader-follower ------------------------------------------------------

def leader_follower(ctx):
    c = _claim("The leader-follower protocol saves timed waits in a pool",
               "ScheduledThreadPoolExecutor.DelayedWorkQueue source comments (JDK)",
               "workers, leader=on against leader=off",
               "holds when turning the leader off makes at least %s as many timed waits "
               "per task; holds only in part when there are more, but fewer than that"
               % A.fmt_ratio(A.CLEAR_FACTOR))
    pairs = (getattr(ctx, "rt", {}) or {}).get("workers", [])
    if not pairs:
        return _set(c, UNTESTED, UNTESTED + ": no workers results with leader=on and leader=off",
                    "no data")
    parts, ratios = [], []
    for b, on, off in pairs:
        a, z = on.counter("timed_waits_per_task"), off.counter("timed_waits_per_task")
        if a is None or z is None:
            continue
        r = z / a if a > 0 else (math.inf if z > 0 else 1.0)
        ratios.append(r)
        parts.append((Code(b), ": %s timed waits per task with the leader, %s without (%s)" % (
            A.fmt_num(a), A.fmt_num(z), A.fmt_ratio(r) if math.isfinite(r) else "∞")))
    if not ratios:
        return _set(c, UNTESTED, UNTESTED + ": the workers results lack timed_waits_per_task", "no data")
    measured = _join(parts)
    if all(r >= A.CLEAR_FACTOR for r in ratios):
        return _set(c, HOLDS, HOLDS, measured)
    if all(r > 1.0 for r in ratios):
        return _set(c, PARTLY, "holds only in part: fewer timed waits, by less than %s"
                    % A.fmt_ratio(A.CLEAR_FACTOR), measured)
    return _set(c, FAILS, FAILS, measured)


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


def crossover(ctx):
    c = _claim("Heaps suit few timers and wheels suit many: there is a crossover N",
               "Varghese & Lauck 1987; Matsuda, Confluent blog, 2015",
               "micro-benchmark timeouts (schedule, mostly cancel, clock moves on), series h2h",
               "holds when the fastest heap beats the fastest wheel at the smallest N and "
               "the fastest wheel beats the fastest heap at the largest N, both by more "
               "than the noise; the crossover is interpolated on log N")
    wl = _main_workload(ctx, "timeouts")
    if wl is None:
        return _set(c, UNTESTED, UNTESTED + ": no timeouts results in series h2h", "no data")
    heap = _envelope(ctx, "timeouts", "h2h", wl, ctx.is_heap)
    wheel = _envelope(ctx, "timeouts", "h2h", wl, ctx.is_wheel)
    ns = sorted(set(heap) & set(wheel))
    if len(ns) < 2:
        return _set(c, UNTESTED, UNTESTED + ": timeouts results lack a heap and a wheel at two N",
                    "no data")
    lo, hi = ns[0], ns[-1]
    measured = ("N = %s: heap " % A.fmt_n(lo), Code(heap[lo][1]), " %s, wheel " % A.fmt_ns(heap[lo][0]),
                Code(wheel[lo][1]), " %s; N = %s: heap " % (A.fmt_ns(wheel[lo][0]), A.fmt_n(hi)),
                Code(heap[hi][1]), " %s, wheel " % A.fmt_ns(heap[hi][0]), Code(wheel[hi][1]),
                " %s" % A.fmt_ns(wheel[hi][0]))
    x = A.crossover([(n, heap[n][0]) for n in ns], [(n, wheel[n][0]) for n in ns])
    def beats(a, b):
        return a[0] < b[0] and not A.within_noise(a[0], b[0], a[2].cv, b[2].cv)
    heap_small = beats(heap[lo], wheel[lo])
    wheel_large = beats(wheel[hi], heap[hi])
    tie_small = A.within_noise(heap[lo][0], wheel[lo][0], heap[lo][2].cv, wheel[lo][2].cv)
    tie_large = A.within_noise(heap[hi][0], wheel[hi][0], heap[hi][2].cv, wheel[hi][2].cv)
    if heap_small and wheel_large:
        where = ""
        if x and x[0] == "cross":
            where = " (crossover at N ≈ %s)" % A.fmt_n(round(x[1]))
        return _set(c, HOLDS, HOLDS + where, measured)
    if wheel_large and tie_small:
        return _set(c, FAILS, FAILS + ": at the smallest N the fastest heap and wheel are "
                    "within the noise; a wheel wins at the largest", measured)
    if heap_small and tie_large:
        return _set(c, FAILS, FAILS + ": a heap wins at the smallest N and is within the "
                    "noise of the fastest wheel at the largest", measured)
    if wheel_large:
        return _set(c, FAILS, FAILS + ": a wheel is faster at every N measured", measured)
    if heap_small:
        return _set(c, FAILS, FAILS + ": a heap is faster at every N measured", measured)
    if tie_small or tie_large:
        return _set(c, FAILS, FAILS + ": heaps and wheels are within the noise of each other",
                    measured)
    return _set(c, FAILS, FAILS + ": wheels are faster for few timers and heaps for many", measured)


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


def _rank_row(workload, cands, evidence_fmt, measure):
    """cands: [(value, label)], lower is better.  Row: workload, the best
    label, what was compared, every candidate's value."""
    cands = sorted(c for c in cands if c[0] is not None)
    if not cands:
        return None
    best = cands[0]
    ev = [(Code(l), " " + evidence_fmt(v)) for v, l in cands]
    return [workload, (Code(best[1]),), measure, tuple(_join(ev, ", "))]


def recommend(ctx):
    rows = []
    ops = [o for o in ("insert", "cancel", "expire", "timeouts") if _main_workload(ctx, o)]
    if ops:
        all_n = sorted({m.n for o in ops for ms in ctx.series.get((o, "h2h", _main_workload(ctx, o)), {}).values()
                        for m in ms})
        for n, what in ((all_n[0] if all_n else None, "Few pending timers"),
                        (all_n[-1] if all_n else None, "Many pending timers")):
            if n is None:
                continue
            per = {}
            for o in ops:
                for b, (t, l) in _best_per_backend(ctx, o, "h2h", _main_workload(ctx, o), n).items():
                    per.setdefault(b, []).append(t)
            cands = [(A.geomean(v), b) for b, v in per.items() if len(v) == len(ops)]
            r = _rank_row("%s (N = %s)" % (what, A.fmt_n(n)), cands, A.fmt_ns,
                          "geometric mean of the medians of %s (series h2h)" % ", ".join(ops))
            if r:
                rows.append(r)
    for op, what in (("timeouts", "Server timeouts, most cancelled before they fire"),
                     ("periodic", "Many periodic tasks")):
        wl = _main_workload(ctx, op)
        if not wl:
            continue
        ns = sorted({m.n for ms in ctx.series.get((op, "h2h", wl), {}).values() for m in ms})
        if not ns:
            continue
        per = _best_per_backend(ctx, op, "h2h", wl, ns[-1])
        r = _rank_row("%s (N = %s)" % (what, A.fmt_n(ns[-1])), [(t, l) for t, l in per.values()],
                      A.fmt_ns, "median time per operation of %s (series h2h)" % op)
        if r:
            rows.append(r)
    wl = "wide"
    if ("expire", "h2h", wl) in ctx.series:
        ns = sorted({m.n for ms in ctx.series[("expire", "h2h", wl)].values() for m in ms})
        if ns:
            per = _best_per_backend(ctx, "expire", "h2h", wl, ns[-1])
            r = _rank_row("Delays from milliseconds to a day (expire, N = %s)" % A.fmt_n(ns[-1]),
                          [(t, l) for t, l in per.values()], A.fmt_ns,
                          "median expire time per task, wide workload (series h2h)")
            if r:
                rows.append(r)
    rt = getattr(ctx, "rt", {}) or {}
    lat = [m for m in rt.get("lateness", {}).get("ms", []) if m.backend not in ctx.floor
           and m.workload == "light" and m.cfg.get("slack", "default") == "default"]
    if lat:
        labels = rt["lateness"]["labels"]
        r = _rank_row("Punctual firing (lowest p99 lateness, light load)",
                      [(m.counter("p99"), labels[id(m)]) for m in lat], A.fmt_ns,
                      "p99 lateness, experiment lateness")
        if r:
            rows.append(r)
    inter = [m for m in rt.get("interference", {}).get("ms", []) if m.backend not in ctx.floor]
    if inter:
        labels = rt["interference"]["labels"]
        r = _rank_row("Slow tasks among fast ones (lowest max lateness of the others)",
                      [(m.counter("max"), labels[id(m)]) for m in inter], A.fmt_ns, "max lateness of the fast tasks, experiment interference")
        if r:
            rows.append(r)
    idle = [m for m in rt.get("idle", []) if m.backend not in ctx.floor]
    if idle:
        labels = rt.get("idle_labels", {})
        r = _rank_row("A mostly idle process (fewest wake-ups)",
                      [(m.counter("wakeups_per_s"), labels.get(id(m), m.backend)) for m in idle],
                      A.fmt_num, "wake-ups per second, experiment idle")
        if r:
            rows.append(r)
    if getattr(ctx, "memory_main", None):
        n, wl, cands = ctx.memory_main
        r = _rank_row("Least memory per pending task (N = %s)" % A.fmt_n(n),
                      cands, lambda v: "%.1f B" % v,
                      "bytes per pending task, workload %s" % wl)
        if r:
            rows.append(r)
    return rows
