"""tbkit.sec_micro — the micro-benchmark sections (sections layer): cost
per operation against N for every operation, the structure's work per
operation, memory per pending task, and any other results.  Each draws its
figure, tabulates its medians with their spread and states findings
computed from them; a section without data says so and names what is
missing.

Prose here never holds a measured number as a literal: numbers enter
sentences only through the formatting helpers of tbkit.numbers.
"""

from tbkit import analysis as AN
from tbkit import numbers as A
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.doc import Bold, Code, join as _join
from tbkit.figures import add_figure, draw_n_figure, series_order
from tbkit.page import HEADINGS, generic_table, link


# A panel of the summary's figure, in pixels: three across fill the
# report's column (1100 px less its padding) at the figure's own size.
SUMMARY_PANEL_PX = (340, 270)


def _left_to_full(res):
    """What of the micro-benchmarks this run's profile leaves to the full
    profile (from the binary's own profile facts)."""
    m = AN.profile_micro(res)
    if not m or res.run.get("profile") == "full":
        return []
    names = [("orig", "series orig"), ("cover", "series cover"),
             ("burst", "the burst workload"), ("wide_all", "the wide workload in fill and cancel")]
    return [what for k, what in names if m.get(k) is False]



def micro_section(ctx, doc):
    res = ctx.res
    ops = [op for op in AN.MICRO_OPS if any(m.n is not None for m in res.select(op=op))]
    doc.h(2, HEADINGS["micro"], "micro")
    if not ops:
        doc.p("No micro-benchmark results (", *_join([Code(o) for o in AN.MICRO_OPS]),
              ") in this results directory: this section has no data.")
        ctx.missing.append(("Micro-benchmarks", "no results for any of " + ", ".join(AN.MICRO_OPS)))
        return []
    absent = [o for o in AN.MICRO_OPS if o not in ops]
    if absent:
        doc.p("Missing from these results: ", *_join([Code(o) for o in absent]),
              "; their panels and tables are absent.")
        ctx.missing.append(("Micro-benchmarks", "no results for " + ", ".join(absent)))
    doc.p(TX.MICRO_INTRO)
    left = _left_to_full(res)
    if left:
        doc.p(*TX.spans(TX.MICRO_LEFT_TO_FULL, profile=Code(str(res.run.get("profile"))),
                        left=", ".join(left)))
    all_ms = [m for op in ops for m in res.select(op=op) if m.n is not None]
    # series=precision is one N swept over the tick: its figure is the
    # cost-precision front ("Which one to use"), not a line against N
    for series in AN.config_sort({m.series for m in all_ms} - {"precision"}):
        main, more = [], []
        for op in ops:
            ms = [m for m in res.select(op=op) if m.series == series]
            for i, wl in enumerate(AN.workloads_of(ms)):
                g = AN.legend_groups([m for m in ms if m.workload == wl])
                if g:
                    (main if i == 0 else more).append(("%s, workload %s" % (op, wl), g))
        for panels, stem, what in ((main, "micro-" + series, "main workload of each operation"),
                                   (more, "micro-" + series + "-workloads", "other workloads")):
            if not panels:
                continue
            name = draw_n_figure(ctx, stem, "Time per operation against N, %s (%s)"
                                 % (ctx.config_text(series), what), panels)
            add_figure(ctx, doc, name,
                       ("Time per operation against N, series ", Code(series),
                        " (%s), %s. Log-log axes; error bars from the fastest to the "
                        "slowest repetition." % (ctx.config_text(series), what),),
                       "ns per operation against N, series " + series)
            # the summary opens with the head-to-head main figure (else
            # the first series drawn)
            if name and stem == "micro-" + series and (
                    ctx.headline is None or (series == "h2h" and ctx.headline[1] != "h2h")):
                # the summary's copy is drawn to be shown at its own size
                # across the page: this figure scaled into the summary's
                # column had labels no one could read (issue 36)
                small = draw_n_figure(ctx, "summary-" + series, "Time per operation against "
                                      "N, %s (%s)" % (ctx.config_text(series), what), panels,
                                      panel_px=SUMMARY_PANEL_PX)
                ctx.headline = (small or name, series)
    for op in ops:
        micro_op_section(ctx, doc, op)
    parts = []
    for op in ("insert", "cancel", "expire", "timeouts"):
        if op in ctx.micro_best:
            n, wl, bl, bt, wl_, wt = ctx.micro_best[op]
            parts.append((Code(op), " (N = %s): " % A.fmt_n(n), Code(bl), " %s, slowest " % A.fmt_ns(bt),
                          Code(wl_), " %s (%s)" % (A.fmt_ns(wt), A.fmt_ratio(wt / bt))))
    if parts:
        ctx.finding(10, "Fastest per operation at the largest N, head-to-head: ", *_join(parts, "; "),
                    ".", more=link("Micro-benchmarks", "micro"))
    return ops



