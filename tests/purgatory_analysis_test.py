#!/usr/bin/env python3
"""purgatory_analysis_test — the report side of the purgatory experiment
(issue 41) on fixtures written to the players' schema: tbkit/purgatory.py
(a file of another format refused, rows outside the schema skipped, the
saturation rule and its re-check of every row's flag, saturation
intervals with repetitions and the floor's limit), the claim
purgatory_saturation decided as data (holds, does not hold, undecided on
overlapping intervals and at the player's limit, not tested), and the
section (tbkit/sec_purgatory.py) with both files, without the JVM's, and
when the experiment did not run, with its figures drawn when gnuplot is
installed.  Needs scipy (Debian's python3-scipy) for the report; exits 77
(skip) without it.  Besides the made fixtures, the players' own output of a
smoke run (tests/fixtures/purgatory-smoke) is held to the schema."""

import json
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tbkit import claims as C  # noqa: E402
from tbkit import claimtext as T  # noqa: E402
from tbkit import doc as D  # noqa: E402
from tbkit import figures as F  # noqa: E402
from tbkit import purgatory as PG  # noqa: E402
from tbkit import report as RP  # noqa: E402
from tbkit import results as R  # noqa: E402
from tbkit import stats as S  # noqa: E402
from tbkit import verdict as V  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "report-quick")
# what the players themselves wrote (its README says how)
PLAYERS = os.path.join(HERE, "fixtures", "purgatory-smoke")
PLOTS = os.path.join(os.path.dirname(HERE), "plots")
# the standard profile's grid: 10k x 2^k up to 2.56M
RATES = [10000.0 * 2 ** k for k in range(9)]


def row(subject, side, shape, rate, rep=0, sat=False, cpu=2000.0, structure="a heap",
        lag_growth=0.0, flag=None, **over):
    """One row of the schema: a play at `rate` that kept up (achieved =
    offered) or, sat=True, fell 40 % short."""
    achieved = rate * (0.6 if sat else 0.999)
    r = {"subject": subject, "side": side, "structure": structure, "shape": shape,
         "repetition": rep, "target_rate": rate, "offered_rate": rate * 1.001,
         "achieved_rate": achieved, "requests": int(rate * 0.4), "seconds": 0.4,
         "lag_p50_ns": 2000.0, "lag_p99_ns": 9000.0, "lag_max_ns": 50000.0,
         "lag_growth_ns": lag_growth, "saturated": sat if flag is None else flag,
         "why": "achieved 40.0% below offered" if sat else "",
         "cpu_ns_per_request": cpu * 2, "player_cpu_ns_per_request": cpu,
         "subject_cpu_ns_per_request": cpu,
         "fired": int(rate * 0.04), "fired_share": 0.1 if shape == "few" else 0.5,
         "timeouts_due": int(rate * 0.04), "lateness_growth_ns": 1e6,
         "lateness_p50_ns": 60000.0, "lateness_p99_ns": 900000.0,
         "peak_pending": int(rate * 0.2), "peak_zombies": None}
    r.update(over)
    return r


def sweep(subject, side, shape, sat_at, rep=0, cpu=2000.0, rates=RATES, **kw):
    """A subject's sweep, stopped at its first saturated rate (sat_at;
    None: never saturated within the grid)."""
    out = []
    for rate in rates:
        s = sat_at is not None and rate >= sat_at
        out.append(row(subject, side, shape, rate, rep, s, cpu, **kw))
        if s:
            break
    return out


def doc(rows, profile="standard", skipped=(), reps=1, note="player CPU 0, subject CPU 1"):
    return {"format": 1, "profile": profile,
            "pinning": {"player_cpu": 0, "subject_cpu": 1, "note": note},
            "grid": {"rates": RATES, "seconds": 0.4, "repetitions": reps},
            "rows": rows, "skipped": [{"subject": s, "why": w} for s, w in skipped]}


def c_rows(dq=(80000, 40000), wheel=(None, None), floor=(None, None)):
    """The C file's rows: heapqueue, hierwheel and the floor saturating at
    the given (few, many) rates."""
    out = []
    for subject, side, sat in (("heapqueue", "backend", dq), ("hierwheel", "backend", wheel),
                               ("floor", "floor", floor)):
        for shape, at in zip(PG.SHAPES, sat):
            out += sweep(subject, side, shape, at)
    return out


