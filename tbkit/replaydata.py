"""tbkit.replaydata — the verdicts on replayed traces, as plain data
(analysis layer): the cost each candidate is compared by (per_event), the
rule that ties two candidates (tied_with), the cost verdict over the
backends (cost_verdict) and the budget-respecting verdict replay.json
records (budget_verdict, issue 27), which tbkit.replayrun writes and the
report's sections and claims read.

budget_verdict: among the candidates (every backend, and every point of
the ticked backends' tick sweep) that kept every timer within its lateness
budget, the cheapest by CPU time per event, unless others are tied with it;
the share each missed by where none did; the cost rule on the backends
alone when the trace gives no budget.
"""

from tbkit import front
from tbkit import numbers as A
from tbkit import stats as S
from tbkit.precision import CLASSES, fits

UNDECIDED = "undecided"
TIED = "tied"


def candidates(trace):
    """Every backends[] entry and every sweep[] point that ran and passed
    its checks, in that order."""
    out = []
    for c in list(trace.get("backends") or []) + list(trace.get("sweep") or []):
        if not isinstance(c, dict) or c.get("skipped") or c.get("error"):
            continue
        if (c.get("checks") or {}).get("passed") is False:
            continue
        if not (c.get("cpu_ms_per_million_events") or c.get("ns_per_event")):
            continue
        out.append(c)
    return out


def _cost(c):
    return per_event(c)["median"]


def cheapest_per_class(trace):
    """{class: name of the cheapest candidate that holds at it, or None}."""
    cands = sorted(candidates(trace), key=_cost)
    return {cls: next((c["name"] for c in cands if fits(c, cls)), None)
            for cls in CLASSES}


# ---- The verdict ------------------------------------------------------------

def _beyond(c):
    return (c.get("lateness") or {}).get("beyond_budget", 0) or 0


def _budget_fires(c):
    return (c.get("lateness") or {}).get("budget_fires", 0) or 0


def has_budgets(trace):
    """Whether any timer of the trace had a budget (its own, or
    --lateness)."""
    b = trace.get("budget") or {}
    return bool(b.get("timers_with_budget")) and b.get("source") != "none"


def _cheapest(cands):
    """(recommended names, kind) by cost_verdict's rule: the lowest
    median CPU per event, with every candidate tied with it."""
    order = sorted(cands, key=_cost)
    best = order[0]
    tied = tied_with(best, order[1:])
    return [best["name"]] + [c["name"] for c in tied], "tied" if tied else "best"


def budget_verdict(trace):
    """The recommendation for one replayed trace, as replay.json keeps it:
    {"recommended": [names], "kind": "best" | "tied" |
    "none_within_budget", "rule": one sentence, "within_budget": [names],
    "missed": {name: share of budgeted fires beyond budget}}.

    With budgets: among the candidates (backends[] and the sweep's passed
    points) that ran no fire beyond its budget, the cheapest by CPU per
    event, unless tied (tied_with); when none kept every budget,
    those that missed the smallest share.  Without budgets: the same cost
    rule on backends[] alone."""
    if not has_budgets(trace):
        cands = [c for c in candidates(trace) if c in (trace.get("backends") or [])]
        if not cands:
            return {"recommended": [], "kind": "best", "within_budget": [],
                    "missed": {}, "rule": "no timer had a lateness budget and "
                    "no backend passed its checks: nothing to recommend"}
        rec, kind = _cheapest(cands)
        return {"recommended": rec, "kind": kind, "within_budget": [],
                "missed": {},
                "rule": "no lateness budget was given (trace v1 without "
                        "--lateness): the lowest CPU per event among the "
                        "backends, ties within the noise kept together"}
    cands = candidates(trace)
    missed = {c["name"]: (_beyond(c) / float(_budget_fires(c))
                          if _budget_fires(c) else 0.0) for c in cands}
    within = [c for c in cands if _beyond(c) == 0]
    source = (trace.get("budget") or {}).get("source")
    src = "--lateness" if source == "override" else "the trace's slack"
    if within:
        rec, kind = _cheapest(within)
        return {"recommended": rec, "kind": kind,
                "within_budget": [c["name"] for c in within], "missed": missed,
                "rule": "only backends and tick sweep points that ran every "
                        "timer within its budget (%s) are candidates; the "
                        "lowest CPU per event among them wins, ties within "
                        "the noise kept together" % src}
    if not cands:
        return {"recommended": [], "kind": "none_within_budget",
                "within_budget": [], "missed": {},
                "rule": "no backend passed its checks"}
    least = min(missed.values())
    return {"recommended": [n for n, v in missed.items() if v == least],
            "kind": "none_within_budget", "within_budget": [], "missed": missed,
            "rule": "no backend or sweep point ran every timer within its "
                    "budget (%s): those that missed the smallest share of "
                    "budgeted fires are named" % src}


