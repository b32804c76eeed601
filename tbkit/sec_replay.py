"""tbkit.sec_replay — the report's section on replayed timer traces (replay.json,
written by bench/replay.c through `./timerbench replay` or the standard
profile): per trace, the trace's own make-up, what each backend did with
it, a figure of the cost per operation, and a verdict; one figure of every
trace's delay distribution with its cancel ratio; rows for "Which one to
use".

The verdict for a trace is tbkit.replaydata.budget_verdict(trace) (issue 27), the
rule bench/replay.py applied when it wrote replay.json: among the
candidates (every backend, and every point of the ticked backends' tick
sweep) that kept every timer within its lateness budget, the cheapest by
CPU time per event, unless others are tied with it (tied_with below); the
share each missed by where none did; today's rule on the backends alone
when the trace gives no budget.  Per trace the section also shows the
budget applied, each backend's fires beyond their budget, the
cost-precision front (tbkit.front) with its three axes in one table (CPU
per event, lateness, and the wake-ups of the backend's thread, issue 38)
and the cheapest structure in each precision class.  The time is the replay
thread's CPU time per event: on these shared machines a repetition whose
thread was descheduled for a while has a wall time several times the
others' and would make every range overlap, while its CPU time does not
count the time it waited (the wall time is shown beside it).
"""

import os

from tbkit import claimtext as T
from tbkit import front as F
from tbkit import numbers as A
from tbkit import replaydata as RD
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.doc import Bold, Code, join as _join
from tbkit.figures import RawPath, add_figure, colour_for, draw_bars, draw_front as _draw_front
from tbkit.page import HEADINGS, link

# Operation kinds in the order the figure and tables show them, with what
# each one's time covers.
KINDS = [("schedule", "schedule"), ("periodic", "periodic schedule"),
         ("cancel", "cancel"), ("reschedule", "reschedule (the backend's re-arm, else cancel + schedule)"),
         ("advance", "clock advance, per call (its fires included)"),
         ("expire", "expiry per timer fired (advance time / fires)")]


def _fmt_bytes(b):
    if b is None:
        return "n/a"
    if b >= 1 << 20:
        return "%.1f MiB" % (b / float(1 << 20))
    if b >= 1 << 10:
        return "%.1f KiB" % (b / 1024.0)
    return "%d B" % b


def _spread_text(sp, fmt=A.fmt_ns):
    if sp is None:
        return "n/a"
    if sp["min"] == sp["max"]:
        return fmt(sp["median"])
    return "%s (%s..%s)" % (fmt(sp["median"]), fmt(sp["min"]), fmt(sp["max"]))


def _ordered(ctx, backends):
    """Replayed backends in registry order (the report's order), then as
    replay.json lists them."""
    reg = ctx.res.registry()
    pos = {b: i for i, b in enumerate(reg)}
    return sorted(backends, key=lambda b: (pos.get(b["backend"], len(pos)),
                                           backends.index(b)))


def _beyond_text(bud):
    """A backend's or sweep point's fires beyond their budget."""
    if bud is None:
        return "n/a (no budget counts)"
    if not bud["budget_fires"]:
        return "no budgeted fire"
    text = "%s of %s (%s)" % (A.fmt_n(bud["beyond_budget"]), A.fmt_n(bud["budget_fires"]),
                              A.fmt_pct(bud["beyond_budget"] / float(bud["budget_fires"])))
    if bud.get("over_budget_ns") and bud["beyond_budget"]:
        text += ", over by up to %s" % A.fmt_ns(bud["over_budget_ns"].get("max"))
    return text


def _budget_sentence(t, meta):
    """What budget the trace was replayed with."""
    b = t.get("budget")
    if b is None:
        return ("No lateness budget: this replay.json is from before budgets "
                "(format version and budgets absent).")
    ov = (meta or {}).get("lateness_override")
    if b["source"] == "none" or not b.get("timers_with_budget"):
        return "No lateness budget: the trace gives none and no --lateness was asked for."
    sl = b.get("slack_ns") or {}
    src = ("the trace's own slack column (format v%s)" % (t.get("format_version") or "?")
           if b["source"] == "trace" else
           "--lateness %s, overriding the trace's budgets" % (ov or {}).get("spec", "?"))
    return ("Budget applied: %s; %s of %s timers have one (slack min %s, p50 %s, p99 %s, "
            "max %s)." % (src, A.fmt_n(b["timers_with_budget"]), A.fmt_n(b.get("timers")),
                          A.fmt_ns(sl.get("min")), A.fmt_ns(sl.get("p50")),
                          A.fmt_ns(sl.get("p99")), A.fmt_ns(sl.get("max"))))