def jvm_rows(dq=(40000, 20000), wheel=(640000, 640000)):
    out = []
    for subject, sat in (("DelayQueue", dq), ("Netty", wheel)):
        for shape, at in zip(PG.SHAPES, sat):
            out += sweep(subject, "jvm", shape, at)
    return out


class Dir:
    """A results directory: the fixture's machine.json (and, full=True,
    its whole run) with purgatory files written beside it."""

    def __init__(self, tmp, full=False, run_notes=None):
        # a fresh directory each time: a test may make several
        self.root = os.path.join(tempfile.mkdtemp(dir=tmp), "run")
        if full:
            shutil.copytree(FIXTURE, self.root, ignore=shutil.ignore_patterns("README.md"))
        else:
            os.makedirs(self.root)
            shutil.copy(os.path.join(FIXTURE, "machine.json"), self.root)
        if run_notes:
            path = os.path.join(self.root, "machine.json")
            with open(path, encoding="utf-8") as f:
                m = json.load(f)
            m["run"].update(run_notes)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(m, f)

    def write(self, name, document):
        with open(os.path.join(self.root, name), "w", encoding="utf-8") as f:
            json.dump(document, f) if not isinstance(document, str) else f.write(document)
        return self

    def load(self):
        return R.load(self.root)


def verdict(res):
    """The claim decided on `res` alone (it reads only the purgatory files)."""
    return C.purgatory_saturation(types.SimpleNamespace(res=res))


class Temp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-purg-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class Schema(Temp):
    def test_another_format_is_refused_with_the_reason(self):
        d = doc(c_rows())
        d["format"] = 2
        with self.assertRaises(PG.FormatError) as e:
            PG.parse(d, "purgatory.json")
        self.assertIn("purgatory.json is format 2", str(e.exception))
        res = Dir(self.tmp).write("purgatory.json", d).load()
        play = PG.load(res)
        self.assertFalse(play.ran())
        self.assertIn("refused: purgatory.json is format 2", play.absent["purgatory.json"])
        v = verdict(res)
        self.assertEqual(v.kind, V.UNTESTED)
        self.assertEqual(v.cases, [])

    def test_a_frame_without_its_grid_is_refused(self):
        d = doc(c_rows())
        del d["grid"]["repetitions"]
        with self.assertRaisesRegex(PG.FormatError, "has no grid"):
            PG.parse(d, "purgatory.json")
        for bad in ([], {"format": 1}, "text"):
            with self.assertRaises(PG.FormatError):
                PG.parse(bad, "purgatory.json")

    def test_rows_outside_the_schema_are_skipped_and_counted(self):
        rows = c_rows()
        bad = dict(rows[0])
        del bad["lag_growth_ns"]
        rows.append(bad)
        rows.append(dict(rows[1], side="kernel"))
        rows.append(dict(rows[2]))                       # a repeated play
        rows[3] = dict(rows[3], extra_field=1)
        f = PG.parse(doc(rows), "purgatory.json")
        self.assertEqual(len(f["rows"]), len(rows) - 3)
        self.assertEqual([w for _, w in f["bad_rows"]][:1], ["has no lag_growth_ns"])
        self.assertIn("side is 'kernel'", f["bad_rows"][1][1])
        self.assertIn("repeats", f["bad_rows"][2][1])
        self.assertEqual(f["extra_keys"], ["extra_field"])
        play = PG.load(Dir(self.tmp).write("purgatory.json", doc(rows)).load())
        self.assertTrue(any("3 of %d rows are not in the schema" % len(rows) in p
                            for p in play.problems), play.problems)

    def test_an_unreadable_file_is_absent_with_the_reason(self):
        res = Dir(self.tmp).write("purgatory.json", '{"format": 1, "rows": [').load()
        play = PG.load(res)
        self.assertIn("cannot be read", play.absent["purgatory.json"])
        self.assertTrue(any(p.path.endswith("purgatory.json") for p in res.problems))


