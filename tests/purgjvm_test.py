#!/usr/bin/env python3
"""purgjvm_test — the JVM side of issue 41's purgatory experiment
(jvm/Purgatory.java through tbkit/purgjvm.py) at a tiny size: a low rate,
0.2 s plays, two subjects, both shapes.  Checks purgatory-jvm.json's
schema (the keys every player writes), that every request is accounted
for (fired + cancelled = requests, from the player's progress lines), the
fired share against the shape's log-normal (generous bounds), lag and
lateness never negative, the saturation flag and `why` against the rule,
a play far too fast for the machine reported as saturated, Netty absent
from the class path reported as skipped, the step skipped without a JDK,
and bad arguments rejected with exit 2.

usage: purgjvm_test.py JAVA JAR NETTY_JAR   (exit 77, skip, without them)
"""

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from tbkit import purgatory as PG  # noqa: E402
from tbkit import purgjvm as PJ  # noqa: E402

JAVA = JAR = NETTY = None

TOP = {"format", "profile", "pinning", "grid", "rows", "skipped"}
ROW = {"subject": str, "side": str, "structure": str, "shape": str, "repetition": int,
       "target_rate": (int, float), "offered_rate": (int, float),
       "achieved_rate": (int, float), "requests": int, "seconds": (int, float),
       "lag_p50_ns": int, "lag_p99_ns": int, "lag_max_ns": int, "lag_growth_ns": int,
       "saturated": bool, "why": str, "cpu_ns_per_request": (int, float),
       "player_cpu_ns_per_request": (int, float),
       "subject_cpu_ns_per_request": (int, float), "fired": int,
       "fired_share": (int, float), "timeouts_due": int,
       "lateness_growth_ns": (int, type(None)), "lateness_p50_ns": (int, type(None)),
       "lateness_p99_ns": (int, type(None)), "peak_pending": (int, type(None)),
       "peak_zombies": (int, type(None))}


def expected_fired_share(p50, p75, timeout_ms=200.0):
    """P(completion >= timeout) for tracegen.py's log-normal."""
    mu = math.log(p50)
    sigma = (math.log(p75) - mu) / 0.674490
    z = (math.log(timeout_ms) - mu) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


SHARE = {"few": expected_fired_share(20.0, 60.0), "many": expected_fired_share(200.0, 400.0)}
PROGRESS = re.compile(r"purgatory: (?P<subject>\S+) (?P<shape>few|many) (?P<rate>[\d.]+)/s "
                      r"rep (?P<rep>\d+): (?P<n>\d+) requests, .* fired (?P<fired>\d+) "
                      r"cancelled (?P<cancelled>\d+), ")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def java(*args, classpath=None, timeout=300):
    cp = classpath or JAR + os.pathsep + NETTY
    return subprocess.run([JAVA, "-Xmx512m", "-cp", cp, "Purgatory"] + list(args),
                          capture_output=True, text=True, timeout=timeout)


