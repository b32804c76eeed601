#!/usr/bin/env python3
"""claims_test.py — the claims (tbkit/claims.py), each decided on
synthetic results directories whose verdict the test knows: the growth
claim's worst case and average judged apart, Netty's faithful sleep, the
single runners, an STPE of one thread against Timer, heap maintenance
under load, the leader's one wake-up, Timer's wall clock; and the report
section "What the source articles say".  Suite `report`.

    /usr/bin/python3 tests/claims_test.py [-v]
"""

import json
import math
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import analysis as AN  # noqa: E402
from tbkit import claims as C  # noqa: E402
from tbkit import claimtext as T  # noqa: E402
from tbkit import verdict as V  # noqa: E402
from tbkit import results as R  # noqa: E402
from tbkit import stats as S  # noqa: E402
from tbkit.doc import Code  # noqa: E402

NEED_SCIPY = unittest.skipUnless(S.have_scipy(), "scipy (python3-scipy) is not installed")

CAPS = {"heapqueue": ["fifo_ties", "purge"],
        "timerthread": ["fifo_ties", "purge", "fail_kills", "lazy_cancel"],
        "quadheap": ["lazy_cancel", "skip_missed"],
        "timerwheel": ["ticked"], "hierwheel": ["ticked"],
        "kernelwheel": ["ticked", "granular"], "hrtree": ["tree", "skip_missed"]}


def entry(name, rep, time_ns, **counters):
    e = {"name": name, "run_name": name, "run_type": "iteration",
         "repetition_index": rep, "threads": 1, "iterations": 1,
         "real_time": time_ns, "cpu_time": time_ns, "time_unit": "ns"}
    e.update(counters)
    return e


