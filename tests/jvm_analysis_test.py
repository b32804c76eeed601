#!/usr/bin/env python3
"""jvm_analysis_test — tbkit/jvm.py on synthetic data: the side-by-side
rows, the ranking's verdicts per operation (holds, does not hold,
undecided, not tested), the wording without the JDK, and micro.json's
reading; tbkit/results.py's reading of jvm.json (a bad or missing file
never raises); the claim jvm_ranking and the report's section
(tbkit/sec_jvm.py) on the committed quick-profile fixture with and without
a jvm.json; and bench.py's JVM step skipping cleanly without the JDK.  With
JAVA JAR NETTY_JAR as arguments it also runs the harness at its smoke size
and analyses what it wrote (skipped when they are absent).  Needs scipy
(Debian's python3-scipy); exits 77 (skip) without it."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tbkit import bench as B  # noqa: E402
from tbkit import claims as C  # noqa: E402
from tbkit import claimtext as T  # noqa: E402
from tbkit import analysis as AN  # noqa: E402
from tbkit import doc as D  # noqa: E402
from tbkit import figures as F  # noqa: E402
from tbkit import jvm as ja  # noqa: E402
from tbkit import report as RP  # noqa: E402
from tbkit import results as R  # noqa: E402
from tbkit import stats as S  # noqa: E402
from tbkit.claimtable import CLAIMS  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "report-quick")

SUBJECTS = [
    {"name": "stpe", "original": "STPE", "config": "roc off", "c_backend": "heapqueue/roc=off"},
    {"name": "stpe-roc", "original": "STPE", "config": "roc on", "c_backend": "heapqueue/roc=on"},
    {"name": "timer", "original": "Timer", "config": "", "c_backend": "timerthread"},
    {"name": "delayqueue", "original": "DelayQueue", "config": "", "c_backend": None},
    {"name": "netty", "original": "HWT", "config": "", "c_backend": "timerwheel"},
]


def reps(values, bytes_per_op=96.0, gc_ms=0.0):
    return [{"ns_per_op": v, "bytes_per_op": bytes_per_op, "gc_ms": gc_ms, "gc_count": 0}
            for v in values]


def spread(center, k=5):
    """k values around center, 2 % apart: tight enough to separate 2x."""
    return [center * (1 + 0.01 * (i - k // 2)) for i in range(k)]


def jvm_doc(cells):
    """cells: {(op, subject, n): [ns...]}"""
    return {"format": "timerbench-jvm/1", "subjects": SUBJECTS,
            "results": [{"op": op, "subject": s, "n": n, "reps": reps(v)}
                        for (op, s, n), v in cells.items()]}


class Repetitions(unittest.TestCase):
    """Which JVM repetitions count, and which figure of them."""

    def test_dropped_and_unpaced_left_out(self):
        doc = jvm_doc({})
        doc["results"] = [
            {"op": "cancel", "subject": "stpe", "n": 100, "reps": [
                {"ns_per_op": 10.0, "dropped": False}, {"ns_per_op": 99.0, "dropped": True}]},
            {"op": "timeouts", "subject": "stpe", "n": 100, "reps": [
                {"ns_per_op": 10.0, "mean_ns_per_op": 14.0, "paced": True, "fired_share": 0.05,
                 "fork": 0},
                {"ns_per_op": 10.0, "mean_ns_per_op": 80.0, "paced": False, "fork": 1}]}]
        self.assertEqual(ja.jvm_values(doc, "cancel", "stpe", 100), [10.0])
        # timeouts: the repetition's sum (mean), not the batch median
        self.assertEqual(ja.jvm_values(doc, "timeouts", "stpe", 100), [14.0])
        rows = {r["op"]: r for r in ja.side_by_side(doc, {})}
        self.assertEqual(rows["cancel"]["facts"]["dropped"], 1)
        self.assertEqual(rows["cancel"]["jvm"]["n"], 1)
        self.assertEqual(rows["timeouts"]["facts"],
                         {"forks": 1, "dropped": 0, "unpaced": 1, "fired_share": 0.05,
                          "gc_count": 0})

    def test_zero_expire_is_read(self):
        """expire's CPU per task, its idle part taken out, can be 0 (Netty's
        worker at 10^4 costs no more than its idle ticks): such a result is
        read, not skipped as malformed."""
        with tempfile.TemporaryDirectory() as d:
            doc = jvm_doc({("expire", "netty", 10000): [0.0, 0.0, 12.0]})
            doc["format"] = "timerbench-jvm/2"
            with open(os.path.join(d, "jvm.json"), "w") as f:
                json.dump(doc, f)
            res = R.load(d)
            self.assertIsNotNone(res.jvm, res.jvm_problem)
            self.assertEqual(len(res.jvm["results"]), 1)
            self.assertFalse(res.problems, [p.what for p in res.problems])

    def test_old_documents_still_count(self):
        """A /1 document has no dropped or paced flags: every repetition counts."""
        doc = jvm_doc({("cancel", "stpe", 100): [1.0, 2.0]})
        self.assertEqual(ja.jvm_values(doc, "cancel", "stpe", 100), [1.0, 2.0])


class Ranking(unittest.TestCase):
    def setUp(self):
        if not S.have_scipy():
            self.skipTest("scipy missing")

    def both(self, jvm_centers, c_centers, n=1000000, op="cancel"):
        cells = {(op, s, n): spread(v) for s, v in jvm_centers.items()}
        cells[(op, "delayqueue", n)] = spread(5000.0)   # no C rendering
        c = {}
        for b, v in c_centers.items():
            c.setdefault(b, {}).setdefault(op, {})[n] = spread(v)
        return jvm_doc(cells), c

    def test_same_order_holds(self):
        jvm, c = self.both({"stpe": 30, "stpe-roc": 300, "timer": 100, "netty": 60},
                           {"heapqueue/roc=off": 10, "heapqueue/roc=on": 200,
                            "timerthread": 50, "timerwheel": 20})
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.HOLDS, e)
        self.assertEqual(e["n"], 1000000)
        self.assertEqual(len(e["pairs"]), 6)             # delayqueue left out
        self.assertTrue(all(p["a"] != "delayqueue" for p in e["pairs"]))

    def test_swapped_pair_does_not_hold(self):
        jvm, c = self.both({"stpe": 30, "stpe-roc": 300, "timer": 100, "netty": 60},
                           {"heapqueue/roc=off": 10, "heapqueue/roc=on": 200,
                            "timerthread": 50, "timerwheel": 80})  # netty now slower than timer
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.FAILS)
        self.assertEqual(e["why"], ja.CONTRADICTED)
        self.assertEqual([(p["a"], p["b"]) for p in e["pairs"] if p["agree"] == ja.CONTRADICTION],
                         [("timer", "netty")])
        # the renderer names the contradicting pair with each side's order
        self.assertIn("timer vs netty: JVM slower", T.jvm_op_why(ja.op_facts(e)))

    def test_tie_on_one_side_does_not_hold(self):
        # JVM: timer 2x netty; C: within 5 % -> "same" against "slower"
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 52, "timerwheel": 50})
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.FAILS)
        p = e["pairs"][0]
        self.assertEqual(p["c"]["order"], "same")
        self.assertEqual(p["jvm"]["order"], "slower")
        self.assertEqual(p["agree"], ja.CONTRADICTION)

    def test_opposite_but_not_significant_is_named(self):
        # JVM: timer a little slower than netty, C: a little faster, both
        # too noisy to order: undecided, and the pair named as opposite
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 100, "timerwheel": 50})
        jvm["results"] = [r for r in jvm["results"] if r["subject"] != "delayqueue"]
        for r in jvm["results"]:
            r["reps"] = reps([130, 60, 300, 90, 40] if r["subject"] == "timer"
                             else [100, 50, 250, 70, 45])
        c["timerthread"]["cancel"][1000000] = [50, 40, 280, 15, 60]
        c["timerwheel"]["cancel"][1000000] = [10, 100, 300, 20, 250]
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.UNDECIDED, e)
        self.assertEqual(e["pairs"][0]["agree"], ja.OPPOSITE_NS)
        self.assertEqual(e["why"], ja.NOT_SIGNIFICANT)
        self.assertIn("opposite but not significant: timer vs netty",
                      T.jvm_op_why(ja.op_facts(e)))

    def test_a_same_side_is_not_an_opposite(self):
        # JVM 1.2x apart without significance, C within 1 %: undecided, and
        # not named as an opposite pair (0.99 is no order)
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 100, "timerwheel": 50})
        jvm["results"] = [r for r in jvm["results"] if r["subject"] != "delayqueue"]
        for r in jvm["results"]:
            r["reps"] = reps([130, 60, 300, 90, 40] if r["subject"] == "timer"
                             else [100, 50, 250, 75, 45])
        c["timerthread"]["cancel"][1000000] = spread(99)
        c["timerwheel"]["cancel"][1000000] = [100, 60, 300, 90, 150]
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["pairs"][0]["c"]["order"], "same")
        self.assertNotEqual(e["pairs"][0]["agree"], ja.OPPOSITE_NS)

    def test_holm_correction_over_the_pairs(self):
        self.assertEqual(ja.holm([0.01, 0.04, None, 0.03]), [0.03, 0.06, None, 0.06])
        # six pairs, each side 5 against 5 completely separated: every
        # corrected p is still below 0.05 (the smallest p of 5 vs 5 is
        # 2/252), so the ordering survives the correction
        jvm, c = self.both({"stpe": 30, "stpe-roc": 300, "timer": 100, "netty": 60},
                           {"heapqueue/roc=off": 10, "heapqueue/roc=on": 200,
                            "timerthread": 50, "timerwheel": 20})
        e = ja.ranking(jvm, c, ["cancel"])[0]
        ps = sorted(p["jvm"]["p_adj"] for p in e["pairs"])
        self.assertAlmostEqual(ps[-1], 6 * 2 / 252, places=3)

    def test_control(self):
        # the same schedule() with removeOnCancel off and on: the same
        same = jvm_doc({("insert", "stpe", 100): spread(100), ("insert", "stpe-roc", 100): spread(103)})
        self.assertEqual([r["ok"] for r in ja.control(same)], [True])
        self.assertEqual(ja.control(same)[0]["order"], "same")
        self.assertEqual(T.jvm_control_said(ja.control(same)[0]["order"]), "the same")
        # 1.47x apart, as issue 37's run measured at 10^6: the control fails
        bias = jvm_doc({("insert", "stpe", 1000000): spread(144),
                        ("insert", "stpe-roc", 1000000): spread(98)})
        row = ja.control(bias)[0]
        self.assertFalse(row["ok"])
        self.assertEqual(row["order"], "slower")
        self.assertEqual(ja.control(jvm_doc({})), [])

    def test_ties_on_both_sides_hold(self):
        jvm, c = self.both({"timer": 100, "netty": 104}, {"timerthread": 50, "timerwheel": 52})
        self.assertEqual(ja.ranking(jvm, c, ["cancel"])[0]["verdict"], ja.HOLDS)

    def test_noise_is_undecided(self):
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 100, "timerwheel": 50})
        # C side: wide overlapping samples, medians 2x apart but not significant
        c["timerthread"]["cancel"][1000000] = [10, 100, 300, 20, 250]
        c["timerwheel"]["cancel"][1000000] = [50, 40, 280, 15, 60]
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.UNDECIDED, e)

    def test_too_few_repetitions_not_tested(self):
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 100, "timerwheel": 50})
        c["timerthread"]["cancel"][1000000] = [100, 101]
        c["timerwheel"]["cancel"][1000000] = [50, 51]
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.NOT_TESTED)

    def test_largest_common_n(self):
        cells = {("insert", s, n): spread(v * (2 if n == 10000 else 1))
                 for s, v in (("timer", 100), ("netty", 50)) for n in (1000, 10000)}
        c = {"timerthread": {"insert": {1000: spread(80)}},
             "timerwheel": {"insert": {1000: spread(20), 10000: spread(20)}}}
        e = ja.ranking(jvm_doc(cells), c, ["insert"])[0]
        self.assertEqual(e["n"], 1000)                   # timerthread lacks 10^4
        self.assertEqual(e["verdict"], ja.HOLDS)

    def test_no_common_n_not_tested(self):
        # timer measured on both sides at 10^3 only, netty at 10^6 only
        jvm = jvm_doc({("cancel", "timer", 1000): spread(100),
                       ("cancel", "netty", 1000000): spread(50)})
        c = {"timerthread": {"cancel": {1000: spread(100)}},
             "timerwheel": {"cancel": {1000000: spread(50)}}}
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.NOT_TESTED)
        self.assertEqual(e["why"], ja.NO_COMMON_N)

    def test_one_original_not_tested(self):
        jvm, c = self.both({"timer": 100, "netty": 50}, {"timerthread": 100})
        e = ja.ranking(jvm, c, ["cancel"])[0]
        self.assertEqual(e["verdict"], ja.NOT_TESTED)
        self.assertEqual(e["why"], ja.FEWER_THAN_TWO)

    def test_policy_shared_by_one_c_instance(self):
        # insert: C labels no roc, one instance stands for stpe and stpe-roc;
        # their pair is left out, the others compared with it
        cells = {("insert", s, 1000): spread(v) for s, v in
                 (("stpe", 100), ("stpe-roc", 300), ("netty", 50))}
        c = {"heapqueue": {"insert": {1000: spread(20)}},
             "timerwheel": {"insert": {1000: spread(10)}}}
        e = ja.ranking(jvm_doc(cells), c, ["insert"])[0]
        self.assertEqual(e["verdict"], ja.HOLDS, e)
        self.assertEqual({(p["a"], p["b"]) for p in e["pairs"]},
                         {("stpe", "netty"), ("stpe-roc", "netty")})
        # timeouts: the unlabelled C result is roc=off only
        self.assertEqual(ja.c_lookup({"heapqueue": {"timeouts": {1000: [5]}}},
                                     "heapqueue/roc=on", "timeouts", 1000), [])
        self.assertEqual(ja.c_lookup({"heapqueue": {"timeouts": {1000: [5]}}},
                                     "heapqueue/roc=off", "timeouts", 1000), [5.0])

    def test_absent_jdk(self):
        e = ja.ranking(None, {"timerwheel": {"insert": {1000: spread(5)}}})
        self.assertEqual([x["verdict"] for x in e], [ja.NOT_TESTED] * len(ja.OPS))
        self.assertEqual(ja.side_by_side(None, {}), [])


class Rows(unittest.TestCase):
    def test_side_by_side(self):
        jvm = jvm_doc({("insert", "stpe", 1000): [80, 90, 100],
                       ("insert", "delayqueue", 1000): [70, 75, 72],
                       ("insert", "netty", 1000000): [50, 60, 55]})
        jvm["results"][0]["reps"] = reps([80, 90, 100], bytes_per_op=112, gc_ms=3)
        c = {"heapqueue": {"insert": {1000: [20, 21, 22]}}}   # insert: no roc in C
        rows = {(r["op"], r["n"], r["subject"]): r for r in ja.side_by_side(jvm, c)}
        r = rows[("insert", 1000, "stpe")]
        self.assertEqual(r["c"], {"median": 21, "lo": 20, "hi": 22, "n": 3})
        self.assertEqual(r["jvm"]["median"], 90)
        self.assertEqual(r["bytes_per_op"], 112)
        self.assertEqual(r["gc_ms"], 3)
        self.assertIsNone(rows[("insert", 1000, "delayqueue")]["c"])
        self.assertIsNone(rows[("insert", 1000000, "netty")]["c"])   # not measured
        cov = {x["op"]: x for x in ja.coverage(jvm, c)}
        self.assertEqual(cov["insert"]["jvm"], [1000, 1000000])
        self.assertEqual(cov["insert"]["only_jvm"], [1000000])

    def test_c_samples_from_micro(self):
        def it(name, t, unit="ns"):
            return {"name": name + "/manual_time", "run_type": "iteration",
                    "real_time": t, "time_unit": unit}
        micro = {"benchmarks": [
            it("cancel/heapqueue/uniform/series=h2h,roc=on/N:1000000", 200),
            it("cancel/heapqueue/uniform/series=h2h,roc=off/N:1000000", 20),
            it("insert/heapqueue/uniform/series=h2h/N:1000", 0.03, "us"),
            it("insert/timerwheel/uniform/series=h2h,tick=1ms,wheel=512/N:1000", 11),
            it("insert/timerwheel/uniform/series=orig,tick=100ms/N:1000", 99),
            it("insert/timerwheel/short/series=h2h,tick=1ms,wheel=512/N:1000", 99),
            {"name": "insert/timerwheel/uniform/series=h2h/N:1000_median",
             "run_type": "aggregate", "real_time": 5},
            # timeouts: the caller's part (series caller) is what the JVM's
            # caller is set beside; the h2h figure holds the tick walk
            it("timeouts/timerwheel/timeouts/series=h2h,tick=1ms,wheel=512/N:1000", 531),
            it("timeouts/timerwheel/timeouts/series=caller,tick=1ms,wheel=512/N:1000", 19),
        ]}
        c = ja.c_samples(micro)
        self.assertEqual(c["timerwheel"]["timeouts"][1000], [19])
        self.assertEqual(c["heapqueue/roc=on"]["cancel"][1000000], [200])
        self.assertEqual(c["heapqueue/roc=off"]["cancel"][1000000], [20])
        self.assertAlmostEqual(c["heapqueue"]["insert"][1000][0], 30)
        self.assertEqual(c["timerwheel"]["insert"][1000], [11])
        self.assertEqual(ja.c_lookup(c, "heapqueue/roc=on", "insert", 1000), [30.0])
        self.assertEqual(ja.c_lookup(c, "heapqueue/roc=on", "cancel", 1000), [])


_C_FROM_RESULTS = ja.c_from_results


def more_reps(res):
    """The fixture's C side with 6 repetitions a cell instead of its 3
    (each doubled, 0.2 % apart), enough for a pair to be tested."""
    c = _C_FROM_RESULTS(res)
    return {b: {op: {n: list(v) + [x * 1.002 for x in v] for n, v in d.items()}
                for op, d in ops.items()} for b, ops in c.items()}


def fixture_jvm(scale=None):
    """A jvm.json whose cells are more_reps' C repetitions of the
    committed fixture times 3 (or `scale`, per (op, subject)): the
    originals rank exactly as their renderings, but where `scale` moves
    one."""
    c = more_reps(R.load(FIXTURE))
    scale = scale or {}
    results = []
    for op in ja.OPS:
        for s in SUBJECTS:
            for n in (100, 10000, 1000000):
                # no rendering, or none in the C micro (stpe-roc's timeouts)
                base = ja.c_lookup(c, s["c_backend"], op, n) or [50.0] * 6
                k = scale.get((op, s["name"]), 3.0)
                results.append({"op": op, "subject": s["name"], "n": n,
                                "reps": reps([v * k for v in base], bytes_per_op=96.0,
                                             gc_ms=0.5)})
    return {"format": "timerbench-jvm/1", "size": "standard", "subjects": SUBJECTS,
            "java": {"vm": "test VM", "version": "17"}, "netty": "4.1.48.Final",
            "max_batch": 1024, "elapsed_s": 31.5,
            "n": {"insert": [100, 10000, 1000000]},
            "n_full": {"insert": [100, 1000, 10000, 100000, 1000000]},
            "results": results}


def md_section(md, title):
    start = md.index("## " + title)
    end = md.find("\n## ", start + 1)
    return md[start:end if end >= 0 else len(md)]


class InTheReport(unittest.TestCase):
    """jvm.json read with the results, the claim and the section."""

    def setUp(self):
        if not S.have_scipy():
            self.skipTest("scipy missing")
        ja.c_from_results = more_reps
        self.addCleanup(setattr, ja, "c_from_results", _C_FROM_RESULTS)
        self.tmp = tempfile.mkdtemp()
        self.dir = os.path.join(self.tmp, "run")
        shutil.copytree(FIXTURE, self.dir)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, text):
        with open(os.path.join(self.dir, "jvm.json"), "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(text))

    def render(self):
        res = R.load(self.dir)

        figs = F.Figures(os.path.join(self.tmp, "figs"), os.path.join(os.path.dirname(HERE),
                                                                      "plots"))
        figs.gnuplot = None
        figs.why_none = "figures were turned off (test)"
        an = AN.Analysis(res)
        claim = C.by_id(C.evaluate(an), "jvm_ranking")
        md = D.to_markdown(RP.build(res, figs)[0], self.tmp)
        self.limitations = md_section(md, "Limitations")
        return res, claim, md_section(md, "The originals")

    def test_with_jvm_json(self):
        self.write(fixture_jvm())
        res, claim, sec = self.render()
        self.assertIsNotNone(res.jvm)
        # the same samples scaled: no pair can be ordered differently (the
        # fixture's noise leaves some pairs undecided on both sides)
        self.assertIn(claim.kind, (C.HOLDS, C.UNDECIDED), claim)
        expire = [e for e in claim.facts["ops"] if e["op"] == "expire"][0]
        self.assertEqual((expire["n"], expire["verdict"], expire["why"], len(expire["pairs"])),
                         (1000000, ja.HOLDS, ja.ALL_ALIKE, 3))
        # the words, as tbkit.claimtext says them from the facts
        self.assertIn("expire at N = 10^6: holds (all 3 pairs ordered alike)",
                      "".join(claim.measured))
        self.assertIn("| 10^6 | `stpe-roc` | `heapqueue/roc=on` |", sec)
        self.assertIn("| 3.00× |", sec)                  # JVM / C
        self.assertIn("96.0", sec)                       # bytes per op
        self.assertIn("left to the full profile: 10^3, 10^5", sec)
        self.assertIn("| 10^6 | `stpe-roc` | `heapqueue/roc=on` | not measured |", sec)
        self.assertIn("no C result at any N for stpe-roc (the C micro runs this operation "
                      "without heapqueue/roc=on)", sec)
        self.assertIn(": **%s**." % claim.text, sec)

    def test_a_swapped_pair_is_seen(self):
        # Netty 20x its rendering's time at cancel: slower than Timer on the JVM
        self.write(fixture_jvm({("cancel", "netty"): 60.0}))
        _, claim, sec = self.render()
        self.assertIn(claim.kind, (C.PARTLY, C.FAILS), claim)
        cancel = [e for e in claim.facts["ops"] if e["op"] == "cancel"][0]
        self.assertEqual((cancel["verdict"], cancel["why"]), (ja.FAILS, ja.CONTRADICTED))

    def test_three_repetitions_are_too_few(self):
        # the fixture's own C side: 3 repetitions, too few to order a pair
        ja.c_from_results = _C_FROM_RESULTS
        self.write(fixture_jvm())
        _, claim, sec = self.render()
        self.assertEqual(claim.kind, C.UNTESTED)
        self.assertEqual(claim.facts["why"], "no_operation_tested")
        self.assertIn(ja.TOO_FEW_REPS, [e["why"] for e in claim.facts["ops"]])

    def test_without_jvm_json(self):
        res, claim, sec = self.render()
        self.assertIsNone(res.jvm)
        self.assertEqual(claim.kind, C.UNTESTED)
        self.assertEqual(claim.facts, {"why": "not_measured", "absent": {"why": "no_jvm_json"}})
        self.assertIn("were not measured: this results directory has no jvm.json", sec)
        # the claim named by its title in the table, said not tested
        self.assertIn('The claim "%s" is not tested.' % CLAIMS["jvm_ranking"].title, sec)
        self.assertIn("default-jdk-headless", sec)
        self.assertNotIn("| N |", sec)
        self.assertIn("**The originals** — this results directory has no jvm.json",
                      self.limitations)

    def test_the_runs_own_note(self):
        with open(os.path.join(self.dir, "machine.json")) as f:
            m = json.load(f)
        m.setdefault("run", {})["jvm"] = {"status": "skipped",
                                          "why": "java and javac (Debian's default-jdk-headless) "
                                                 "not installed"}
        with open(os.path.join(self.dir, "machine.json"), "w") as f:
            json.dump(m, f)
        _, claim, sec = self.render()
        self.assertIn("default-jdk-headless) not installed", sec)
        self.assertEqual(claim.facts["why"], "not_measured")
        self.assertEqual(claim.facts["absent"]["why"], "run_note")
        self.assertIn("default-jdk-headless) not installed", claim.facts["absent"]["note"])

    def test_bad_files_never_raise(self):
        for text, what in (("{", "truncated"), ("", "is empty"), ("[1, 2]", "format"),
                           (json.dumps({"format": "other"}), "format"),
                           (json.dumps({"format": "timerbench-jvm/1", "subjects": SUBJECTS,
                                        "results": [{"op": "insert", "subject": "nobody",
                                                     "n": 5, "reps": []}]}), "no usable")):
            self.write(text)
            res, claim, sec = self.render()
            self.assertIsNone(res.jvm, text)
            self.assertIn(what, res.jvm_problem, text)
            self.assertIn("jvm.json " + res.jvm_problem, sec)
            self.assertEqual(claim.kind, C.UNTESTED)
            self.assertEqual(claim.facts["absent"], {"why": "jvm_problem",
                                                     "problem": res.jvm_problem})

    def test_a_bad_result_is_skipped_not_the_file(self):
        doc = fixture_jvm()
        doc["results"].append({"op": "insert", "subject": "stpe", "n": 100,
                               "reps": [{"ns_per_op": -1}]})
        self.write(doc)
        res, claim, sec = self.render()
        self.assertEqual(len(res.jvm["results"]), len(doc["results"]) - 1)
        self.assertTrue(any("1 results were not in the expected form" in str(p)
                            for p in res.problems))


class RankingWords(unittest.TestCase):
    """jvm_ranking's verdict as tbkit.claimtext says it from kind and facts."""

    def verdict(self, kind, **facts):
        v = C._verdict("jvm_ranking")
        v.kind = kind
        v.facts.update(facts)
        return T.say(v)

    def op(self, op, verdict, why, pairs=()):
        return {"op": op, "n": 1000000, "verdict": verdict, "why": why, "pairs": list(pairs)}

    def test_control_failed(self):
        v = self.verdict(C.UNDECIDED, why="control_failed",
                         ops=[self.op("insert", ja.HOLDS, ja.ALL_ALIKE)],
                         control_bias=[{"n": 1000000, "ratio": 1.47}])
        self.assertEqual(v.text, "undecided at this noise: the control failed (STPE's insert "
                         "with removeOnCancel off against on, the same call, measured 1.47x "
                         "apart at N = 10^6), so the harness's own bias is above the effect floor")
        self.assertEqual("".join(v.measured),
                         "insert at N = 10^6: holds (all 0 pairs ordered alike)")

    def test_in_part_and_opposite(self):
        pair = {"a": "timer", "b": "netty", "agree": ja.OPPOSITE_NS, "jvm_order": "undecided",
                "jvm_ratio": 1.3, "c_order": "undecided", "c_ratio": 0.8}
        v = self.verdict(C.PARTLY, ops=[self.op("insert", ja.HOLDS, ja.ALL_ALIKE),
                                        self.op("cancel", ja.FAILS, ja.CONTRADICTED)],
                         control_bias=[])
        self.assertEqual(v.text, "holds only for insert; not for cancel")
        v = self.verdict(C.UNDECIDED, ops=[self.op("cancel", ja.UNDECIDED, ja.NOT_SIGNIFICANT,
                                                   [pair])], control_bias=[])
        self.assertEqual(v.text, "undecided at this noise; ordered oppositely on the two "
                         "sides, without significance: cancel (timer vs netty)")
        self.assertEqual("".join(v.measured), "cancel at N = 10^6: undecided at this noise (no "
                         "pair contradicts, but some is not significant on a side; opposite "
                         "but not significant: timer vs netty: JVM undecided (1.30), C "
                         "undecided (0.80))")