class PlayersOutput(Temp):
    """The players' own files (tests/fixtures/purgatory-smoke) read as the
    schema says: every row in it, no key beside it, every flag the rule's."""

    def test_the_players_files_are_in_the_schema(self):
        d = Dir(self.tmp)
        for name in (PG.FILE_C, PG.FILE_JVM):
            with open(os.path.join(PLAYERS, name), encoding="utf-8") as f:
                raw = json.load(f)
            parsed = PG.parse(raw, name)
            self.assertEqual(parsed["bad_rows"], [], name)
            self.assertEqual(parsed["extra_keys"], [], name)
            self.assertEqual(len(parsed["rows"]), len(raw["rows"]), name)
            d.write(name, raw)
        play = PG.load(d.load())
        self.assertEqual((play.absent, play.problems, play.mismatches), ({}, [], []))
        self.assertEqual(play.floor_of(PG.FILE_C), "floor")
        for _, name, dq, wheel in PG.PAIRS:
            subjects = [s for s, _, _ in play.subjects(name)]
            self.assertIn(dq, subjects, name)
            self.assertIn(wheel, subjects, name)
        v = verdict(d.load())
        self.assertEqual(len(v.cases), 6)
        self.assertNotIn(PG.NOT_TESTED, [c.decision for c in v.cases])


class Rule(Temp):
    def test_the_rule_and_its_thresholds(self):
        self.assertEqual(PG.saturation(94.0, 100.0, 0), (True, "achieved 6.0% below offered"))
        self.assertEqual(PG.saturation(95.5, 100.0, 0), (False, ""))
        self.assertEqual(PG.saturation(100.0, 100.0, PG.SAT_LAG_GROWTH_NS), (False, ""))
        self.assertEqual(PG.saturation(100.0, 100.0, 2.5e6), (True, "lag grew 2.5 ms"))
        # the expiry side: due timeouts unfired at the drain's end, lateness grown
        self.assertEqual(PG.saturation(100.0, 100.0, 0, 94, 100), (True, "6.0% of the due timeouts unfired"))
        self.assertEqual(PG.saturation(100.0, 100.0, 0, 96, 100), (False, ""))
        self.assertEqual(PG.saturation(100.0, 100.0, 0, 100, 100, PG.SAT_LATENESS_GROWTH_NS), (False, ""))
        self.assertEqual(PG.saturation(100.0, 100.0, 0, 100, 100, 81e6), (True, "lateness grew 81.0 ms"))
        self.assertEqual(PG.saturation(100.0, 100.0, 0, 100, 100, None), (False, ""))
        sat, why = PG.saturation(50.0, 100.0, 41.2e6)
        self.assertTrue(sat)
        self.assertEqual(why, "achieved 50.0% below offered; lag grew 41.2 ms")

    def test_a_flag_the_rule_contradicts_is_caught_and_not_trusted(self):
        rows = c_rows()
        # heapqueue few at 20k: kept up but its lag grew 5 ms, flagged unsaturated
        i = next(k for k, r in enumerate(rows) if r["subject"] == "heapqueue"
                 and r["shape"] == "few" and r["target_rate"] == 20000)
        rows[i] = dict(rows[i], lag_growth_ns=5e6, saturated=False)
        play = PG.load(Dir(self.tmp).write("purgatory.json", doc(rows)).load())
        self.assertEqual(len(play.mismatches), 1)
        name, r, sat, why = play.mismatches[0]
        self.assertEqual((name, r["target_rate"], sat, why),
                         ("purgatory.json", 20000, True, "lag grew 5.0 ms"))
        self.assertTrue(any("flag is not what the rule gives" in p for p in play.problems))
        # the interval goes by the rule: saturated at 20k, not 80k
        iv = play.interval("purgatory.json", "heapqueue", "few")
        self.assertEqual((iv.lo, iv.hi), (10000, 20000))