class Dir:
    """A synthetic results directory: add() instances of five repetitions
    (each float value scaled by 1 + j/1000, so the test over them has
    something to rank; ints are counts and stay), then analysis()."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="tb-claims-")
        self.files = {}
        self.counts = []

    def add(self, file, name, time_ns, reps=5, **counters):
        for j in range(reps):
            k = 1 + j / 1000.0
            # counts (ints) stay as they are; measured values spread
            self.files.setdefault(file, []).append(entry(
                name, j, time_ns * k, **{c: v if isinstance(v, int) else v * k
                                         for c, v in counters.items()}))

    def analysis(self):
        with open(os.path.join(self.path, "machine.json"), "w", encoding="utf-8") as f:
            json.dump({"format_version": 2, "build": {"backend_caps": CAPS},
                       "run": {"status": "complete", "profile": "standard"}}, f)
        for file, benches in self.files.items():
            with open(os.path.join(self.path, file), "w", encoding="utf-8") as f:
                json.dump({"context": {}, "benchmarks": benches}, f)
        if self.counts:
            with open(os.path.join(self.path, "counts.json"), "w", encoding="utf-8") as f:
                json.dump({"results": self.counts}, f)
        res = R.load(self.path)
        self.problems = res.problems
        return AN.Analysis(res)

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


def verdict(d, fn):
    c = fn(d.analysis())
    return c.kind, c.text, c


# ---- 1. growth: worst case and average ---------------------------------------

HEAPS = ("heapqueue", "timerthread")
WHEELS = ("timerwheel",)


def growth_dir(worst_heap_work, worst_heap_time, avg_heap_work, avg_heap_time,
               worst=True, average=True, counts=False):
    """Insert and cancel at N 10^2 and 10^6: the heaps' work and time at
    10^6 are the given functions of 10^2's (work 2, time 50 ns there),
    the wheel's flat; heapqueue's cancel with roc=on and roc=off."""
    d = Dir()
    for wl, on, hw, ht in (("worst", worst, worst_heap_work, worst_heap_time),
                           ("uniform", average, avg_heap_work, avg_heap_time)):
        if not on:
            continue
        for op in ("insert", "cancel"):
            for b in HEAPS + WHEELS:
                cfgs = ["series=h2h"]
                if op == "cancel" and b == "heapqueue":
                    cfgs = ["series=h2h,roc=off", "series=h2h,roc=on"]
                for cfg in cfgs:
                    for n in (100, 1000000):
                        heap = b in HEAPS
                        w = (hw(2.0) if n > 100 else 2.0) if heap else 1.0
                        t = (ht(50.0) if n > 100 else 50.0) if heap else 40.0
                        kw = {"sift_levels_per_op": w} if heap else {"transfers_per_op": w}
                        d.add("micro.json", "%s/%s/%s/%s/N:%d" % (op, b, wl, cfg, n), t, **kw)
    if counts:
        for op in ("insert", "cancel"):
            for b in ("heapqueue", "timerwheel"):
                for n in (1000, 100000):
                    heap = b == "heapqueue"
                    d.counts.append({
                        "name": "%s/%s/worst/series=h2h,roc=on/N:%d" % (op, b, n), "op": op,
                        "backend": b, "workload": "worst", "config": "series=h2h,roc=on",
                        "n": n, "ops": 100, "instructions_per_op": 100.0 * (n / 1000) ** 0.1,
                        "d1_misses_per_op": 1.0, "ll_misses_per_op": 0.0,
                        "work_per_op": {"sift_levels": math.log2(n) if heap else 0,
                                        "transfers": 0 if heap else 1}})
    return d


@NEED_SCIPY
class Growth(unittest.TestCase):
    """heap_vs_wheel_growth decided (its kind, the worst case's and the
    average's facts, the lines it judged) on growth_dir's results; one
    test reads the words claimtext says from such a verdict."""

    def judge(self, *a, **k):
        d = growth_dir(*a, **k)
        try:
            c = C.heap_vs_wheel_growth(d.analysis())
        finally:
            d.close()
        return c.kind, c.facts, c

    def labels(self, facts, workload, op, source="micro"):
        """The labels of the lines of one part of the claim's figures."""
        parts = [p for p in facts["parts"] if (p["workload"], p["op"], p["source"])
                 == (workload, op, source)]
        self.assertEqual(len(parts), 1, facts["parts"])
        return [line["label"] for line in parts[0]["lines"]]

    def test_worst_case_holds_on_work_average_does_not(self):
        # worst: work log-like (x3), time flat (in cache); average: flat
        kind, f, c = self.judge(lambda w: w * 3, lambda t: t * 1.1,
                                lambda w: w * 1.05, lambda t: t * 1.05)
        self.assertEqual(kind, C.HOLDS)
        self.assertEqual(f["worst"], {"basis": "work", "kind": C.HOLDS, "time_kind": C.FAILS,
                                      "time_too_few": False})
        self.assertEqual((f["average"]["kind"], f["average"]["time_kind"],
                          f["average"]["work_kind"]), (C.FAILS, C.FAILS, C.FAILS))
        # the figures: the worst case's parts first, then the average's
        self.assertEqual([(p["workload"], p["op"]) for p in f["parts"]],
                         [("worst", "insert"), ("worst", "cancel"),
                          ("uniform", "insert"), ("uniform", "cancel")])
        self.assertEqual((f["parts"][0]["n_lo"], f["parts"][0]["n_hi"]), (100, 1000000))
        # every line's case is the line's: its name ends with the label
        for p in f["parts"]:
            for line in p["lines"]:
                case = c.cases[line["case"]]
                self.assertEqual(case.name, "%s %s %s" % (p["workload"], p["op"], line["label"]))
                heap = line["label"].split(" ")[0] in HEAPS
                self.assertEqual(case.values["work_shape"],
                                 "grows" if heap and p["workload"] == "worst" else "flat", case)

    def test_the_words_said(self):
        kind, f, c = self.judge(lambda w: w * 3, lambda t: t * 1.1,
                                lambda w: w * 1.05, lambda t: t * 1.05)
        T.say(c)
        self.assertEqual(c.text, "holds on the worst case, on work (on time it does not "
                         "hold, shown, not judged: decreasing deadlines climb one path to the "
                         "root, whose slots stay in cache, so the time need not follow the "
                         "count); does not hold on average (uniform deadlines): on work and "
                         "on time")
        measured = V.plain(c.measured)
        self.assertTrue(measured.startswith("worst insert, N 10^2 to 10^6: heapqueue time "
                                            "1.10× ["), measured)
        self.assertIn(", work 2 → 6.01 per op, timerthread time 1.10× [", measured)
        self.assertIn("; uniform insert, N 10^2 to 10^6: ", measured)
        self.assertEqual([x for x in c.measured if isinstance(x, Code)][:3],
                         ["heapqueue", "timerthread", "timerwheel"])
        # without a worst case, the average says so
        _, _, c = self.judge(None, None, lambda w: w * 1.05, lambda t: t * 1.05, worst=False)
        self.assertEqual(T.say(c).text, "does not hold on average (uniform deadlines): on work "
                         "and on time; the worst case was not measured in this run")
        # and the run without the results is not tested
        d = Dir()
        try:
            c = C.heap_vs_wheel_growth(d.analysis())
        finally:
            d.close()
        self.assertEqual(c.facts, {"why": "no_results"})
        self.assertEqual((T.say(c).text, c.measured), (
            "not tested: no insert or cancel results for both a heap and a wheel", ("no data",)))

    def test_worst_case_time_said_beside_the_work(self):
        kind, f, _ = self.judge(lambda w: w * 3, lambda t: t * 3,
                                lambda w: w * 1.05, lambda t: t * 1.05)
        self.assertEqual(kind, C.HOLDS)
        self.assertEqual((f["worst"]["basis"], f["worst"]["time_kind"]), ("work", C.HOLDS))
        self.assertEqual(f["average"]["kind"], C.FAILS)

    def test_worst_case_refuted_on_work(self):
        kind, f, _ = self.judge(lambda w: w, lambda t: t * 3,
                                lambda w: w * 3, lambda t: t * 3)
        self.assertEqual(kind, C.FAILS)
        self.assertEqual((f["worst"]["basis"], f["worst"]["kind"]), ("work", C.FAILS))
        self.assertEqual((f["average"]["kind"], f["average"]["time_kind"],
                          f["average"]["work_kind"]), (C.HOLDS, C.HOLDS, C.HOLDS))

    def test_average_alone_says_the_worst_case_was_not_measured(self):
        kind, f, _ = self.judge(None, None, lambda w: w * 1.05, lambda t: t * 1.05,
                                worst=False)
        self.assertEqual(kind, C.FAILS)
        self.assertIsNone(f["worst"])
        self.assertEqual(f["average"], {"kind": C.FAILS, "time_kind": C.FAILS,
                                        "work_kind": C.FAILS, "time_too_few": False,
                                        "heaps_uncounted": []})

    def test_worst_case_from_valgrind_counts(self):
        kind, f, c = self.judge(None, None, lambda w: w * 1.05, lambda t: t * 1.05,
                                worst=False, counts=True)
        self.assertEqual(kind, C.HOLDS)
        self.assertEqual(f["worst"], {"basis": "valgrind_counts", "kind": C.HOLDS,
                                      "time_kind": None, "time_too_few": True})
        self.assertEqual(self.labels(f, "worst", "insert", "valgrind_counts"),
                         ["heapqueue roc=on", "timerwheel roc=on"])
        # every line the counts judged is a case: the heaps' work grows, the wheels' not
        counted = [x for x in c.cases if x.name.endswith(", Valgrind counts")]
        self.assertTrue(counted)
        for x in counted:
            heap = x.name.split(" ")[2].rstrip(",") in ("heapqueue", "timerthread")
            self.assertEqual(x.decision, "grows" if heap else "flat", x)
            self.assertEqual(x.effect, x.values["work_hi"] / x.values["work_lo"])
        lines = [line for p in f["parts"] if p["source"] == "valgrind_counts"
                 for line in p["lines"]]
        self.assertEqual(sorted(line["case"] for line in lines),
                         sorted(c.cases.index(x) for x in counted))
        self.assertEqual(lines[0]["instructions_per_op_lo"], 100.0)

    def test_lazy_cancels_are_no_removal(self):
        _, f, _ = self.judge(lambda w: w * 3, lambda t: t, lambda w: w, lambda t: t)
        labels = [line["label"] for p in f["parts"] for line in p["lines"]]
        self.assertIn("heapqueue roc=on", labels)
        self.assertNotIn("heapqueue roc=off", labels)
        self.assertNotIn("timerthread", self.labels(f, "worst", "cancel"))
        self.assertIn("timerthread", self.labels(f, "worst", "insert"))


def failure_dir(tt=(0, 0), hq=(7, 1)):
    """probe.json's failure probe: timerthread's and heapqueue's (ran_after,
    accepted_after) of the 7 tasks due after the failing one."""
    d = Dir()
    for b, (ran, acc) in (("timerthread", tt), ("heapqueue", hq)):
        d.add("probe.json", "failure/%s/ten/series=h2h/N:10" % b, 1e4, reps=1, after=7,
              ran_after=ran, ran_before=2, accepted_after=acc, failed=1)
    return d


class FailingTask(unittest.TestCase):
    """failing_task decided (kind, a case per backend, the reason code of
    an untested verdict) on the failure probe; one test reads the words."""

    def judge(self, **k):
        d = failure_dir(**k)
        try:
            return C.failing_task(d.analysis())
        finally:
            d.close()

    def test_decided_by_the_cases(self):
        c = self.judge()
        self.assertEqual(c.kind, C.HOLDS)
        self.assertEqual([(x.name, x.decision) for x in c.cases],
                         [("timerthread", "as claimed"), ("heapqueue", "as claimed")])
        self.assertEqual(c.facts, {})
        c = self.judge(tt=(7, 1))
        self.assertEqual(c.kind, C.FAILS)
        self.assertEqual(c.case("timerthread").decision, "not as claimed")
        self.assertEqual(c.case("timerthread").values,
                         {"ran_after": 7, "after": 7, "accepted_after": True})
        self.assertEqual(c.case("heapqueue").decision, "as claimed")
        c = self.judge(hq=(3, 1))
        self.assertEqual((c.kind, c.case("heapqueue").decision), (C.FAILS, "not as claimed"))

    def test_untested_by_reason(self):
        d = Dir()
        d.add("probe.json", "failure/timerthread/ten/series=h2h/N:10", 1e4, reps=1, after=7,
              ran_after=0, accepted_after=0)
        try:
            c = C.failing_task(d.analysis())
        finally:
            d.close()
        self.assertEqual((c.kind, c.facts), (C.UNTESTED, {"why": "no_results"}))
        d = Dir()
        for b in ("timerthread", "heapqueue"):
            d.add("probe.json", "failure/%s/ten/series=h2h/N:10" % b, 1e4, reps=1, after=7,
                  ran_after=0)
        try:
            c = C.failing_task(d.analysis())
        finally:
            d.close()
        self.assertEqual((c.kind, c.facts), (C.UNTESTED, {"why": "missing_counters"}))
        self.assertEqual(T.say(c).text, "not tested: the failure results lack ran_after / "
                         "after / accepted_after")

    def test_the_words_said(self):
        c = T.say(self.judge(hq=(3, 0)))
        self.assertEqual(c.text, "does not hold")
        self.assertEqual(V.plain(c.measured), (
            "timerthread: 0 of the 7 tasks due after the failing one ran, a new schedule was "
            "refused; heapqueue: 3 of the 7 tasks due after the failing one ran, a new schedule "
            "was refused"))
        self.assertEqual([x for x in c.measured if isinstance(x, Code)],
                         ["timerthread", "heapqueue"])


# ---- 2. Netty's faithful sleep -------------------------------------------------

def netty_dir(default_p50, exact_p50, label_default=True):
    """Lateness light of the floor (p50 100 us, p99 200 us) and timerwheel
    at a 1 ms tick, its default sleep (labelled sleep=ms or, as before D14,
    not labelled) and sleep=exact with the given p50s."""
    d = Dir()
    common = dict(count=2000, p99=900e3)
    d.add("runtime.json", "lateness/floor/light/slack=default/N:0", 1e6,
          count=2000, p50=100e3, p99=200e3)
    cfg = "series=h2h,tick=1ms,wheel=512,slack=default"
    d.add("runtime.json", "lateness/timerwheel/light/%s/N:0" % cfg, 1e6,
          p50=default_p50, **common)
    d.add("runtime.json", "lateness/timerwheel/light/%s,sleep=exact/N:0" % cfg, 1e6,
          p50=exact_p50, **common)
    return d


@NEED_SCIPY
class NettySleep(unittest.TestCase):

    def judge(self, *a):
        """The verdict netty_ticks decides (unsaid) on netty_dir(*a)."""
        d = netty_dir(*a)
        try:
            return C.netty_ticks(d.analysis())
        finally:
            d.close()

    def test_the_faithful_sleep_is_judged(self):
        c = self.judge(700e3, 150e3)
        self.assertEqual((c.kind, c.facts["part"]), (C.PARTLY, "lateness"))
        self.assertEqual(c.facts["idle_cases"], [])
        # the judged row is the default sleep's (p50 700 us, its first
        # repetition's 701 us the median); the exact one only beside it
        (row,) = c.facts["lateness"]
        self.assertTrue(row["tested"])
        self.assertAlmostEqual(row["p50_ns"], 701.4e3, delta=1e3)
        self.assertEqual([x.name for x in (c.cases[row["p99_case"]], c.cases[row["p50_case"]])],
                         ["timerwheel tick=1 ms against the floor, p99",
                          "timerwheel tick=1 ms against the floor, p50"])
        self.assertEqual(c.cases[row["p50_case"]].values["direction_greater"], "yes")
        (ex,) = c.facts["exact"]
        self.assertEqual(ex["tick_ns"], 1e6)
        self.assertLess(ex["p50_ns"], 160e3)
        self.assertEqual(ex["ms_sleep_p50_ns"], row["p50_ns"])

    def test_the_words_say_the_faithful_sleep(self):
        c = T.say(self.judge(700e3, 150e3))
        self.assertEqual(c.text, "holds only for the lateness (idle not measured)")
        measured = "".join(str(x) for x in c.measured)
        self.assertIn("the exact sleep (sleep=exact), tick 1 ms: p50 150", measured)
        self.assertIn("Netty's whole-millisecond sleep: p50 701 us", measured)

    def test_too_few_repetitions_leave_the_lateness_undecided(self):
        d = Dir()
        d.add("runtime.json", "lateness/floor/light/slack=default/N:0", 1e6, reps=3,
              count=2000, p50=100e3, p99=200e3)
        d.add("runtime.json", "lateness/timerwheel/light/series=h2h,tick=1ms,wheel=512,"
              "slack=default/N:0", 1e6, reps=3, count=2000, p50=700e3, p99=900e3)
        try:
            c = C.netty_ticks(d.analysis())
        finally:
            d.close()
        self.assertEqual((c.kind, c.facts["idle_part"]), (C.UNDECIDED, None))
        decisive = c.cases[c.facts["decisive"]]
        self.assertEqual((decisive.name, decisive.decision),
                         ("timerwheel tick=1 ms against the floor, p50", "too few"))
        self.assertEqual(T.say(c).text, "undecided for the lateness; the idle part was not "
                         "measured: too few repetitions to test (3 and 3)")

    def test_the_exact_sleep_is_not_judged(self):
        c = self.judge(150e3, 700e3)
        self.assertEqual(c.kind, C.FAILS)
        (row,) = c.facts["lateness"]
        self.assertEqual(c.cases[row["p50_case"]].values["direction_greater"], "no")


# ---- 2b. Kafka's idle wheel, hierarchy, leader-follower, crossover -----------

def said(v):
    """The verdict v in words (tbkit.claimtext): (text, measured as plain text)."""
    T.say(v)
    return v.text, V.plain(v.measured)


@NEED_SCIPY
class Decided(unittest.TestCase):
    """Claims decided into kind, cases and facts; one test each reads the
    words tbkit.claimtext says from them."""

    def decide(self, fn, build):
        d = Dir()
        build(d)
        try:
            return fn(d.analysis())
        finally:
            d.close()

    def kafka(self, orig_empty=None):
        def build(d):
            for series, tick, empty in (("h2h", "1ms", 0), ("orig", "100ms", orig_empty)):
                if empty is None:
                    continue
                d.add("runtime.json", "idle/hierwheel/far/series=%s,tick=%s,wheel=20/N:1"
                      % (series, tick), 1e9, empty_ticks_per_s=float(empty), ticks_per_s=0.0,
                      wakeups_per_s=5.0)
                d.add("runtime.json", "idle/timerwheel/far/series=%s,tick=%s,wheel=512/N:1"
                      % (series, tick), 1e9, empty_ticks_per_s=990.0, ticks_per_s=1000.0,
                      wakeups_per_s=1000.0)
        return self.decide(C.kafka_no_empty_advances, build)

    def test_kafka_no_empty_advances(self):
        v = self.kafka()
        self.assertEqual(v.kind, C.HOLDS)
        (row,) = v.facts["pairs"]
        self.assertEqual((row["series"], row["holds"]), ("h2h", True))
        self.assertEqual(v.cases[row["wakeups_case"]].decision, "greater")
        self.assertEqual(v.cases[row["empty_case"]].decision, "none")
        self.assertAlmostEqual(row["timerwheel_wakeups_per_s"], 1002.0)
        # empty ticks in one series: holds in the other only
        v = self.kafka(orig_empty=3)
        self.assertEqual(v.kind, C.PARTLY)
        self.assertEqual([(r["series"], r["holds"]) for r in v.facts["pairs"]],
                         [("h2h", True), ("orig", False)])

    def test_kafka_words(self):
        text, measured = said(self.kafka(orig_empty=3))
        self.assertEqual(text, "holds only in some series")
        self.assertEqual(measured.split("; ")[0:2],
                         ["series h2h: hierwheel 0 empty ticks/s, 5.01 wake-ups/s",
                          "timerwheel 1,002 wake-ups/s (p = 0.0079)"])
        self.assertIn("series orig: hierwheel 3.01 empty ticks/s", measured)

    def leader(self, off):
        def build(d):
            for leader, w in (("on", 1.0), ("off", off)):
                d.add("runtime.json", "workers/heapqueue/steady/series=h2h,threads=4,"
                      "leader=%s/N:4" % leader, 1e9, timed_waits_per_task=w)
        return self.decide(C.leader_follower, build)

    def test_leader_follower(self):
        from tbkit import numbers as A
        for off, kind in ((3.5, C.HOLDS), (1.5, C.PARTLY), (0.5, C.FAILS)):
            v = self.leader(off)
            self.assertEqual(v.kind, kind, off)
            (row,) = v.facts["rows"]
            self.assertEqual((row["backend"], row["verdict"]), ("heapqueue", kind))
            self.assertAlmostEqual(row["off_over_on"], off)
            self.assertEqual(v.cases[row["factor_case"]].thresholds["factor"], A.CLEAR_FACTOR)

    def test_leader_follower_words(self):
        text, measured = said(self.leader(1.5))
        self.assertEqual(text, "holds only in part: fewer timed waits, by less than 2.00×")
        self.assertEqual(measured, "heapqueue: 1 timed waits per task with the leader, 1.5 "
                         "without (1.50×; 2.00× against 1.00×: p = 0.0079)")

    def crossover(self, heap_lo):
        def build(d):
            for b, cfg, lo, hi in (("heapqueue", "series=h2h", heap_lo, 200.0),
                                   ("timerwheel", "series=h2h,tick=1ms,wheel=512", 50.0, 60.0)):
                for n, t in ((100, lo), (1000000, hi)):
                    d.add("micro.json", "timeouts/%s/uniform/%s/N:%d" % (b, cfg, n), t)
        return self.decide(C.crossover, build)

    def test_crossover(self):
        v = self.crossover(30.0)
        self.assertEqual(v.kind, C.HOLDS)
        self.assertEqual([(e["n"], e["heap"].split(" ")[0], e["wheel"].split(" ")[0])
                          for e in v.facts["ends"]],
                         [(100, "heapqueue", "timerwheel"), (1000000, "heapqueue", "timerwheel")])
        self.assertEqual([c.decision for c in v.cases], ["less", "less"])
        self.assertIsNotNone(v.facts["crossover_n"])
        self.assertTrue(100 < v.facts["crossover_n"] < 1000000)
        v = self.crossover(60.0)
        self.assertEqual((v.kind, v.facts["why"]), (C.FAILS, "wheel_faster_at_smallest"))

    def test_crossover_words(self):
        v = self.crossover(60.0)
        text, measured = said(v)
        self.assertEqual(text, "does not hold: a wheel is faster at the smallest N")
        self.assertTrue(measured.startswith("N = 10^2: heap heapqueue 60.1 ns, wheel "))
        self.assertTrue(measured.endswith("; tests: N = 10^2 p = 0.0079, N = 10^6 p = 0.0079"))

    def hierarchy(self, expire_wide):
        def build(d):
            for op, short, wide in (("insert", 20.0, 20.0), ("expire", 400.0, expire_wide)):
                for wl, t in (("short", short), ("wide", wide)):
                    d.add("micro.json", "%s/hierwheel/%s/series=h2h,tick=1ms,wheel=20/N:%d"
                          % (op, wl, 1000000), t)
        return self.decide(C.hierarchy, build)

    def test_hierarchy_words(self):
        v = self.hierarchy(400.0)
        self.assertEqual((v.kind, v.facts["part"]), (C.PARTLY, "range"))
        self.assertEqual(v.facts["timerwheel_expire_ns"], None)
        text, measured = said(v)
        self.assertEqual(text, "holds only for the range: no measurable cascade cost")
        self.assertEqual(measured, "hierwheel at N = 10^6: insert 20.0 ns (short) against 20.0 ns "
                         "(wide), 1.00× (p = 0.0079); expire per task 401 ns against 401 ns, "
                         "1.00× (p = 1)")


# ---- 3. single runners, an STPE of one thread, heap maintenance, signal() ------

SINGLE = (("heapqueue", "series=h2h"), ("timerthread", "series=h2h"),
          ("timerwheel", "series=h2h,tick=1ms,wheel=512"), ("quadheap", "series=h2h"),
          ("hrtree", "series=h2h"))


def runtime_dir(single_max=50e6, pool_max=2e6, quad_max=None, failing=True,
                hq_after=7, tt_after=0, hq_max=None):
    """interference with threads=1 on every backend (max single_max, or
    quad_max for quadheap, hq_max for heapqueue) and threads=4 (the pool:
    heapqueue's pool_max); failing on heapqueue and timerthread (ran_after
    of the 7 due after the failure)."""
    d = Dir()
    for b, cfg in SINGLE:
        mx = {"quadheap": quad_max, "heapqueue": hq_max}.get(b) or single_max
        d.add("runtime.json", "interference/%s/mixed/%s,threads=1/N:8" % (b, cfg), 350e6,
              max=mx, p99=100e3, count=2792)
        d.add("runtime.json", "interference/%s/mixed/%s,threads=4/N:8" % (b, cfg), 350e6,
              max=pool_max if b == "heapqueue" else mx, p99=100e3, count=2792)
    if failing:
        for b, ran, acc in (("heapqueue", hq_after, 1), ("timerthread", tt_after, 0)):
            d.add("runtime.json", "failing/%s/ten/series=h2h,threads=1/N:10" % b, 10e6,
                  runners=1, after=7, ran_after=ran, ran_before=2, accepted_after=acc, failed=1)
    return d


@NEED_SCIPY
class Runtime(unittest.TestCase):

    def judge(self, fn, **k):
        """fn's verdict (decided, not yet said) on runtime_dir(**k)."""
        d = runtime_dir(**k)
        try:
            return fn(d.analysis())
        finally:
            d.close()

    def test_single_runner_delay(self):
        v = self.judge(C.single_runner_delay)
        self.assertEqual(v.kind, C.HOLDS)
        labels = [r["label"] for r in v.facts["rows"]]
        self.assertEqual(len(labels), 5)
        self.assertEqual(v.facts["delayed"], labels)
        self.assertEqual(v.facts["not_delayed"], [])
        self.assertEqual(v.facts["pool"], {"backend": "heapqueue", "threads": "4",
                                           "max_ns": 2e6 * 1.002})
        self.assertEqual([c.decision for c in v.cases], ["greater"] * 5)
        self.assertEqual([c.name for c in v.cases], ["%s against the pool" % l for l in labels])
        quad = v.facts["rows"][labels.index("quadheap threads=1")]
        self.assertAlmostEqual(quad["max_ns"], 50e6 * 1.002)
        # the words, as tbkit.claimtext says them from the facts
        T.say(v)
        self.assertEqual(v.text, "holds (5 single-runner configurations)")
        measured = "".join(str(x) for x in v.measured)
        self.assertIn("heapqueue threads=4 (the pool): max lateness 2 ms", measured)
        self.assertIn("quadheap threads=1: max 50", measured)
        # quadheap skipping its missed periods still shows the stall in its
        # max; one whose max stays near the pool's is named
        v = self.judge(C.single_runner_delay, quad_max=2.1e6)
        self.assertEqual(v.kind, C.PARTLY)
        self.assertEqual(v.facts["not_delayed"], ["quadheap threads=1"])
        self.assertEqual(v.cases[labels.index("quadheap threads=1")].decision, "less")
        self.assertEqual(T.say(v).text, "holds only in part: not in quadheap threads=1")
        v = self.judge(C.single_runner_delay, single_max=2e6, quad_max=2e6, hq_max=2e6)
        self.assertEqual(v.kind, C.FAILS)
        self.assertEqual(v.facts["delayed"], [])
        self.assertEqual(len(v.facts["not_delayed"]), 5)

    def test_single_runner_delay_needs_the_pool(self):
        d = Dir()
        d.add("runtime.json", "interference/timerthread/mixed/series=h2h,threads=1/N:8", 1e6,
              max=50e6)
        try:
            v = C.single_runner_delay(d.analysis())
        finally:
            d.close()
        self.assertEqual((v.kind, v.facts, v.cases), (C.UNTESTED, {"why": "no_results"}, []))

    def test_stpe_one_thread_like_timer(self):
        v = self.judge(C.stpe_one_thread_like_timer)
        self.assertEqual(v.kind, C.HOLDS)
        self.assertEqual((v.facts["slow_task"], v.facts["failing_differs"]), ("same", True))
        self.assertEqual([c.name for c in v.cases],
                         ["slow task, heapqueue threads=1 against timerthread"])
        self.assertEqual(v.cases[0].values["direction_greater"], "no")
        self.assertEqual(v.cases[0].values["direction_less"], "no")
        tt = v.facts["failing"][1]
        self.assertEqual((tt["subject"], tt["ran_after"], tt["after"], tt["accepted_after"]),
                         ("timerthread", 0, 7, 0))
        # the words, as tbkit.claimtext says them from the facts
        T.say(v)
        self.assertEqual(v.text, C.HOLDS)
        measured = "".join(str(x) for x in v.measured)
        self.assertIn("timerthread ran 0 of the 7 tasks due after it, a new schedule refused",
                      measured)
        v = self.judge(C.stpe_one_thread_like_timer, hq_max=5e6)
        self.assertEqual(v.kind, C.PARTLY)
        self.assertEqual((v.facts["slow_task"], v.facts["failing_differs"]), ("differ", True))
        self.assertEqual(v.cases[0].decision, "less")
        self.assertEqual(T.say(v).text, "holds only for the failing task: on a slow task "
                         "their lateness differs")
        v = self.judge(C.stpe_one_thread_like_timer, tt_after=7)
        self.assertEqual(v.kind, C.PARTLY)
        self.assertEqual((v.facts["slow_task"], v.facts["failing_differs"]), ("same", False))
        self.assertEqual(T.say(v).text, "holds only for the slow task: on a failing task the "
                         "two behave alike")
        v = self.judge(C.stpe_one_thread_like_timer, failing=False)
        self.assertEqual(v.kind, C.UNTESTED)
        self.assertEqual(v.facts, {"why": "no_results", "missing": ["failing"]})

    def test_heap_maintenance_precision(self):
        def judge(light, loaded, floor_spread):
            d = Dir()
            d.add("runtime.json", "lateness/floor/light/slack=default/N:0", 1e6, p50=100e3,
                  p99=800e3, count=2000)
            # the floor's repetitions spread by floor_spread: the last one
            # carries it
            d.files["runtime.json"][-1]["p99"] += floor_spread
            d.add("runtime.json", "lateness/heapqueue/light/series=h2h,slack=default/N:0",
                  1e6, p50=100e3, p99=light, count=2000)
            d.add("runtime.json", "lateness/heapqueue/loaded/series=h2h,slack=default/N:100000",
                  1e6, p50=100e3, p99=loaded, count=2000)
            try:
                return C.heap_maintenance_precision(d.analysis())
            finally:
                d.close()
        v = judge(200e3, 900e3, 50e3)
        self.assertEqual(v.kind, C.HOLDS)
        self.assertEqual([c.decision for c in v.cases], ["greater", "greater"])
        self.assertEqual(v.cases[0].thresholds["shift"], v.facts["floor_spread_ns"])
        self.assertEqual((v.facts["pending"], v.facts["floor_reps"]), (100000, 5))
        v = judge(200e3, 201e3, 50e3)
        self.assertEqual(v.kind, C.FAILS)
        self.assertEqual(v.facts["why"], "not_above_light")
        self.assertEqual(v.cases[1].values["direction_greater"], "no")
        v = judge(200e3, 400e3, 1e6)
        self.assertEqual(v.kind, C.UNDECIDED)
        self.assertEqual(v.facts["why"], "within_floor_spread")
        self.assertAlmostEqual(v.facts["floor_spread_ns"], 1e6 + 800e3 * 0.004)
        self.assertEqual(v.cases[1].values["direction_greater"], "yes")
        # the words, as tbkit.claimtext says them from the facts
        self.assertEqual(T.say(v).text, "undecided at this noise: the p99 with 10^5 pending is "
                         "above the light load's by 200 us, within the floor's own spread of "
                         "1 ms")

    def test_leader_wakes_one(self):
        def judge(on, off):
            d = Dir()
            for leader, w in (("on", on), ("off", off)):
                d.add("runtime.json", "workers/heapqueue/steady/series=h2h,threads=4,leader=%s/N:4"
                      % leader, 1e9, wakeups_per_task=w, timed_waits_per_task=w - 0.9)
            try:
                return C.leader_wakes_one(d.analysis())
            finally:
                d.close()
        v = judge(1.7, 3.1)
        self.assertEqual(v.kind, C.HOLDS)
        row = v.facts["rows"][0]
        self.assertEqual((row["backend"], row["threads"], row["verdict"]),
                         ("heapqueue", "4", C.HOLDS))
        self.assertAlmostEqual(row["wakeups_per_task_leader"], 1.7 * 1.002)
        self.assertEqual(v.cases[0].values["direction_less"], "yes")
        # the words, as tbkit.claimtext says them from the facts
        T.say(v)
        self.assertEqual(v.text, C.HOLDS)
        self.assertIn("1.7 wake-ups per task with the leader, 3.1",
                      "".join(str(x) for x in v.measured))
        v = judge(3.0, 3.1)    # one per idle worker
        self.assertEqual((v.kind, v.facts["rows"][0]["verdict"]), (C.FAILS, C.FAILS))
        self.assertGreater(v.facts["rows"][0]["wakeups_per_task_leader"],
                           v.facts["wakeups_per_task_max"])
        v = judge(2.0, 2.05)   # no fewer than without
        self.assertEqual(v.kind, C.FAILS)
        self.assertEqual(v.cases[0].values["direction_less"], "no")


# ---- 3. Timer's deadlines on the wall clock (the wallstep probe) --------------

def wallstep_dir(timer_back=(50e6, 50e6, 50e6), pool_back=(0, 0, 0), failure=True,
                 backends=("timerthread", "heapqueue"), error=None):
    """probe.json as report/probe.c writes it: one repetition per step, the
    back step's delays per backend given (None: that task did not run), the
    forward step's as measured; with the failure probe's entries or not."""
    d = Dir()
    forward = {"timerthread": (0, -10e6, -15e6), "heapqueue": (0, 0, 0)}
    back = {"timerthread": timer_back, "heapqueue": pool_back}
    for b in backends:
        if failure:
            d.add("probe.json", "failure/%s/ten/series=h2h/N:10" % b, 1e4, reps=1, after=7,
                  ran_after=0 if b == "timerthread" else 7, ran_before=2,
                  accepted_after=0 if b == "timerthread" else 1, failed=1)
        for case, step, delays in (("back", -50e6, back[b]), ("forward", 15e6, forward[b])):
            name = "wallstep/%s/%s/series=h2h/N:3" % (b, case)
            if error and b == error:
                d.files.setdefault("probe.json", []).append(dict(
                    entry(name, 0, 0), error_occurred=True, error_message="out of memory"))
                continue
            kw = {"delay_ns_%d" % (k + 1): int(v) for k, v in enumerate(delays) if v is not None}
            d.add("probe.json", name, 1e4, reps=1, step_ns=int(step),
                  wall_clock=int(b == "timerthread"), resolution_ns=1000000, tasks=3,
                  ran=sum(v is not None for v in delays), **kw)
    return d


class WallClock(unittest.TestCase):

    def judge(self, **k):
        """The claim decided (not said) on wallstep_dir(**k)."""
        d = wallstep_dir(**k)
        try:
            c = C.timer_wall_clock(d.analysis())
        finally:
            d.close()
        return c.kind, c

    def test_holds_when_timer_waits_out_the_step_and_the_pool_does_not(self):
        kind, c = self.judge()
        self.assertEqual(kind, C.HOLDS)
        self.assertEqual(c.facts["step_back_ns"], 50e6)
        self.assertEqual(c.facts["missed"], [])
        self.assertEqual({n: c.case(n).decision for n in (
            "timerthread back", "heapqueue back", "timerthread forward", "heapqueue forward")},
            {"timerthread back": "as claimed", "heapqueue back": "as claimed",
             # the step forward is listed, not judged
             "timerthread forward": "shown", "heapqueue forward": "shown"})
        rows = {(r["backend"], r["case"]): r for r in c.facts["rows"]}
        self.assertEqual(rows[("timerthread", "back")]["delays_ns"], [50e6] * 3)
        self.assertEqual(rows[("timerthread", "back")]["step_ns"], -50e6)
        self.assertEqual(rows[("timerthread", "back")]["wall_clock"], 1)
        self.assertEqual(rows[("heapqueue", "back")]["wall_clock"], 0)
        self.assertEqual(rows[("timerthread", "forward")]["delays_ns"], [0, -10e6, -15e6])

    def test_says_the_verdicts_in_words(self):
        # tbkit.claimtext renders the decided verdict: text and measured
        _, c = self.judge()
        T.say(c)
        self.assertEqual(c.text, "holds: a step back by 50 ms delayed every pending "
                         "timerthread task by 50 ms and no heapqueue task")
        measured = V.plain(c.measured)
        self.assertIn("timerthread back: step -50 ms, deadlines on the wall clock, delays "
                      "50 ms, 50 ms, 50 ms; ", measured)
        self.assertIn("heapqueue back: step -50 ms, deadlines on the monotonic clock, "
                      "delays 0, 0, 0", measured)
        self.assertIn("timerthread forward: step 15 ms, deadlines on the wall clock, delays "
                      "0, -10 ms, -15 ms", measured)
        _, c = self.judge(timer_back=(0, 0, 0), pool_back=(50e6, 50e6, None))
        T.say(c)
        self.assertEqual(c.text, "does not hold: timerthread's tasks did not all run 50 ms "
                         "late; heapqueue's tasks did not all run on time")
        self.assertIn("delays 50 ms, 50 ms, did not run", V.plain(c.measured))
        _, c = self.judge(error="heapqueue")
        T.say(c)
        self.assertEqual(c.text, "not tested: the probe failed on heapqueue: out of memory")
        self.assertEqual(c.measured, ("no data",))

    def test_a_run_seen_within_the_clock_step_still_counts(self):
        self.assertEqual(self.judge(timer_back=(50e6, 50.5e6, 50e6))[0], C.HOLDS)
        # a whole clock step off is not the step's delay
        self.assertEqual(self.judge(timer_back=(50e6, 51e6, 50e6))[0], C.FAILS)

    def test_fails_when_timer_runs_on_time(self):
        # deadlines on the monotonic clock (TB_F_MONOTONIC_DEADLINES' behaviour)
        kind, c = self.judge(timer_back=(0, 0, 0))
        self.assertEqual(kind, C.FAILS)
        # the cases say which side broke the claim, with the delays read
        t = c.case("timerthread back")
        self.assertEqual(t.decision, "not as claimed")
        self.assertEqual(t.thresholds["expected_delay_ns"], 50e6)
        self.assertEqual(t.values["delays_ns"], [0, 0, 0])
        self.assertEqual(c.case("heapqueue back").decision, "as claimed")
        self.assertEqual(c.case("timerthread forward").decision, "shown")
        self.assertEqual(c.facts["missed"], ["timerthread_delayed"])
        self.assertEqual(c.facts["step_back_ns"], 50e6)

    def test_fails_when_only_the_head_waits(self):
        kind, c = self.judge(timer_back=(50e6, 0, 0))
        self.assertEqual(kind, C.FAILS)
        self.assertEqual(c.facts["missed"], ["timerthread_delayed"])

    def test_fails_when_the_pool_moves_too(self):
        kind, c = self.judge(pool_back=(50e6, 50e6, 50e6))
        self.assertEqual(kind, C.FAILS)
        self.assertEqual(c.case("timerthread back").decision, "as claimed")
        self.assertEqual(c.case("heapqueue back").decision, "not as claimed")
        self.assertEqual(c.facts["missed"], ["heapqueue_on_time"])

    def test_a_task_that_never_ran_refutes_it(self):
        kind, c = self.judge(timer_back=(50e6, 50e6, None))
        self.assertEqual(kind, C.FAILS)
        self.assertEqual(c.case("timerthread back").values["delays_ns"], [50e6, 50e6, None])
        self.assertEqual(c.facts["missed"], ["timerthread_delayed"])

    def test_older_results_without_the_probe_are_not_tested(self):
        # the failure probe ran, the wall-clock step did not yet exist
        d = Dir()
        d.add("probe.json", "failure/timerthread/ten/series=h2h/N:10", 1e4, reps=1, after=7,
              ran_after=0, ran_before=2, accepted_after=0, failed=1)
        try:
            c = C.timer_wall_clock(d.analysis())
        finally:
            d.close()
        self.assertEqual(c.kind, C.UNTESTED)
        self.assertEqual(c.facts, {"why": "no_results", "predates_probe": True})
        self.assertEqual(c.cases, [])
        self.assertEqual(T.say(c).text, "not tested: no wallstep results for both timerthread "
                         "and heapqueue (these results predate the probe's wall-clock step)")
        self.assertEqual(c.measured, ("no data",))

    def test_one_backend_alone_is_not_tested(self):
        kind, c = self.judge(backends=("timerthread",), failure=False)
        self.assertEqual(kind, C.UNTESTED)
        self.assertEqual(c.facts, {"why": "no_results", "predates_probe": False})

    def test_a_failed_probe_says_so(self):
        kind, c = self.judge(error="heapqueue")
        self.assertEqual(kind, C.UNTESTED)
        self.assertEqual(c.facts["why"], "probe_failed")
        self.assertEqual(c.facts["backend"], "heapqueue")

    def test_back_steps_that_differ_are_not_tested(self):
        d = wallstep_dir()
        for e in d.files["probe.json"]:
            if e["name"].startswith("wallstep/heapqueue/back/"):
                e["step_ns"] = -40000000
        try:
            c = C.timer_wall_clock(d.analysis())
        finally:
            d.close()
        self.assertEqual(c.kind, C.UNTESTED)
        self.assertEqual(c.facts["why"], "steps_differ")
        self.assertEqual(c.cases, [])
        # the entries read are still shown
        self.assertEqual(len(c.facts["rows"]), 4)
        T.say(c)
        self.assertEqual(c.text, "not tested: the wallstep back results do not step both "
                         "backends back by one \u0394")
        self.assertIn("heapqueue back: step -40 ms", V.plain(c.measured))


# ---- 3a. Timer's single thread: a slow task delays the others -----------------

@NEED_SCIPY
class SlowTask(unittest.TestCase):
    """slow_task on runtime_dir's interference entries: the single thread
    (timerthread) against the pool (heapqueue), each at threads=4."""

    def judge(self, **k):
        """The claim decided (not said) on runtime_dir(**k)."""
        d = runtime_dir(**k)
        try:
            return C.slow_task(d.analysis())
        finally:
            d.close()

    def test_holds_when_the_single_thread_is_far_later(self):
        c = self.judge(single_max=50e6, pool_max=2e6)
        self.assertEqual(c.kind, C.HOLDS)
        self.assertEqual(c.facts["rows"], [
            {"backend": "timerthread", "threads": "4", "max_ns": c.facts["rows"][0]["max_ns"]},
            {"backend": "heapqueue", "threads": "4", "max_ns": c.facts["rows"][1]["max_ns"]}])
        self.assertAlmostEqual(c.facts["rows"][0]["max_ns"], 50e6, delta=50e6 * 0.01)
        self.assertAlmostEqual(c.facts["rows"][1]["max_ns"], 2e6, delta=2e6 * 0.01)
        case = c.case("timerthread against heapqueue")
        self.assertEqual(case.decision, "greater")
        self.assertEqual(case.n, (5, 5))
        self.assertEqual(case.thresholds["factor"], C.A.CLEAR_FACTOR)

    def test_fails_when_the_pool_is_later(self):
        c = self.judge(single_max=2e6, pool_max=50e6)
        self.assertEqual(c.kind, C.FAILS)
        self.assertEqual(c.case("timerthread against heapqueue").decision, "less")

    def test_undecided_within_the_factor(self):
        c = self.judge(single_max=2e6 * C.A.CLEAR_FACTOR, pool_max=2e6)
        self.assertEqual(c.kind, C.UNDECIDED)
        self.assertEqual(c.facts["decisive"], 0)
        self.assertEqual(c.cases[0].decision, "undecided")

    def test_a_pool_never_late_needs_no_test(self):
        c = self.judge(single_max=50e6, pool_max=0)
        self.assertEqual(c.kind, C.HOLDS)
        self.assertEqual(c.cases, [])
        self.assertEqual(c.facts["rows"][1]["max_ns"], 0)

    def test_no_pool_is_not_tested(self):
        d = Dir()
        d.add("runtime.json", "interference/timerthread/mixed/series=h2h,threads=4/N:8", 1e6,
              max=50e6)
        try:
            c = C.slow_task(d.analysis())
        finally:
            d.close()
        self.assertEqual((c.kind, c.facts, c.cases), (C.UNTESTED, {"why": "no_results"}, []))

    def test_says_the_verdicts_in_words(self):
        c = T.say(self.judge(single_max=50e6, pool_max=2e6))
        self.assertEqual(c.text, "holds")
        # the medians of runtime_dir's five repetitions (spread by 1 + j/1000)
        self.assertEqual(V.plain(c.measured), "timerthread threads=4: max lateness 50.1 ms; "
                         "heapqueue threads=4: 2 ms (25×); p = 0.0079")
        c = T.say(self.judge(single_max=2e6 * C.A.CLEAR_FACTOR, pool_max=2e6))
        self.assertTrue(c.text.startswith("undecided at this noise (not significant, p = "),
                        c.text)
        c = T.say(self.judge(single_max=50e6, pool_max=0))
        self.assertEqual((c.text, V.plain(c.measured)),
                         ("holds", "timerthread threads=4: max lateness 50.1 ms; "
                          "heapqueue threads=4: 0.0 ns (n/a)"))


class WallStepSection(unittest.TestCase):
    """The runtime section's wallstep table, from the same probe.json."""

    def render(self, d):
        from tbkit import doc as D
        from tbkit import page as PG
        from tbkit import sec_runtime
        try:
            ctx = PG.Page(d.analysis(), None)
            doc = D.Doc("t")
            sec_runtime.wallstep_section(ctx, doc)
            with tempfile.TemporaryDirectory() as tmp:
                return D.to_markdown(doc, tmp), ctx
        finally:
            d.close()

    def test_the_shifts_per_backend_and_who_moved(self):
        d = wallstep_dir()
        # a wheel late by its tick in both runs: shifted by nothing
        for case, step in (("back", -50e6), ("forward", 15e6)):
            d.add("probe.json", "wallstep/timerwheel/%s/series=h2h/N:3" % case, 1e4, reps=1,
                  step_ns=int(step), wall_clock=0, resolution_ns=1000000, tasks=3, ran=3,
                  delay_ns_1=90000000, delay_ns_2=80000000, delay_ns_3=70000000,
                  shift_ns_1=0, shift_ns_2=0, shift_ns_3=0)
        for b, back, fwd in (("timerthread", (50e6,) * 3, (0, -10e6, -15e6)),
                             ("heapqueue", (0,) * 3, (0,) * 3)):
            for e in d.files["probe.json"]:
                if e["name"].startswith("wallstep/%s/" % b):
                    vals = back if "/back/" in e["name"] else fwd
                    e.update({"shift_ns_%d" % (k + 1): int(v) for k, v in enumerate(vals)})
        md, _ = self.render(d)
        self.assertIn("| `timerthread` | wall | 50 ms, 50 ms, 50 ms | 0, -10 ms, -15 ms |", md)
        self.assertIn("| `heapqueue` | monotonic | 0, 0, 0 | 0, 0, 0 |", md)
        self.assertIn("| `timerwheel` | monotonic | 0, 0, 0 | 0, 0, 0 |", md)
        self.assertIn("A wall-clock step moved the pending tasks of `timerthread`.", md)
        self.assertIn("It moved none in `heapqueue`, `timerwheel`.", md)

    def test_older_results_say_there_is_no_data(self):
        d = Dir()
        d.add("probe.json", "failure/timerthread/ten/series=h2h/N:10", 1e4, reps=1, after=7,
              ran_after=0, ran_before=2, accepted_after=0, failed=1)
        md, an = self.render(d)
        self.assertIn("No `wallstep` results in this results directory", md)
        self.assertIn(("Runtime: wallstep", "no results"), an.missing)


# ---- 4. the section "What the source articles say" ----------------------------

class ArticlesSection(unittest.TestCase):

    def render(self, claims):
        from tbkit import articles as ART
        from tbkit import doc as D
        from tbkit import sec_articles
        d = D.Doc("t")
        sec_articles.articles_section(None, d, claims)
        with tempfile.TemporaryDirectory() as tmp:
            return D.to_markdown(d, tmp), ART

    def test_one_row_per_statement_with_the_count_on_top(self):
        claims = [V.Verdict(cid, "", "", "", "", kind=C.HOLDS, text="holds (%s)" % cid)
                  for cid in C.ids()]
        md, ART = self.render(claims)
        self.assertIn("\n## What the source articles say\n", md)
        body = md.split("## What the source articles say", 1)[1]
        counts = ART.count_by_status()
        first = body.strip().splitlines()[0]
        self.assertTrue(first.startswith("**%d statements: %d answered by a claim of this "
                                         "report, %d by a named test, %d deliberate differences"
                                         % (len(ART.STATEMENTS), counts["claim"], counts["test"],
                                            counts["difference"])), first)
        rows = [l for l in body.splitlines() if l.startswith("| `0")]
        self.assertEqual(len(rows), len(ART.STATEMENTS))
        # a claim's row carries this run's verdict of that claim
        row = [r for r in rows if "leader_wakes_one" in r][0]
        self.assertIn("holds (leader\\_wakes\\_one)", row)
        self.assertIn("%d holds" % counts["claim"], body)
        # every claim answer names a registered claim
        for s in ART.STATEMENTS:
            if ART.status(s.answer) == "claim":
                self.assertIn(s.answer.split(":", 1)[1], C.ids())

    def test_an_untested_claim_says_why(self):
        claims = [V.Verdict(cid, "", "", "", "", kind=C.UNTESTED,
                            text="not tested: no data for %s" % cid) for cid in C.ids()]
        md, ART = self.render(claims)
        self.assertIn("not tested: no data for single\\_runner\\_delay", md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