def _cell_median(m):
    if m is None or m.median is None:
        return "—" if m is None else "error"
    cv = m.cv
    return "%s (%s)" % (_ns_plain(m.median), A.fmt_pct(cv) if cv is not None else "n/a")



def _ns_plain(ns):
    """A median in ns as tables show it (one decimal below 1000)."""
    return "%.1f" % ns if abs(ns) < 1000 else "{:,.0f}".format(ns)



def micro_op_section(ctx, doc, op):
    res = ctx.res
    doc.h(3, "%s" % op, "micro-" + op)
    if op in AN.MICRO_WHAT:
        doc.p("What is timed: ", AN.MICRO_WHAT[op], ".")
    ms = [m for m in res.select(op=op) if m.n is not None]
    ns = sorted({m.n for m in ms})
    groups = {}
    for m in ms:
        groups.setdefault((m.series, m.workload, m.backend, m.config,
                           tuple(sorted((k, v) for k, v in m.params.items() if k != "N"))), {})[m.n] = m
    key = ctx.backend_sort_key()
    sorder = {c: i for i, c in enumerate(AN.config_sort({g[0] for g in groups}))}
    worder = {w: i for i, w in enumerate(AN.workloads_of(ms))}
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3], g[4])):
        series, wl, backend, config, extra = g
        label = " ".join([backend] + ["%s:%s" % kv for kv in extra])
        row = [Code(label), Code(wl), Code(config)]
        row += [_cell_median(groups[g].get(n)) for n in ns]
        rows.append(row)
    doc.table(["backend", "workload", "configuration"] +
              ["N = %s" % A.fmt_n(n) for n in ns], rows,
              numeric=set(range(3, 3 + len(ns))))
    doc.p(TX.MICRO_CELLS)
    floor = AN.interface_floor(res, op)
    if floor:
        doc.p(*TX.spans(TX.MICRO_INTERFACE_FLOOR, floor=Code(floor[0].backend), times=_join(
            ["%s at N = %s" % (A.fmt_ns(m.median), A.fmt_n(m.n)) for m in floor])))
    work_table(ctx, doc, groups, ns, sorder, worder, key)
    errors = [m for m in res.select(op=op) if m.error]
    if errors:
        doc.p("Benchmarks that reported an error: ",
              *_join([(Code("%s N=%s" % (m.backend, m.n)), ": " + m.error[:120]) for m in errors]), ".")
    for series in AN.config_sort({m.series for m in ms} - {"precision"}):
        sms = [m for m in ms if m.series == series]
        for wl in AN.workloads_of(sms):
            lines = AN.legend_groups([m for m in sms if m.workload == wl])
            items = micro_findings(ctx, op, series, wl, lines)
            if items:
                doc.p(Bold("Findings"), " (series ", Code(series), ", workload ", Code(wl), "):")
                doc.ul(items)



def _times(m):
    """The repetitions' times (the median alone when only aggregates were
    kept: then too few to test)."""
    return list(m.times) if m.times else [m.median]



def fit_text(label, fit):
    """A complexity fit as a finding when it explains the data (RMS at
    most S.FIT_MAX_RMS), else "no fit" and why."""
    if S.fit_explains(fit):
        who = ("Least-squares complexity fit (Google Benchmark's curves) of the medians of "
               if fit.get("source") == "medians" else "Google Benchmark's complexity fit for ")
        return (who, Code(label), ": O(%s), RMS %s." % (
            fit["big_o"], A.fmt_pct(fit["rms"])))
    why = ("its best curve, O(%s), misses the points by RMS %s, above %s" % (
        fit["big_o"], A.fmt_pct(fit["rms"]), A.fmt_pct(S.FIT_MAX_RMS))
        if fit.get("rms") is not None else "the fit has no RMS error to judge it by")
    return ("Complexity of ", Code(label), ": no fit (%s)." % why)



def _work_cell(m):
    if m is None:
        return "—"
    w = A.work_of(m)
    if w is None:
        return "n/a"
    parts = ["%s %s" % (c[:-len("_per_op")], A.fmt_num(v)) for c, v in
             ((c, w[c]) for c in A.WORK_COUNTERS if c in w) if v]
    return ", ".join(parts) if parts else "0"



