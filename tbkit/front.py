"""tbkit.front — the cost-precision front as data (issue 27; analysis
layer, drawn by tbkit.figures.draw_front): for a replayed trace or
the `timeouts` micro workload, what each candidate (a backend, or a ticked
backend at one tick of its sweep) cost against how late it ran timers, the
cheapest candidate in each precision class, and the figure: one line per
ticked backend through its sweep points, the exact structures as single
points at the axis' "exact" position.

Precision classes are tbkit.precision's (CLASSES, precision_class: the rule
bench/replay.py applies too): exact (max lateness 0), <= 50 us, <= 1 ms,
<= 1 tick + 8/63 of the delay (Linux's wheel's bound, every fire), any.  A replay candidate's class is tbkit.precision.precision_class
of its entry in replay.json; a micro candidate's is the same test on its
counters (lateness_max_ns, and lateness_max_share: a largest lateness
within 8/63 of the delay is within the class whatever the tick).  The
cheapest in a class is the one with the lowest median cost, with those
within S.MIN_EFFECT of it named beside it (two runs of one commit differ
by that much).
"""

from tbkit import numbers as A
from tbkit import precision as P
from tbkit import stats as S

CLASSES = P.CLASSES


def fits(cand, cls):
    """Whether candidate `cand` (see the candidates functions) holds at
    precision class `cls` (a name in CLASSES)."""
    return CLASSES.index(cand["class"]) <= CLASSES.index(cls)


def _micro_class(max_ns, max_share):
    """tbkit.precision.precision_class's rule on the micro counters."""
    return P.precision_class({"lateness": {"max_ns": max_ns, "beyond_eighth_of_delay":
                                           0 if max_share is not None
                                           and max_share <= P.GRANULAR_SHARE else 1}})


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


def _wakeups(entry):
    """An entry's wake-up count, or None when it has none (or a bad one)."""
    w = entry.get("wakeups")
    return w if isinstance(w, int) and not isinstance(w, bool) and w >= 0 else None


def replay_candidates(t, per_event):
    """A replayed trace's candidates: every backends[] entry (its lateness
    from the check pass) and every sweep point that ran and passed.
    per_event: tbkit.replaydata.per_event (the spread the verdict compares).  The
    class of each is tbkit.precision's, on its entry in replay.json; its
    "wakeups" (how often its thread would wake, issue 38) is the entry's, or
    None in a replay.json from before them."""
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
                    "sweep": False, "budget": b.get("budget"),
                    "wakeups": _wakeups(raw.get(b["name"], {}))})
    for p in t["sweep"]:
        if p.get("skipped") or p.get("failed"):
            continue
        sp = p.get("cpu_ms_per_million_events") or p["ns_per_event"]
        out.append({"name": p["name"], "backend": p["backend"], "ticked": True,
                    "tick_ns": p["tick_ns"], "cost": sp["median"],
                    "max_ns": p["lateness"]["max_ns"], "p99_ns": p["lateness"]["p99_ns"],
                    "class": P.precision_class(raw.get(p["name"], {})),
                    "sweep": True, "budget": p.get("budget"),
                    "wakeups": _wakeups(raw.get(p["name"], {}))})
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
