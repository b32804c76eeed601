"""tbkit.claimtext — the one place the claims' verdicts are put into words
(claims layer): for each claim id, a function that reads a decided
tbkit.verdict.Verdict (its kind, cases and facts) and returns the verdict
as said and the measured figures as spans.

tbkit.claims decides and formats nothing; tbkit.claims.evaluate hands
every verdict to say() below, so the report's sections, verdicts.json and
`timerbench compare` all read the same words.  A renderer reads only the
verdict: what a sentence needs that the cases do not hold is in the
verdict's facts, put there by the claim.
"""

from tbkit import numbers as A
from tbkit import stats as S
from tbkit import verdict as V
from tbkit.doc import Code

HOLDS, FAILS, PARTLY, UNTESTED, UNDECIDED = V.HOLDS, V.FAILS, V.PARTLY, V.UNTESTED, V.UNDECIDED

# claim id -> renderer(verdict) -> (text, measured spans)
SAYS = {}


def says(cid):
    """Registers the decorated function as the renderer of claim `cid`."""
    def register(fn):
        if cid in SAYS:
            raise ValueError("claim %s has two renderers" % cid)
        SAYS[cid] = fn
        return fn
    return register


def say(v):
    """Sets v.text and v.measured from v's kind, cases and facts, by the
    claim's renderer; a run stopped before the claim's data ran (the fact
    `stopped_before`) is said as not tested, with the figures there were.
    Returns v."""
    fn = SAYS.get(v.id)
    if fn is not None:
        text, measured = fn(v)
        v.text = text
        v.measured = measured if isinstance(measured, tuple) else (measured,)
    gone = v.facts.get("stopped_before")
    if gone:
        v.text = "%s: the run stopped before %s ran (see Limitations)" % (UNTESTED, gone)
        if v.facts.get("decided") == UNTESTED:
            v.measured = ("no data",)
    return v


# ---- shared phrases ----------------------------------------------------------

def join(items, sep="; "):
    """Items (strings or span tuples) as one span tuple, `sep` between
    them (the claims section lists a claim's figures split at "; ")."""
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(sep)
        out.extend(it if isinstance(it, tuple) else (it,))
    return tuple(out)


def decision_text(case):
    """A recorded comparison's test as tbkit.stats.Decision.text says it:
    "p = 0.008" or "too few repetitions to test (1 and 1)"."""
    if case.decision == "too few":
        n = tuple(case.n) + (0, 0)
        return "too few repetitions to test (%d and %d)" % (n[0], n[1])
    return "p = %s" % S.fmt_p(case.p)


def undecided_text(case, what=""):
    """The verdict of a decisive comparison that picked no side: "undecided
    at this noise<what> (not significant, p = …)", or "undecided<what>: too
    few repetitions to test (…)"."""
    if case.decision == "too few":
        return "undecided%s: %s" % (what, decision_text(case))
    return "%s%s (not significant, %s)" % (UNDECIDED, what, decision_text(case))


# The regions below are one per group of claims, in CLAIMS's order.


# ==== group 1: heap_vs_wheel_growth, failing_task ================================

_G1_KIND_WORD = {HOLDS: "holds", FAILS: "does not hold", PARTLY: "holds only in part",
                 UNDECIDED: "undecided"}


def _g1_growth_line(v, part, line):
    # one line of a part of heap_vs_wheel_growth's figures, from its case
    case = v.cases[line["case"]]
    if part["source"] == "valgrind_counts":
        x = case.values
        return (Code(line["label"]), " work %s → %s per op, instructions %s → %s (N %s to %s)" % (
            A.fmt_num(x["work_lo"]), A.fmt_num(x["work_hi"]),
            A.fmt_num(line["instructions_per_op_lo"]), A.fmt_num(line["instructions_per_op_hi"]),
            A.fmt_n(x["n_lo"]), A.fmt_n(x["n_hi"])))
    ci = case.values["ci"]
    return (Code(line["label"]), " time %s%s%s" % (
        A.fmt_ratio(case.effect),
        " [%s–%s]" % (A.fmt_ratio(ci[0]), A.fmt_ratio(ci[1])) if ci else
        " (too few repetitions to test)",
        (", work %s → %s per op" % (A.fmt_num(line["work_per_op_lo"]),
                                    A.fmt_num(line["work_per_op_hi"])))
        if case.values["work_shape"] is not None else ""))


def _g1_growth_part(v, part):
    # one operation's figures: "worst insert, N 10^2 to 10^6: heapqueue time ..."
    if part["source"] == "valgrind_counts":
        head = "worst %s, Valgrind counts: " % part["op"]
    else:
        head = "%s %s, N %s to %s: " % (part["workload"], part["op"], A.fmt_n(part["n_lo"]),
                                        A.fmt_n(part["n_hi"]))
    return (head,) + join([_g1_growth_line(v, part, line) for line in part["lines"]], ", ")


def _g1_worst_phrase(w):
    # the worst case's verdict, on what it was judged, and its time beside the work
    on = {"work": "on work", "valgrind_counts": "on work (Valgrind's counts)",
          "time": "on time (no work counters in these results)"}[w["basis"]]
    tv, tnote = w["time_kind"], ""
    if tv == HOLDS:
        tnote = " (on time it holds too)"
    elif tv == UNDECIDED:
        tnote = " (on time: %s)" % ("too few repetitions to test" if w["time_too_few"]
                                    else "undecided at this noise")
    elif tv is not None:
        # the climbs are counted; their time is shown, not judged
        tnote = (" (on time it %s, shown, not judged: decreasing deadlines climb "
                 "one path to the root, whose slots stay in cache, so the time "
                 "need not follow the count)" % tv)
    return "%s on the worst case, %s%s" % (_G1_KIND_WORD[w["kind"]], on, tnote)


def _g1_average_phrase(a):
    # the average case's verdict and what it rests on: work and time, or time alone
    tv, wv = a["time_kind"], a["work_kind"]
    undecided_text = ("undecided on time: too few repetitions to test" if a["time_too_few"]
                      else UNDECIDED + " on time")
    if wv is None:
        # a run from before the work counters, or heaps that do not count
        # theirs: time alone
        uncounted = a["heaps_uncounted"]
        why = ("(%s count%s no sift levels in these results)" % (
            ", ".join(uncounted), "" if len(uncounted) > 1 else "s")
            if uncounted else "(no work counters in these results)")
        detail = "%s %s" % (undecided_text, why) if tv == UNDECIDED else "on time %s" % why
    elif tv == UNDECIDED:
        detail = "%s; on the structure's work it %s" % (undecided_text, wv)
    elif tv == wv:
        detail = "on work and on time"
    else:
        detail = "on the structure's work it %s, on time it %s" % (wv, tv)
    return "%s on average (uniform deadlines): %s" % (_G1_KIND_WORD[a["kind"]], detail)