def work_table(ctx, doc, groups, ns, sorder, worder, key):
    """The structure's work per operation beside the times, when the
    results carry the work counters (issue 14)."""
    if not any(A.work_of(m) for g in groups.values() for m in g.values()):
        return
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3], g[4])):
        series, wl, backend, config, extra = g
        label = " ".join([backend] + ["%s:%s" % kv for kv in extra])
        rows.append([Code(label), Code(wl), Code(config)] +
                    [_work_cell(groups[g].get(n)) for n in ns])
    doc.table(["backend", "workload", "configuration"] +
              ["N = %s" % A.fmt_n(n) for n in ns], rows)
    doc.p(TX.MICRO_WORK_CELLS)



def micro_findings(ctx, op, config, wl, series):
    items = []
    order = series_order(ctx, series)
    for label in order:
        g = A.Growth([(m.n, m.median) for m in series[label]])
        if not g.ok:
            continue
        items.append((Code(label), ": %s at N = %s, %s at N = %s (%s; log-log slope %s, %s per doubling of N): %s." % (
            A.fmt_ns(g.t_lo), A.fmt_n(g.n_lo), A.fmt_ns(g.t_hi), A.fmt_n(g.n_hi),
            A.fmt_ratio(g.ratio), "%.2f" % g.slope if g.slope is not None else "n/a",
            ("%+.2f ns" % g.per_doubling) if g.per_doubling is not None else "n/a", g.shape())))
        m0 = series[label][0]
        w_lo, w_hi = A.work_total(series[label][0]), A.work_total(series[label][-1])
        if w_lo is not None and w_hi is not None:
            w_ratio = w_hi / w_lo if w_lo > 0 else (1.0 if w_hi == 0 else float("inf"))
            if g.grows() and w_ratio < A.FLAT_RATIO:
                why = "the time grows, the structure's work does not: the growth is the memory hierarchy's"
            elif g.grows():
                why = "the structure's work grows too (%s)" % A.fmt_ratio(w_ratio)
            else:
                why = "the time stays flat" if g.flat() else "the time grows less than the threshold"
            items.append((Code(label), ": work per operation %s at N = %s, %s at N = %s; %s." % (
                A.fmt_num(w_lo), A.fmt_n(g.n_lo), A.fmt_num(w_hi), A.fmt_n(g.n_hi), why)))
        fit = ctx.res.bigo.get((op, m0.backend, wl, m0.config))
        if fit and fit.get("big_o"):
            items.append(fit_text(label, fit))
    # A ranking or crossover over a series with instances missing could
    # name the wrong winner: none is given.
    gone = ctx.res.missing_for((op,), config, wl)
    if gone:
        items.append("No ranking or crossover: %s of this series were not measured "
                     "(see Limitations)." % AN.missing_text(gone))
        return items
    # Ranking at the largest N every series reached.
    common = None
    for label in order:
        s = {m.n for m in series[label]}
        common = s if common is None else common & s
    if common and len(order) > 1:
        n = max(common)
        at = sorted(((series[l][[m.n for m in series[l]].index(n)], l) for l in order),
                    key=lambda x: x[0].median)
        (best, bl), (worst, wl_) = at[0], at[-1]
        d = S.decide(_times(worst), _times(best))
        how = ("; not a significant difference, " if d.kind == "undecided" else "; ") + d.text()
        items.append(("At N = %s " % A.fmt_n(n), Code(bl), " is fastest (%s); " % A.fmt_ns(best.median),
                      Code(wl_), " takes %s as long (%s%s)." % (
                          A.fmt_ratio(worst.median / best.median), A.fmt_ns(worst.median), how)))
    # Crossovers between every pair of series, when at both ends of the
    # N range the two differ significantly (Mann-Whitney over the
    # repetitions).
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            da = {m.n: m for m in series[a]}
            db = {m.n: m for m in series[b]}
            ns = sorted(set(da) & set(db))
            if len(ns) < 2 or not all(S.decide(_times(da[n]), _times(db[n])).significant
                                      for n in (ns[0], ns[-1])):
                continue
            c = A.crossover([(n, da[n].median) for n in ns], [(n, db[n].median) for n in ns])
            if c and c[0] == "cross":
                items.append((Code(b), " overtakes ", Code(a), " at N ≈ %s." % A.fmt_n(round(c[1]))))
            elif c and c[0] == "a_overtakes":
                items.append((Code(a), " overtakes ", Code(b), " at N ≈ %s." % A.fmt_n(round(c[1]))))
    return items



