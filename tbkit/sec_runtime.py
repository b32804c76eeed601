"""tbkit.sec_runtime — the runtime (monotonic clock, real threads) sections:
lateness against the sleep floor, periodic jitter, interference, burst,
idle cost, leader-follower (`workers`) and producers.

Each section reads the benchmarks of its operation, draws its figure, shows
a table of its counters (medians over repetitions) and states findings
computed from them; without data it says so.  Counter names are those
bench/runtime.c writes: percentiles `<prefix>count`, `min`, `p50`, `p90`,
`p99`, `p999`, `max` in ns, and per-experiment counters named below.

What the claims read of these experiments is computed beforehand, by
tbkit.analysis.runtime_data; the sections render.
"""

import math

from tbkit import numbers as A
from tbkit import results as tb_results
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.analysis import (FLOOR_TARGET, PCT_Q, PCTS, RUNTIME_OPS, counter_spread,
                            labels_for, leader_pairs, pct_value, primary_floor,
                            slack_of as _slack)
from tbkit.doc import Bold, Code, join as _join
from tbkit.figures import (add_figure, draw_bars, draw_cdf, draw_n_figure,
                           registry_order as _order)
from tbkit.page import generic_table


def pct_cell(m, key, prefix=""):
    """A percentile in us for a table cell, or why it is not shown."""
    v = m.counter(prefix + key)
    q = PCT_Q.get(key)
    if v is None or q is None:
        return fmt_us(v)
    n = m.counter(prefix + "count")
    if n is None:
        return "— (sample count not recorded)"
    if not S.pct_supported(n, q):
        return "— (n = %s < %s)" % (A.fmt_num(n), A.fmt_num(S.pct_min_samples(q)))
    return fmt_us(v)


def us(ns):
    return None if ns is None else ns / 1000.0


def fmt_us(ns):
    if ns is None:
        return "n/a"
    v = ns / 1000.0
    return "%.1f" % v if abs(v) < 1000 else "{:,.0f}".format(v)


# ---- drawing helpers ------------------------------------------------------