@says("heap_vs_wheel_growth")
def _heap_vs_wheel_growth(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no insert or cancel results for both a heap and a wheel",
                "no data")
    measured = join([_g1_growth_part(v, part) for part in f["parts"]])
    out = []
    if f["worst"] is not None:
        out.append(_g1_worst_phrase(f["worst"]))
    if f["average"] is not None:
        out.append(_g1_average_phrase(f["average"]))
        if f["worst"] is None:
            out.append("the worst case was not measured in this run")
    return "; ".join(out), measured


@says("failing_task")
def _failing_task(v):
    why = v.facts.get("why")
    if why == "no_results":
        return UNTESTED + ": no failure results for both timerthread and heapqueue", "no data"
    if why == "missing_counters":
        return (UNTESTED + ": the failure results lack ran_after / after / accepted_after",
                "no data")
    # a case per backend, timerthread's then heapqueue's, with its counters
    measured = join([(Code(c.name), ": %s of the %s tasks due after the failing one ran, "
                      "a new schedule was %s" % (
                          A.fmt_num(c.values["ran_after"]), A.fmt_num(c.values["after"]),
                          "accepted" if c.values["accepted_after"] else "refused"))
                     for c in v.cases])
    return v.kind, measured

# ==== end of group 1 ==============================================================


# ==== group 2: netty_ticks, kafka_no_empty_advances, hierarchy, leader_follower, crossover

def _g2_netty_parts(v):
    f = v.facts
    parts = []
    for i in f["idle_cases"]:
        x = v.cases[i].values
        t, e = x["ticks_per_s"], x["empty_ticks_per_s"]
        parts.append(("idle, tick %s: %s ticks/s, %s empty" % (
            A.fmt_ns(x["tick_ns"]), A.fmt_num(t), A.fmt_pct(e / t if t else None)),))
    for r in f["lateness"]:
        if not r["tested"]:
            parts.append(("lateness: not tested, %s and %s samples per repetition, under the %s "
                          "a p99 needs" % (A.fmt_num(r["samples_per_rep"]),
                                           A.fmt_num(r["floor_samples_per_rep"]),
                                           A.fmt_num(r["p99_min_samples"])),))
            continue
        parts.append(("lateness, tick %s: p50 %s, p99 %s (floor p50 %s, p99 %s; p99 test %s, "
                      "p50 test %s)" % (
                          A.fmt_ns(r["tick_ns"]), A.fmt_ns(r["p50_ns"]), A.fmt_ns(r["p99_ns"]),
                          A.fmt_ns(f["floor_p50_ns"]), A.fmt_ns(f["floor_p99_ns"]),
                          decision_text(v.cases[r["p99_case"]]),
                          decision_text(v.cases[r["p50_case"]])),))
    for r in f["exact"]:
        twin = r["ms_sleep_p50_ns"] is not None and r["ms_sleep_p99_ns"] is not None
        parts.append(("beside it, the exact sleep (sleep=exact), tick %s: p50 %s, p99 %s%s"
                      % (A.fmt_ns(r["tick_ns"]) if r["tick_ns"] else "?", A.fmt_ns(r["p50_ns"]),
                         A.fmt_ns(r["p99_ns"]),
                         " (Netty's whole-millisecond sleep: p50 %s, p99 %s)" % (
                             A.fmt_ns(r["ms_sleep_p50_ns"]), A.fmt_ns(r["ms_sleep_p99_ns"]))
                         if twin else ""),))
    return parts


@says("netty_ticks")
def _netty_ticks(v):
    f = v.facts
    if f.get("why") == "no_results":
        return UNTESTED + ": no idle or lateness results for timerwheel", "no data"
    parts = _g2_netty_parts(v)
    if f.get("why") == "no_usable_rows":
        return (UNTESTED + ": the timerwheel results lack tick, ticks or percentile data",
                join(parts) if parts else "no data")
    measured = join(parts)
    tested = [r for r in f["lateness"] if r["tested"]]
    if v.kind == UNDECIDED:
        idle = f["idle_part"]
        return undecided_text(v.cases[f["decisive"]], " for the lateness; the idle part %s"
                              % (idle if idle is not None else "was not measured")), measured
    if v.kind == PARTLY and f["part"] == "idle":
        return "holds only for the idle ticking" + (
            "" if tested else " (lateness not tested: too few samples for a p99)"
            if f["lateness"] else " (lateness not measured)"), measured
    if v.kind == PARTLY:
        return "holds only for the lateness" + (
            "" if f["idle_cases"] else " (idle not measured)"), measured
    return v.kind, measured


@says("kafka_no_empty_advances")
def _kafka_no_empty_advances(v):
    f = v.facts
    why = f.get("why")
    if why is not None:
        return UNTESTED + {
            "no_results": ": no idle results for both hierwheel and timerwheel",
            "no_common_series": ": no hierwheel and timerwheel idle results in the same series",
            "no_counters": ": the idle results lack wake-up counters"}[why], "no data"
    parts = []
    for r in f["pairs"]:
        h = v.cases[r["empty_case"]].values
        parts.append(("series %s: " % r["series"], Code("hierwheel"),
                      " %s empty ticks/s, %s wake-ups/s; " % (
                          A.fmt_num(h["empty_ticks_per_s"]), A.fmt_num(h["wakeups_per_s"])),
                      Code("timerwheel"), " %s wake-ups/s (%s)" % (
                          A.fmt_num(r["timerwheel_wakeups_per_s"]),
                          decision_text(v.cases[r["wakeups_case"]]))))
    measured = join(parts)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    if v.kind == PARTLY:
        return "holds only in some series", measured
    return v.kind, measured


