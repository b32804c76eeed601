#!/usr/bin/env python3
"""counts_test.py — bench/counts.c (timerbench-counts) and the Valgrind
step of bench/run.py --profile counts, on one backend at a small N: the
counts are positive and the same twice (deterministic), collection covers
the operation only (far fewer instructions than the whole program), the
driver run without Valgrind reports the same work, and bad arguments are
refused.

    python3 tests/counts_test.py BUILD/bench/timerbench-counts

Exit 77 (Meson's SKIP) when valgrind is not installed (the test command
installs it), the driver was not built (no valgrind/callgrind.h) or was
built with a sanitizer (whose runtime does not run under valgrind).
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
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import bench as run  # noqa: E402  (bench/run.py)
from tbkit import countsdata as tb_counts  # noqa: E402
from tbkit import machine  # noqa: E402

BINARY = None
BACKEND = "heapqueue"
N = 1000


class Counts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tb-counts-")
        cls.first = run.counts_one(BINARY, BACKEND, "insert", N, [], cls.tmp)
        cls.second = run.counts_one(BINARY, BACKEND, "insert", N, [], cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_counts_are_positive(self):
        r = self.first
        self.assertNotIn("error", r, r)
        self.assertTrue(r["valgrind"])
        self.assertEqual(r["op"], "insert")
        self.assertEqual(r["backend"], BACKEND)
        self.assertEqual(r["n"], N)
        self.assertEqual(r["ops"], N // 8)          # micro.c's batch
        self.assertGreater(r["instructions_per_op"], 10)
        self.assertGreaterEqual(r["d1_misses_per_op"], 0)
        self.assertGreaterEqual(r["ll_misses_per_op"], 0)
        t = r["totals"]
        # a last-level miss is first a first-level miss
        self.assertLessEqual(t["ILmr"] + t["DLmr"] + t["DLmw"], t["I1mr"] + t["D1mr"] + t["D1mw"])
        self.assertEqual(r["totals"]["Ir"], r["instructions_per_op"] * r["ops"])

    def test_counts_are_deterministic(self):
        self.assertNotIn("error", self.second)
        for k in ("instructions_per_op", "d1_misses_per_op", "ll_misses_per_op",
                  "work_per_op", "totals"):
            self.assertEqual(self.first[k], self.second[k], k)

    def test_only_the_operation_is_collected(self):
        # the same run with collection from the start holds the fill of N
        # tasks and everything else: many times the operation's count
        out = os.path.join(self.tmp, "all.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                        BINARY, "--backend", BACKEND, "--op", "insert", "--n", str(N)],
                       capture_output=True, check=True)
        ev, _ = machine.parse_callgrind(out)
        self.assertGreater(ev["Ir"], 5 * self.first["totals"]["Ir"])

    def test_same_work_without_valgrind(self):
        p = subprocess.run([BINARY, "--backend", BACKEND, "--op", "insert", "--n", str(N)],
                           capture_output=True, text=True, check=True)
        r = json.loads(p.stdout)
        self.assertFalse(r["valgrind"])
        self.assertEqual(r["ops"], self.first["ops"])
        self.assertEqual(r["work_per_op"], self.first["work_per_op"])
        self.assertEqual(r["name"], "insert/%s/uniform/series=h2h/N:%d" % (BACKEND, N))

    def test_table(self):
        text = tb_counts.format_table([self.first])
        self.assertIn("insert", text)
        self.assertIn("%.1f" % self.first["instructions_per_op"], text)

    def test_bad_arguments_are_refused(self):
        for args in (["--backend", "nosuch", "--op", "insert", "--n", "10"],
                     ["--backend", BACKEND, "--op", "fly", "--n", "10"],
                     ["--backend", BACKEND, "--op", "insert", "--n", "0"],
                     ["--backend", BACKEND, "--op", "insert"],
                     ["--backend", BACKEND, "--op", "cancel", "--n", "10", "--roc", "maybe"]):
            p = subprocess.run([BINARY] + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, "", args)
        r = run.counts_one(BINARY, "nosuch", "insert", 10, [], self.tmp)
        self.assertIn("error", r)

    def test_empty_backend_list_is_refused(self):
        # `--backends ''` or `a,,b` is a mistake, not "every backend"
        for arg in ("", "heapqueue,,quadheap"):
            p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "counts.py"),
                                "--no-build", "--build-dir", self.tmp, "--backends", arg],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("has an empty name", p.stderr)

    def test_list_names_every_backend(self):
        roc = run.counts_backends(BINARY)
        self.assertIn(BACKEND, roc)
        self.assertTrue(roc["heapqueue"])        # remove-on-cancel changes it
        self.assertFalse(roc.get("timerwheel", False))

    def test_every_backend_runs_every_op(self):
        # the profile's whole plan, natively (fast): each backend's insert,
        # cancel and expire end as the driver expects, a granular wheel's
        # late tasks included (its expire once died as "did not run")
        for backend in sorted(run.counts_backends(BINARY)):
            for op in ("insert", "cancel", "expire"):
                with self.subTest(backend=backend, op=op):
                    p = subprocess.run([BINARY, "--backend", backend, "--op", op,
                                        "--n", str(N)],
                                       capture_output=True, text=True)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    r = json.loads(p.stdout)
                    self.assertEqual(r["backend"], backend)
                    self.assertGreater(r["ops"], 0)

    def test_floor_is_listed_apart_and_counts_insert_and_cancel(self):
        # the interface's floor (issue 39) is no timer: --list flags it,
        # counts_backends leaves it out, and it has no expiry to count
        floor = run.counts_floor(BINARY)
        self.assertEqual(floor, "floor")
        self.assertNotIn(floor, run.counts_backends(BINARY))
        for op in run.FLOOR_OPS:
            with self.subTest(op=op):
                p = subprocess.run([BINARY, "--backend", floor, "--op", op,
                                    "--n", str(N)], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                r = json.loads(p.stdout)
                self.assertEqual(r["backend"], floor)
                self.assertGreater(r["ops"], 0)
                self.assertTrue(all(v == 0 for v in r["work_per_op"].values()), r)
        p = subprocess.run([BINARY, "--backend", floor, "--op", "expire",
                            "--n", str(N)], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_profile_plan_counts_the_floor(self):
        # run.py --profile counts: the floor's insert and cancel at every N
        # of the profile, first, and nothing else of it (no expiry, no worst
        # workload); the timers after it, the floor not among them
        timers, plan = run.counts_profile_plan(BINARY)
        self.assertNotIn("floor", timers)
        floor = [p for p in plan if p[0] == "floor"]
        self.assertEqual(floor, [("floor", op, n, []) for op in ("insert", "cancel")
                                 for n in run.COUNTS_N])
        self.assertEqual(plan[:len(floor)], floor)
        self.assertTrue({p[0] for p in plan[len(floor):]} == set(timers))
        # --backends without it leaves it out; naming it keeps it
        timers, plan = run.counts_profile_plan(BINARY, BACKEND)
        self.assertEqual(timers, [BACKEND])
        self.assertFalse([p for p in plan if p[0] == "floor"])
        timers, plan = run.counts_profile_plan(BINARY, BACKEND + ",floor")
        self.assertEqual(timers, [BACKEND])
        self.assertEqual(len([p for p in plan if p[0] == "floor"]), 2 * len(run.COUNTS_N))

    def test_floor_costs_less_than_a_backend(self):
        # under callgrind: the floor is the interface alone, so a
        # backend's insert (heapqueue's) costs more than it does
        floor = run.counts_one(BINARY, "floor", "insert", N, [], self.tmp)
        self.assertNotIn("error", floor)
        self.assertGreater(floor["instructions_per_op"], 0)
        self.assertLess(floor["instructions_per_op"],
                        self.first["instructions_per_op"])

    def test_parts_add_up_and_floor_has_no_structure(self):
        # the test builds carry debug information (Meson's debugoptimized),
        # so callgrind charges each instruction to its source file
        for r in (self.first, run.counts_one(BINARY, "floor", "cancel", N, [], self.tmp)):
            parts = tb_counts.split(r)
            self.assertIsNotNone(parts, r.get("by_file"))
            self.assertAlmostEqual(sum(parts.values()), r["instructions_per_op"], places=6)
            self.assertGreater(parts["driver"], 0)
            self.assertGreater(parts["interface"], 0)
        self.assertGreater(tb_counts.split(self.first)["structure"], 0)
        self.assertEqual(tb_counts.split(r)["structure"], 0)


# A callgrind output as Valgrind 3.19 writes it with --compress-strings:
# a name is given once with its id, then by the id alone; fi=/fe= switch to
# and from an inlined function's file; the line after calls= is the
# callee's inclusive cost and is no self cost of the caller.
CALLGRIND = """\
version: 1
creator: callgrind-3.19.0
events: Ir Dr
fl=(1) /src/bench/counts.c
fn=(1) main
10 5 1
cfi=(2) /src/core/sched.c
cfn=(2) tb_schedule
calls=4 20
11 100 30
fl=(2)
fn=(2)
20 7 2
cfi=(3) /src/kernelwheel/kernelwheel.c
cfn=(3) kw_schedule
calls=4 30
* 93 28
fl=(3)
fn=(3)
30 40 10
fi=(4) /src/core/tb_core.h
+2 25 8
fe=(3)
+1 28 10
summary: 105 31
totals: 105 31
"""


class ByFile(unittest.TestCase):
    def test_self_costs_by_file_inlined_code_to_its_own_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".out", delete=False) as f:
            f.write(CALLGRIND)
        try:
            got = machine.callgrind_by_file(f.name)
            self.assertEqual(got, {"/src/bench/counts.c": 5, "/src/core/sched.c": 7,
                                   "/src/kernelwheel/kernelwheel.c": 68,
                                   "/src/core/tb_core.h": 25})
            self.assertEqual(sum(got.values()), 105)     # the totals line
            self.assertEqual(machine.callgrind_by_file(f.name, "Dr")["/src/core/tb_core.h"], 8)
        finally:
            os.unlink(f.name)

    def test_parts(self):
        self.assertEqual(tb_counts.part_of("bench/counts.c", "hrtree"), "driver")
        self.assertEqual(tb_counts.part_of("core/tb_core.h", "hrtree"), "interface")
        self.assertEqual(tb_counts.part_of("include/timerbench/scheduler.h", "x"), "interface")
        self.assertEqual(tb_counts.part_of("hrtree/hrtree.c", "hrtree"), "structure")
        self.assertEqual(tb_counts.part_of("quadheap/quadheap.c", "hrtree"), "other")
        self.assertEqual(tb_counts.part_of("???", "hrtree"), "other")
        self.assertIsNone(tb_counts.split({"backend": "hrtree"}))


def result(backend, op, count, variant="", parts=None):
    r = {"backend": backend, "op": op, "n": 1000, "instructions_per_op": count,
         "config": "series=h2h" + ("," + variant if variant else "")}
    if parts:
        r["by_file"] = {"bench/counts.c": parts[0], "core/sched.c": parts[1],
                        "%s/%s.c" % (backend, backend): parts[2]}
    return r


class Targets(unittest.TestCase):
    REFS = {("wahern", "insert"): 63.0, ("wahern", "cancel"): 28.3,
            ("ratas", "insert"): 53.4, ("ratas", "cancel"): 19.0}

    def test_within_and_over_with_the_reason_in_instructions(self):
        rows = tb_counts.target_rows([
            result("timerwheel", "cancel", 37.2, parts=(10.2, 16.2, 10.8)),
            result("kernelwheel", "insert", 108.4, parts=(11.4, 31.0, 66.0)),
            result("floor", "insert", 44.4),
            result("kernelwheel", "insert", 50.0, parts=(1, 1, 48))
            | {"n": 10 ** 5},                       # not the targets' N
        ], self.REFS)
        self.assertEqual([(r["backend"], r["op"]) for r in rows],
                         [("kernelwheel", "insert"), ("timerwheel", "cancel")])
        kw, tw = rows
        self.assertAlmostEqual(kw["target"], 1.3 * 63.0)
        self.assertFalse(kw["within"])
        self.assertEqual(tb_counts.reason_text(kw),
                         "over by 26.5: after the driver's 11.4 and the interface's 31.0 the "
                         "target leaves the structure 39.5, which does 66.0 (wahern's whole "
                         "add: 63.0)")
        self.assertTrue(tw["within"])
        self.assertAlmostEqual(tw["target"], 38.0)
        table = tb_counts.format_targets(rows)
        self.assertIn("1.3 x wahern 63.0 = 81.9", table)
        self.assertRegex(table.splitlines()[2], r"  yes$")

    def test_lazy_cancel_is_held_to_its_own_bound(self):
        rows = tb_counts.target_rows([result("heapqueue", "cancel", 31.1, "roc=off"),
                                      result("quadheap", "cancel", 29.0)], {})
        self.assertEqual([(r["backend"], r["within"], r["reference"]) for r in rows],
                         [("heapqueue", False, None), ("quadheap", True, None)])
        self.assertEqual(rows[0]["target"], tb_counts.LAZY_CANCEL_MAX)
        self.assertTrue(tb_counts.reason_text(rows[0]).startswith("over by 1.1 (no per-file"))

    def test_a_target_without_its_reference_is_left_out(self):
        self.assertEqual(tb_counts.target_rows([result("hrtree", "insert", 200.0)], {}), [])

    def test_the_recorded_references_are_read(self):
        refs = tb_counts.read_references(os.path.join(ROOT, "bench", "cgops", "references.tsv"))
        for name, _ in tb_counts.TARGETS.values():
            self.assertGreater(refs[(name, "insert")], 0)
            self.assertGreater(refs[(name, "cancel")], 0)
        self.assertIn(("floor", "insert"), refs)

    def test_a_malformed_references_file_is_refused_with_its_line(self):
        for body, want in (("wahern\tadd\t1000\n", ":1: want impl"),
                           ("# c\nwahern\tinsert\t1000\t63\n", ":2: want impl"),
                           ("wahern\tadd\tmany\t63\n", ":1: N and instructions"),
                           ("wahern\tadd\t100000\t63\n", ":1: want N = 1000"),
                           ("wahern\tadd\t1000\t-1\n", ":1: want N = 1000")):
            with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
                f.write(body)
            try:
                with self.assertRaises(ValueError) as e:
                    tb_counts.read_references(f.name)
                self.assertIn(want, str(e.exception))
            finally:
                os.unlink(f.name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sanitized"]:
        print("SKIP: a sanitizer build does not run under valgrind")
        sys.exit(77)
    if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
        print("SKIP: timerbench-counts was not built (valgrind/callgrind.h missing)")
        sys.exit(77)
    if not machine.valgrind_version():
        print("SKIP: valgrind is not installed (Debian package valgrind)")
        sys.exit(77)
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