def _cdf_of(ctx, m, metric):
    """CDF points (x in us) of a measurement: from the raw samples when the
    CSV has them, else from its percentile counters.  Values at or below
    0.1 us are drawn at 0.1 us (the log axis has no zero)."""
    s = ctx.res.samples_for(m, metric)
    prefix = "" if metric == "lateness" or m.op != "jitter" else "perr_"
    if m.op == "jitter" and metric == "lateness":
        prefix = "late_"
    if s:
        s = sorted(s)
        total = sum(w for _, w in s)
        pts, acc = [], 0.0
        for v, w in s:
            acc += w
            pts.append((max(v / 1000.0, 0.1), acc / total))
        if len(pts) > 400:
            step = (len(pts) - 1) / 399.0
            pts = [pts[int(round(i * step))] for i in range(400)]
        return pts, "samples"
    pts = []
    for key, q in (("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99),
                   ("p999", 0.999), ("max", 1.0)):
        v = pct_value(m, key, prefix) if key in PCT_Q else m.counter(prefix + key)
        if v is not None:
            pts.append((max(v / 1000.0, 0.1), q))
    return pts, "percentiles"


def pooled(ctx, m, metric="lateness"):
    """(samples, {p50.., max}) over every repetition's samples pooled, from
    samples.csv (nearest rank on the weighted rows), or None when the run
    wrote none for m.  A configuration's 10^4 samples may come as 2000 in
    each of 5 repetitions: only pooled do they back a p99.9."""
    s = ctx.res.samples_for(m, metric)
    if not s:
        return None
    s = sorted(s)
    total = sum(w for _, w in s)
    out = {"max": s[-1][0]}
    for key, q in PCT_Q.items():
        rank, acc = max(1.0, math.ceil(q * total - 1e-9)), 0.0
        for v, w in s:
            acc += w
            if acc >= rank:
                out[key] = v
                break
    return total, out


def _pooled_cell(n, vals, key):
    q = PCT_Q.get(key)
    if q is not None and not S.pct_supported(n, q):
        return "— (n = %s < %s)" % (A.fmt_num(n), A.fmt_num(S.pct_min_samples(q)))
    return fmt_us(vals.get(key))


def _pct_table(ctx, doc, ms, labels, prefix="", extra=()):
    rows = []
    any_pooled = False
    for label, m in _order(ctx, [(labels[id(m)], m) for m in ms]):
        row = [Code(label), Code(m.workload), Code(m.config)]
        pool = pooled(ctx, m) if not prefix and not m.error else None
        per_rep = m.counter(prefix + "count")
        if pool and m.repetitions > 1 and pool[0] > (per_rep or 0):
            any_pooled = True
            row.append(A.fmt_num(pool[0]))
            row += [_pooled_cell(pool[0], pool[1], k) for k, _ in PCTS]
            for name, fmt in extra:
                row.append(fmt(m.counter(name)))
        elif m.error:
            row += [("error: " + m.error[:80],)] + [""] * (len(PCTS) + len(extra))
        else:
            row.append(A.fmt_num(per_rep))
            row += [pct_cell(m, k, prefix) for k, _ in PCTS]
            for name, fmt in extra:
                row.append(fmt(m.counter(name)))
        rows.append(row)
    doc.table(["series", "workload", "configuration", "samples"] +
              ["%s (us)" % t for _, t in PCTS] + [n for n, _ in extra], rows,
              numeric=set(range(3, 4 + len(PCTS) + len(extra))))
    doc.p(TX.RUNTIME_PERCENTILES.format(
        pooled=TX.RUNTIME_PERCENTILES_POOLED if any_pooled else "",
        tail=A.fmt_num(S.PCT_TAIL_SAMPLES)))


def _missing(ctx, doc, op):
    doc.p("No ", Code(op), " results in this results directory: this experiment has no data.")
    ctx.missing.append(("Runtime: " + op, "no results"))


# ---- the sections -----------------------------------------------------------

def runtime_sections(ctx, doc):
    doc.h(2, "Runtime behaviour (monotonic clock, real threads)", "runtime")
    present = [op for op in RUNTIME_OPS if ctx.res.select(op=op)]
    if not present:
        doc.p("No runtime results (", *_join([Code(o) for o in RUNTIME_OPS]),
              ") in this results directory: this section has no data.")
        ctx.missing.append(("Runtime behaviour", "no results for any of " + ", ".join(RUNTIME_OPS)))
        return
    doc.p(TX.RUNTIME_INTRO)
    for op, fn in (("lateness", lateness), ("jitter", jitter),
                   ("interference", interference), ("burst", burst),
                   ("idle", idle), ("workers", workers), ("producers", producers),
                   ("failing", failing)):
        doc.h(3, op, "runtime-" + op)
        doc.p("What is measured: ", TX.RUNTIME_WHAT[op], ".")
        ms = [m for m in ctx.res.select(op=op)]
        if not ms:
            _missing(ctx, doc, op)
            continue
        gone = ctx.res.missing_for((op,))
        if gone:
            doc.p(*TX.spans(TX.RUNTIME_PARTIAL, n="%d" % len(gone),
                            s="" if len(gone) == 1 else "s"))
        kept = len(ctx.findings)
        fn(ctx, doc, ms)
        if gone:
            del ctx.findings[kept:]
        errs = [m for m in ms if m.error]
        if errs:
            doc.p("Runs that reported an error: ",
                  *_join([(Code(m.backend + " " + m.config), ": " + m.error[:120]) for m in errs]), ".")
    failure_section(ctx, doc)
    wallstep_section(ctx, doc)


def failing(ctx, doc, ms):
    """The failing experiment (bench/runtime.c, real threads, one
    runner): a table, no figure (its N is the ten tasks, not a size)."""
    rows = []
    key = ctx.backend_sort_key()
    for m in sorted((m for m in ms if not m.error), key=lambda m: (key(m.backend), m.config)):
        acc = m.counter("accepted_after")
        rows.append([Code(m.backend), Code(m.config), A.fmt_num(m.counter("runners")),
                     A.fmt_num(m.counter("ran_before")),
                     "%s of %s" % (A.fmt_num(m.counter("ran_after")), A.fmt_num(m.counter("after"))),
                     "n/a" if acc is None else ("accepted" if acc else "refused"),
                     A.fmt_num(m.counter("failed"))])
    doc.table(["backend", "configuration", "runners", "tasks due before the failure that ran",
               "tasks due after it that ran", "a schedule after it", "failed runs counted"],
              rows, numeric={2, 3, 4, 6})


def failure_section(ctx, doc):
    """The probe's failing-task experiment (report/probe.c)."""
    doc.h(3, "failure", "runtime-failure")
    doc.p(TX.RUNTIME_FAILURE_WHAT)
    ms = ctx.res.select(op="failure")
    if not ms:
        _missing(ctx, doc, "failure")
        return
    rows = []
    for m in sorted(ms, key=lambda m: ctx.backends.index(m.backend) if m.backend in ctx.backends else 99):
        if m.error:
            rows.append([Code(m.backend), ("error: " + m.error[:100],), "", "", ""])
            continue
        acc = m.counter("accepted_after")
        rows.append([Code(m.backend), A.fmt_num(m.counter("ran_before")),
                     "%s of %s" % (A.fmt_num(m.counter("ran_after")), A.fmt_num(m.counter("after"))),
                     "n/a" if acc is None else ("accepted" if acc else "refused"),
                     A.fmt_num(m.counter("failed"))])
    doc.table(["backend", "tasks due before the failure that ran",
               "tasks due after it that ran", "a schedule after it", "failed runs counted"],
              rows, numeric={1, 2, 4})
    killed = [m.backend for m in ms if not m.error and m.counter("ran_after") == 0
              and m.counter("after")]
    kept = [m.backend for m in ms if not m.error and m.counter("after") and
            m.counter("ran_after") == m.counter("after")]
    items = []
    if killed:
        items.append(("One failing task stopped every later task in ", *_join([Code(b) for b in killed]), "."))
    if kept:
        items.append(("Every later task still ran in ", *_join([Code(b) for b in kept]), "."))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def _registry_order(ctx, backends):
    """Backends in the registry's order (unknown ones last)."""
    return sorted(backends, key=lambda b: (ctx.backends.index(b) if b in ctx.backends
                                           else len(ctx.backends), b))


def _shift_values(m):
    """A wallstep entry's per-task shifts (run time against the control
    run's, ns), task 1 first; None for a task that did not run once."""
    return [m.counter("shift_ns_%d" % k) for k in range(1, int(m.counter("tasks") or 0) + 1)]


def wallstep_section(ctx, doc):
    """The probe's wall-clock step (report/probe.c; claim timer_wall_clock)."""
    doc.h(3, "wallstep", "runtime-wallstep")
    doc.p(TX.RUNTIME_WALLSTEP_WHAT)
    ms = ctx.res.select(op="wallstep")
    if not ms:
        _missing(ctx, doc, "wallstep")
        return
    by = {}
    for m in ms:
        by.setdefault(m.backend, {})[m.workload] = m
    rows, moved, still = [], [], []
    for b in _registry_order(ctx, by):
        cells, wall, shifted, ok = [], None, False, True
        for case in ("back", "forward"):
            m = by[b].get(case)
            if m is None or m.error:
                cells.append("not measured" if m is None else "error: " + m.error[:100])
                ok = False
                continue
            vals = _shift_values(m)
            cells.append(", ".join("did not run" if v is None else ("0" if v == 0 else A.fmt_ns(v))
                                   for v in vals))
            shifted = shifted or any(v for v in vals)
            if wall is None:
                wall = m.counter("wall_clock")
        rows.append([Code(b), "n/a" if wall is None else ("wall" if wall else "monotonic")] + cells)
        if shifted:
            moved.append(b)
        elif ok:
            still.append(b)
    doc.table(["backend", "deadlines on", "shift per task, step back by 50 ms",
               "shift per task, step forward by 15 ms"], rows)
    items = []
    if moved:
        items.append(("A wall-clock step moved the pending tasks of ",
                      *_join([Code(b) for b in moved]), "."))
    if still:
        items.append(("It moved none in ", *_join([Code(b) for b in still]), "."))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def _floors_by_primitive(ctx, ok):
    """One finding per floor (wait primitive) and slack, and which floor
    each backend is held to (the runtime harness's floor_of.* context)."""
    items = []
    for b in ctx.floor:
        for m in sorted((m for m in ok if m.backend == b), key=_slack):
            items.append(("Floor ", Code(b), " (", Code("slack=" + _slack(m)),
                          "): p50 %s, p99 %s, %s samples." % (
                              A.fmt_ns(m.counter("p50")), A.fmt_ns(m.counter("p99")),
                              A.fmt_num(m.counter("count")))))
    held = ctx.res.context_prefixed("floor_of.")
    if held:
        items.append(("Each backend against the floor of its wait primitive: ",
                      *_join([(Code(b), " ", Code(str(v).split(" ")[0]))
                              for b, v in sorted(held.items())]), "."))
    return items


def lateness(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok, drop=("series", "slack"))
    panels = []
    primary = primary_floor(ctx.floor)
    floor = {(_slack(m)): m for m in ok if m.backend == primary}
    keys = sorted({(m.workload, _slack(m)) for m in ok}, key=lambda k: (k[0] != "light", k))
    sources = set()
    for wl, slack in keys:
        ss = []
        for label, m in _order(ctx, [(labels[id(m)], m) for m in ok
                                     if m.workload == wl and _slack(m) == slack]):
            pts, src = _cdf_of(ctx, m, "lateness")
            sources.add(src)
            ss.append((label, m.backend, pts))
        if wl != "light" and slack in floor:
            pts, src = _cdf_of(ctx, floor[slack], "lateness")
            ss.append(("%s (light)" % floor[slack].backend, floor[slack].backend, pts))
        panels.append(("workload %s, timer slack %s" % (wl, slack), ss))
    name = draw_cdf(ctx, "lateness", "Lateness of one-shot tasks (start - deadline)",
                    "lateness (us, log scale)", panels)
    add_figure(ctx, doc, name, ("Cumulative distribution of lateness per backend; the "
                                "dashed lines are the floors (one per wait primitive). Drawn from %s."
                                % " and ".join(sorted("raw samples" if s == "samples" else "percentile counters"
                                                      for s in sources)),),
               "lateness CDF")
    _pct_table(ctx, doc, ok, labels, extra=[("early", A.fmt_num)])
    items = []
    for slack, f in sorted(floor.items()):
        fp50 = f.counter("p50")
        items.append(("Floor (", Code("slack=" + slack), "): p50 %s, p99 %s." % (
            A.fmt_ns(fp50), A.fmt_ns(pct_value(f, "p99")) if pct_value(f, "p99") is not None
            else "not shown (too few samples)")))
        cand = [(m.counter("p50"), labels[id(m)], m) for m in ok
                if m.backend not in ctx.floor and m.workload == "light" and _slack(m) == slack
                and m.counter("p50") is not None]
        if fp50 and cand:
            cand.sort(key=lambda c: c[0])
            within = [c for c in cand if c[0] <= FLOOR_TARGET * fp50]
            items.append(("At light load (slack ", Code(slack), "), p50 against the floor: ",
                          *_join([(Code(l), " %s" % A.fmt_ratio(v / fp50)) for v, l, _ in cand]),
                          "; %d of %d within %s of the floor." % (len(within), len(cand),
                                                                   A.fmt_ratio(FLOOR_TARGET))))
            if slack == "default":
                ctx.finding(20, "Lateness at light load: p50 from %s (" % A.fmt_ns(cand[0][0]),
                            Code(cand[0][1]), ") to %s (" % A.fmt_ns(cand[-1][0]), Code(cand[-1][1]),
                            "), against a condition-variable floor of %s." % A.fmt_ns(fp50))
    items += _floors_by_primitive(ctx, ok)
    for m in ok:
        if m.workload != "light" and m.backend not in ctx.floor:
            light = [x for x in ok if x.backend == m.backend and x.workload == "light"
                     and _slack(x) == _slack(m) and x.series == m.series
                     and {k: v for k, v in x.cfg.items() if k != "slack"} ==
                     {k: v for k, v in m.cfg.items() if k != "slack"}]
            if light and pct_value(light[0], "p99") and pct_value(m, "p99") is not None:
                items.append((Code(labels[id(m)]), ": p99 %s with %s tasks pending against %s at light load (%s)." % (
                    A.fmt_ns(pct_value(m, "p99")), A.fmt_num(m.counter("background") or m.n),
                    A.fmt_ns(pct_value(light[0], "p99")),
                    A.fmt_ratio(pct_value(m, "p99") / pct_value(light[0], "p99")))))
    early = [(m.counter("early") or 0, m) for m in ok if m.counter("early") is not None]
    total = sum(m.counter("count") or 0 for _, m in early)
    n_early = sum(e for e, _ in early)
    if early:
        if n_early == 0:
            items.append("No task started before its deadline in %s lateness samples." % A.fmt_num(total))
        else:
            bad = [m for e, m in early if e > 0]
            items.append(("%s early starts in %s samples, in " % (A.fmt_num(n_early), A.fmt_num(total)),
                          *_join([Code(labels[id(m)]) for m in bad]), "."))
    slack_vals = sorted({m.counter("slack_ns") for m in ok if m.counter("slack_ns") is not None})
    if slack_vals:
        items.append("Timer slack of the measuring threads: %s." % ", ".join(A.fmt_ns(v) for v in slack_vals))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def jitter(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok)
    ss = []
    for label, m in _order(ctx, [(labels[id(m)], m) for m in ok]):
        pts, _ = _cdf_of(ctx, m, "lateness")
        ss.append((label, m.backend, pts))
    wl = sorted({m.workload for m in ok})
    name = draw_cdf(ctx, "jitter", "Fixed-rate task: lateness against the planned schedule",
                    "lateness against plan (us, log scale)",
                    [("workload %s" % ", ".join(wl), ss)])
    add_figure(ctx, doc, name, ("Cumulative distribution of each run's start minus its "
                                "planned time (first start + k periods).",), "jitter CDF")
    rows = []
    for label, m in _order(ctx, [(labels[id(m)], m) for m in ok]):
        rows.append([Code(label), Code(m.config), pct_cell(m, "p50", "late_"), pct_cell(m, "p99", "late_"),
                     fmt_us(m.counter("late_max")), pct_cell(m, "p50", "perr_"),
                     pct_cell(m, "p99", "perr_"), fmt_us(m.counter("perr_max")),
                     fmt_us(m.counter("drift_ns")),
                     "%s / %s" % (A.fmt_num(m.counter("runs")), A.fmt_num(m.counter("expected_runs")))])
    doc.table(["series", "configuration", "late p50 (us)", "late p99 (us)", "late max (us)",
               "period error p50 (us)", "period error p99 (us)", "period error max (us)",
               "drift (us)", "runs / expected"], rows, numeric=set(range(2, 10)))
    cand = sorted([(pct_value(m, "p99", "perr_"), labels[id(m)]) for m in ok
                   if pct_value(m, "p99", "perr_") is not None])
    items = []
    if len(cand) > 1:
        items.append(("Steadiest period: ", Code(cand[0][1]), " (p99 period error %s); least steady: "
                      % A.fmt_ns(cand[0][0]), Code(cand[-1][1]), " (%s)." % A.fmt_ns(cand[-1][0])))
    for m in ok:
        r, e = m.counter("runs"), m.counter("expected_runs")
        if r is not None and e and abs(r - e) / e > 0.01:
            items.append((Code(labels[id(m)]), " ran %s times where %s runs were planned." % (
                A.fmt_num(r), A.fmt_num(e))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def interference(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok)
    ordered = _order(ctx, [(labels[id(m)], m) for m in ok])
    name = draw_bars(ctx, "interference", "Lateness of fast periodic tasks beside one slow task "
                     "(workload %s)" % ", ".join(sorted({m.workload for m in ok})), [
        ("p99 lateness", "p99 lateness (us)", True,
         [(l, m.backend, _us3(counter_spread(m, "p99"))) for l, m in ordered]),
        ("maximum lateness", "max lateness (us)", True,
         [(l, m.backend, _us3(counter_spread(m, "max"))) for l, m in ordered])])
    add_figure(ctx, doc, name, ("Lateness of the fast periodic tasks while one slow task "
                                "runs, per backend and thread count (log scale).",), "interference")
    _pct_table(ctx, doc, ok, labels, extra=[("late_over_10ms", A.fmt_num)])
    items = []
    for b in ctx.backends:
        bms = [m for m in ok if m.backend == b and m.cfg.get("threads")]
        by_t = {}
        for m in bms:
            by_t.setdefault(m.cfg.get("threads"), []).append(m)
        if len(by_t) >= 2:
            ts = sorted(by_t, key=lambda t: A._num_or(t))
            lo, hi = by_t[ts[0]][0], by_t[ts[-1]][0]
            if lo.counter("max") is not None and hi.counter("max"):
                items.append((Code(b), ": max lateness %s with threads=%s, %s with threads=%s (%s)." % (
                    A.fmt_ns(lo.counter("max")), ts[0], A.fmt_ns(hi.counter("max")), ts[-1],
                    A.fmt_ratio(lo.counter("max") / hi.counter("max")))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def _us3(v):
    return None if v is None else tuple(x / 1000.0 for x in v)


def burst(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok)
    ordered = _order(ctx, [(labels[id(m)] + (" N=%s" % A.fmt_n(m.n) if m.n else ""), m) for m in ok])
    name = draw_bars(ctx, "burst", "Burst: N tasks with one deadline", [
        ("time from the deadline to the last start", "drain time (ms)", True,
         [(l, m.backend, _scale3(counter_spread(m, "drain_ns"), 1e-6)) for l, m in ordered]),
        ("submit cost", "submit time per task (ns)", True,
         [(l, m.backend, counter_spread(m, "submit_ns_per_task")) for l, m in ordered])])
    add_figure(ctx, doc, name, ("Time until every task of the burst started, and the cost "
                                "of submitting them (log scale).",), "burst")
    rows = []
    for l, m in ordered:
        rows.append([Code(l), Code(m.config), A.fmt_n(m.n), A.fmt_ns(m.counter("submit_ns_per_task")),
                     A.fmt_ns(m.counter("drain_ns")), pct_cell(m, "p50"), fmt_us(m.counter("max")),
                     A.fmt_num(m.counter("submitted_after_deadline"))])
    doc.table(["series", "configuration", "N", "submit per task", "deadline to last start",
               "p50 lateness (us)", "max lateness (us)", "submitted after the deadline"],
              rows, numeric=set(range(2, 8)))
    items = []
    for n in sorted({m.n for m in ok if m.n}):
        cand = sorted((m.counter("drain_ns"), labels[id(m)]) for m in ok
                      if m.n == n and m.counter("drain_ns") is not None)
        if len(cand) > 1 and cand[0][0] > 0:
            items.append(("N = %s: " % A.fmt_n(n), Code(cand[0][1]), " ran the whole burst %s after "
                          "the deadline; " % A.fmt_ns(cand[0][0]), Code(cand[-1][1]),
                          " took %s (%s)." % (A.fmt_ns(cand[-1][0]), A.fmt_ratio(cand[-1][0] / cand[0][0]))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def _scale3(v, k):
    return None if v is None else tuple(x * k for x in v)


def idle(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok)
    ordered = _order(ctx, [(labels[id(m)], m) for m in ok])

    def wake(m):
        v = counter_spread(m, "wakeups_per_s")
        # one wake-up per second at least is drawn, the axis is logarithmic
        return None if v is None else tuple(max(x, 0.01) for x in v)
    name = draw_bars(ctx, "idle", "Idle cost: one task far in the future", [
        ("CPU time while idle", "CPU time (% of one core)", False,
         [(l, m.backend, _scale3(counter_spread(m, "cpu_ns_per_s"), 1e-7)) for l, m in ordered]),
        ("wake-ups while idle", "wake-ups per second (1/s, log scale)", True,
         [(l, m.backend, wake(m)) for l, m in ordered])])
    add_figure(ctx, doc, name, ("Process CPU time and backend wake-ups per second with "
                                "nothing due.",), "idle cost")
    rows = []
    for l, m in ordered:
        cpu = m.counter("cpu_ns_per_s")
        rows.append([Code(l), Code(m.config), "n/a" if cpu is None else "%.3f" % (cpu / 1e7),
                     A.fmt_num(m.counter("wakeups_per_s")), A.fmt_num(m.counter("timed_waits_per_s")),
                     A.fmt_num(m.counter("ticks_per_s")), A.fmt_num(m.counter("empty_ticks_per_s")),
                     A.fmt_num(m.counter("ctx_switches_per_s"))])
    doc.table(["series", "configuration", "CPU (% of a core)", "wake-ups/s", "timed waits/s",
               "ticks/s", "empty ticks/s", "context switches/s"], rows, numeric=set(range(2, 8)))
    cand = sorted((m.counter("wakeups_per_s"), labels[id(m)], m) for m in ok
                  if m.counter("wakeups_per_s") is not None)
    items = []
    if len(cand) > 1 and cand[-1][0] > cand[0][0]:
        items.append(("Fewest wake-ups: ", Code(cand[0][1]), " (%s per second); most: " % A.fmt_num(cand[0][0]),
                      Code(cand[-1][1]), " (%s per second)." % A.fmt_num(cand[-1][0])))
        ctx.finding(22, "Idle with one far-away task: ", Code(cand[-1][1]), " wakes %s times per second, "
                    % A.fmt_num(cand[-1][0]), Code(cand[0][1]), " %s." % A.fmt_num(cand[0][0]))
    for m in ok:
        t = m.counter("ticks_per_s")
        tick = _duration(m.cfg.get("tick"))
        if t and tick:
            items.append((Code(labels[id(m)]), ": %s ticks per second with a tick of %s (one tick every %s), "
                          "%s of them empty." % (A.fmt_num(t), A.fmt_ns(tick), A.fmt_ns(1e9 / t),
                                                 A.fmt_pct((m.counter("empty_ticks_per_s") or 0) / t))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def _duration(text):
    return tb_results.parse_duration_ns(text)


def workers(ctx, doc, ms):
    ok = [m for m in ms if not m.error]
    labels = labels_for(ok)
    ordered = _order(ctx, [(labels[id(m)], m) for m in ok])
    name = draw_bars(ctx, "workers", "A pool of threads: waits and wake-ups per task", [
        ("timed waits per task", "timed waits per task", False,
         [(l, m.backend, counter_spread(m, "timed_waits_per_task")) for l, m in ordered]),
        ("wake-ups per task", "wake-ups per task", False,
         [(l, m.backend, counter_spread(m, "wakeups_per_task")) for l, m in ordered])])
    add_figure(ctx, doc, name, ("Timed waits and wake-ups per task with a pool of threads; "
                                "leader=on/off where the backend has the leader-follower protocol.",),
               "workers")
    rows = []
    for l, m in ordered:
        rows.append([Code(l), Code(m.config), A.fmt_num(m.counter("tasks")),
                     A.fmt_num(m.counter("timed_waits_per_task")), A.fmt_num(m.counter("wakeups_per_task")),
                     A.fmt_num(m.counter("ctx_switches_per_task")), A.fmt_ns(m.counter("cpu_ns_per_task")),
                     pct_cell(m, "p50"), pct_cell(m, "p99")])
    doc.table(["series", "configuration", "tasks", "timed waits/task", "wake-ups/task",
               "context switches/task", "CPU per task", "p50 lateness (us)", "p99 lateness (us)"],
              rows, numeric=set(range(2, 9)))
    items = []
    pairs = leader_pairs(ok)
    for b, on, off in pairs:
        tw_on, tw_off = on.counter("timed_waits_per_task"), off.counter("timed_waits_per_task")
        if tw_on is not None and tw_off is not None:
            items.append((Code(b), ": %s timed waits per task with the leader, %s without (%s); "
                          "wake-ups per task %s against %s." % (
                              A.fmt_num(tw_on), A.fmt_num(tw_off),
                              A.fmt_ratio(tw_off / tw_on) if tw_on else "n/a",
                              A.fmt_num(on.counter("wakeups_per_task")),
                              A.fmt_num(off.counter("wakeups_per_task")))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)


def producers(ctx, doc, ms):
    ok = [m for m in ms if not m.error and m.cfg.get("producers")]
    if not ok:
        doc.p("The producers results carry no ", Code("producers="), " configuration key; "
              "they are shown as recorded.")
        generic_table(ctx, doc, ms)
        return
    lines = {}
    labels = labels_for(ok, drop=("series", "producers"))
    for m in ok:
        lines.setdefault(labels[id(m)], []).append(m)
    for v in lines.values():
        v.sort(key=lambda m: A._num_or(m.cfg.get("producers")))

    def x(m):
        return A._num_or(m.cfg.get("producers"))
    tput = {l: v for l, v in lines.items()}
    name = draw_n_figure(
        ctx, "producers", "Producers scheduling at once",
        [("throughput", tput)], ylabel="schedules per second (1/s)",
        xlabel="producer threads", linx=True, x=x,
        value=lambda m: counter_spread(m, "schedules_per_s"))
    add_figure(ctx, doc, name, ("Schedules per second against the number of producer threads.",),
               "producers")
    rows = []
    for l in sorted(lines, key=lambda l: (ctx.backends.index(lines[l][0].backend)
                                          if lines[l][0].backend in ctx.backends else 99, l)):
        for m in lines[l]:
            rows.append([Code(l), m.cfg.get("producers"), A.fmt_num(m.counter("schedules_per_s")),
                         pct_cell(m, "p50"), pct_cell(m, "p99"), fmt_us(m.counter("max"))])
    doc.table(["series", "producers", "schedules/s", "p50 lateness (us)", "p99 lateness (us)",
               "max lateness (us)"], rows, numeric={1, 2, 3, 4, 5})
    items = []
    for l, v in lines.items():
        if len(v) >= 2 and v[0].counter("schedules_per_s") and v[-1].counter("schedules_per_s") is not None:
            items.append((Code(l), ": %s schedules/s with %s producer, %s with %s (%s)." % (
                A.fmt_num(v[0].counter("schedules_per_s")), v[0].cfg.get("producers"),
                A.fmt_num(v[-1].counter("schedules_per_s")), v[-1].cfg.get("producers"),
                A.fmt_ratio(v[-1].counter("schedules_per_s") / v[0].counter("schedules_per_s")))))
    if items:
        doc.p(Bold("Findings"), ":")
        doc.ul(items)