class Intervals(Temp):
    def play(self, rows, name="purgatory.json"):
        return PG.load(Dir(self.tmp).write(name, doc(rows)).load())

    def test_intervals_from_a_sweep(self):
        play = self.play(c_rows(dq=(80000, 10000), wheel=(None, 640000)))
        iv = play.interval("purgatory.json", "heapqueue", "few")
        self.assertEqual((iv.lo, iv.hi, iv.top, iv.limited), (40000, 80000, 80000, False))
        # saturated at the lowest rate run: no lower end
        iv = play.interval("purgatory.json", "heapqueue", "many")
        self.assertEqual((iv.lo, iv.hi), (None, 10000))
        iv = play.interval("purgatory.json", "hierwheel", "few")
        self.assertEqual((iv.lo, iv.hi, iv.top), (RATES[-1], None, RATES[-1]))
        self.assertFalse(iv.reached)
        self.assertIsNone(play.interval("purgatory.json", "quadheap", "few"))
        self.assertEqual(T.interval_text(play.interval("purgatory.json", "heapqueue", "few")),
                         "40k/s-80k/s")
        self.assertEqual(T.interval_text(play.interval("purgatory.json", "hierwheel", "few")),
                         "not reached up to 2,560k/s")

    def test_repetitions_widen_the_lower_end(self):
        # three repetitions, each sweep stopped at its own first saturation
        rows = sweep("heapqueue", "backend", "few", 80000, rep=0) + \
            sweep("heapqueue", "backend", "few", 160000, rep=1) + \
            sweep("heapqueue", "backend", "few", 160000, rep=2)
        play = self.play(rows)
        iv = play.interval("purgatory.json", "heapqueue", "few")
        # 80k: 1 of 3 saturated, not the majority; 160k: both plays
        self.assertEqual((iv.lo, iv.hi, iv.lo_wide), (80000, 160000, 40000))
        self.assertEqual(iv.mixed, [(80000, 1, 3)])
        self.assertEqual(T.interval_text(iv), "80k/s-160k/s (80k/s: 1 of 3 plays saturated)")
        at80 = [p for p in play.points("purgatory.json", "heapqueue", "few")
                if p["rate"] == 80000][0]
        self.assertEqual((at80["reps"], at80["saturated"]), (3, 1))

    def test_a_confirming_play_is_one_more_play_of_the_rate(self):
        # the quick and standard sweeps play a saturated rate once more as
        # repetition 1 (tbkit/purgrun.py `confirm`): both saturated
        rows = sweep("heapqueue", "backend", "few", 80000) + \
            [row("heapqueue", "backend", "few", 80000, rep=1, sat=True)]
        iv = self.play(rows).interval("purgatory.json", "heapqueue", "few")
        self.assertEqual((iv.lo, iv.hi, iv.lo_wide, iv.mixed), (40000, 80000, 40000, []))
        # the confirming play kept up: 80k is not saturated, 160k (both) is
        rows = sweep("heapqueue", "backend", "few", 80000) + [
            row("heapqueue", "backend", "few", 80000, rep=1, sat=False),
            row("heapqueue", "backend", "few", 160000, rep=0, sat=True),
            row("heapqueue", "backend", "few", 160000, rep=1, sat=True)]
        iv = self.play(rows).interval("purgatory.json", "heapqueue", "few")
        self.assertEqual((iv.lo, iv.hi, iv.lo_wide), (80000, 160000, 40000))

    def test_saturating_where_the_floor_does_is_the_players_limit(self):
        play = self.play(c_rows(dq=(160000, 160000), wheel=(None, 320000),
                                floor=(160000, 160000)))
        self.assertTrue(play.interval("purgatory.json", "heapqueue", "few").limited)
        # never saturated while the floor did: at the player's limit too
        self.assertTrue(play.interval("purgatory.json", "hierwheel", "few").limited)
        self.assertTrue(play.interval("purgatory.json", "hierwheel", "many").limited)
        self.assertFalse(play.interval("purgatory.json", "floor", "few").limited)
        self.assertIn("the player's limit",
                      T.interval_text(play.interval("purgatory.json", "heapqueue", "few")))


