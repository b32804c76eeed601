#!/usr/bin/env python3
"""stats_test.py — tbkit/stats.py, the statistics every verdict and
`compare` rely on: the Mann-Whitney U test (two samples that differ are
significant and print their p-value; two that do not are not flagged; too
few repetitions are said to be too few, never a crash), the confidence
interval of a ratio, compare's rule with its minimum effect, the
sample-count rule for percentiles, the threshold on complexity fits, and the
non-cascading wheel's claim on synthetic results.

Exit 77 (Meson's SKIP) when scipy is missing: the test command installs
python3-scipy.
"""
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the checkout, for tbkit
from tbkit import analysis as AN  # noqa: E402
from tbkit import claims as C  # noqa: E402
from tbkit import claimtext as CT  # noqa: E402
from tbkit import results as R  # noqa: E402
from tbkit import stats as S  # noqa: E402
from tbkit.doc import Code  # noqa: E402


class MannWhitney(unittest.TestCase):
    def test_samples_that_differ_are_significant(self):
        a = [100.0, 101.0, 99.5, 100.4, 100.9]
        b = [120.0, 119.0, 121.5, 120.2, 118.7]
        p = S.mann_whitney(a, b)
        self.assertIsNotNone(p)
        # all five of b above all five of a: the exact two-sided p is 2/252
        self.assertAlmostEqual(p, 2.0 / 252, places=6)
        d = S.decide(b, a)
        self.assertEqual(d.kind, "greater")
        self.assertTrue(d.significant)
        self.assertIn("p = 0.0079", d.text())
        self.assertEqual(S.decide(a, b).kind, "less")

    def test_samples_that_do_not_differ_are_not_flagged(self):
        rng = random.Random(14)
        a = [100 + rng.gauss(0, 3) for _ in range(10)]
        b = [100 + rng.gauss(0, 3) for _ in range(10)]
        p = S.mann_whitney(a, b)
        self.assertGreaterEqual(p, S.ALPHA)
        d = S.decide(a, b)
        self.assertEqual(d.kind, "undecided")
        self.assertFalse(d.significant)
        self.assertEqual(S.compare_rule(a, b)[0], "~")

    def test_interleaved_samples_are_not_significant(self):
        a = [1, 3, 5, 7, 9]
        b = [2, 4, 6, 8, 10]
        self.assertGreater(S.mann_whitney(a, b), 0.5)

    def test_too_few_repetitions(self):
        # 3 against 3 can at best give p = 2/20 = 0.1: never significant
        self.assertAlmostEqual(S.min_p(3, 3), 0.1)
        self.assertFalse(S.testable(3, 3))
        self.assertTrue(S.testable(4, 4))
        self.assertTrue(S.testable(5, 5))
        for a, b in (([1, 2, 3], [10, 11, 12]), ([5.0], [9.0]), ([], [1, 2, 3, 4, 5])):
            self.assertIsNone(S.mann_whitney(a, b))
            d = S.decide(a, b)
            self.assertEqual(d.kind, "too few")
            self.assertIn("too few repetitions to test", d.text())
            self.assertEqual(S.compare_rule(a, b)[0], "too few")

    def test_bad_values_do_not_crash(self):
        d = S.decide([float("nan"), None, 1, 2, 3, 4], [float("inf"), 5, 6, 7, 8])
        self.assertEqual(d.kind, "less")
        self.assertEqual(S.mann_whitney([7] * 5, [7] * 5), 1.0)

    def test_factor_and_shift(self):
        a = [250, 251, 252, 253, 254]
        b = [100, 101, 102, 103, 104]
        self.assertEqual(S.decide(a, b, 2.0).kind, "greater")     # 2.5x: beyond 2x
        self.assertEqual(S.decide(a, b, 3.0).kind, "less")        # but short of 3x
        self.assertEqual(S.decide(a, b, 1.0, 200).kind, "less")   # 250 < 100 + 200