def draw_front(ctx, t):
    """The trace's cost-precision front (tbkit.figures.draw_front)."""
    return _draw_front(ctx, ctx.fig_name("replay-front-" + RD.trace_label(t)),
                        "Replay of %s: CPU per event against lateness" % RD.trace_label(t),
                        F.replay_candidates(t, RD.per_event), "CPU time per event (ns)")


def _delay_text(t):
    d = t["delay_ns"]
    if "min" not in d or "max" not in d:
        return "n/a"
    return "%s..%s (p50 %s)" % (A.fmt_ns(d["min"]), A.fmt_ns(d["max"]),
                                A.fmt_ns(d.get("p50")))


def _mix_text(t):
    ops = t["ops"]
    total = sum(ops.values()) or 1
    return ", ".join("%s %s" % (k, A.fmt_pct(ops[k] / float(total)))
                     for k in ("schedule", "periodic", "cancel", "reschedule") if ops.get(k))


def _resched_text(t):
    """Which backends re-armed in place (Go's Reset, the kernel's
    mod_timer) and which cancelled and scheduled anew."""
    if not t["ops"].get("reschedule"):
        return ""
    own = [b["name"] for b in t["backends"] if b.get("reschedules_in_place")]
    if not own:
        return " Every backend replays a reschedule as a cancel and a schedule."
    return (" %s re-arm%s a live timer in place (tb_reschedule); the others, "
            "whose originals have no such call, cancel and schedule anew."
            % (", ".join(own), "s" if len(own) == 1 else ""))


def draw_delays(ctx, traces):
    """One CDF of every trace's delays, one line per trace, its cancel
    ratio in the legend; delays of 0 are drawn at 1 us (log axis)."""
    blocks, colours = [], []
    for i, t in enumerate(traces):
        pts = [(max(x, 1e3) / 1e3, f) for x, f in t["delay_cdf"]]
        if not pts:
            continue
        blocks.append(("%s (cancel ratio %s)" % (RD.trace_label(t), A.fmt_pct(t["cancel_ratio"])),
                       [[x, f] for x, f in pts]))
        colours.append(colour_for(i))
    if not blocks:
        return None
    name = ctx.fig_name("replay-delays")
    ctx.figs.write_blocks("%s_1" % name, blocks, ["series", "fraction"])
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)),
         "title": "Replayed traces: delay distribution and cancel ratio",
         "npanels": 1, "xlabel": "delay (us; 0 drawn at 1 us)",
         "ptitle_1": "fraction of scheduled timers with a delay at or below x",
         "nseries_1": len(blocks), "colours_1": " ".join(colours),
         "dashes_1": " ".join("1" for _ in blocks)}
    return name if ctx.figs.draw("cdf", name, v) else None


def draw_costs(ctx, t):
    """Bars of time per operation kind, one panel per kind plus the total
    per event, one bar per backend in its colour, min..max as the spread."""
    bs = _ordered(ctx, t["backends"])
    panels = [("all events: CPU time per event", "ns per event", False,
               [(b["name"], b["backend"], (RD.per_event(b)["median"], RD.per_event(b)["min"],
                                        RD.per_event(b)["max"])) for b in bs])]
    for k, what in KINDS:
        bars = [(b["name"], b["backend"], (b["kinds"][k]["median"], b["kinds"][k]["min"],
                                        b["kinds"][k]["max"]))
                for b in bs if k in b["kinds"]]
        if bars:
            panels.append((what, "ns per operation", False, bars))
    return draw_bars(ctx, "replay-cost-" + RD.trace_label(t),
                     "Replay of %s: time per operation" % RD.trace_label(t), panels)