class Claim(Temp):
    def res(self, c=None, jvm=None, **notes):
        d = Dir(self.tmp, run_notes=notes or None)
        if c is not None:
            d.write("purgatory.json", doc(c))
        if jvm is not None:
            d.write("purgatory-jvm.json", doc(jvm, note="JVM player thread on CPU 0"))
        return d.load()

    def decisions(self, v):
        return {c.name: c.decision for c in v.cases}

    def test_holds(self):
        v = verdict(self.res(c_rows(), jvm_rows()))
        self.assertEqual(v.kind, V.HOLDS, v.text)
        self.assertEqual(self.decisions(v), {
            "C heapqueue against hierwheel, few": PG.BELOW,
            "C heapqueue against hierwheel, many": PG.BELOW,
            "JVM DelayQueue against Netty, few": PG.BELOW,
            "JVM DelayQueue against Netty, many": PG.BELOW,
            "C heapqueue, many against few": PG.WORSE,
            "JVM DelayQueue, many against few": PG.WORSE})
        case = v.case("C heapqueue against hierwheel, few")
        self.assertEqual(case.values["delay_queue"]["hi"], 80000)
        self.assertIsNone(case.values["wheel"]["hi"])
        self.assertEqual(case.thresholds, {"sat_rate_shortfall": PG.SAT_RATE_SHORTFALL,
                                           "sat_lag_growth_ns": PG.SAT_LAG_GROWTH_NS,
                                           "sat_expiry_shortfall": PG.SAT_EXPIRY_SHORTFALL,
                                           "drain_ns": PG.DRAIN_NS,
                                           "sat_lateness_growth_ns": PG.SAT_LATENESS_GROWTH_NS,
                                           "sat_min_window": PG.SAT_MIN_WINDOW})
        self.assertEqual((v.facts["saturates_first"], v.facts["frequent_worse"],
                          v.facts["open"], v.facts["sides_not_tested"], v.facts["not_tested"]),
                         (V.HOLDS, V.HOLDS, [], [], []))
        self.assertEqual(T.say(v).text, "holds (saturates first: holds; worse when timeouts "
                         "are frequent: holds)")
        # as verdicts.json carries it
        j = V.verdict_json(v)
        self.assertEqual(j["kind"], V.HOLDS)
        self.assertEqual(j["cases"][0]["values"]["delay_queue"]["lo"], 40000)

    def test_does_not_hold_when_the_wheel_saturates_first(self):
        # heapqueue keeps up everywhere; hierwheel saturates at 160k; the same
        # CPU per request in both shapes: not worse either
        v = verdict(self.res(c_rows(dq=(None, None), wheel=(160000, 160000))))
        self.assertEqual(v.kind, V.FAILS, v.text)
        d = self.decisions(v)
        self.assertEqual(d["C heapqueue against hierwheel, few"], PG.ABOVE)
        self.assertEqual(d["C heapqueue against hierwheel, many"], PG.ABOVE)
        self.assertEqual(d["C heapqueue, many against few"], PG.NOT_WORSE)
        freq = v.case("C heapqueue, many against few")
        self.assertEqual(freq.values["basis"], "cpu")
        # the highest rate both ran unsaturated in both shapes: below the wheel's 160k
        self.assertEqual(freq.values["rate"], max(r for r in RATES if r < 160000))
        self.assertAlmostEqual(freq.effect, 1.0)
        # the JVM file is absent: its cases are there, not tested
        self.assertEqual(d["JVM DelayQueue against Netty, few"], PG.NOT_TESTED)

    def test_undecided_when_the_intervals_overlap(self):
        rows = [r for r in c_rows(wheel=(160000, 160000))
                if not (r["subject"] == "heapqueue" and r["shape"] == "few")]
        rows += sweep("heapqueue", "backend", "few", 80000, rep=0)
        rows += sweep("heapqueue", "backend", "few", 320000, rep=1)
        v = verdict(self.res(rows))
        d = self.decisions(v)
        self.assertEqual(d["C heapqueue against hierwheel, few"], PG.OVERLAP)
        self.assertEqual(d["C heapqueue against hierwheel, many"], PG.BELOW)
        self.assertEqual(v.kind, V.UNDECIDED, v.text)

    def test_neither_saturated_is_no_ranking(self):
        v = verdict(self.res(c_rows(dq=(None, None), wheel=(None, None))))
        case = v.case("C heapqueue against hierwheel, few")
        self.assertEqual(case.decision, PG.NEITHER)
        self.assertEqual(case.values["delay_queue"]["top"], RATES[-1])

    def test_undecided_when_both_are_at_the_players_limit(self):
        rows = c_rows(dq=(160000, 160000), wheel=(160000, 160000), floor=(160000, 160000))
        # dearer per request in many: the frequent part holds on CPU
        rows = [dict(r, subject_cpu_ns_per_request=3000.0) if r["subject"] == "heapqueue"
                and r["shape"] == "many" else r for r in rows]
        v = verdict(self.res(rows))
        self.assertEqual(v.case("C heapqueue, many against few").decision, PG.WORSE)
        d = self.decisions(v)
        self.assertEqual(d["C heapqueue against hierwheel, few"], PG.PLAYER_LIMITED)
        self.assertEqual(d["C heapqueue against hierwheel, many"], PG.PLAYER_LIMITED)
        self.assertEqual(v.kind, V.UNDECIDED, v.text)
        few = v.case("C heapqueue against hierwheel, few")
        self.assertEqual(few.values["why"], PG.PLAYER_LIMITED)
        self.assertEqual(few.values["why_facts"]["limited"], ["heapqueue", "hierwheel"])
        self.assertEqual(T.purgatory_why(few.values),
                         "heapqueue and hierwheel at the player's own limit (the floor's)")

    def test_below_a_wheel_at_the_players_limit_still_holds(self):
        # the wheel keeps up until the player cannot: heapqueue saturated
        # at a rate the wheel ran unsaturated, which is all the part asks
        v = verdict(self.res(c_rows(dq=(40000, 20000), wheel=(160000, 160000),
                                    floor=(160000, 160000))))
        d = self.decisions(v)
        self.assertEqual(d["C heapqueue against hierwheel, few"], PG.BELOW)
        self.assertTrue(v.case("C heapqueue against hierwheel, few").values["wheel"]["limited"])
        self.assertEqual(v.kind, V.HOLDS, v.text)

    def test_at_the_players_limit_never_ranked_below(self):
        # heapqueue saturates where the floor does; hierwheel kept up beyond
        # it (the floor's own play was the slower there): heapqueue's upper
        # end is the player's, so it is not placed below the wheel
        v = verdict(self.res(c_rows(dq=(160000, 160000), wheel=(None, None),
                                    floor=(160000, 160000))))
        case = v.case("C heapqueue against hierwheel, few")
        self.assertTrue(case.values["delay_queue"]["limited"])
        self.assertEqual(case.decision, PG.PLAYER_LIMITED)

    def test_worse_when_frequent_on_cpu_when_the_intervals_do_not_settle_it(self):
        rows = [r for r in c_rows(dq=(80000, 80000)) if r["subject"] != "heapqueue"]
        rows += sweep("heapqueue", "backend", "few", 80000, cpu=2000.0)
        rows += sweep("heapqueue", "backend", "many", 80000, cpu=2000.0 * PG.FREQUENT_CPU_WORSE)
        v = verdict(self.res(rows))
        freq = v.case("C heapqueue, many against few")
        self.assertEqual((freq.decision, freq.values["basis"], freq.values["rate"]),
                         (PG.WORSE, "cpu", 40000))
        self.assertAlmostEqual(freq.effect, PG.FREQUENT_CPU_WORSE)
        self.assertEqual(freq.thresholds["frequent_cpu_worse"], PG.FREQUENT_CPU_WORSE)
        # between the two thresholds: undecided, and so is the claim
        rows = [r for r in rows if r["subject"] != "heapqueue"]
        rows += sweep("heapqueue", "backend", "few", 80000, cpu=2000.0)
        rows += sweep("heapqueue", "backend", "many", 80000, cpu=2000.0 * 1.15)
        v = verdict(self.res(rows))
        self.assertEqual(v.case("C heapqueue, many against few").decision, PG.UNDECIDED)
        self.assertEqual(v.kind, V.UNDECIDED, v.text)

    def test_the_frequent_part_qualifies_never_decides(self):
        # nothing saturates: the saturation part is undecided, and the
        # frequent part's "not worse" (the same CPU) does not make the
        # claim fail
        v = verdict(self.res(c_rows(dq=(None, None), wheel=(None, None))))
        self.assertEqual(v.case("C heapqueue, many against few").decision, PG.NOT_WORSE)
        self.assertEqual(v.kind, V.UNDECIDED, v.text)
        # the saturation part holds and the frequent part does not: in part
        rows = [r for r in c_rows() if not (r["subject"] == "heapqueue")]
        rows += sweep("heapqueue", "backend", "few", 40000)
        rows += sweep("heapqueue", "backend", "many", 80000)
        v = verdict(self.res(rows))
        self.assertEqual(v.case("C heapqueue against hierwheel, few").decision, PG.BELOW)
        self.assertEqual(v.case("C heapqueue, many against few").decision, PG.NOT_WORSE)
        self.assertEqual(v.kind, V.PARTLY, v.text)

    def test_frequent_is_against_the_wheel(self):
        # both dearer by the same factor in many (every fire costs every
        # timer): the delay queue is not worse; dearer alone, it is
        base = c_rows(dq=(None, None), wheel=(None, None))
        both = [dict(r, subject_cpu_ns_per_request=3000.0) if r["shape"] == "many"
                and r["subject"] in ("heapqueue", "hierwheel") else r for r in base]
        case = verdict(self.res(both)).case("C heapqueue, many against few")
        self.assertEqual(case.decision, PG.NOT_WORSE)
        self.assertAlmostEqual(case.effect, 1.0)
        alone = [dict(r, subject_cpu_ns_per_request=3000.0) if r["shape"] == "many"
                 and r["subject"] == "heapqueue" else r for r in base]
        case = verdict(self.res(alone)).case("C heapqueue, many against few")
        self.assertEqual(case.decision, PG.WORSE)
        self.assertAlmostEqual(case.effect, 1.5)

    def test_partly_when_the_pairs_disagree(self):
        v = verdict(self.res(c_rows(), jvm_rows(dq=(None, None), wheel=(80000, 80000))))
        d = self.decisions(v)
        self.assertEqual(d["JVM DelayQueue against Netty, few"], PG.ABOVE)
        self.assertEqual(v.kind, V.PARTLY, v.text)

    def test_not_tested_with_the_reasons(self):
        v = verdict(self.res(None, None, purgatory={"status": "skipped",
                                                    "why": "timerbench-play was not built"}))
        self.assertEqual(v.kind, V.UNTESTED)
        self.assertEqual(v.facts["why"], "not_run")
        self.assertIn("timerbench-play was not built", v.facts["absent"])
        # the words, as tbkit.claimtext says them from the facts
        self.assertEqual(T.say(v).text, "not tested: the purgatory experiment did not run (%s)"
                         % "; ".join(v.facts["absent"]))
        # a pair's subject missing: that case is not tested, with the skip's reason
        rows = [r for r in c_rows() if r["subject"] != "hierwheel"]
        d = Dir(self.tmp)
        d.write("purgatory.json", doc(rows, skipped=[("hierwheel", "open failed: ENOMEM")]))
        v = verdict(d.load())
        case = v.case("C heapqueue against hierwheel, few")
        self.assertEqual(case.decision, PG.NOT_TESTED)
        self.assertEqual(case.values["why"], PG.WHY_NO_ROWS)
        self.assertEqual(case.values["why_facts"]["missing"],
                         [{"subject": "hierwheel", "skipped": "open failed: ENOMEM"}])
        self.assertIn("open failed: ENOMEM", T.purgatory_why(case.values))
        self.assertEqual(v.kind, V.UNTESTED)
        self.assertEqual(v.facts["saturates_first"], V.UNTESTED)
        self.assertIn(v.cases.index(case), v.facts["not_tested"])