@says("hierarchy")
def _hierarchy(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no hierwheel results for " + ", ".join(f["missing"])
                + " (the wide workload runs in the standard and full profiles)", "no data")
    dc, de = v.cases[0], v.cases[1]
    measured = (Code("hierwheel"), " at N = %s: insert %s (short) against %s (wide), %s (%s); "
                "expire per task %s against %s, %s (%s)" % (
                    A.fmt_n(f["n"]), A.fmt_ns(f["insert_short_ns"]), A.fmt_ns(f["insert_wide_ns"]),
                    A.fmt_ratio(f["insert_wide_ns"] / f["insert_short_ns"]), decision_text(dc),
                    A.fmt_ns(f["expire_short_ns"]), A.fmt_ns(f["expire_wide_ns"]),
                    A.fmt_ratio(f["expire_wide_ns"] / f["expire_short_ns"]), decision_text(de)))
    cs, cw = f["cascades_per_op_short"], f["cascades_per_op_wide"]
    if cw is not None and cs is not None:
        measured = measured + ("; cascades per task %s (short) against %s (wide), counted"
                               % (A.fmt_num(cs), A.fmt_num(cw)),)
    tw = f["timerwheel_expire_ns"]
    if tw is not None:
        measured = measured + ("; ", Code("timerwheel"), " expire %s (short) against %s (wide)" % (
            A.fmt_ns(tw["short"]), A.fmt_ns(tw["wide"])))
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    if v.kind == PARTLY and f["part"] == "range":
        return "holds only for the range: no measurable cascade cost", measured
    if v.kind == PARTLY:
        return "holds only for the cascade cost: the wide range costs more to insert", measured
    return v.kind, measured


@says("leader_follower")
def _leader_follower(v):
    f = v.facts
    why = f.get("why")
    if why is not None:
        return UNTESTED + {
            "no_results": ": no workers results with leader=on and leader=off",
            "no_counters": ": the workers results lack timed_waits_per_task"}[why], "no data"
    measured = join([(Code(r["backend"]), ": %s timed waits per task with the leader, %s "
                      "without (%s; %s against %s: %s)" % (
                          A.fmt_num(r["leader_on_timed_waits_per_task"]),
                          A.fmt_num(r["leader_off_timed_waits_per_task"]),
                          A.fmt_ratio(r["off_over_on"]) if r["off_over_on"] is not None
                          else "∞", A.fmt_ratio(A.CLEAR_FACTOR), A.fmt_ratio(1.0),
                          decision_text(v.cases[r["factor_case"]])))
                     for r in f["rows"]])
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    if v.kind == PARTLY:
        return ("holds only in part: fewer timed waits, by less than %s"
                % A.fmt_ratio(A.CLEAR_FACTOR)), measured
    return v.kind, measured


@says("crossover")
def _crossover(v):
    f = v.facts
    why = f.get("why")
    if why == "no_results":
        return UNTESTED + ": no timeouts results in series h2h", "no data"
    if why == "too_few_n":
        return UNTESTED + ": timeouts results lack a heap and a wheel at two N", "no data"
    lo, hi = f["ends"]
    measured = ("N = %s: heap " % A.fmt_n(lo["n"]), Code(lo["heap"]),
                " %s, wheel " % A.fmt_ns(lo["heap_ns"]), Code(lo["wheel"]),
                " %s; N = %s: heap " % (A.fmt_ns(lo["wheel_ns"]), A.fmt_n(hi["n"])),
                Code(hi["heap"]), " %s, wheel " % A.fmt_ns(hi["heap_ns"]), Code(hi["wheel"]),
                " %s" % A.fmt_ns(hi["wheel_ns"]),
                "; tests: N = %s %s, N = %s %s" % (
                    A.fmt_n(lo["n"]), decision_text(v.cases[0]), A.fmt_n(hi["n"]),
                    decision_text(v.cases[1])))
    if why is not None:
        return FAILS + {
            "opposite_at_both_ends": ": wheels are faster for few timers and heaps for many",
            "wheel_faster_at_smallest": ": a wheel is faster at the smallest N",
            "heap_faster_at_largest": ": a heap is faster at the largest N"}[why], measured
    if v.kind == UNDECIDED:
        at = f["decisive"]
        return undecided_text(v.cases[at], " at N = %s" % A.fmt_n(f["ends"][at]["n"])), measured
    x = f["crossover_n"]
    return HOLDS + (" (crossover at N ≈ %s)" % A.fmt_n(x) if x is not None else ""), measured

# ==== end of group 2 ==============================================================


# ==== group 3: four_ary_heap, lazy_deletion, non_cascading, tree_and_wheel ========

def _g3_four_pair(p, case):
    """One pair of four_ary_heap's figures: the 4-ary line against a
    binary one at their largest common N (and at the smallest)."""
    tail = ", %s (%s)" % (A.fmt_ratio(p["quad_ns"] / p["binary_ns"]), decision_text(case))
    lv_q, lv_b = p["quad_sift_levels_per_op"], p["binary_sift_levels_per_op"]
    if lv_q is not None and lv_b is not None:
        tail += "; sift levels per task %s against %s" % (A.fmt_num(lv_q), A.fmt_num(lv_b))
    if p["smallest_n"] is not None:
        tail += "; at N = %s %s against %s" % (A.fmt_n(p["smallest_n"]),
                                               A.fmt_ns(p["quad_ns_at_smallest_n"]),
                                               A.fmt_ns(p["binary_ns_at_smallest_n"]))
    return ("N = %s: " % A.fmt_n(p["n"]), Code(p["quad"]), " %s against " % A.fmt_ns(p["quad_ns"]),
            Code(p["binary"]), " %s%s" % (A.fmt_ns(p["binary_ns"]), tail))


@says("four_ary_heap")
def _four_ary_heap(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no expire results (series h2h) for both a 4-ary and a binary "
                "heap", "no data")
    if f.get("why") == "no_common_n":
        return UNTESTED + ": the 4-ary and binary heaps share no N", "no data"
    parts = [_g3_four_pair(p, case) for p, case in zip(f["pairs"], v.cases)]
    vg = f["valgrind"]
    if vg:
        parts.append(("Valgrind, expire at N = %s: " % A.fmt_n(vg["n"]),) + join(
            [(Code(r["backend"]), " %s instructions, %s D1 misses per task" % (
                A.fmt_num(r["instructions_per_op"]), A.fmt_num(r["d1_misses_per_op"])))
             for r in vg["rows"]], ", "))
    measured = join(parts)
    judged = f["judged"]
    if v.kind == HOLDS:
        return HOLDS, measured
    if v.kind == FAILS:
        min_effect = v.cases[judged[0]["pair"]].thresholds["min_effect"]
        return (FAILS + ": not %s faster than the fastest binary heap (%s)" % (
            A.fmt_pct(min_effect), ", ".join(sorted({j["binary"] for j in judged}))), measured)
    if v.kind == PARTLY:
        return ("holds only in part: %s of the %d 4-ary heap lines beat the fastest binary "
                "heap" % (sum(j["faster"] == "yes" for j in judged), len(judged)), measured)
    return undecided_text(v.cases[f["decisive"]]), measured