def memory_section(ctx, doc):
    res = ctx.res
    doc.h(2, "Memory per pending task", "memory")
    # series=precision (one N, swept over the tick) is the front's, not N's
    have = [m for m in res.select() if not m.error and m.n is not None
            and AN.bytes_per_task(m) is not None and m.series != "precision"]
    if not have:
        doc.p("No memory results (a benchmark with a ", Code("bytes_per_task"),
              " counter) in this results directory: this section has no data.")
        ctx.missing.append(("Memory", "no bytes_per_task counter in any result"))
        return
    ops = sorted({m.op for m in have})
    doc.p(*TX.spans(TX.MEMORY_INTRO, ops=_join([Code(o) for o in ops])))

    def val(m):
        b = AN.bytes_per_task(m)
        vals = m.counters.get("bytes_per_task") or [b]
        return (b, min(vals), max(vals))
    panels = []
    for series in AN.config_sort({m.series for m in have}):
        sms = [m for m in have if m.series == series]
        for wl in AN.workloads_of(sms):
            g = AN.legend_groups([m for m in sms if m.workload == wl])
            if g:
                panels.append(("series %s, workload %s" % (series, wl), g))
    name = draw_n_figure(ctx, "memory", "Bytes held per pending task", panels[:6],
                         ylabel="bytes per pending task (B)", value=val)
    add_figure(ctx, doc, name, ("Bytes held per pending task against N.",),
               "bytes per task against N")
    ns = sorted({m.n for m in have})
    groups = {}
    for m in have:
        groups.setdefault((m.series, m.workload, m.backend, m.config), {})[m.n] = m
    key = ctx.backend_sort_key()
    sorder = {c: i for i, c in enumerate(AN.config_sort({g[0] for g in groups}))}
    worder = {w: i for i, w in enumerate(AN.workloads_of(have))}
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3])):
        by_n = groups[g]
        rows.append([Code(g[2]), Code(g[1]), Code(g[3])] +
                    ["%.1f" % AN.bytes_per_task(by_n[n]) if n in by_n else "—" for n in ns])
    doc.table(["backend", "workload", "configuration"] + ["N = %s" % A.fmt_n(n) for n in ns],
              rows, numeric=set(range(3, 3 + len(ns))))
    doc.p("Cells: median bytes per pending task over the repetitions.")
    n = max(ns)
    main = [m for m in have if m.n == n and m.series == "h2h"] or [m for m in have if m.n == n]
    wl = AN.workloads_of(main)[0]
    at = sorted((AN.bytes_per_task(m), m.backend) for m in main if m.workload == wl)
    gone = res.missing_for(("fill", "timeouts"), None, wl)
    if gone and len(at) > 1:
        doc.p("No smallest or largest footprint is named: %s of this workload "
              "were not measured (see Limitations)." % AN.missing_text(gone))
    elif len(at) > 1:
        lo, hi = at[0], at[-1]
        doc.ul([("At N = %s (workload " % A.fmt_n(n), Code(wl), ") the smallest footprint is ",
                 Code(lo[1]), " at %.1f B per task; the largest is " % lo[0], Code(hi[1]),
                 " at %.1f B (%s)." % (hi[0], A.fmt_ratio(hi[0] / lo[0]) if lo[0] > 0 else "n/a"))])
        ctx.finding(25, "Memory at N = %s: from %.1f B per pending task (" % (A.fmt_n(n), lo[0]),
                    Code(lo[1]), ") to %.1f B (" % hi[0], Code(hi[1]), ").")



def other_section(ctx, doc, micro_ops):
    known = set(AN.MICRO_OPS) | {"memory"} | set(AN.KNOWN_OPS)
    ops = [op for op in ctx.res.ops() if op not in known]
    if not ops:
        return
    doc.h(2, "Other measurements", "other")
    doc.p(TX.OTHER_INTRO)
    for op in ops:
        ms = ctx.res.select(op=op)
        doc.h(3, op)
        series = AN.legend_groups(ms)
        if series:
            name = draw_n_figure(ctx, "other-" + op, "%s: time against N" % op,
                                 [(op, series)])
            add_figure(ctx, doc, name, ("Benchmark ", Code(op), " against N."), op)
        generic_table(ctx, doc, ms)