class RatioInterval(unittest.TestCase):
    def test_critical_value_matches_the_tables(self):
        # 5 against 5 at 95 %: the 3rd smallest and 3rd largest of the
        # 25 pairwise differences (U critical value 2)
        hi = [10.0, 20.0, 30.0, 40.0, 50.0]
        lo = [1.0, 2.0, 3.0, 4.0, 5.0]
        ci = S.ratio_ci(hi, lo)
        d = sorted(math.log(x) - math.log(y) for x in hi for y in lo)
        self.assertAlmostEqual(ci[0], math.exp(d[2]))
        self.assertAlmostEqual(ci[1], math.exp(d[22]))
        self.assertEqual(sum(S._u_counts(5, 5)), math.comb(10, 5))

    def test_interval_holds_the_true_ratio(self):
        rng = random.Random(7)
        lo = [100 * math.exp(rng.gauss(0, 0.05)) for _ in range(8)]
        hi = [200 * math.exp(rng.gauss(0, 0.05)) for _ in range(8)]
        ci = S.ratio_ci(hi, lo)
        self.assertLess(ci[0], 2.0)
        self.assertGreater(ci[1], 2.0)
        self.assertGreater(ci[0], 1.5)

    def test_too_few_gives_none(self):
        self.assertIsNone(S.ratio_ci([1, 2, 3], [4, 5, 6]))
        self.assertIsNone(S.ratio_ci([1, 2, 3, 4, 5], [0, -1, 0, 0, 0]))


class CompareRule(unittest.TestCase):
    def test_small_significant_shift_is_not_flagged(self):
        # every repetition of B 3 % above A: significant, but under the
        # minimum effect two runs of one commit already show
        a = [100.0, 100.2, 100.4, 100.6, 100.8]
        b = [x * 1.03 for x in a]
        verdict, p, ratio = S.compare_rule(a, b)
        self.assertLess(p, S.ALPHA)
        self.assertEqual(verdict, "~")
        self.assertAlmostEqual(ratio, 1.03)

    def test_large_significant_shift_is_flagged(self):
        a = [100.0, 100.2, 100.4, 100.6, 100.8]
        self.assertEqual(S.compare_rule(a, [x * 1.25 for x in a])[0], "slower")
        self.assertEqual(S.compare_rule(a, [x * 0.8 for x in a])[0], "faster")

    def test_large_noisy_shift_is_not_flagged(self):
        a = [100, 300, 120, 90, 250]
        b = [130, 95, 280, 140, 310]
        self.assertEqual(S.compare_rule(a, b)[0], "~")

    def test_false_positive_rate_of_the_test(self):
        # Two samples from one distribution: the test alone flags at most
        # about ALPHA of the pairs (the exact test, a little under it).
        rng = random.Random(2026)
        flagged = 0
        trials = 400
        for _ in range(trials):
            a = [rng.lognormvariate(0, 0.3) for _ in range(5)]
            b = [rng.lognormvariate(0, 0.3) for _ in range(5)]
            flagged += S.decide(a, b).significant
        self.assertLessEqual(flagged / trials, 2 * S.ALPHA)


class Direction(unittest.TestCase):
    """S.direction: a claimed effect is there ("yes"), is not ("no"), or
    picks no side ("undecided")."""
    A = [100.0, 100.2, 100.4, 100.6, 100.8]

    def test_large_significant_effect_the_claimed_way(self):
        self.assertEqual(S.direction(S.decide([x * 1.3 for x in self.A], self.A), "greater"), "yes")
        self.assertEqual(S.direction(S.decide([x * 0.7 for x in self.A], self.A), "less"), "yes")

    def test_effect_the_other_way_is_no_whatever_its_p(self):
        # significant the other way, and not significant the other way
        self.assertEqual(S.direction(S.decide([x * 0.7 for x in self.A], self.A), "greater"), "no")
        noisy = [70, 140, 60, 75, 65]
        d = S.decide(noisy, self.A)
        self.assertFalse(d.significant)
        self.assertEqual(S.direction(d, "greater"), "no")

    def test_small_effect_is_no_even_when_significant(self):
        d = S.decide([x * 1.05 for x in self.A], self.A)
        self.assertTrue(d.significant)
        self.assertEqual(S.direction(d, "greater"), "no")
        # with no minimum effect the same data are a yes
        self.assertEqual(S.direction(d, "greater", 0.0), "yes")

    def test_large_effect_without_significance_is_undecided(self):
        noisy = [130, 95, 280, 140, 310]
        d = S.decide(noisy, self.A)
        self.assertFalse(d.significant)
        self.assertEqual(S.direction(d, "greater"), "undecided")
        self.assertEqual(S.direction(S.decide([120.0], [100.0]), "greater"), "undecided")

    def test_threshold_is_the_same_either_way(self):
        # 10 % up is 1.1; 10 % down is 1 / 1.1, as compare_rule measures it
        b = [100.0] * 5
        self.assertEqual(S.direction(S.decide([91.0] * 5, b), "less"), "no")
        self.assertEqual(S.direction(S.decide([90.9] * 5, b), "less"), "yes")