def replay_section(ctx, doc):
    """The report's section; nothing when the run replayed no trace (the
    skipped traces of a standard run are named)."""
    res = ctx.res
    info = res.run.get("replay") if isinstance(res.run.get("replay"), dict) else {}
    skipped = [s for s in info.get("skipped", []) if isinstance(s, dict)]
    if not res.replay and not skipped and info.get("status") != "failed":
        return
    doc.h(2, HEADINGS["replay"], "replay")
    if not res.replay:
        doc.p("No trace was replayed: ", *_join(
            [(Code(str(s.get("trace"))), ": %s" % s.get("why")) for s in skipped]
            + ([("the replay failed: %s" % info.get("error"),)] if info.get("error") else [])), ".")
        return
    meta = res.replay_meta or {}
    tick = meta.get("tick_ns")
    doc.p(*TX.spans(TX.METHOD_REPLAY,
                    tick=A.fmt_ns(tick) if isinstance(tick, (int, float)) else "common",
                    reps="%s" % (meta.get("reps", "?"),)))
    if skipped:
        doc.p("Not replayed: ", *_join([(Code(str(s.get("trace"))), ": %s" % s.get("why"))
                                        for s in skipped]), ".")
    failed = [(t, n, why) for t in res.replay for n, why in t.get("failed", [])]
    if failed:
        doc.p(*TX.spans(TX.REPLAY_FAILED, failed=_join(
            [(Code(n), " on ", Code(RD.trace_label(t)), " (%s)" % why)
             for t, n, why in failed])))
    names = []
    for t in res.replay:
        for b in _ordered(ctx, t["backends"]):
            if b["name"] not in names:
                names.append(b["name"])
    rows = []
    for t in res.replay:
        by = {b["name"]: b for b in t["backends"]}
        row = [Code(RD.trace_label(t)), A.fmt_n(t["events"]), A.fmt_pct(t["cancel_ratio"]),
               _delay_text(t)]
        for n in names:
            b = by.get(n)
            row.append("%s, %s" % (A.fmt_ns(RD.per_event(b)["median"]),
                                   _fmt_bytes(b["bytes_at_peak"])) if b else
                       "failed its check" if n in dict(t.get("failed", [])) else "not replayed")
        row.append((Bold(", ".join(RD.verdict_names(t)) if RD.budgeted(t) else
                         RD.cost_verdict(t)[2] or "tied: " + ", ".join(RD.tied_names(t))),))
        rows.append(row)
    doc.table(["trace", "events", "cancel ratio", "delays"] +
              ["%s: CPU per event, peak bytes" % n for n in names] +
              ["recommended (within budget where the trace has one)"], rows,
              numeric={1, 2})
    add_figure(ctx, doc, draw_delays(ctx, res.replay),
            TX.REPLAY_DELAYS_CAPTION, "delay distributions of the traces")
    for t in res.replay:
        label = RD.trace_label(t)
        doc.h(3, "Trace %s" % label, "replay-" + label)
        src = [c.lstrip("# ").strip() for c in t["comments"]][:4]
        doc.p(Code(t["file"]), ": %s events over %s, %s timers; op mix %s; cancel ratio %s; "
              "delays %s." % (A.fmt_n(t["events"]), A.fmt_ns(t["duration_ns"]),
                              A.fmt_n(t["timers"]), _mix_text(t), A.fmt_pct(t["cancel_ratio"]),
                              _delay_text(t)),
              (" Cancels of ids not live (counted, not replayed): %d; reschedules of "
               "ids not live (replayed as schedules): %d." % (t["cancel_unknown"],
                                                               t["reschedule_unknown"]))
              if t["cancel_unknown"] or t["reschedule_unknown"] else "",
              (" The trace says: " + "; ".join(src) + ".") if src else "",
              _resched_text(t))
        doc.p(_budget_sentence(t, meta))
        add_figure(ctx, doc, draw_costs(ctx, t),
                ("Replay of ", Code(label), ": time per event and per operation kind, "
                 "median of the repetitions, the line from the fastest to the slowest."),
                "cost per operation, trace %s" % label)
        table = []
        for b in _ordered(ctx, t["backends"]):
            kinds = ", ".join("%s %s" % (k, A.fmt_ns(b["kinds"][k]["median"]))
                              for k, _ in KINDS if k in b["kinds"])
            lt = b["lateness_ticks"]
            late = ("p50 %s, p99 %s, max %s ticks" % tuple(A.fmt_num(lt.get(q))
                                                           for q in ("p50", "p99", "max"))
                    if b["ticked"] else "0 (no ticks)" if not b["lateness_ns"].get("max")
                    else "max %s" % A.fmt_ns(b["lateness_ns"]["max"]))
            table.append([Code(b["name"]), _spread_text(RD.per_event(b)),
                          _spread_text(b["ns_per_event"]),
                          kinds or "n/a", A.fmt_n(b["peak_pending"]),
                          _fmt_bytes(b["bytes_at_peak"]), late,
                          _beyond_text(b.get("budget"))])
        counted = [b for b in t["backends"] if b["counts"]]
        head = ["backend", "CPU per event", "wall per event", "per operation (median)",
                "peak pending", "bytes at peak", "lateness", "fires beyond their budget"]
        if counted:
            head.append("instructions / event (D1, LL misses)")
            for row, b in zip(table, _ordered(ctx, t["backends"])):
                c = b["counts"]
                row.append("%.0f (%.2f, %.3f)" % (c["instructions_per_event"],
                                                  c["d1_misses_per_event"],
                                                  c["ll_misses_per_event"]) if c else "n/a")
        doc.table(head, table, numeric={4, 5})
        if len(counted) > 1:
            order = sorted(counted, key=lambda b: b["counts"]["instructions_per_event"])
            doc.p("By instructions per event under Valgrind (deterministic, the same on "
                  "every run): ", *_join([(Code(b["name"]), " %.0f" % b["counts"][
                      "instructions_per_event"]) for b in order]), ".")
        if t["sweep"]:
            srows = []
            for p in t["sweep"]:
                if p.get("skipped") or p.get("failed"):
                    srows.append([Code(p["name"]), "skipped: " + p["skipped"] if p.get("skipped")
                                  else "failed its check: " + p["failed"], "", "", ""])
                    continue
                srows.append([Code(p["name"]), _spread_text(RD.per_event(p)),
                              A.fmt_ns(p["lateness"]["max_ns"]), A.fmt_ns(p["lateness"]["p99_ns"]),
                              _beyond_text(p.get("budget"))])
            doc.p(TX.REPLAY_SWEEP)
            doc.table(["backend and tick", "CPU per event", "max lateness", "p99 lateness",
                       "fires beyond their budget"], srows)
        cands = F.replay_candidates(t, RD.per_event)
        if any(c["sweep"] for c in cands):
            add_figure(ctx, doc, draw_front(ctx, t),
                       ("Replay of ", Code(label), ": CPU time per event against the lateness "
                        "it gave (left: max, right: p99), one line per ticked backend through "
                        "its ticks, the exact structures at \"exact\"."),
                       "cost-precision front, trace %s" % label)
        if any(c.get("wakeups") is not None for c in cands):
            doc.p(TX.REPLAY_FRONT_AXES)
            doc.table(["candidate", "CPU per event", "max lateness", "p99 lateness",
                       "wake-ups"],
                      [[Code(c["name"]), A.fmt_ns(c["cost"]), A.fmt_ns(c["max_ns"]),
                        A.fmt_ns(c["p99_ns"]),
                        A.fmt_n(c["wakeups"]) if c.get("wakeups") is not None else "n/a"]
                       for c in sorted(cands, key=lambda c: c["cost"])], numeric={1, 2, 3, 4})
        if cands:
            doc.p(Bold("Cheapest at each precision:"), " ", F.class_sentence(cands),
                  " (a class holds a candidate whose lateness fits it, by the rule of "
                  "tbkit/precision.py).")
        _, text = RD.verdict_text(t)
        doc.p(Bold("Which one for this trace:"), " ", text, ".")
    ctx.finding(15, "Replayed traces, lowest CPU time per event within the timers' "
                "budgets: ", *_join(
                    [(Code(RD.trace_label(t)), " → ", Bold(", ".join(RD.verdict_names(t))),
                      " (%s)" % T.precision_text(RD.precision_facts(t, RD.verdict_names(t))))
                     for t in res.replay], "; "), ".",
                more=link("Replayed traces", "replay"))
    doc.p(TX.REPLAY_RULE.format(effect=A.fmt_pct(S.MIN_EFFECT)))
