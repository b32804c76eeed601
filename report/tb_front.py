"""tb_front — the cost-precision front (issue 27): for a replayed trace or
the `timeouts` micro workload, what each candidate (a backend, or a ticked
backend at one tick of its sweep) cost against how late it ran timers, the
cheapest candidate in each precision class, and the figure: one line per
ticked backend through its sweep points, the exact structures as single
points at the axis' "exact" position.

Precision classes are tb_precision's (CLASSES, precision_class: the rule
bench/replay.py applies too): exact (max lateness 0), <= 50 us, <= 1 ms,
<= 1/8 of the delay (every fire's lateness at most an eighth of its
delay), any.  A replay candidate's class is tb_precision.precision_class
of its entry in replay.json; a micro candidate's is the same test on its
counters (lateness_max_ns, and lateness_max_share for the 1/8 rule).  The
cheapest in a class is the one with the lowest median cost, with those
within S.MIN_EFFECT of it named beside it (two runs of one commit differ
by that much).
"""

import math
import os

import tb_analysis as A
import tb_precision as P
import tb_stats as S
from tb_figures import RawPath

CLASSES = P.CLASSES


def fits(cand, cls):
    """Whether candidate `cand` (see the candidates functions) holds at
    precision class `cls` (a name in CLASSES)."""
    return CLASSES.index(cand["class"]) <= CLASSES.index(cls)


def _micro_class(max_ns, max_share):
    """tb_precision.precision_class's rule on the micro counters."""
    return P.precision_class({"lateness": {"max_ns": max_ns, "beyond_eighth_of_delay":
                                           0 if max_share is not None and max_share <= 0.125
                                           else 1}})


def cheapest_by_class(cands):
    """[(class name, [names of the cheapest and those within MIN_EFFECT of
    it], cheapest candidate or None)] for every class in CLASSES."""
    out = []
    for cls in CLASSES:
        inside = sorted((c for c in cands if fits(c, cls)), key=lambda c: c["cost"])
        if not inside:
            out.append((cls, [], None))
            continue
        best = inside[0]
        tied = [c["name"] for c in inside[1:] if c["cost"] <= best["cost"] * (1 + S.MIN_EFFECT)]
        out.append((cls, [best["name"]] + tied, best))
    return out


def class_of(cand):
    """The strictest class the candidate holds."""
    return cand["class"]


def replay_candidates(t, per_event):
    """A replayed trace's candidates: every backends[] entry (its lateness
    from the check pass) and every sweep point that ran and passed.
    per_event: tb_replay.per_event (the spread the verdict compares).  The
    class of each is tb_precision's, on its entry in replay.json."""
    raw = {}
    for e in list(t["raw"].get("backends") or []) + list(t["raw"].get("sweep") or []):
        if isinstance(e, dict) and isinstance(e.get("name"), str):
            raw[e["name"]] = e
    out = []
    for b in t["backends"]:
        late = b["lateness_ns"]
        if late.get("max") is None:
            continue
        out.append({"name": b["name"], "backend": b["backend"], "ticked": b["ticked"],
                    "tick_ns": b["tick_ns"], "cost": per_event(b)["median"],
                    "max_ns": late["max"], "p99_ns": late.get("p99"),
                    "class": P.precision_class(raw.get(b["name"], {})),
                    "sweep": False, "budget": b.get("budget")})
    for p in t["sweep"]:
        if p.get("skipped") or p.get("failed"):
            continue
        sp = p.get("cpu_ms_per_million_events") or p["ns_per_event"]
        out.append({"name": p["name"], "backend": p["backend"], "ticked": True,
                    "tick_ns": p["tick_ns"], "cost": sp["median"],
                    "max_ns": p["lateness"]["max_ns"], "p99_ns": p["lateness"]["p99_ns"],
                    "class": P.precision_class(raw.get(p["name"], {})),
                    "sweep": True, "budget": p.get("budget")})
    return out