class BenchStep(unittest.TestCase):
    """bench.py's JVM step without a JDK: skipped, with the reason."""

    def test_skipped_without_java(self):
        old = os.environ.get("PATH")
        with tempfile.TemporaryDirectory() as d:
            os.environ["PATH"] = d          # no java, no javac
            try:
                facts = B.jvm_into("standard", d, d)
            finally:
                os.environ["PATH"] = old
            self.assertEqual(facts["status"], "skipped")
            self.assertIn("default-jdk-headless", facts["why"])
            self.assertFalse(os.path.exists(os.path.join(d, "jvm.json")))
        self.assertIsNone(B.JVM_SIZE.get("quick"))
        self.assertEqual(B.JVM_SIZE["full"], "full")


class Harness(unittest.TestCase):
    """The real harness at its smoke size, when the JDK is given."""
    args = None

    def test_smoke_run(self):
        if not self.args or not all(self.args) or not all(os.path.exists(a) for a in self.args):
            self.skipTest("no JDK, harness jar or Netty")
        java, jar, netty = self.args
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "jvm.json")
            p = subprocess.run([java, "-Xmx1g", "-cp", jar + os.pathsep + netty, "TimerBench",
                                "--size", "smoke", "--out", out],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                doc = json.load(f)
        self.assertEqual(doc["format"], "timerbench-jvm/2")
        self.assertEqual(doc["forks"], 2)
        # STPE's two policies (the control) are filled together and
        # measured in alternation; every other original alone
        self.assertEqual(doc["groups"],
                         [["stpe", "stpe-roc"], ["timer"], ["delayqueue"], ["netty"]])
        # every fork warmed up every subject once
        self.assertEqual(sorted((w["subject"], w["fork"]) for w in doc["warmup"]),
                         sorted((s, f) for s in ("stpe", "stpe-roc", "timer", "delayqueue",
                                                 "netty") for f in (0, 1)))
        # every fork ran with the pre-touched heap and could count compilations
        self.assertIn("-XX:+AlwaysPreTouch", doc["java"]["args"])
        self.assertTrue(doc["compile_count"])
        names = {s["name"] for s in doc["subjects"]}
        self.assertEqual(names, {"stpe", "stpe-roc", "timer", "delayqueue", "netty"})
        got = {(r["op"], r["subject"]) for r in doc["results"]}
        for op in ("insert", "cancel", "timeouts", "expire"):
            for s in names:
                self.assertIn((op, s), got)
        timeouts, shares, attempts = {}, [], {}
        for r in doc["results"]:
            clean = [x for x in r["reps"] if not x["dropped"]]
            # at most reps_per_fork clean repetitions from each fork (fewer
            # when compilation went on through all its attempts, as
            # a loaded machine's 500 ms expire spans can); every
            # repetition is from one of the forks, a dropped one saw a
            # compilation
            self.assertGreaterEqual(len(clean), 1, r)
            for f in (0, 1):
                k = sum(1 for x in clean if x["fork"] == f)
                self.assertLessEqual(k, doc["reps_per_fork"], r)
                most = {"expire": 2, "timeouts": 4}.get(r["op"], 8)
                self.assertLessEqual(sum(1 for x in r["reps"] if x["fork"] == f),
                                     most * doc["reps_per_fork"] + most)
            self.assertEqual({x["fork"] for x in r["reps"]}, {0, 1})
            self.assertEqual(r["dropped"], len(r["reps"]) - len(clean))
            self.assertEqual(r["forks"], len({x["fork"] for x in clean}))
            if r["op"] in ("insert", "cancel"):
                # every N times about batches x max_batch operations: more
                # batches where the rule N/8 makes them short (smoke: 36
                # of 125 at 10^3, 4 of 1024 at 10^4)
                rule = min(doc["max_batch"], max(1, r["n"] // 8))
                want = doc["batches"] * -(-doc["max_batch"] // rule)
                self.assertEqual({x["batches"] for x in r["reps"]}, {want}, r)
            for x in r["reps"]:
                # a compilation finished (the count) or compiled time
                # accrued (one still running at the end) inside it, or,
                # for insert and cancel, anywhere in its group's attempt
                whole = x["compiles"] > 0 or x["jit_ms"] > 0
                if r["op"] in ("insert", "cancel"):
                    self.assertGreaterEqual(x["attempt_compiles"], x["compiles"], x)
                    whole = whole or x["attempt_compiles"] > 0
                    attempts.setdefault((r["op"], r["n"], x["fork"], x["attempt"]), {})[
                        r["subject"]] = x
                self.assertEqual(x["dropped"], whole, x)
                self.assertGreaterEqual(x["compiled_before"], 0, x)
                self.assertGreaterEqual(x["ns_per_op"], 0)
                self.assertGreaterEqual(x["bytes_per_op"], 0)
                if r["op"] == "expire":
                    self.assertEqual(x["fired"], r["n"])
                    self.assertGreaterEqual(x["idle_cpu_ns_per_task"], 0)
                if r["op"] == "timeouts":
                    timeouts.setdefault(r["n"], set()).add(x["timeout_ns"])
                    # 5 % of the timeouts left to fire, in a short stretch:
                    # a generous band, and the pace kept on this machine
                    # no upper bound per repetition: a worker the machine
                    # held back fires its backlog inside a later stretch
                    self.assertGreaterEqual(x["fired_share"], 0.0, x)
                    if x["paced"]:
                        shares.append(x["fired_share"])
                    else:       # fell behind: the lag says by how much
                        self.assertGreater(x["lag_median_ms"], 0.25 * x["timeout_ns"] / 2 / 1e6)
                    self.assertGreaterEqual(x["cpu_ns_per_op"], x["caller_cpu_ns_per_op"])
        # 5 % of the timeouts are left to fire: over every paced repetition
        # (a single short stretch can see none when the worker was not
        # scheduled), the median share is near it, in a generous band
        self.assertTrue(shares)
        self.assertGreater(statistics.median(shares), 0.005, shares)
        self.assertLess(statistics.median(shares), 0.5, shares)
        # one timeout per N for every subject and repetition
        self.assertTrue(timeouts)
        for n, ts in timeouts.items():
            self.assertEqual(ts, {max(20_000_000, 4000 * n)}, n)
        # STPE's schedule allocates its ScheduledFutureTask: bytes per insert > 0
        ins = [r for r in doc["results"] if r["op"] == "insert" and r["subject"] == "stpe"]
        self.assertTrue(all(x["bytes_per_op"] >= 32 for r in ins for x in r["reps"]))
        # the control's two policies are kept or dropped together, one
        # attempt at a time: each clean attempt has both, on the same
        # compiled code (the fork's count of compilations alike)
        both = [a for a in attempts.values() if {"stpe", "stpe-roc"} <= set(a)]
        self.assertTrue(both)
        for a in both:
            x, y = a["stpe"], a["stpe-roc"]
            self.assertEqual(x["dropped"], y["dropped"], a)
            self.assertEqual(x["attempt_compiles"], y["attempt_compiles"], a)
            if not x["dropped"]:
                self.assertEqual(x["compiled_before"], y["compiled_before"], a)
        for op in ("insert", "cancel"):
            for n in doc["n"][op]:
                for f in (0, 1):
                    k = {s: sum(1 for (o, m, g, _), a in attempts.items()
                                if (o, m, g) == (op, n, f) and s in a and not a[s]["dropped"])
                         for s in ("stpe", "stpe-roc")}
                    self.assertEqual(k["stpe"], k["stpe-roc"], (op, n, f))
        rows = ja.side_by_side(doc, {})
        self.assertEqual(len(rows), len(doc["results"]))
        self.check_control_order(p.stderr)

    def check_control_order(self, stderr):
        """The order the progress lines show for the control's two sides:
        in each fork at each N, every insert repetition before the first
        cancel repetition (the inserts meet the fill as made), and within
        an operation the two policies in an order reversed from one
        attempt to the next (A B, B A, ...)."""
        seen = {}
        for line in stderr.splitlines():
            m = re.search(r"\] fork (\d+) rep (\d+) (insert|cancel)\s+(stpe|stpe-roc)\s+N=(\d+)",
                          line)
            if m:
                f, t, op, subj, n = m.groups()
                seen.setdefault((f, n), []).append((op, int(t), subj))
        self.assertTrue(seen)
        for key, lines in seen.items():
            ops = [op for op, _, _ in lines]
            self.assertEqual(ops, sorted(ops, key=("insert", "cancel").index), key)
            for op in ("insert", "cancel"):
                by_attempt = {}
                for o, t, subj in lines:
                    if o == op:
                        by_attempt.setdefault(t, []).append(subj)
                pairs = [by_attempt[t] for t in sorted(by_attempt)]
                for a, b in zip(pairs, pairs[1:]):
                    if len(a) == 2 and len(b) == 2:
                        self.assertEqual(b, a[::-1], (key, op, pairs))
                # both policies are measured at every N of every fork
                self.assertEqual(set(pairs[0]), {"stpe", "stpe-roc"}, (key, op, pairs))

    def test_the_runners_step(self):
        """bench.py's JVM step on the built jar (at the smoke size, for
        time): jvm.json whole in the results directory, read back by the
        results reader, jvm.log beside it, the facts for machine.json."""
        if not self.args or not all(self.args) or not all(os.path.exists(a) for a in self.args):
            self.skipTest("no JDK, harness jar or Netty")
        java, jar, netty = self.args
        if netty != B.NETTY_JAR or B.jvm_missing():
            self.skipTest("the runner looks for Debian's JDK and Netty only")
        build_dir = os.path.dirname(os.path.dirname(jar))
        old = dict(B.JVM_SIZE)
        B.JVM_SIZE["standard"] = "smoke"
        try:
            with tempfile.TemporaryDirectory() as d:
                facts = B.jvm_into("standard", build_dir, d, build=False, seed=7)
                self.assertEqual(facts["status"], "complete", facts)
                self.assertEqual(facts["size"], "smoke")
                self.assertGreater(facts["harness_seconds"], 0)
                self.assertFalse(os.path.exists(os.path.join(d, "jvm.json.tmp")))
                with open(os.path.join(d, "jvm.log")) as f:
                    self.assertIn("TimerBench --size smoke", f.read())
                res = R.load(d)
                self.assertIsNotNone(res.jvm, res.jvm_problem)
                self.assertEqual(res.jvm["size"], "smoke")
                self.assertEqual(len(ja.side_by_side(res.jvm, {})), len(res.jvm["results"]))
        finally:
            B.JVM_SIZE.clear()
            B.JVM_SIZE.update(old)


if __name__ == "__main__":
    if not S.have_scipy():
        print("SKIP: scipy (python3-scipy) is not importable by %s" % sys.executable)
        sys.exit(77)
    if len(sys.argv) == 4:
        Harness.args = sys.argv[1:4]
        del sys.argv[1:4]
    unittest.main()