class Percentiles(unittest.TestCase):
    def test_rule(self):
        self.assertEqual(S.pct_min_samples(0.5), 20)
        self.assertEqual(S.pct_min_samples(0.9), 100)
        self.assertEqual(S.pct_min_samples(0.99), 1000)
        self.assertEqual(S.pct_min_samples(0.999), 10000)
        self.assertTrue(S.pct_supported(10000, 0.999))
        self.assertFalse(S.pct_supported(9999, 0.999))
        self.assertFalse(S.pct_supported(500, 0.999))
        self.assertFalse(S.pct_supported(999, 0.99))
        self.assertTrue(S.pct_supported(1000, 0.99))
        self.assertFalse(S.pct_supported(None, 0.5))
        self.assertTrue(S.pct_supported(1, 1.0))     # the maximum needs one


class Ties(unittest.TestCase):
    def test_recommendation_ties(self):
        # backends within MIN_EFFECT of the best are named together: the
        # order among them moved between two runs of one commit
        self.assertEqual(C.tied_with_best([(32.8, "a"), (33.0, "b"),
                                           (33.5, "c"), (160.0, "d")]),
                         ["a", "b", "c"])
        self.assertEqual(C.tied_with_best([(193.0, "a"), (202.0, "b"),
                                           (1130.0, "c")]), ["a", "b"])
        edge = 100.0 + 100.0 * S.MIN_EFFECT
        self.assertEqual(C.tied_with_best([(100.0, "a"), (edge, "b")]),
                         ["a", "b"])
        self.assertEqual(C.tied_with_best([(100.0, "a"), (edge * 1.001, "b")]),
                         ["a"])
        self.assertEqual(C.tied_with_best([]), [])


class GranularCaveat(unittest.TestCase):
    def test_a_granular_wheel_is_never_recommended_without_its_lateness(self):

        class Ctx:
            caps = {"kernelwheel": {"ticked", "granular"},
                    "hierwheel": {"ticked"}}
        p = C._pick("wide", [(400.0, "hierwheel"), (93.0, "kernelwheel")], "ns", Ctx(), 1000)
        self.assertEqual((p.tied, p.granular), (["kernelwheel"], True))
        self.assertEqual(p.cands, [(93.0, "kernelwheel"), (400.0, "hierwheel")])
        row = CT.pick_row(p)
        self.assertIn("a tick plus 8/63 of the delay late", "".join(str(x) for x in row[1]))
        p = C._pick("wide", [(93.0, "hierwheel"), (400.0, "kernelwheel")], "ns", Ctx(), 1000)
        self.assertFalse(p.granular)
        self.assertNotIn("late", "".join(str(x) for x in CT.pick_row(p)[1]))
        # tied with the best: said too
        self.assertTrue(AN.is_granular(Ctx(), ["hierwheel", "kernelwheel h2h"]))
        self.assertFalse(AN.is_granular(Ctx(), ["hierwheel", "quadheap"]))
        # a row that does not judge precision (no ctx) carries no caveat
        p = C._pick("idle", [(3.0, "kernelwheel")], "count")
        self.assertEqual((p.caveat, p.granular), (False, False))
        self.assertEqual(CT.pick_row(p)[1], (Code("kernelwheel"),))