@says("lazy_deletion")
def _lazy_deletion(v):
    f = v.facts
    why = f.get("why")
    if why in ("no_cancel_results", "no_zombie_counters", "no_common_n"):
        return UNTESTED + {
            "no_cancel_results": ": no cancel results (series h2h) for both a lazy heap and "
                                 "one that removes",
            "no_zombie_counters": ": no timeouts results with zombie counters for the lazy "
                                  "heaps",
            "no_common_n": ": the lazy and removing heaps share no N"}[why], "no data"
    npairs = len(f["pairs"])
    parts = [("cancel at N = %s: " % A.fmt_n(p["n"]), Code(p["lazy"]), " %s against " %
              A.fmt_ns(p["lazy_ns"]), Code(p["removing"]), " %s, %s (%s)" % (
                  A.fmt_ns(p["removing_ns"]), A.fmt_ratio(p["lazy_ns"] / p["removing_ns"]),
                  decision_text(case)))
             for p, case in zip(f["pairs"], v.cases)]
    for h, case in zip(f["held"], v.cases[npairs:]):
        x = case.values
        z, pend = x["zombies_per_n"], x["pending_per_n"]
        bl, bp = x["bytes_per_live"], x["bytes_per_pending"]
        share = " (%s of pending)" % A.fmt_pct(z / pend) if pend else ""
        parts.append(("timeouts at N = %s: " % A.fmt_n(h["n"]), Code(h["backend"]),
                      " zombies %s per N%s" % (A.fmt_num(z), share)
                      + (", %s B per live task against %s B per pending"
                         % (A.fmt_num(bl), A.fmt_num(bp))
                         if bl is not None and bp is not None else "")))
    measured = join(parts)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]], " on cancel"), measured
    if v.kind == PARTLY:
        if why == "no_zombies_cancel_undecided":
            return ("holds only in part: no zombies held, and the cancel comparison is "
                    "undecided (%s)" % decision_text(v.cases[f["decisive"]]), measured)
        return {"no_zombies": "holds only in part: cancel is cheaper, but a lazy heap held "
                              "no zombies",
                "not_cheaper": "holds only in part: zombies are held, cancel is not cheaper "
                               "than removal",
                "slower": "holds only in part: zombies are held, but a lazy cancel is slower "
                          "than a removal"}[why], measured
    return v.kind, measured


@says("non_cascading")
def _non_cascading(v):
    f = v.facts
    backend = f["backend"]
    if f.get("why") == "missing":
        return UNTESTED + ": " + "; ".join({
            "no_short_and_wide": "no %s expire results on both short and wide (the wide "
                                 "workload runs in the standard and full profiles)" % backend,
            "no_replayed_lateness": "no replayed trace with %s's lateness (the standard "
                                    "profile replays traces; so does ./timerbench replay)"
                                    % backend}[m] for m in f["missing"]), "no data"
    ratio = f["wide_ns"] / f["short_ns"]
    measured = [(Code(backend), " at N = %s: expire per task %s (short) against %s (wide), "
                 "%s (%s)" % (A.fmt_n(f["n"]), A.fmt_ns(f["short_ns"]), A.fmt_ns(f["wide_ns"]),
                             A.fmt_ratio(ratio), decision_text(v.cases[0])))]
    ts, tw = f["short_ticks_per_op"], f["wide_ticks_per_op"]
    if ts is not None and tw is not None:
        measured.append("buckets collected per task %s (short) against %s (wide), counted"
                        % (A.fmt_num(ts), A.fmt_num(tw)))
    if f["hierwheel_short_ns"] is not None:
        measured.append((Code("hierwheel"), ", which cascades: %s (short) against %s (wide)"
                         % (A.fmt_ns(f["hierwheel_short_ns"]), A.fmt_ns(f["hierwheel_wide_ns"]))))
    measured.append("largest lateness beyond one tick, as a share of the delay: "
                    + ", ".join("%s %s" % (name, A.fmt_num(case.values["beyond_tick_frac"]))
                                for name, case in zip(f["traces"], v.cases[1:])))
    measured = join(measured)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]], " on the flat cost"), measured
    if v.kind == PARTLY and f["why"] == "late":
        return ("holds only for the flat cost: a timer was late by %s of its delay beyond a "
                "tick" % A.fmt_num(f["worst_beyond_tick_frac"]), measured)
    if v.kind == PARTLY:
        return ("holds only for the lateness: expiry on the wide workload costs %s the short "
                "one" % A.fmt_ratio(ratio), measured)
    return v.kind, measured


@says("tree_and_wheel")
def _tree_and_wheel(v):
    f = v.facts
    why = f.get("why")
    if why == "no_stream":
        return (UNTESTED + ": no replayed kernel trace of the %s stream (traces/README.md; "
                "the standard profile replays both)" % " and ".join(f["missing_streams"]),
                "no data")
    if why == "no_budgets":
        return (UNTESTED + ": the %s stream's trace carries no lateness budgets (format v1: "
                "re-import it with perf2trace)" % f["stream"], "no data")
    if why == "tree_not_replayed":
        return UNTESTED + ": %s was not replayed on the hrtimer stream" % f["tree"], "no data"
    measured = [("timer-list stream ", Code(f["timer_trace"]), ": %s of its timers cancelled; "
                 "recommended within its budgets: %s" % (
                     A.fmt_pct(f["timer_cancel_ratio"]), ", ".join(f["recommended"]) or "none"))]
    if why == "timeouts_tied":
        return ("%s: on the timer-list stream the wheels are tied with %s"
                % (UNDECIDED, ", ".join(f["tied_with"])), join(measured))
    measured.append(("hrtimer stream ", Code(f["hrtimer_trace"]), ": %s of its timers "
                     "cancelled; %s kept every budget: %s; wheels at the common tick beyond "
                     "budget: %s; wheels (any tick) within budget: %s; of those cheaper than "
                     "the tree: %s" % (
                         A.fmt_pct(f["hrtimer_cancel_ratio"]), f["tree"],
                         "yes" if f["tree_kept_budgets"] else "no",
                         ", ".join(f["common_tick_wheels_missed"]) or "none",
                         ", ".join(f["wheels_within_budget"]) or "none",
                         ", ".join(f["wheels_cheaper_than_tree"]) or "none")))
    measured = join(measured)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]], " on the hrtimer stream's cost"), measured
    if v.kind == PARTLY and f["part"] == "timeouts":
        return "holds only for the timeouts: on the hrtimer stream %s" % {
            "cheaper_wheel": "a wheel keeps every budget more cheaply (%s)"
                             % ", ".join(f["wheels_cheaper_than_tree"]),
            "tree_missed": "the tree missed budgets",
            "mostly_cancelled": "most timers are cancelled",
            "common_tick_wheel_kept": "a wheel at the common tick kept every budget"}[why], \
            measured
    if v.kind == PARTLY:
        return "holds only for the precise timers: on the timer-list stream %s" % {
            "no_wheel_recommended": "no wheel is recommended",
            "mostly_expire": "most timers expire"}[why], measured
    return v.kind, measured