def figures(tmp, draw):
    figs = F.Figures(os.path.join(tmp, "figs"), PLOTS)
    if not draw:
        figs.gnuplot = None
        figs.why_none = "figures were turned off (test)"
    return figs


class Section(Temp):
    def build(self, c=None, jvm=None, draw=False, **notes):
        d = Dir(self.tmp, full=True, run_notes=notes or None)
        if c is not None:
            d.write("purgatory.json", doc(c))
        if jvm is not None:
            d.write("purgatory-jvm.json", doc(jvm, note="JVM player thread on CPU 0"))
        figs = figures(self.tmp, draw)
        report, vdoc = RP.build(d.load(), figs)
        self.html = D.to_html(report)
        return D.to_markdown(report, self.tmp), vdoc, figs

    def section(self, md):
        start = md.index("## " + "A broker under load: the purgatory experiment")
        end = md.find("\n## ", start + 3)
        return md[start:end if end >= 0 else len(md)]

    def claim(self, vdoc):
        return [c for c in vdoc["claims"] if c["id"] == "purgatory_saturation"][0]

    def test_with_both_files(self):
        md, vdoc, figs = self.build(c_rows(), jvm_rows(), draw=bool(shutil.which("gnuplot")))
        s = self.section(md)
        # after the libraries' section, the method from the files
        self.assertLess(md.index("## The libraries C programs link"), md.index(s))
        self.assertIn("player CPU 0, subject CPU 1", s)
        self.assertIn("JVM player thread on CPU 0", s)
        self.assertIn("profile standard", s)
        for subject in ("heapqueue", "hierwheel", "floor", "DelayQueue (JVM)", "Netty (JVM)"):
            self.assertIn("`%s`" % subject, s)
        self.assertIn("| 40k/s-80k/s |", s)
        self.assertEqual(self.claim(vdoc)["kind"], V.HOLDS)
        if shutil.which("gnuplot"):
            drawn = [n for n in figs.drawn if "purgatory" in n]
            self.assertEqual(len(drawn), 2, figs.failures)
            for n in drawn:
                self.assertIn(os.path.basename(figs.path(n, "svg")), s)
            with open(os.path.join(figs.out_dir, drawn[0] + "_1.tsv"), encoding="utf-8") as f:
                self.assertIn('"achieved = offered"', f.read())
            # inlined in the HTML as the other sections' figures are
            for alt in ("achieved against offered request rate per subject",
                        "CPU time per request against request rate per subject"):
                self.assertRegex(self.html, r'<img src="data:image/svg\+xml[^"]*" alt="%s">' % alt)
        else:
            self.assertIn("Figure not drawn", s)

    def test_without_the_jvm_file(self):
        md, vdoc, _ = self.build(c_rows(), purgatory_jvm={"status": "skipped",
                                                          "why": "the JDK is not installed"})
        s = self.section(md)
        self.assertIn("the JDK is not installed", s)
        self.assertNotIn("(JVM)", s.split("Rule:")[0].split("| case |")[0])
        claim = self.claim(vdoc)
        self.assertEqual(claim["kind"], V.HOLDS)
        jcase = [c for c in claim["cases"] if c["name"].startswith("JVM")]
        self.assertTrue(jcase and all(c["decision"] == PG.NOT_TESTED for c in jcase))
        lim = md[md.index("## Limitations and noise"):]
        self.assertIn("the JDK is not installed", lim)

    def test_when_the_experiment_did_not_run(self):
        md, vdoc, _ = self.build(purgatory={"status": "failed",
                                            "why": "timerbench-play exited with status 1"})
        s = self.section(md)
        self.assertIn("did not run", s)
        self.assertIn("timerbench-play exited with status 1", s)
        self.assertEqual(self.claim(vdoc)["kind"], V.UNTESTED)

    def test_a_refused_file_is_said_in_the_section_and_limitations(self):
        d = Dir(self.tmp, full=True)
        bad = doc(c_rows())
        bad["format"] = 7
        d.write("purgatory.json", bad)
        report, vdoc = RP.build(d.load(), figures(self.tmp, False))
        md = D.to_markdown(report, self.tmp)
        s = self.section(md)
        self.assertIn("purgatory.json is format 7", s)
        lim = md[md.index("## Limitations and noise"):]
        self.assertEqual(lim.count("purgatory.json is format 7"), 1)
        self.assertEqual(self.claim(vdoc)["kind"], V.UNTESTED)

    def test_what_the_micro_predicted(self):
        d = Dir(self.tmp, full=True)
        d.write("purgatory.json", doc(c_rows()))
        res = d.load()
        pred = PG.micro_prediction(res, PG.load(res))
        self.assertEqual([x["shape"] for x in pred], ["few", "many"])
        few = pred[0]
        # heapqueue kept up to 40k/s in few: 8,000 pending, nearest the micro's 10^4
        self.assertEqual((few["pending"], few["n"]), (8000, 10000))
        self.assertAlmostEqual(few["cancelled_share"], 0.9)
        micro = {(m.op, m.backend, m.config): m.median for m in res.measurements.values()
                 if m.series == "h2h" and m.workload == "uniform" and m.n == 10000}
        hw = [l for l in few["lines"] if l["label"] == "hierwheel"][0]
        ins = [v for (op, b, _), v in micro.items() if op == "insert" and b == "hierwheel"]
        can = [v for (op, b, _), v in micro.items() if op == "cancel" and b == "hierwheel"]
        self.assertEqual((hw["insert_ns"], hw["cancel_ns"]), (ins[0], can[0]))
        self.assertAlmostEqual(hw["per_request_ns"], ins[0] + 0.9 * can[0])
        # heapqueue's one insert beside each of its cancels
        self.assertEqual(sorted(l["label"] for l in few["lines"] if "heapqueue" in l["label"]),
                         ["heapqueue roc=off", "heapqueue roc=on"])
        md = D.to_markdown(RP.build(res, figures(self.tmp, False))[0], self.tmp)
        self.assertIn("What the micro-benchmarks predicted", self.section(md))

    def test_a_mismatched_flag_is_in_limitations(self):
        rows = c_rows()
        rows[0] = dict(rows[0], saturated=True)
        md, _, _ = self.build(rows)
        lim = md[md.index("## Limitations and noise"):]
        self.assertIn("flag is not what the rule gives", lim)


def main():
    if not S.have_scipy():
        print("scipy is not installed (python3-scipy): skipping")
        return 77
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