class NonCascadingClaim(unittest.TestCase):
    """The kernel wheel's claim on synthetic results: expire per task on
    the short and wide workloads (5 repetitions each) and the replayed
    traces' largest lateness beyond a tick, as a share of the delay."""

    def _m(self, workload, ns, backend="kernelwheel", ticks=None):
        m = R.Measurement(("expire", backend, workload, "series=h2h,tick=1ms",
                           (("N", "1000000"),)), "micro.json")
        m.times = [ns * (1 + k / 100.0) for k in range(5)]
        if ticks is not None:
            m.counters["ticks_per_op"] = [ticks] * 5
        return m

    def _ctx(self, short, wide, fracs, extra=()):
        import types
        series = {("expire", "h2h", "short"): {"kernelwheel": [short]},
                  ("expire", "h2h", "wide"): {"kernelwheel": [wide]}}
        for m in extra:
            series[("expire", "h2h", m.workload)][m.backend] = [m]
        replay = [{"name": "trace%d" % i, "backends": [
            {"name": "kernelwheel", "backend": "kernelwheel", "beyond_tick_frac": f},
            {"name": "hierwheel", "backend": "hierwheel", "beyond_tick_frac": 0.9}]}
            for i, f in enumerate(fracs)]
        return types.SimpleNamespace(series=series,
                                     res=types.SimpleNamespace(replay=replay))

    def test_verdict_follows_the_data(self):
        flat_s, flat_w = self._m("short", 100.0, ticks=0.01), self._m("wide", 110.0, ticks=0.02)
        c = C.non_cascading(self._ctx(flat_s, flat_w, [0.063, 0.124]))
        self.assertEqual(c.kind, C.HOLDS)
        self.assertEqual(c.facts["traces"], ["trace0", "trace1"])
        self.assertEqual([x.values["beyond_tick_frac"] for x in c.cases[1:]], [0.063, 0.124])
        self.assertEqual((c.facts["short_ticks_per_op"], c.facts["wide_ticks_per_op"]),
                         (0.01, 0.02))
        self.assertEqual((c.facts["short_ns"], c.facts["wide_ns"]),
                         (flat_s.median, flat_w.median))
        # hierwheel's late timers belong to hierwheel, not to this claim
        self.assertEqual(c.facts["worst_beyond_tick_frac"], 0.124)
        self.assertIsNone(c.facts["hierwheel_short_ns"])
        # the bound is the kernel's 8/63 (0.12698...): 0.126 is within it,
        # 0.128 over it
        c = C.non_cascading(self._ctx(flat_s, flat_w, [0.063, 0.126]))
        self.assertEqual(c.kind, C.HOLDS)
        c = C.non_cascading(self._ctx(flat_s, flat_w, [0.063, 0.128]))
        self.assertEqual(c.kind, C.PARTLY)
        self.assertEqual(c.facts["why"], "late")
        self.assertEqual(c.facts["worst_beyond_tick_frac"], 0.128)
        # each trace a case held to the bound; the cost a test's case
        self.assertEqual(c.case("kernelwheel lateness, trace trace0").decision, "within")
        late = c.case("kernelwheel lateness, trace trace1")
        self.assertEqual(late.decision, "beyond")
        self.assertEqual(late.thresholds["kernel_lateness_bound"], C.KERNEL_LATENESS_BOUND)
        self.assertEqual(c.case("kernelwheel expire, wide against short").decision, "less")
        steep = self._m("wide", 250.0)            # 2.5x: past the 2x allowance
        c = C.non_cascading(self._ctx(flat_s, steep, [0.1]))
        self.assertEqual(c.kind, C.PARTLY)
        self.assertEqual(c.facts["why"], "not_flat")
        self.assertEqual(c.case("kernelwheel expire, wide against short").decision, "greater")
        c = C.non_cascading(self._ctx(flat_s, steep, [0.2]))
        self.assertEqual(c.kind, C.FAILS)
        # wide at 2x short, within the noise of the allowance: no side
        edge = self._m("wide", 200.0)
        edge.times = [190.0, 210.0, 195.0, 205.0, 200.0]
        c = C.non_cascading(self._ctx(flat_s, edge, [0.1]))
        self.assertEqual(c.kind, C.UNDECIDED)
        self.assertEqual(c.facts["decisive"], 0)
        self.assertEqual(c.facts["part"], "flat_cost")
        # the cascading wheel is shown beside it when measured
        c = C.non_cascading(self._ctx(flat_s, flat_w, [0.1], extra=(
            self._m("short", 50.0, "hierwheel"), self._m("wide", 300.0, "hierwheel"))))
        self.assertEqual((c.facts["hierwheel_short_ns"], c.facts["hierwheel_wide_ns"]),
                         (50.0 * 1.02, 300.0 * 1.02))

    def test_the_words_said(self):
        from tbkit import claimtext as T
        flat_s, flat_w = self._m("short", 100.0, ticks=0.01), self._m("wide", 110.0, ticks=0.02)
        c = T.say(C.non_cascading(self._ctx(flat_s, flat_w, [0.063, 0.128], extra=(
            self._m("short", 50.0, "hierwheel"), self._m("wide", 300.0, "hierwheel")))))
        self.assertEqual(c.text, "holds only for the flat cost: a timer was late by 0.128 of "
                                 "its delay beyond a tick")
        text = "".join(str(x) for x in c.measured)
        self.assertEqual(text, "kernelwheel at N = 10^6: expire per task 102 ns (short) against "
                               "112 ns (wide), 1.10× (p = 0.0079); buckets collected per task "
                               "0.01 (short) against 0.02 (wide), counted; hierwheel, which "
                               "cascades: 51.0 ns (short) against 306 ns (wide); largest lateness "
                               "beyond one tick, as a share of the delay: trace0 0.063, "
                               "trace1 0.128")
        self.assertNotIn("0.9", text)
        steep = self._m("wide", 250.0)
        c = T.say(C.non_cascading(self._ctx(flat_s, steep, [0.1])))
        self.assertEqual(c.text, "holds only for the lateness: expiry on the wide workload "
                                 "costs 2.50× the short one")
        edge = self._m("wide", 200.0)
        edge.times = [190.0, 210.0, 195.0, 205.0, 200.0]
        c = T.say(C.non_cascading(self._ctx(flat_s, edge, [0.1])))
        self.assertRegex(c.text, r"^undecided at this noise on the flat cost \(not significant, "
                                 r"p = [0-9.]+\)$")

    def test_missing_data_is_not_tested(self):
        from tbkit import claimtext as T
        s, w = self._m("short", 100.0), self._m("wide", 110.0)
        c = C.non_cascading(self._ctx(s, w, []))
        self.assertEqual(c.kind, C.UNTESTED)
        self.assertEqual(c.facts["missing"], ["no_replayed_lateness"])
        self.assertIn("no replayed trace with kernelwheel's lateness", T.say(c).text)
        ctx = self._ctx(s, w, [0.1])
        del ctx.series[("expire", "h2h", "wide")]
        c = C.non_cascading(ctx)
        self.assertEqual(c.kind, C.UNTESTED)
        self.assertEqual(c.facts["missing"], ["no_short_and_wide"])
        c = C.non_cascading(self._ctx(s, w, [0.1]), backend="nosuch")
        self.assertEqual(c.kind, C.UNTESTED)
        self.assertEqual(c.facts, {"why": "missing", "backend": "nosuch",
                                   "missing": ["no_short_and_wide", "no_replayed_lateness"]})
        self.assertEqual(T.say(c).measured, ("no data",))