# ==== end of group 3 ==============================================================


# ==== group 4: jvm_ranking, rendering_vs_library, purgatory_saturation ============

def jvm_op_why(e):
    """Why an operation of tbkit.jvm.ranking reached its verdict, in words,
    from its facts (tbkit.jvm.op_facts): "all 3 pairs ordered alike",
    the contradicting pairs with each side's order and ratio, ..."""
    def named(kind):
        return "; ".join("%s vs %s: JVM %s (%s), C %s (%s)" % (
            p["a"], p["b"], p["jvm_order"], _g4_fr(p["jvm_ratio"]),
            p["c_order"], _g4_fr(p["c_ratio"])) for p in e["pairs"] if p["agree"] == kind)
    why = e["why"]
    if why == "contradiction":
        return named("contradiction")
    if why == "not_significant":
        opp = named("opposite, not significant")
        return ("no pair contradicts, but some is not significant on a side"
                + ("; opposite but not significant: " + opp if opp else ""))
    if why == "all_alike":
        return "all %d pairs ordered alike" % len(e["pairs"])
    return {"not_measured": "the JVM originals were not measured",
            "fewer_than_two": "fewer than two originals with a C rendering were measured "
                              "on both sides",
            "no_common_n": "no N at which every original and its C rendering were both "
                           "measured",
            "one_c_instance": "one C instance stands for every original measured",
            "too_few": "too few repetitions to test (or scipy missing) for some pair"}[why]


def jvm_absent_why(a):
    """Why a run has no JVM results, in words, from tbkit.jvm.absent_facts."""
    if a["why"] == "run_note":
        return a["note"]
    if a["why"] == "jvm_problem":
        return "jvm.json %s" % a["problem"]
    return ("this results directory has no jvm.json (a run from before the JVM step, "
            "the quick profile, or a run that stopped before it)")


def jvm_control_said(order):
    """The JVM harness's control (tbkit.jvm.control) as the section words a
    row's order: "the same", "not shown to differ", "different, faster"..."""
    return {"same": "the same", "undecided": "not shown to differ",
            "too few": "not tested (too few clean repetitions)"}.get(
                order, "different, " + order)


def _g4_fr(v):
    return "n/a" if v is None else "%.2f" % v


@says("jvm_ranking")
def _jvm_ranking(v):
    f = v.facts
    if f.get("why") == "not_measured":
        return (UNTESTED + ": the JVM originals were not measured (%s)"
                % jvm_absent_why(f["absent"]),
                "no data")
    ops = f["ops"]
    measured = join([("%s at N = %s: %s (%s)" % (e["op"], A.fmt_n(e["n"]) if e["n"] else "-",
                                                e["verdict"], jvm_op_why(e)),)
                     for e in ops])
    if f.get("why") == "control_failed":
        return (UNDECIDED + ": the control failed (STPE's insert with removeOnCancel off "
                "against on, the same call, measured %s), so the harness's own bias is "
                "above the effect floor" % "; ".join(
                    "%.2fx apart at N = %s" % (r["ratio"], A.fmt_n(r["n"]))
                    for r in f["control_bias"]), measured)
    held = [e["op"] for e in ops if e["verdict"] == HOLDS]
    failed = [e["op"] for e in ops if e["verdict"] == FAILS]
    if v.kind == PARTLY:
        return "holds only for %s; not for %s" % (", ".join(held), ", ".join(failed)), measured
    if v.kind == FAILS:
        return FAILS + " (%s)" % ", ".join(failed), measured
    if v.kind == UNDECIDED:
        opposite = ["%s (%s)" % (e["op"], ", ".join(
            "%s vs %s" % (p["a"], p["b"]) for p in e["pairs"]
            if p["agree"] == "opposite, not significant"))
            for e in ops if any(p["agree"] == "opposite, not significant" for p in e["pairs"])]
        return (UNDECIDED + ("; ordered oppositely on the two sides, without significance: "
                             + "; ".join(opposite) if opposite else ""), measured)
    if v.kind == HOLDS:
        untested = [e["op"] for e in ops if e["verdict"] == UNTESTED]
        return HOLDS + (" (%s not tested)" % ", ".join(untested) if untested else ""), measured
    whys = []
    for e in ops:
        if jvm_op_why(e) not in whys:
            whys.append(jvm_op_why(e))
    return UNTESTED + ": " + "; ".join(whys), measured


def _g4_pair_said(pair, case):
    return "%s %s/%s at %s: %s" % (pair["op"], pair["rendering"], pair["library"],
                                   A.fmt_n(pair["n"]),
                                   A.fmt_ratio(case.effect) if case.effect else "n/a")


def _g4_few(items, k=3):
    # the verdict is a sentence (the summary quotes it): the rest are in the
    # cases and the section's table
    more = len(items) - k
    return "; ".join(items[:k]) + ("; and %d more" % more if more > 0 else "")


@says("rendering_vs_library")
def _rendering_vs_library(v):
    f = v.facts
    if f.get("why") == "no_libs_json":
        return (UNTESTED + ": the libraries were not measured (the run has no libs.json)",
                "no data")
    if f.get("why") == "no_common_n":
        why = f["not_installed"]
        return (UNTESTED + ": no rendering has an installed library of its structure "
                "measured at a common N" + (" (not installed: %s)" % "; ".join(why)
                                            if why else ""), "no data")
    pairs = list(zip(f["pairs"], v.cases))
    measured = join([(_g4_pair_said(p, c),) for p, c in pairs])
    if v.kind == FAILS:
        worse = [(p, c) for p, c in pairs if p["way"] == "yes"]
        return (FAILS + ": costlier than the library of its structure in %d of %d pairs (%s)"
                % (len(worse), len(pairs), _g4_few([_g4_pair_said(p, c) for p, c in worse])),
                measured)
    if v.kind == UNDECIDED:
        return UNDECIDED + " (%s)" % _g4_few([
            "%s, p = %s" % (_g4_pair_said(p, c), S.fmt_p(c.p))
            for p, c in pairs if p["way"] == "undecided"]), measured
    return (HOLDS + " (%d pairs, each within %s of its library or below)"
            % (len(pairs), A.fmt_pct(S.MIN_EFFECT)), measured)