def per_event(b):
    """The spread the verdict compares: CPU ns per event (replay.json's CPU
    ms per 10^6 events, the same number), else wall ns per event."""
    return b.get("cpu_ms_per_million_events") or b["ns_per_event"]


def tied_with(best, others):
    """The backends no different from `best` by the report's rule: a median
    within S.MIN_EFFECT of its median (closer than two runs of one commit
    differ), or more but not significantly so by the Mann-Whitney test over
    the repetitions (too few repetitions to test counts as not)."""
    pb = per_event(best)
    out = []
    for b in others:
        pe = per_event(b)
        if pe["median"] <= pb["median"] * (1 + S.MIN_EFFECT):
            out.append(b)
            continue
        d = S.decide(pe.get("reps") or [pe["median"]], pb.get("reps") or [pb["median"]])
        if d.kind != "greater":
            out.append(b)
    return out


def cost_verdict(trace):
    """(kind, text, best name or None): the backend with the lowest median
    CPU time per event when every other is slower by the rule of tied_with,
    else "tied" and the backends tied with it."""
    cands = sorted(trace["backends"], key=lambda b: per_event(b)["median"])
    if not cands:
        return UNDECIDED, "no backend was replayed", None
    best = cands[0]
    if len(cands) == 1:
        return "best", "only %s was replayed" % best["name"], best["name"]
    tied = tied_with(best, cands[1:])
    if tied:
        return (TIED, "%s tied: within %s of each other's CPU time per event, or not "
                "significantly different (Mann-Whitney over the repetitions)" % (
                    " and ".join([best["name"]] + [b["name"] for b in tied]),
                    A.fmt_pct(S.MIN_EFFECT)), None)
    second = cands[1]
    b1, b2 = per_event(best)["median"], per_event(second)["median"]
    return ("best", "%s, %s of CPU per event against %s for %s (%s)" % (
        best["name"], A.fmt_ns(b1), A.fmt_ns(b2), second["name"],
        A.fmt_ratio(b2 / b1) if b1 > 0 else "n/a"), best["name"])


def precision_verdict(t):
    """The trace's verdict by budget_verdict (the rule tbkit.replayrun
    wrote into replay.json): {recommended, kind, rule, within_budget,
    missed}."""
    return budget_verdict(t["raw"])


def budgeted(t):
    """Whether the trace was replayed with budgets (some timer had one)."""
    b = t.get("budget")
    return bool(b and b["source"] != "none" and b.get("timers_with_budget"))


def verdict_names(t):
    """The recommended names: the budget-respecting verdict where the run
    has it, else the fastest (and those tied with it) by the old rule."""
    v = precision_verdict(t)
    if v is not None and v.get("recommended"):
        return list(v["recommended"])
    return tied_names(t)


def verdict_text(t):
    """(names, text) for the trace: what was recommended and why."""
    v = precision_verdict(t)
    if not budgeted(t) or v is None or not v.get("recommended"):
        # no budget: budget_verdict applies the cost rule, whose
        # own sentence gives the ratio to the runner-up
        kind, text, best = cost_verdict(t)
        return ([best] if best else tied_names(t)), text
    names = list(v["recommended"])
    text = "%s (%s): %s" % (", ".join(names), v.get("kind") or "?", v.get("rule") or "")
    if v.get("kind") == "none_within_budget" and v.get("missed"):
        text += "; share of budgeted fires beyond budget: " + ", ".join(
            "%s %s" % (n, A.fmt_pct(x)) for n, x in sorted(v["missed"].items(),
                                                           key=lambda kv: kv[1]))
    written = t.get("verdict")
    if written and sorted(written["recommended"]) != sorted(names):
        text += (" (replay.json recorded %s: the rule changed since the replay)"
                 % ", ".join(written["recommended"]))
    return names, text


def tied_names(trace):
    """The best backend and those tied with it (one name when decided)."""
    cands = sorted(trace["backends"], key=lambda b: per_event(b)["median"])
    if not cands:
        return []
    return [cands[0]["name"]] + [b["name"] for b in tied_with(cands[0], cands[1:])]


def trace_label(t):
    name = t["name"]
    return name[:-len(".trace")] if name.endswith(".trace") else name


def precision_facts(t, names):
    """The precision the recommended candidates held on the trace, as
    data: {class: the strictest class all of them are in, max_ns: their
    largest lateness, held: every timer within its budget (False without
    budgets)}, or None when none of the names was a candidate."""
    by = {c["name"]: c for c in front.replay_candidates(t, per_event)}
    got = [by[n] for n in names if n in by]
    if not got:
        return None
    worst = max(got, key=lambda c: c["max_ns"])
    held = budgeted(t) and all(c.get("budget") and not c["budget"]["beyond_budget"]
                               for c in got)
    return {"class": front.class_of(worst), "max_ns": worst["max_ns"], "held": bool(held)}

