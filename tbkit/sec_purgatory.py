"""tbkit.sec_purgatory — the report's section on the purgatory experiment
(sections layer, issue 41): Kafka's purgatory benchmark played open loop
on real threads against every backend, the floor, the event-loop
libraries (purgatory.json) and the JVM's timers (purgatory-jvm.json):
the method as this run's files state it, achieved against offered rate
and CPU per request against rate per shape, each subject's saturation
interval, the figures at the highest rate it took, and the claim's
verdict.  Without the files it says why.

The data is tbkit.purgatory's; the verdict tbkit.claims.purgatory_saturation's.
"""

from tbkit import claimtext as T
from tbkit import numbers as A
from tbkit import purgatory as PG
from tbkit import texts as TX
from tbkit.doc import Bold, Code
from tbkit.figures import FLOOR_COLOUR, add_figure, colour_for, draw_lines

TITLE = "A broker under load: the purgatory experiment"
SECTION = "The purgatory experiment"
# line dash types by side (plots/micro.gp: gnuplot dash types)
DASH = {"backend": 1, "library": 2, "jvm": 4, "floor": 3}
REFERENCE_COLOUR = "#999999"


def _claim_of(claims):
    for c in claims or ():
        if c.id == "purgatory_saturation":
            return c
    return None


def _rate(r):
    return T.fmt_rate(r)


def _label(name, subject):
    return subject + (" (JVM)" if name == PG.FILE_JVM else "")


def _grid_text(f):
    g = f["grid"]
    rates = g["rates"]
    return "rates %s to %s (%d steps), %s of play each, %d repetition%s" % (
        _rate(rates[0]), _rate(rates[-1]), len(rates), A.fmt_ns(g["seconds"] * 1e9),
        g["repetitions"], "" if g["repetitions"] == 1 else "s")


def _pin_text(f):
    p = f["pinning"]
    cpus = "player on CPU %s, subject's threads on CPU %s" % (
        "?" if p["player_cpu"] is None else p["player_cpu"],
        "?" if p["subject_cpu"] is None else p["subject_cpu"])
    if p["player_cpu"] is None and p["subject_cpu"] is None:
        # the note says how it ran instead
        return p["note"] or "not pinned"
    # the players' notes name the CPUs themselves
    return p["note"] or cpus


def _subjects(play):
    """[(file, subject, side, structure)] over both files."""
    return [(n,) + s for n in (PG.FILE_C, PG.FILE_JVM) for s in play.subjects(n)]


def _colours(ctx, subjects):
    out, extra = {}, 0
    base = len(ctx.colours)
    for n, s, side, _ in subjects:
        if side == PG.FLOOR:
            out[(n, s)] = FLOOR_COLOUR
        elif side == "backend" and s in ctx.colours:
            out[(n, s)] = ctx.colours[s]
        else:
            out[(n, s)] = colour_for(base + extra)
            extra += 1
    return out


def _figures(ctx, doc, play, subjects):
    colours = _colours(ctx, subjects)
    rate_panels, cpu_panels = [], []
    for shape in PG.SHAPES:
        lines, cpu, xs = [], [], []
        for n, s, side, _ in subjects:
            pts = [p for p in play.points(n, s, shape) if p["offered"] and p["achieved"]]
            if not pts:
                continue
            xs += [p["offered"][0] for p in pts]
            lines.append((_label(n, s), colours[(n, s)], DASH.get(side, 1),
                          [[p["offered"][0]] + list(p["achieved"]) for p in pts]))
            cpu.append((_label(n, s), colours[(n, s)], DASH.get(side, 1),
                        [[p["offered"][0]] + list(p["cpu"]) for p in pts
                         if p["cpu"] and p["cpu"][0] > 0]))
        if not lines:
            continue
        lo, hi = min(xs), max(xs)
        # the reference first, so that the subjects' lines are drawn over it
        lines.insert(0, ("achieved = offered", REFERENCE_COLOUR, 2,
                         [[lo, lo, lo, lo], [hi, hi, hi, hi]]))
        p50, p75 = PG.SHAPE_P50_P75_MS[shape]
        what = "%s timeouts (completion p50 %g ms, p75 %g ms)" % (shape, p50, p75)
        rate_panels.append((what, lines))
        cpu_panels.append((what, cpu))
    name = draw_lines(ctx, "purgatory-rate", "Achieved against offered request rate",
                      rate_panels, "offered rate (requests/s)", "achieved rate (requests/s)")
    add_figure(ctx, doc, name, TX.PURGATORY_RATE_CAPTION,
               "achieved against offered request rate per subject")
    name = draw_lines(ctx, "purgatory-cpu", "CPU time per request against request rate",
                      cpu_panels, "offered rate (requests/s)",
                      "the subject's CPU time per request (ns)")
    add_figure(ctx, doc, name, TX.PURGATORY_CPU_CAPTION,
               "CPU time per request against request rate per subject")


def _cell(iv):
    if iv is None:
        return "not run"
    return T.interval_text(iv)


def _at_top(pts):
    """The point at the highest rate no repetition saturated, else the lowest."""
    ok = [p for p in pts if not p["saturated"]]
    return (ok or pts[:1])[-1] if pts else None


