#!/usr/bin/env python3
"""verdict_test.py — tbkit.verdict and the verdicts as data (issue 36): the
claims' table, the cases a verdict records, verdicts.json beside the
report, and `compare`'s verdicts side by side.

    python3 tests/verdict_test.py [-v]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "fixtures", "report-quick")
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import claims as C  # noqa: E402
from tbkit import compare as CMP  # noqa: E402
from tbkit import numbers as A  # noqa: E402
from tbkit import stats as S  # noqa: E402
from tbkit import verdict as V  # noqa: E402

NEED_SCIPY = unittest.skipUnless(S.have_scipy(), "scipy (python3-scipy) is not installed")


def copy_fixture(tmp, name="results"):
    dst = os.path.join(tmp, name)
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("README.md"))
    return dst


class Table(unittest.TestCase):
    def test_every_row_has_a_function_and_the_order_is_the_tables(self):
        self.assertEqual(C.ids(), list(C.CLAIMS))
        self.assertEqual(sorted(C.REGISTRY), sorted(C.CLAIMS))

    def test_the_summary_quotes_rows_of_the_table(self):
        quoted = C.summary_ids()
        self.assertTrue(quoted)
        for cid, prio in quoted:
            self.assertIn(cid, C.CLAIMS)
            self.assertIsInstance(prio, int)

    def test_netty_rule_shows_its_constants(self):
        rule = C.CLAIMS["netty_ticks"].rule
        self.assertIn("at least %s of one per tick" % A.fmt_pct(C.NETTY_IDLE_TICK_SHARE), rule)
        self.assertIn("plus %s of a tick" % A.fmt_num(C.NETTY_P50_TICKS), rule)
        self.assertIn("plus %s tick" % A.fmt_num(C.NETTY_P99_TICKS), rule)

    def test_the_articles_answer_with_claims_of_the_table(self):
        from tbkit import articles as ART
        for s in ART.STATEMENTS:
            for a in [s.answer] + list(s.see):
                if a.startswith("claim:"):
                    self.assertIn(a.split(":", 1)[1], C.CLAIMS, s.id)


class Values(unittest.TestCase):
    def test_decide_records_a_case_with_its_thresholds(self):
        v = C._verdict("slow_task")
        d = C._decide(v, "a against b", "ns", [10, 11, 12, 13, 14], [1, 1, 1, 1, 1],
                      A.CLEAR_FACTOR)
        case = v.case("a against b")
        self.assertEqual(case.decision, d.kind)
        self.assertEqual(case.p, d.p)
        self.assertEqual(case.effect, d.ratio)
        self.assertEqual(case.n, (5, 5))
        self.assertEqual(case.thresholds["factor"], A.CLEAR_FACTOR)
        self.assertEqual(case.values, {"median_a": 12, "median_b": 1})
        self.assertEqual(C._direction(v, d, "greater"), S.direction(d, "greater"))
        self.assertEqual(case.thresholds["min_effect"], S.MIN_EFFECT)
        with self.assertRaises(KeyError):
            v.case("no such case")

    def test_json_round_trip_and_refusals(self):
        v = V.Verdict("x", "t", "s", "e", "r", kind=V.HOLDS, text="holds",
                      cases=[V.Case("c", "ns", "greater", 0.01, float("inf"), (5, 5))])
        doc = V.document([v], None, {"profile": "quick"})
        self.assertNotIn("recommendations", doc)
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "verdicts.json")
            with open(p, "w", encoding="utf-8") as f:
                f.write(V.dumps(doc))
            back = V.load(p)
            self.assertEqual(back["claims"][0]["cases"][0]["effect"], "inf")
            self.assertEqual(back["claims"][0]["kind"], V.HOLDS)
            with open(p, "w", encoding="utf-8") as f:
                json.dump({"format": V.FORMAT + 1, "claims": []}, f)
            with self.assertRaises(V.Unreadable):
                V.load(p)

    def test_side_by_side_marks_what_changed(self):
        a = {"claims": [{"id": "x", "kind": V.HOLDS}, {"id": "y", "kind": V.FAILS}],
             "recommendations": [{"workload": "w", "recommended": ["hierwheel"]}]}
        b = {"claims": [{"id": "x", "kind": V.UNDECIDED}, {"id": "z", "kind": V.HOLDS}],
             "recommendations": [{"workload": "w", "recommended": ["quadheap"]}]}
        rows, recs = V.side_by_side(a, b)
        self.assertEqual(rows, [("x", V.HOLDS, V.UNDECIDED, True), ("y", V.FAILS, None, True),
                                ("z", None, V.HOLDS, True)])
        self.assertEqual(recs, [("w", ["hierwheel"], ["quadheap"])])
        self.assertEqual(V.side_by_side(a, a)[0][0][3], False)
        ca = {"cases": [{"name": "p", "decision": "greater"}, {"name": "q", "decision": "less"}]}
        cb = {"cases": [{"name": "p", "decision": "undecided"}, {"name": "q", "decision": "less"},
                        {"name": "r", "decision": "too few"}]}
        self.assertEqual(V.changed_cases(ca, cb), [("p", "greater", "undecided"),
                                                   ("r", None, "too few")])
        self.assertEqual(V.changed_cases(ca, ca), [])
        del b["recommendations"]
        self.assertEqual(V.side_by_side(a, b)[1], [])


@NEED_SCIPY
class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.dir = copy_fixture(cls.tmp)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "report", "generate.py"),
                            cls.dir, "--no-figures"], capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, p.stderr
        with open(os.path.join(cls.dir, "verdicts.json"), encoding="utf-8") as f:
            cls.doc = json.load(f)
        with open(os.path.join(cls.dir, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_every_claim_with_the_reports_verdict(self):
        self.assertEqual([c["id"] for c in self.doc["claims"]], C.ids())
        for c in self.doc["claims"]:
            self.assertIn(c["kind"], V.KINDS)
            self.assertIn(c["claim"], self.md)
            # the claims table's row: claim | source | experiment | verdict
            row = next(l for l in self.md.splitlines() if l.startswith("| " + c["claim"]))
            self.assertTrue(row.rstrip().endswith("**%s** |" % c["verdict"].replace("_", "\\_"))
                            or c["verdict"] in row, row)

    def test_cases_carry_the_numbers_decided_on(self):
        slow = next(c for c in self.doc["claims"] if c["id"] == "slow_task")
        case = slow["cases"][0]
        self.assertEqual(case["name"], "timerthread against heapqueue")
        # the fixture keeps one repetition: too few to test, so no p
        self.assertEqual(case["decision"], "too few")
        self.assertIsNone(case["p"])
        self.assertEqual(case["thresholds"]["factor"], A.CLEAR_FACTOR)
        self.assertEqual(case["effect"], case["values"]["median_a"] /
                         (A.CLEAR_FACTOR * case["values"]["median_b"]))
        self.assertEqual(slow["kind"], V.UNDECIDED)

    def test_recommendations_with_their_evidence(self):
        recs = self.doc["recommendations"]
        self.assertTrue(recs)
        for r in recs:
            self.assertTrue(r["recommended"], r)
            for name in r["recommended"]:
                self.assertIn(name.split(" ")[0], r["evidence"])

    def test_compare_sets_the_verdicts_side_by_side(self):
        other = copy_fixture(self.tmp, "other")
        with open(os.path.join(self.dir, "verdicts.json"), encoding="utf-8") as f:
            doc = json.load(f)
        doc["claims"][0]["kind"] = V.FAILS if doc["claims"][0]["kind"] != V.FAILS else V.HOLDS
        moved = doc["claims"][0]["cases"][0]
        was = moved["decision"]
        moved["decision"] = "greater" if was != "greater" else "less"
        with open(os.path.join(other, "verdicts.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f)
        lines = CMP.verdict_lines(self.dir, other)
        first = next(l for l in lines if l.startswith(C.ids()[0] + " "))
        self.assertTrue(first.endswith("changed"), first)
        self.assertIn("    case %s: A %s, B %s" % (moved["name"], was, moved["decision"]), lines)
        self.assertIn("verdicts changed: 1 of %d claims" % len(C.ids()), lines[-1])
        # without verdicts.json the claims are decided on the results
        os.remove(os.path.join(other, "verdicts.json"))
        lines = CMP.verdict_lines(self.dir, other)
        self.assertIn("B: decided now", lines[0])
        self.assertIn("verdicts changed: 0 of", lines[-1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