def micro_candidates(res):
    """The timeouts micro workload's precision series (bench/micro.c,
    series=precision): (N, step_ns, candidates), or None when the run has
    none.  One N: the profile's precision_n."""
    ms = [m for m in res.select(op="timeouts")
          if m.cfg.get("series") == "precision" and m.median is not None and not m.error
          and m.counter("lateness_max_ns") is not None]
    if not ms:
        return None
    n = max(m.n for m in ms if m.n is not None)
    out, steps = [], set()
    for m in ms:
        if m.n != n:
            continue
        tick = m.cfg.get("tick")
        step = m.counter("step_ns")
        if step is not None:
            steps.add(step)
        out.append({"name": "%s tick=%s" % (m.backend, tick) if tick else m.backend,
                    "backend": m.backend, "ticked": bool(tick),
                    "tick_ns": m.counter("tick_ns") or 0, "cost": m.median,
                    "max_ns": m.counter("lateness_max_ns"),
                    "p99_ns": m.counter("lateness_p99_ns"),
                    "class": _micro_class(m.counter("lateness_max_ns"),
                                          m.counter("lateness_max_share")),
                    "sweep": bool(tick)})
    return n, (max(steps) if steps else None), out


def class_sentence(cands):
    """Spans: per class, the cheapest candidate and its cost and lateness."""
    parts = []
    for label, names, best in cheapest_by_class(cands):
        if best is None:
            parts.append("%s: none" % label)
            continue
        parts.append("%s: %s (%s, max lateness %s)" % (
            label, " and ".join(names) + (" tied" if len(names) > 1 else ""),
            A.fmt_ns(best["cost"]), A.fmt_ns(best["max_ns"])))
    return "; ".join(parts)


def draw_front(ctx, name, title, cands, ylabel):
    """The front: two panels (max and p99 lateness on x, log scale; cost on
    y), one line per ticked backend through its sweep points in the
    backend's colour, the exact structures (and any point that was never
    late) at the left-most "exact" position.  Returns the figure's name or
    None.  The data files keep the true lateness (0 for exact) in a column
    beside the x drawn."""
    lines = {}
    for c in cands:
        if c["sweep"]:
            lines.setdefault(c["backend"], []).append(c)
    points = [c for c in cands if not c["sweep"] and not (c["ticked"] and c["backend"] in lines)]
    late = [c[k] for c in cands for k in ("max_ns", "p99_ns") if c.get(k)]
    if not cands:
        return None
    # "exact" sits one decade left of the smallest lateness drawn (in us)
    floor_us = min(late) / 1e3 if late else 1.0
    exact_x = 10 ** (math.floor(math.log10(floor_us)) - 1)
    order = {b: i for i, b in enumerate(ctx.res.registry())}
    series = [(b, sorted(ps, key=lambda c: c["tick_ns"])) for b, ps in
              sorted(lines.items(), key=lambda kv: order.get(kv[0], len(order)))]
    series += [(c["name"], [c]) for c in sorted(points, key=lambda c: (
        order.get(c["backend"], len(order)), c["name"]))]
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)), "title": title,
         "npanels": 2, "exact_x": float(exact_x), "ylabel": ylabel,
         "xlabel": "lateness (us, log scale; exact = never late)"}
    for k, key, what in ((1, "max_ns", "max lateness"), (2, "p99_ns", "p99 lateness")):
        blocks, colours, dashes = [], [], []
        for title_s, ps in series:
            rows = []
            for c in ps:
                x = c.get(key)
                if x is None:
                    continue
                rows.append([exact_x if x <= 0 else x / 1e3, c["cost"], x,
                             "tick=%s" % A.fmt_ns(c["tick_ns"]) if c["ticked"] else
                             "exact" if x <= 0 else "no tick"])
            if not rows:
                continue
            blocks.append((title_s, rows))
            colours.append(ctx.colour(ps[0]["backend"]))
            dashes.append("1" if ps[0]["sweep"] or "+" not in ps[0]["name"] else "2")
        if not blocks:
            return None
        ctx.figs.write_blocks("%s_%d" % (name, k), blocks,
                              ["series", "cost", "lateness_ns", "point"])
        v["ptitle_%d" % k] = "cost against %s" % what
        v["nseries_%d" % k] = len(blocks)
        v["colours_%d" % k] = " ".join(colours)
        v["dashes_%d" % k] = " ".join(dashes)
    return name if ctx.figs.draw("front", name, v) else None
