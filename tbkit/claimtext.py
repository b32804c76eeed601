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


# ==== group 1: heap_vs_wheel_growth, slow_task, failing_task, timer_wall_clock ====
#
# (renderers of group 1)
#
# ==== end of group 1 ==============================================================


# ==== group 2: netty_ticks, kafka_no_empty_advances, hierarchy, leader_follower, crossover
#
# (renderers of group 2)
#
# ==== end of group 2 ==============================================================


# ==== group 3: four_ary_heap, lazy_deletion, non_cascading, tree_and_wheel ========
#
# (renderers of group 3)
#
# ==== end of group 3 ==============================================================


# ==== group 4: jvm_ranking, rendering_vs_library, purgatory_saturation ============
#
# (renderers of group 4)
#
# ==== end of group 4 ==============================================================


# ==== group 5: single_runner_delay, stpe_one_thread_like_timer, ===================
# ==== heap_maintenance_precision, leader_wakes_one ================================
#
# (renderers of group 5)
#
# ==== end of group 5 ==============================================================


# Unused until a renderer needs them (kept so every region imports alike).
_SHARED = (A, Code)