def purgatory_section(ctx, doc, claims=None):
    """The section; `claims` are the evaluated claims (the verdict is
    purgatory_saturation's)."""
    res = ctx.res
    doc.h(2, TITLE, "purgatory")
    play = PG.load(res)
    for p in play.problems:
        ctx.missing.append((SECTION, p))
    if not play.ran():
        why = "; ".join(play.absent[n] for n in sorted(play.absent))
        doc.p("Not measured: the experiment did not run (", why, ").")
        ctx.missing.append((SECTION, "the experiment did not run (%s)" % why))
        return
    few, many = PG.SHAPE_P50_P75_MS["few"], PG.SHAPE_P50_P75_MS["many"]
    doc.p(*TX.spans(TX.PURGATORY_INTRO, timeout="%g" % PG.TIMEOUT_MS,
                    few_p50="%g" % few[0], few_p75="%g" % few[1],
                    many_p50="%g" % many[0], many_p75="%g" % many[1],
                    rate_shortfall=A.fmt_pct(PG.SAT_RATE_SHORTFALL),
                    lag_growth=A.fmt_ns(PG.SAT_LAG_GROWTH_NS),
                    expiry_shortfall=A.fmt_pct(PG.SAT_EXPIRY_SHORTFALL),
                    drain=A.fmt_ns(PG.DRAIN_NS),
                    lateness_growth=A.fmt_ns(PG.SAT_LATENESS_GROWTH_NS)))
    items = []
    for n in (PG.FILE_C, PG.FILE_JVM):
        if n in play.files:
            f = play.files[n]
            items.append((Code(n), ", written by %s, profile %s: %s; %s." % (
                PG.PLAYER[n], f["profile"], _grid_text(f), _pin_text(f))))
            if f["skipped"]:
                # one clause per reason, its subjects together (a profile
                # leaves every library out for one reason)
                why = {}
                for s in f["skipped"]:
                    why.setdefault(s["why"], []).append(s["subject"])
                items.append(("Not played from ", Code(n), ": ", "; ".join(
                    "%s (%s)" % (", ".join(subj), w) for w, subj in why.items()), "."))
        else:
            items.append((Code(n), ", from %s: not measured, %s." % (PG.PLAYER[n], play.absent[n])))
            ctx.missing.append((SECTION, play.absent[n]))
    doc.ul(items)
    subjects = _subjects(play)
    _figures(ctx, doc, play, subjects)
    doc.p(*TX.spans(TX.PURGATORY_SATURATION))
    doc.table(["subject", "side", "structure", "few", "many"],
              [[Code(_label(n, s)), side, st] +
               [_cell(play.interval(n, s, shape)) for shape in PG.SHAPES]
               for n, s, side, st in subjects])
    rows = []
    for n, s, side, _ in subjects:
        for shape in PG.SHAPES:
            p = _at_top(play.points(n, s, shape))
            if p is None:
                continue
            rows.append([Code(_label(n, s)), shape, _rate(p["rate"]),
                         "%s / %s" % (_rate(p["achieved"][0]), _rate(p["offered"][0])),
                         A.fmt_ns(p["cpu"][0]), A.fmt_ns(p["process_cpu"][0]),
                         A.fmt_pct(p["fired_share"][0]), A.fmt_ns(p["lateness_p99"]),
                         A.fmt_num(p["peak_pending"]), A.fmt_num(p["peak_zombies"])])
    doc.p(TX.PURGATORY_AT_TOP)
    doc.table(["subject", "shape", "target", "achieved / offered", "subject CPU per request",
               "process CPU", "fired", "p99 lateness", "peak pending", "peak zombies"],
              rows, numeric={2, 4, 5, 6, 7, 8, 9})
    _prediction(doc, play, res)
    cl = _claim_of(claims)
    if cl is not None:
        doc.p(Bold(cl.title), ": ", Bold(cl.text), ".")
        if cl.cases:
            doc.table(["case", "decision", "why"],
                      [[c.name, c.decision, T.purgatory_why(c.values)] for c in cl.cases])
        doc.p("Rule: ", cl.rule, ".")


def _prediction(doc, play, res):
    """What this run's micro-benchmarks predicted for the C pair."""
    pred = PG.micro_prediction(res, play)
    if not pred:
        return
    doc.p(*TX.spans(TX.PURGATORY_PREDICTION))
    rows = []
    for x in pred:
        best = min(l["per_request_ns"] for l in x["lines"])
        for l in x["lines"]:
            rows.append([x["shape"], A.fmt_num(x["pending"]), A.fmt_n(x["n"]),
                         A.fmt_pct(x["cancelled_share"]), Code(l["label"]),
                         A.fmt_ns(l["insert_ns"]), A.fmt_ns(l["cancel_ns"]),
                         A.fmt_ns(l["per_request_ns"]),
                         A.fmt_ratio(l["per_request_ns"] / best) if best else "n/a"])
    doc.table(["shape", "pending", "micro N", "cancelled", "subject", "insert", "cancel",
               "per request", "/ cheapest"], rows, numeric={1, 2, 3, 5, 6, 7, 8})