def fmt_rate(r):
    """A rate of requests per second in thousands: "40k/s", "n/a" for None."""
    return "n/a" if r is None else "%sk/s" % A.fmt_num(r / 1e3)


def interval_text(iv):
    """A saturation interval (a tbkit.purgatory.Interval, or its values as
    a verdict's case holds them: a dict of lo, hi, top, mixed, limited) in
    words: "40k/s-80k/s", "at or below 10k/s", "not reached up to 160k/s",
    with the plays that disagreed ("80k/s: 1 of 3 plays saturated") and
    "(the player's limit)" when it is."""
    if iv is None:
        return "not run"
    if isinstance(iv, dict):
        lo, hi, top, mixed, limited = (iv["lo"], iv["hi"], iv["top"], iv["mixed"],
                                       iv["limited"])
    else:
        lo, hi, top, mixed, limited = iv.lo, iv.hi, iv.top, iv.mixed, iv.limited
    if hi is None:
        t = "not reached up to %s" % fmt_rate(top)
    elif lo is None:
        t = "at or below %s" % fmt_rate(hi)
    else:
        t = "%s-%s" % (fmt_rate(lo), fmt_rate(hi))
    if mixed:
        t += " (%s)" % ", ".join("%s: %d of %d plays saturated" % (fmt_rate(r), k, n)
                                 for r, k, n in mixed)
    return t + (" (the player's limit)" if limited else "")


def purgatory_why(values):
    """Why a case of purgatory_saturation was decided so, in words, from
    the case's values (its `why` code, `why_facts`, and the rate and CPU
    times it read): "heapqueue saturated at a rate hierwheel ran
    unsaturated", "the two intervals overlap", ..."""
    why, f = values.get("why"), values.get("why_facts") or {}
    dq, wheel = f.get("dq_subject"), f.get("wheel_subject")
    if why == "file_absent":
        return f.get("absent") or "not run"
    if why == "no_rows":
        return "; ".join("%s has no %s row in %s%s" % (
            m["subject"], f["shape"], f["file"],
            (" (skipped: %s)" % m["skipped"]) if m["skipped"] is not None else "")
            for m in f["missing"])
    if why == "no_shape_rows":
        return "%s has no row of shape %s in %s" % (dq, f["missing_shape"], f["file"])
    if why == "many_below_few":
        return "saturated in many at a rate it ran unsaturated in few, while %s did not" % wheel
    if why == "wheel_too":
        return ("saturated in many at a rate it ran unsaturated in few, and so did %s: the "
                "shape's cost, not the delay queue's" % wheel)
    if why == "few_below_many":
        return "saturated in few at a rate it ran unsaturated in many"
    if why == "no_common_rate":
        return ("the saturation intervals do not settle it (%s) and no rate ran unsaturated "
                "in both shapes on both %s and %s" % (f["intervals"], dq, wheel))
    if why == "no_cpu_few":
        return "no CPU time per request in few"
    if why == "cpu":
        cf, cm = values["cpu_ns_few"], values["cpu_ns_many"]
        wcf, wcm = values["wheel_cpu_ns_few"], values["wheel_cpu_ns_many"]
        return ("saturation intervals: %s; CPU per request at %g/s, many over few: %.2fx "
                "against %s's %.2fx (%.2fx)" % (f["intervals"], values["rate"], cm / cf,
                                                 wheel, wcm / wcf, (cm / cf) / (wcm / wcf)))
    text = {"below": "%s saturated at a rate %s ran unsaturated" % (dq, wheel),
            "above": "%s saturated at a rate %s ran unsaturated" % (wheel, dq),
            "overlap": "the two intervals overlap",
            "neither saturated": "neither saturated within the rates run",
            "limited by the player": "%s at the player's own limit (the floor's)"
            % " and ".join(f.get("limited") or ())}[why]
    if f.get("no_floor"):
        text += (" (no floor subject in %s: whether either is the player's own limit "
                 "cannot be told)" % f["file"])
    return text


@says("purgatory_saturation")
def _purgatory_saturation(v):
    f = v.facts
    if f.get("why") == "not_run":
        return (UNTESTED + ": the purgatory experiment did not run (%s)"
                % "; ".join(f["absent"]), "no data")
    npairs = len(f["pairs"])
    pairs = list(zip(f["pairs"], v.cases[:npairs]))
    freq = v.cases[npairs:]
    measured = join([("%s, %s: %s %s, %s %s (%s)" % (
        p["side"], p["shape"], p["dq_subject"], interval_text(c.values["delay_queue"]),
        p["wheel_subject"], interval_text(c.values["wheel"]), c.decision),)
        for p, c in pairs if c.decision != "not tested"]
        + [("%s: %s (%s)" % (c.name, c.decision, purgatory_why(c.values)),)
           for c in freq if c.decision != "not tested"])
    untested = ["%s (%s)" % (v.cases[i].name, purgatory_why(v.cases[i].values))
                for i in f["not_tested"]]
    if f["saturates_first"] == UNTESTED:
        return UNTESTED + ": " + "; ".join(untested), measured or "no data"
    # the verdict is a sentence (the summary quotes it): the reasons are
    # in the cases and the section's table
    open_ = ["%s: %s" % (v.cases[i].name, v.cases[i].decision) for i in f["open"]]
    detail = "saturates first: %s; worse when timeouts are frequent: %s" % (
        f["saturates_first"], f["frequent_worse"])
    if v.kind == UNDECIDED and open_:
        detail += " (%s%s)" % (open_[0], "; and %d more" % (len(open_) - 1)
                               if len(open_) > 1 else "")
    gone = f["sides_not_tested"]
    if gone:
        detail += "; the %s pair%s not tested" % (" and ".join(gone),
                                                  "s" if len(gone) > 1 else "")
    elif untested:
        detail += "; %d case%s not tested" % (len(untested), "s" if len(untested) > 1 else "")
    return "%s (%s)" % (v.kind, detail), measured

# ==== end of group 4 ==============================================================


# ==== group 5: single_runner_delay, stpe_one_thread_like_timer, ===================
# ==== heap_maintenance_precision, leader_wakes_one ================================

def _g5_ratio(a, b):
    # a over b as the figures say it: "13×", "n/a" when b is zero
    return A.fmt_ratio(a / b) if b else "n/a"


