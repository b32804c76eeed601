"""tb_precision — precision, the second axis (issue 27): the grammar of a
lateness budget (`--lateness SPEC`, tracegen's `--slack SPEC`), the
precision classes, and the verdict of a replayed trace that only
recommends structures which kept the trace's budgets.

Pure functions on the dicts of replay.json (bench/README.md, "Replay":
a trace as bench/replay.c writes it, with `backends[]`, `sweep[]` and
`budget`): bench/replay.py writes `verdict(trace)` into replay.json and
the report calls the same function, so the two never disagree.  Standard
library only, besides report/tb_replay.py's rule for a tie (`tied_with`,
`per_event`), imported when first needed so that tb_replay may import this
module too.
"""

import re

# <int><ns|us|ms|s>: an absolute budget; <number>%: a share of each delay
UNITS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}
MAX_NS = 1 << 62  # every budget is below 2^62 ns, as every trace time
ACCEPTED = ("<int><ns|us|ms|s> (an absolute budget, e.g. 50us, 1ms) or "
            "<number>% (a share of each delay, 0 < pct <= 100, at most 6 "
            "decimals, e.g. 1%, 12.5%)")
_ABS = re.compile(r"([0-9]{1,20})(ns|us|ms|s)\Z")
_PCT = re.compile(r"([0-9]{1,3})(?:\.([0-9]{1,6}))?%\Z")


def parse_spec(text):
    """A budget SPEC as {"spec": text, "kind": "abs", "value": ns} or
    {"spec": text, "kind": "pct", "value": percent}; ValueError naming the
    accepted forms for anything else.  The same grammar as
    bench/replay.c's parse_lateness (digits only, no sign or space)."""
    if not isinstance(text, str):
        raise ValueError("a lateness budget is text, got %r" % (text,))
    m = _ABS.match(text)
    if m:
        ns = int(m.group(1)) * UNITS[m.group(2)]
        if ns >= MAX_NS:
            raise ValueError("%r is too large: a budget must be below 2^62 ns"
                             % text)
        return {"spec": text, "kind": "abs", "value": ns}
    m = _PCT.match(text)
    if m:
        e6 = int(m.group(1)) * 10 ** 6 + int((m.group(2) or "").ljust(6, "0"))
        if not 0 < e6 <= 100 * 10 ** 6:
            raise ValueError("%r: a share must be above 0%% and at most 100%%"
                             % text)
        return {"spec": text, "kind": "pct", "value": e6 / 1e6}
    raise ValueError("%r is not a lateness budget; accepted: %s" % (text, ACCEPTED))


def budget_ns(spec, delay_ns):
    """The budget SPEC (parse_spec's dict) gives a timer of `delay_ns`: the
    absolute value, or the share of the delay floored to whole ns, exactly
    as bench/replay.c computes it."""
    if spec["kind"] == "abs":
        return spec["value"]
    e8 = int(round(spec["value"] * 10 ** 6))
    return delay_ns * e8 // 10 ** 8


# ---- Precision classes ------------------------------------------------------

# (name, test of a candidate's lateness): "exact" (never late), at most
# 50 us, at most 1 ms, every fire within 1/8 of its delay (what Linux's
# wheel promises), any.
CLASSES = ("exact", "<= 50 us", "<= 1 ms", "<= 1/8 of the delay", "any")


def max_lateness(c):
    """A candidate's largest lateness in ns (backends[] or sweep[])."""
    late = c.get("lateness") or {}
    if "max_ns" in late:
        return late["max_ns"]
    return (late.get("ns") or {}).get("max")


def precision_class(c):
    """The tightest class a candidate's lateness fits."""
    mx = max_lateness(c)
    if mx is None:
        return "any"
    if mx == 0:
        return "exact"
    if mx <= 50000:
        return "<= 50 us"
    if mx <= 1000000:
        return "<= 1 ms"
    if (c.get("lateness") or {}).get("beyond_eighth_of_delay") == 0:
        return "<= 1/8 of the delay"
    return "any"


def fits(c, cls):
    """Whether candidate c holds at precision class `cls`."""
    return CLASSES.index(precision_class(c)) <= CLASSES.index(cls)


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
    import tb_replay as R
    return R.per_event(c)["median"]


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
    """(recommended names, kind) by report/tb_replay.py's rule: the lowest
    median CPU per event, with every candidate tied with it."""
    import tb_replay as R
    order = sorted(cands, key=_cost)
    best = order[0]
    tied = R.tied_with(best, order[1:])
    return [best["name"]] + [c["name"] for c in tied], "tied" if tied else "best"


def verdict(trace):
    """The recommendation for one replayed trace, as replay.json keeps it:
    {"recommended": [names], "kind": "best" | "tied" |
    "none_within_budget", "rule": one sentence, "within_budget": [names],
    "missed": {name: share of budgeted fires beyond budget}}.

    With budgets: among the candidates (backends[] and the sweep's passed
    points) that ran no fire beyond its budget, the cheapest by CPU per
    event, unless tied (tb_replay.tied_with); when none kept every budget,
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
