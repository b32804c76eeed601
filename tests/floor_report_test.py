#!/usr/bin/env python3
"""floor_report_test.py — the micro's interface floor in the report (issue
39): the `floor` results of micro.json (bench/micro.c, tb_backend_floor)
are read apart from the timers' (Results.floor), shown beside the insert
and cancel tables and beside the harness's empty operation in Limitations,
and never ranked, fitted, drawn or recommended as a timer.  The runtime
experiments' own `floor` (the wait primitive) stays a measurement.  Suite
`report`.

    /usr/bin/python3 tests/floor_report_test.py [-v]
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import analysis as AN  # noqa: E402
from tbkit import results as R  # noqa: E402

# ns per operation: the floor far below every timer, so a ranking that let
# it in would name it fastest
TIMES = {"heapqueue": {"insert": 30.0, "cancel": 40.0},
         "quadheap": {"insert": 25.0, "cancel": 5.0},
         "floor": {"insert": 3.25, "cancel": 2.5}}
NS = (100, 1000)


def entry(name, rep, time_ns, **counters):
    e = {"name": name, "run_name": name, "run_type": "iteration",
         "repetition_index": rep, "threads": 1, "iterations": 1000,
         "real_time": time_ns, "cpu_time": time_ns, "time_unit": "ns"}
    e.update(counters)
    return e


def write_dir(path, with_floor=True):
    micro = []
    for backend, ops in TIMES.items():
        if backend == "floor" and not with_floor:
            continue
        for op, t in ops.items():
            for n in NS:
                name = "%s/%s/uniform/series=h2h/N:%d/manual_time" % (op, backend, n)
                for j in range(5):
                    # the floor's time grows a little with N, so its cells
                    # for the two N differ and each can be found
                    k = (1 + j / 100.0) * (1 + (n == 1000) / 10.0)
                    micro.append(entry(name, j, t * k, sift_levels_per_op=0.0,
                                       pending_per_n=1.0))
    shim = [entry("shim/empty/none/timing=auto/N:1", j, 1.5 + j / 100.0) for j in range(5)]
    # the runtime experiments' floor: a measurement, not the interface's
    runtime = [entry("lateness/floor/light/slack=default", j, 50000.0 + j,
                     p50=50000.0, p99=60000.0) for j in range(5)]
    # counts.json as run.py --profile counts writes it: the floor's rows
    # and a timer's, out of order (the report puts the floor first)
    counts = []
    for backend, ins, can in (("heapqueue", 122.0, 36.0), ("floor", 48.0, 42.0)):
        for op, ir in (("insert", ins), ("cancel", can)):
            counts.append({"name": "%s/%s" % (op, backend), "op": op, "backend": backend,
                           "config": "series=h2h", "workload": "uniform", "n": 1000,
                           "ops": 1000, "instructions_per_op": ir, "d1_misses_per_op": 1.0,
                           "ll_misses_per_op": 0.0, "work_per_op": {}})
    with open(os.path.join(path, "counts.json"), "w", encoding="utf-8") as f:
        json.dump({"results": counts}, f)
    with open(os.path.join(path, "machine.json"), "w", encoding="utf-8") as f:
        json.dump({"format_version": 2, "build": {"backend_caps": {
            "heapqueue": ["fifo_ties", "purge"], "quadheap": ["lazy_cancel"]}},
            "run": {"status": "complete", "profile": "standard",
                    "backends": ["heapqueue", "quadheap"]}}, f)
    for file, benches, harness in (("micro.json", micro, "micro"), ("shim.json", shim, "shim"),
                                   ("runtime.json", runtime, "runtime")):
        with open(os.path.join(path, file), "w", encoding="utf-8") as f:
            json.dump({"context": {"harness": harness}, "benchmarks": benches}, f)


class FloorReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tb-floor-report-")
        cls.dir = os.path.join(cls.tmp, "run")
        os.makedirs(cls.dir)
        write_dir(cls.dir)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "report", "generate.py"),
                            cls.dir, "--no-figures"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode != 0:
            raise AssertionError("report failed: %s" % p.stderr[-2000:])
        with open(os.path.join(cls.dir, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()
        with open(os.path.join(cls.dir, "verdicts.json"), encoding="utf-8") as f:
            cls.verdicts = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def section(self, anchor_title):
        """report.md from the heading `anchor_title` to the next heading of
        the same or a higher level."""
        m = re.search(r"^(#+) %s\s*$" % re.escape(anchor_title), self.md, re.M)
        self.assertIsNotNone(m, "no heading %r in the report" % anchor_title)
        level = len(m.group(1))
        rest = self.md[m.end():]
        nxt = re.search(r"^#{1,%d} " % level, rest, re.M)
        return rest[:nxt.start()] if nxt else rest

    def test_read_apart_from_the_timers(self):
        res = R.load(self.dir)
        floor_keys = {(k[0], k[1]) for k in res.floor}
        self.assertEqual(floor_keys, {("insert", "floor"), ("cancel", "floor")})
        self.assertFalse([k for k in res.measurements if k[1] == "floor" and k[0] in ("insert", "cancel")])
        # the runtime's floor is the wait primitive's: still a measurement
        self.assertTrue([k for k in res.measurements if k[:2] == ("lateness", "floor")])
        ins = AN.interface_floor(res, "insert")
        self.assertEqual([m.n for m in ins], list(NS))
        self.assertAlmostEqual(ins[0].median, TIMES["floor"]["insert"] * 1.02, places=6)
        self.assertEqual(AN.interface_floor(res, "expire"), [])
        an = AN.Analysis(res)
        self.assertNotIn("floor", an.backends)

    def test_shown_beside_insert_and_cancel(self):
        for op in ("insert", "cancel"):
            sec = self.section(op)
            line = [l for l in sec.splitlines() if l.startswith("The interface alone")]
            self.assertEqual(len(line), 1, "%s: no interface floor line" % op)
            # both N, in order, with the medians as the report formats them
            self.assertRegex(line[0], r"at N = 100.*at N = 1,?000|at N = 10\^?2.*at N = 10\^?3")
            self.assertIn("includes it", line[0])
            # and no row of its own in the table of timers
            self.assertFalse([l for l in sec.splitlines() if l.startswith("| `floor`")],
                             "%s: the floor has a row among the timers" % op)

    def test_shown_beside_the_harness_floor(self):
        lim = self.section("Limitations and noise")
        harness = [l for l in lim.splitlines() if "Harness overhead" in l]
        iface = [l for l in lim.splitlines() if "Interface overhead" in l]
        self.assertEqual(len(harness), 1)
        self.assertEqual(len(iface), 1)
        self.assertIn("`insert`", iface[0])
        self.assertIn("`cancel`", iface[0])
        # beside it: the next item of the same list
        lines = lim.splitlines()
        self.assertEqual(lines.index(iface[0]), lines.index(harness[0]) + 1)

    def test_counts_show_the_floor_first(self):
        for op in ("insert", "cancel"):
            sec = self.section("%s (counts)" % op)
            rows = [l for l in sec.splitlines() if l.startswith("| `")]
            self.assertEqual([r.split("`")[1] for r in rows], ["floor", "heapqueue"], sec)
            self.assertIn("`floor`: the interface alone", sec)

    def test_never_ranked(self):
        # the floor is the smallest time of every operation: any ranking
        # that counted it would name it
        self.assertNotRegex(self.md, r"`floor` is fastest|Fastest[^\n]*`floor`")
        recs = json.loads(self.verdicts)["recommendations"]
        self.assertTrue(recs)
        for r in recs:
            self.assertNotIn("floor", r["recommended"])
            self.assertNotIn("floor", r["evidence"])
        # the fastest at the largest N is a timer
        self.assertRegex(self.md, r"At N = [^\n]*`quadheap` is fastest")

    def test_absent_floor_says_nothing(self):
        d = os.path.join(self.tmp, "nofloor")
        os.makedirs(d)
        write_dir(d, with_floor=False)
        res = R.load(d)
        self.assertEqual(res.floor, {})
        self.assertEqual(AN.interface_floor(res, "insert"), [])


if __name__ == "__main__":
    unittest.main()