@says("single_runner_delay")
def _single_runner_delay(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no interference results with one runner and for heapqueue's "
                "pool (threads > 1)", "no data")
    pool = f["pool"]
    pm = pool["max_ns"]
    parts = [(Code("%s threads=%s" % (pool["backend"], pool["threads"])),
              " (the pool): max lateness %s" % A.fmt_ns(pm))]
    for row, case in zip(f["rows"], v.cases):
        parts.append((Code(row["label"]), ": max %s (%s the pool's; %s)" % (
            A.fmt_ns(row["max_ns"]), _g5_ratio(row["max_ns"], pm), decision_text(case))))
    measured = join(parts)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    if v.kind == HOLDS:
        return HOLDS + " (%d single-runner configurations)" % len(f["delayed"]), measured
    if v.kind == PARTLY:
        return "holds only in part: not in %s" % ", ".join(f["not_delayed"]), measured
    return FAILS, measured


@says("stpe_one_thread_like_timer")
def _stpe_one_thread_like_timer(v):
    f = v.facts
    if f.get("why") == "no_results":
        missing = f["missing"]
        return (UNTESTED + ": no %s results for both heapqueue with one thread and "
                "timerthread%s" % (" or ".join(missing),
                                   " (the failing experiment is newer than this run)"
                                   if "failing" in missing else ""), "no data")
    if f.get("why") == "counters_missing":
        return (UNTESTED + ": the results lack max, ran_after, after, accepted_after or "
                "failed", "no data")
    hm, tm = f["slow"]["heapqueue_max_ns"], f["slow"]["timerthread_max_ns"]
    parts = [("slow task: ", Code("heapqueue threads=1"), " max lateness %s, " % A.fmt_ns(hm),
              Code("timerthread"), " %s (%s; %s)" % (A.fmt_ns(tm), _g5_ratio(hm, tm),
                                                     decision_text(v.cases[0])))]
    for r in f["failing"]:
        parts.append(("failing task: ", Code(r["subject"]), " ran %s of the %s tasks due after "
                      "it, a new schedule %s, %s failed run%s counted" % (
                          A.fmt_num(r["ran_after"]), A.fmt_num(r["after"]),
                          "accepted" if r["accepted_after"] else "refused",
                          A.fmt_num(r["failed"]), "" if r["failed"] == 1 else "s")))
    measured = join(parts)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]], " on the slow task; on the failing task "
                              "it %s" % ("differs, as claimed" if f["failing_differs"]
                                         else "does not differ")), measured
    if v.kind == PARTLY and f["slow_task"] == "same":
        return ("holds only for the slow task: on a failing task the two behave alike",
                measured)
    if v.kind == PARTLY:
        return ("holds only for the failing task: on a slow task their lateness differs",
                measured)
    return v.kind, measured


@says("heap_maintenance_precision")
def _heap_maintenance_precision(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no lateness results for heapqueue light and loaded and for "
                "the floor", "no data")
    beyond, plain = v.cases[0], v.cases[1]
    bg = A.fmt_n(f["pending"]) if f["pending"] else "the background"
    light, loaded = f["light_p99_ns"], f["loaded_p99_ns"]
    measured = (Code("heapqueue"), " p99 lateness %s light, %s with %s pending (%s; %s); p50 "
                "%s against %s; the floor's p99 %s, spread %s over %d repetitions; loaded "
                "against light plus that spread: %s" % (
                    A.fmt_ns(light), A.fmt_ns(loaded), bg, _g5_ratio(loaded, light),
                    decision_text(plain), A.fmt_ns(f["light_p50_ns"]),
                    A.fmt_ns(f["loaded_p50_ns"]), A.fmt_ns(f["floor_p99_ns"]),
                    A.fmt_ns(f["floor_spread_ns"]), f["floor_reps"], decision_text(beyond)))
    if v.kind == FAILS:
        return (FAILS + ": with %s pending the p99 is not %s above the light load's"
                % (bg, A.fmt_pct(plain.thresholds["min_effect"])), measured)
    if v.kind == UNDECIDED and f.get("why") == "within_floor_spread":
        return ("%s: the p99 with %s pending is above the light load's by %s, within the "
                "floor's own spread of %s" % (UNDECIDED, bg, A.fmt_ns(loaded - light),
                                              A.fmt_ns(f["floor_spread_ns"])), measured)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    return HOLDS, measured


@says("leader_wakes_one")
def _leader_wakes_one(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no workers results with leader=on and leader=off and wake-up "
                "counters", "no data")
    parts = []
    for r, case in zip(f["rows"], v.cases):
        two, twoff = r["timed_waits_per_task_leader"], r["timed_waits_per_task_no_leader"]
        parts.append((Code(r["backend"]), " threads=%s: %s wake-ups per task with the leader, "
                      "%s without (%s)%s" % (
                          "?" if r["threads"] is None else r["threads"],
                          A.fmt_num(r["wakeups_per_task_leader"]),
                          A.fmt_num(r["wakeups_per_task_no_leader"]), decision_text(case),
                          "; timed waits per task %s and %s" % (A.fmt_num(two), A.fmt_num(twoff))
                          if two is not None and twoff is not None else "")))
    measured = join(parts)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    return v.kind, measured

# ==== end of group 5 ==============================================================


# ==== group 7: slow_task, timer_wall_clock =======================================

def _g7_threads(row):
    # an entry whose config names no thread count is shown with "?"
    return "?" if row["threads"] is None else row["threads"]


@says("slow_task")
def _slow_task(v):
    f = v.facts
    if f.get("why") == "no_results":
        return (UNTESTED + ": no interference results for both timerthread and heapqueue",
                "no data")
    if f.get("why") == "no_max_counter":
        return UNTESTED + ": the interference results have no max counter", "no data"
    single, pool = f["rows"]
    sm, pm = single["max_ns"], pool["max_ns"]
    measured = (Code("%s threads=%s" % (single["backend"], _g7_threads(single))),
                ": max lateness %s; " % A.fmt_ns(sm),
                Code("%s threads=%s" % (pool["backend"], _g7_threads(pool))),
                ": %s (%s)" % (A.fmt_ns(pm), A.fmt_ratio(sm / pm) if pm > 0 else "n/a"))
    # no case: the pool was never late while the single thread was
    if v.cases:
        measured = measured + ("; %s" % decision_text(v.cases[0]),)
    if v.kind == UNDECIDED:
        return undecided_text(v.cases[f["decisive"]]), measured
    return v.kind, measured


def _g7_fmt_delay(d):
    return "did not run" if d is None else ("0" if d == 0 else A.fmt_ns(d))