class TinySweep(unittest.TestCase):
    """One sweep through tbkit.purgjvm: 1000 and 2000 requests/s, 0.2 s."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.rates = [1000, 2000]
        cls.facts = PJ.jvm_purgatory(JAR, cls.tmp.name, cls.rates, 0.2, 1, "first", 3,
                                     profile="test", subjects=["DelayQueue", "Netty"],
                                     build=False)
        path = os.path.join(cls.tmp.name, "purgatory-jvm.json")
        cls.doc = load(path) if os.path.isfile(path) else None
        with open(os.path.join(cls.tmp.name, "purgatory-jvm.log")) as f:
            cls.log = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_facts(self):
        self.assertEqual(self.facts["status"], "complete", self.facts)
        self.assertEqual(self.facts["rows"], len(self.doc["rows"]))
        self.assertGreater(self.facts["seconds"], 0)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "purgatory-jvm.json.part")))

    def test_document(self):
        d = self.doc
        self.assertEqual(set(d), TOP)
        self.assertEqual(d["format"], 1)
        self.assertEqual(d["profile"], "test")
        self.assertEqual(set(d["pinning"]), {"player_cpu", "subject_cpu", "note"})
        self.assertIsNone(d["pinning"]["player_cpu"])
        self.assertIn("not pinned", d["pinning"]["note"])
        self.assertEqual(d["grid"], {"rates": self.rates, "seconds": 0.2, "repetitions": 1})
        self.assertEqual(d["skipped"], [])

    def test_rows_schema(self):
        rows = self.doc["rows"]
        # each subject and shape plays at least the first rate
        self.assertTrue({(s, sh) for s in ("DelayQueue", "Netty") for sh in ("few", "many")}
                        <= {(r["subject"], r["shape"]) for r in rows})
        for r in rows:
            self.assertEqual(list(r), list(ROW), r)
            for k, t in ROW.items():
                self.assertIsInstance(r[k], t, (k, r))
            self.assertEqual(r["side"], "jvm")
            self.assertIn(r["target_rate"], self.rates)
            self.assertEqual(r["seconds"], 0.2)
            self.assertEqual(r["repetition"], 0)
            self.assertNotIn("\n", r["structure"])
        structures = {r["subject"]: r["structure"] for r in rows}
        self.assertIn("java.util.concurrent.DelayQueue", structures["DelayQueue"])
        self.assertIn("purge", structures["DelayQueue"])
        self.assertIn("io.netty.util.HashedWheelTimer", structures["Netty"])

    def test_same_plan_for_every_subject(self):
        # a shape, rate and repetition is one plan, played on every subject
        by = {}
        for r in self.doc["rows"]:
            by.setdefault((r["shape"], r["target_rate"], r["repetition"]), set()).add(r["requests"])
        for key, ns in by.items():
            self.assertEqual(len(ns), 1, key)

    def test_requests_accounted_for(self):
        lines = [m.groupdict() for m in PROGRESS.finditer(self.log)]
        rows = self.doc["rows"]
        self.assertEqual(len(lines), len(rows), self.log)
        for r in rows:
            m = [x for x in lines if x["subject"] == r["subject"] and x["shape"] == r["shape"]
                 and float(x["rate"]) == r["target_rate"] and int(x["rep"]) == r["repetition"]]
            self.assertEqual(len(m), 1, r)
            self.assertEqual(int(m[0]["n"]), r["requests"])
            self.assertEqual(int(m[0]["fired"]), r["fired"])
            self.assertEqual(int(m[0]["fired"]) + int(m[0]["cancelled"]), r["requests"], r)

    def test_rates_and_fired_share(self):
        for r in self.doc["rows"]:
            self.assertGreater(r["requests"], 0.5 * r["target_rate"] * r["seconds"], r)
            self.assertLess(r["requests"], 1.5 * r["target_rate"] * r["seconds"], r)
            self.assertGreater(r["offered_rate"], 0.5 * r["target_rate"], r)
            self.assertLess(r["offered_rate"], 2.0 * r["target_rate"], r)
            self.assertGreater(r["achieved_rate"], 0)
            self.assertAlmostEqual(r["fired_share"], r["fired"] / r["requests"], places=5)
            want = SHARE[r["shape"]]       # few: 0.079, many: 0.5
            self.assertGreater(r["fired_share"], want / 4, r)
            self.assertLess(r["fired_share"], min(1.0, want * 1.6), r)

    def test_lag_and_lateness_never_negative(self):
        for r in self.doc["rows"]:
            self.assertGreaterEqual(r["lag_p50_ns"], 0, r)
            self.assertLessEqual(r["lag_p50_ns"], r["lag_p99_ns"], r)
            self.assertLessEqual(r["lag_p99_ns"], r["lag_max_ns"], r)
            self.assertIsNotNone(r["lateness_p50_ns"], r)   # some timeouts fire in both shapes
            self.assertGreaterEqual(r["lateness_p50_ns"], 0, r)
            self.assertLessEqual(r["lateness_p50_ns"], r["lateness_p99_ns"], r)
            self.assertGreater(r["cpu_ns_per_request"], 0, r)
            self.assertGreater(r["player_cpu_ns_per_request"], 0, r)
            self.assertGreater(r["peak_pending"], 0, r)
            self.assertGreaterEqual(r["peak_zombies"], 0, r)
            self.assertLessEqual(r["peak_zombies"], r["peak_pending"], r)

    def test_saturation_follows_the_rule(self):
        # the report's copy of the rule (tbkit/purgatory.py), words and all
        for r in self.doc["rows"]:
            self.assertEqual((r["saturated"], r["why"]), PG.rule_of(r), r)
            self.assertLessEqual(r["timeouts_due"], r["requests"], r)


class TooFast(unittest.TestCase):
    def test_too_fast_is_saturated_and_ends_the_sweep(self):
        # 8 million requests a second on one player thread into STPE's
        # locked heap: far beyond the machine, so saturated with its lag;
        # --confirm 1 plays the rate once more, both saturated end the
        # sweep (--stop first), so 16 M/s is never played
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.json")
            p = java("--shapes", "many", "--rates", "8000000,16000000", "--seconds", "0.05",
                     "--subjects", "STPE", "--confirm", "1", "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = load(out)["rows"]
        self.assertEqual([(r["target_rate"], r["repetition"]) for r in rows],
                         [(8000000, 0), (8000000, 1)], p.stderr)
        for r in rows:
            self.assertTrue(r["saturated"], r)
            self.assertIn("below offered", r["why"])
            self.assertLess(r["achieved_rate"], 0.95 * r["offered_rate"])
            self.assertGreater(r["lag_max_ns"], 1_000_000, r)
        self.assertIn("SATURATED", p.stderr)
        self.assertIn("STPE many: saturated at 8000000/s, its sweep stops", p.stderr)


class Floor(unittest.TestCase):
    def test_the_player_alone(self):
        # the JVM's floor: nothing fires and nothing is due, so only the
        # player's own pace can saturate it; the profiles that run the
        # claim's pair run it too
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.json")
            p = java("--shapes", "few,many", "--rates", "2000", "--seconds", "0.1",
                     "--subjects", "floor", "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            rows = load(out)["rows"]
        self.assertEqual(len(rows), 2, p.stderr)
        for r in rows:
            self.assertEqual((r["subject"], r["side"]), ("floor", "floor"))
            self.assertEqual((r["fired"], r["timeouts_due"]), (0, 0), r)
            self.assertFalse(r["saturated"], r)
            self.assertEqual((r["saturated"], r["why"]), PG.rule_of(r), r)
        for profile in ("quick", "standard", "full"):
            self.assertIn("floor", PJ.PROFILE_SUBJECTS[profile])


class Missing(unittest.TestCase):
    def test_netty_absent_is_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.json")
            p = java("--shapes", "few", "--rates", "1000", "--seconds", "0.1",
                     "--subjects", "Netty,STPE-roc", "--out", out, classpath=JAR)
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = load(out)
        self.assertEqual([s["subject"] for s in doc["skipped"]], ["Netty"])
        self.assertIn("libnetty-java", doc["skipped"][0]["why"])
        self.assertEqual({r["subject"] for r in doc["rows"]}, {"STPE-roc"})

    def test_no_jdk_skips_the_step(self):
        old = os.environ["PATH"]
        os.environ["PATH"] = ""
        try:
            with tempfile.TemporaryDirectory() as d:
                f = PJ.jvm_purgatory(JAR, d, [1000], 0.1, 1, "first", 1)
                self.assertEqual(os.listdir(d), [])
        finally:
            os.environ["PATH"] = old
        self.assertEqual(f["status"], "skipped")
        self.assertIn("default-jdk-headless", f["why"])

    def test_python_side_rejects_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(ValueError):
                PJ.jvm_purgatory(JAR, d, [1000], 0.1, 1, "never", 1)
            with self.assertRaises(ValueError):
                PJ.jvm_purgatory(JAR, d, [1000], 0.1, 1, "first", 1, subjects=["Timer"])
            f = PJ.jvm_purgatory(os.path.join(d, "nothing.jar"), d, [1000], 0.1, 1, "first", 1)
            self.assertEqual(f["status"], "skipped")
            self.assertIn("not built", f["why"])


class BadArguments(unittest.TestCase):
    CASES = [
        (["--rates", "abc"], "not a number"),
        (["--rates", "2000,1000"], "must rise"),
        (["--rates", "0"], "above 0"),
        (["--rates", "NaN"], "finite"),
        (["--seconds", "Infinity"], "finite"),
        (["--stop", "three"], "first or two"),
        (["--subjects", "Timer"], "unknown subject"),
        (["--subjects", "Netty,netty"], "given twice"),
        (["--shapes", "huge"], "unknown shape"),
        (["--seconds", "0"], "play length"),
        (["--repetitions", "0"], "whole number from 1"),
        (["--seed", "-1"], "whole number from 0"),
        (["--confirm", "x"], "whole number"),
        (["--bogus", "1"], "unknown option"),
        (["--rates"], "needs a value"),
        (["stray"], "unexpected argument"),
        (["--rates", "50", "--seconds", "0.2"], "fewer than 20 requests"),
        (["--rates", "100000000", "--seconds", "1"], "more than"),
    ]

    def test_bad_arguments_exit_2(self):
        for args, says in self.CASES:
            with self.subTest(args=args):
                p = java(*args)
                self.assertEqual(p.returncode, 2, (args, p.stderr))
                self.assertIn(says, p.stderr)
                self.assertIn("usage: Purgatory", p.stderr)
                self.assertEqual(p.stdout, "")


def main(argv):
    global JAVA, JAR, NETTY
    if len(argv) != 4 or not all(argv[1:]) or not all(os.path.isfile(a) for a in argv[1:]):
        print("purgjvm_test: skipped: the JDK, the jar or Netty's jar is absent (%r)"
              % (argv[1:],))
        return 77
    JAVA, JAR, NETTY = argv[1:]
    return 0 if unittest.main(argv=argv[:1], exit=False).result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