class Fits(unittest.TestCase):
    def test_threshold(self):
        self.assertTrue(S.fit_explains({"big_o": "lgN", "rms": 0.05}))
        self.assertTrue(S.fit_explains({"big_o": "N", "rms": S.FIT_MAX_RMS}))
        self.assertFalse(S.fit_explains({"big_o": "N", "rms": 1.011}))
        self.assertFalse(S.fit_explains({"big_o": "N", "rms": 0.2001}))
        self.assertFalse(S.fit_explains({"big_o": "N", "rms": None}))
        self.assertFalse(S.fit_explains({"big_o": None, "rms": 0.01}))
        self.assertFalse(S.fit_explains(None))

    def test_fit_of_medians(self):
        # the micro harness registers one family per N, so the report fits
        # the medians itself, with Google Benchmark's curves and RMS rule
        flat = R.fit_complexity([(100, 10.0), (1000, 10.4), (10000, 9.7),
                                 (100000, 10.2)])
        self.assertEqual(flat["big_o"], "(1)")
        self.assertTrue(S.fit_explains(flat))
        lg = [(n, 3.0 * math.log2(n)) for n in (100, 1000, 10000, 10 ** 6)]
        self.assertEqual(R.fit_complexity(lg)["big_o"], "lgN")
        self.assertAlmostEqual(R.fit_complexity(lg)["coefficient"], 3.0)
        lin = [(n, 0.5 * n) for n in (100, 1000, 10000)]
        self.assertEqual(R.fit_complexity(lin)["big_o"], "N")
        self.assertLess(R.fit_complexity(lin)["rms"], 1e-9)
        # noise no curve explains: a fit is returned but not shown
        zig = R.fit_complexity([(100, 1.0), (1000, 50.0), (10000, 2.0),
                                (100000, 60.0)])
        self.assertFalse(S.fit_explains(zig))
        # fewer than three N: nothing to fit
        self.assertIsNone(R.fit_complexity([(100, 1.0), (1000, 2.0)]))
        self.assertIsNone(R.fit_complexity([(100, 1.0), (100, 2.0),
                                            (1000, 3.0)]))


if __name__ == "__main__":
    if not S.have_scipy():
        print("SKIP: scipy (Debian package python3-scipy) is not installed")
        sys.exit(77)
    unittest.main(verbosity=2)