@says("timer_wall_clock")
def _timer_wall_clock(v):
    f = v.facts
    why = f.get("why")
    if why == "no_results":
        return (UNTESTED + ": no wallstep results for both timerthread and heapqueue%s"
                % (" (these results predate the probe's wall-clock step)"
                   if f["predates_probe"] else ""), "no data")
    if why == "probe_failed":
        return UNTESTED + ": the probe failed on %s: %s" % (f["backend"], f["error"]), "no data"
    if why == "no_step_or_tasks":
        return UNTESTED + ": the wallstep results lack step_ns or tasks", "no data"
    measured = join([(Code("%s %s" % (r["backend"], r["case"])), ": step %s%s, delays %s" % (
        A.fmt_ns(r["step_ns"]),
        "" if r["wall_clock"] is None else (", deadlines on the wall clock" if r["wall_clock"]
                                            else ", deadlines on the monotonic clock"),
        ", ".join(_g7_fmt_delay(d) for d in r["delays_ns"])))
        for r in f["rows"]])
    if why == "steps_differ":
        return (UNTESTED + ": the wallstep back results do not step both backends back by "
                "one \u0394", measured)
    late = A.fmt_ns(f["step_back_ns"])
    if f["missed"]:
        said = {"timerthread_delayed": "timerthread's tasks did not all run %s late" % late,
                "heapqueue_on_time": "heapqueue's tasks did not all run on time"}
        return "%s: %s" % (FAILS, "; ".join(said[m] for m in f["missed"])), measured
    return ("%s: a step back by %s delayed every pending timerthread task by %s and no "
            "heapqueue task" % (HOLDS, late, late), measured)

# ==== end of group 7 ==============================================================


# ---- which one to use ---------------------------------------------------------

# Each decided row of "Which one to use" (tbkit.claims.PICKS): its name and
# what was compared; "%(n)s", "%(ops)s", "%(op)s", "%(pct)s", "%(workload)s"
# are the row's N and params.
PICK_WORDS = {
    "few": ("Few pending timers (N = %(n)s)",
            "geometric mean of the medians of %(ops)s (series h2h)"),
    "many": ("Many pending timers (N = %(n)s)",
             "geometric mean of the medians of %(ops)s (series h2h)"),
    "timeouts": ("Server timeouts, most cancelled before they fire (N = %(n)s)",
                 "median time per operation of %(op)s (series h2h)"),
    "periodic": ("Many periodic tasks (N = %(n)s)",
                 "median time per operation of %(op)s (series h2h)"),
    "wide": ("Delays from milliseconds to a day (expire, N = %(n)s)",
             "median expire time per task, wide workload (series h2h)"),
    "punctual": ("Punctual firing (lowest %(pct)s lateness, light load)",
                 "%(pct)s lateness, experiment lateness"),
    "interference": ("Slow tasks among fast ones (lowest max lateness of the others)",
                     "max lateness of the fast tasks, experiment interference"),
    "idle": ("A mostly idle process (fewest wake-ups)", "wake-ups per second, experiment idle"),
    "memory": ("Least memory per pending task (N = %(n)s)",
               "bytes per pending task, workload %(workload)s"),
}
_UNIT_FMT = {"ns": A.fmt_ns, "count": A.fmt_num, "bytes": lambda v: "%.1f B" % v}
# What a recommendation of a granular wheel says beside its name, in
# full ("Which one to use") and short (the summary).
GRANULAR_CAVEAT = (" — fires up to a tick plus 8/63 of the delay late (its levels' "
                   "granularity; see the non-cascading wheel claim)")
GRANULAR_SHORT = " (late by up to a tick plus 8/63 of the delay)"


def _pick_fields(p):
    f = dict(p.params)
    f["n"] = A.fmt_n(p.n) if p.n is not None else ""
    if "ops" in f:
        f["ops"] = ", ".join(f["ops"])
    if "pct" in f:
        f["pct"] = "p99.9" if f["pct"] == "p999" else f["pct"]
    return f


def pick_name(key):
    """A row's name without its N: what Limitations says was left out."""
    return PICK_WORDS[key][0].split(" (")[0]


def pick_row(p):
    """A decided row (tbkit.verdict.Pick) as "Which one to use" writes it:
    [workload, the recommendation (the tied named together), what was
    compared, every candidate's value best first]."""
    name, measure = PICK_WORDS[p.key]
    f = _pick_fields(p)
    fmt = _UNIT_FMT[p.unit]
    if len(p.tied) > 1:
        rec = join([Code(l) for l in p.tied], ", ") + (
            " (tied: within %s of the best)" % A.fmt_pct(S.MIN_EFFECT),)
    else:
        rec = (Code(p.tied[0]),)
    if p.caveat:
        rec += (GRANULAR_CAVEAT if p.granular else "",)
    ev = [(Code(l), " " + fmt(v)) for v, l in p.cands]
    return [name % f, rec, measure % f, join(ev, ", ")]


def gap_note(key, missing):
    """A row left out for missing evidence, as Limitations lists it;
    `missing` is what was not measured, said (tbkit.analysis.missing_text)."""
    return ("Which one to use", "no recommendation for \"%s\": %s of its evidence were "
            "not measured" % (pick_name(key), missing))


def precision_text(p):
    """A replayed trace's precision facts (tbkit.replaydata.precision_facts)
    said: "<= 1 ms (max lateness 412 us); every timer within its budget",
    or "n/a"."""
    if p is None:
        return "n/a"
    return "%s (max lateness %s)%s" % (p["class"], A.fmt_ns(p["max_ns"]),
                                       "; every timer within its budget" if p["held"] else "")


def replay_rows(p):
    """A replayed trace's decided row (tbkit.verdict.ReplayPick) as "Which
    one to use" writes it: (the trace's row [workload, recommended,
    precision, compared, measured], its rows per precision class)."""
    said = " (%s)" % p.kind if p.tied or p.kind == "none_within_budget" else ""
    main = ["Replay of trace %s (%s events, cancel ratio %s)" % (
        p.trace, A.fmt_n(p.events), A.fmt_pct(p.cancel_ratio)),
        join([Code(n) for n in p.names], ", ") + ((said,) if said else ())
        + (GRANULAR_CAVEAT if p.granular else "",),
        precision_text(p.precision),
        ("median CPU time per event over the replays, among those within every "
         "timer's budget (section Replayed traces)") if p.budgeted else
        "median CPU time per event over the replays (section Replayed traces; the "
        "trace gives no budget)",
        join([(Code(n), " " + A.fmt_ns(v)) for n, v in p.cands], ", ")]
    classes = [["Replay of trace %s, precision %s" % (p.trace, label),
                join([Code(n) for n in names], ", "),
                "%s (max lateness %s)" % (label, A.fmt_ns(max_ns)),
                "cheapest median CPU time per event among the backends and tick "
                "sweep points whose lateness fits the class",
                "%s %s" % (best, A.fmt_ns(cost))]
               for label, names, max_ns, best, cost in p.classes]
    return main, classes
