#!/usr/bin/env python3
"""tests/report_inputs_test.py — hostile inputs on the reading side (the
`report` suite's cases of issue 42, a second adversarial probe): report/generate.py and
report/compare.py on copies of the committed quick run
(tests/fixtures/report-quick) made hostile: a stray copy of a results file
(item 3), a path that is not UTF-8 (7), a path with quotes (8), a signal
while the report is written (9), machine.json fields of the wrong type
(11), and two runs of different profiles compared (12).  Never writes into
tests/fixtures.

usage: report_inputs_test.py
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "fixtures", "report-quick")
GENERATE = os.path.join(ROOT, "report", "generate.py")
COMPARE = os.path.join(ROOT, "report", "compare.py")
HAVE_GNUPLOT = shutil.which("gnuplot") is not None
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import results as tb_results  # noqa: E402

try:
    import scipy  # noqa: F401  (compare's test)
    HAVE_SCIPY = True
except ImportError:
    HAVE_SCIPY = False


def copy_fixture(dst):
    """A copy of the quick run at `dst` (str or bytes), without its README."""
    src = os.fsencode(FIXTURE) if isinstance(dst, bytes) else FIXTURE
    shutil.copytree(src, dst, ignore=lambda d, names: [
        n for n in names if n in ("README.md", b"README.md")])
    return dst


def generate(d, *extra):
    """report/generate.py on `d` (str or bytes); (exit, stdout bytes,
    stderr text)."""
    p = subprocess.run([sys.executable, GENERATE, d] + list(extra),
                       capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def edit_machine(d, edit):
    path = os.path.join(d, "machine.json")
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    edit(m)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(m, f)


class StrayFiles(unittest.TestCase):
    """3: a results directory's files are known by name."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_copy_is_not_more_repetitions(self):
        d = copy_fixture(os.path.join(self.tmp, "r"))
        before = tb_results.load(d)
        shutil.copy(os.path.join(d, "micro.json"), os.path.join(d, "micro (copy).json"))
        shutil.copy(os.path.join(d, "samples.csv"), os.path.join(d, "samples.old.csv"))
        open(os.path.join(d, "notes.txt"), "w").close()
        after = tb_results.load(d)
        self.assertEqual(
            {k: len(m.times) for k, m in before.measurements.items()},
            {k: len(m.times) for k, m in after.measurements.items()})
        ignored = sorted(os.path.basename(p.path) for p in after.problems
                         if "is not read" in p.what)
        self.assertEqual(ignored, ["micro (copy).json", "samples.old.csv"])
        self.assertNotIn(os.path.join(d, "micro (copy).json"), after.files)
        rc, _, err = generate(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertIn("micro (copy).json: is not read", err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("`micro (copy).json` is not read", md)

    @unittest.skipUnless(HAVE_SCIPY, "compare needs scipy (python3-scipy)")
    def test_compare_names_it_and_counts_the_same(self):
        a = copy_fixture(os.path.join(self.tmp, "a"))
        b = copy_fixture(os.path.join(self.tmp, "b"))
        clean = subprocess.run([sys.executable, COMPARE, a, b], capture_output=True,
                               text=True, timeout=300)
        shutil.copy(os.path.join(b, "micro.json"), os.path.join(b, "micro (copy).json"))
        stray = subprocess.run([sys.executable, COMPARE, a, b], capture_output=True,
                               text=True, timeout=300)
        self.assertEqual(stray.returncode, 0, stray.stderr)
        self.assertEqual(clean.stdout, stray.stdout)
        self.assertIn("micro (copy).json: is not read", stray.stderr)

    def test_without_machine_json_any_benchmark_json_is_read(self):
        # Google Benchmark output saved by hand: no machine.json, any name
        d = os.path.join(self.tmp, "gb")
        os.makedirs(d)
        shutil.copy(os.path.join(FIXTURE, "micro.json"), os.path.join(d, "mine.json"))
        res = tb_results.load(d)
        self.assertTrue(res.measurements)
        self.assertEqual(res.problems, [])


class Paths(unittest.TestCase):
    """7 and 8: any bytes in the results path."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_path_that_is_not_utf8(self):
        d = copy_fixture(os.path.join(os.fsencode(self.tmp), b"run-\xff\xfe"))
        rc, out, err = generate(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("internal error", err)
        self.assertEqual(out.splitlines(), [os.path.join(d, b"report.md"),
                                            os.path.join(d, b"report.html")])
        with open(os.path.join(d, b"report.md"), encoding="utf-8") as f:
            md = f.read()      # whole UTF-8: the bytes written \xNN
        self.assertIn("run-\\xff\\xfe", md)

    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_quotes_in_the_path_and_figures(self):
        for name in ("it's", 'say "x"', "a'b\"c $(touch PWNED) `x`", b"q'\xff"):
            with self.subTest(name=name):
                parent = os.fsencode(self.tmp) if isinstance(name, bytes) else self.tmp
                d = copy_fixture(os.path.join(parent, name))
                rc, _, err = generate(d)
                self.assertEqual(rc, 0, err)
                self.assertNotIn("not drawn", err)
                figs = os.listdir(os.path.join(d, b"figures" if isinstance(d, bytes)
                                               else "figures"))
                self.assertGreaterEqual(len([f for f in figs if f.endswith(
                    b".svg" if isinstance(d, bytes) else ".svg")]), 10)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "PWNED")))
                self.assertFalse(os.path.exists("PWNED"))


class Signals(unittest.TestCase):
    """9: no staging directory left, whatever catchable signal stops it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_staging_removed_on_each_signal(self):
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT,
                    signal.SIGUSR1):
            with self.subTest(signal=sig.name):
                d = copy_fixture(os.path.join(self.tmp, sig.name))
                p = subprocess.Popen([sys.executable, GENERATE, d],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                staged = False
                # the signal goes once the staging directory is there (it
                # is while the figures are drawn); no time limit is set
                while p.poll() is None:
                    if any(n.startswith(".report-") for n in os.listdir(d)):
                        staged = True
                        p.send_signal(sig)
                        break
                    time.sleep(0.005)
                err = p.stderr.read().decode("utf-8", "replace")
                st = p.wait()
                p.stderr.close()
                self.assertTrue(staged, "the report finished before the signal: " + err)
                self.assertEqual(st, 128 + sig, err)
                self.assertNotIn("Traceback", err)
                self.assertIn("stopped by %s" % sig.name, err)
                self.assertEqual(sorted(n for n in os.listdir(d) if n.startswith(".")), [],
                                 err)
                # report.md and report.html were not there, and are not now
                self.assertFalse(os.path.exists(os.path.join(d, "report.md")))
                self.assertFalse(os.path.exists(os.path.join(d, "report.html")))


class MachineTypes(unittest.TestCase):
    """11: each machine.json field of the wrong type named, no internal
    error."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_fields_of_the_wrong_type_are_named_and_left_out(self):
        cases = (
            ("run", "sessions", 5, "run.sessions is a number (5), where a list of "
                                   "objects is expected"),
            ("run", "profile", 3, "run.profile is a number (3), where a string"),
            ("run", "status", {"x": 1}, "run.status is an object"),
            ("run", "interrupted", "yes", "run.interrupted is a string"),
            ("run", "exit_status", [1], "run.exit_status is a list"),
            ("run", "errors", [1, 2], "run.errors is a list ([1, 2]), where a list of strings"),
            ("machine", "cores", "many", "machine.cores is a string"),
            ("build", "backends", "heapqueue", "build.backends is a string"),
            (None, "instances", [], "instances is a list"),
            (None, "run", 7, "run is a number"))
        for section, field, value, what in cases:
            with self.subTest(field=field):
                d = copy_fixture(os.path.join(self.tmp, "%s-%s" % (section, field)))

                def edit(m):
                    (m[section] if section else m)[field] = value
                    m["format_version"] = 2
                edit_machine(d, edit)
                rc, _, err = generate(d, "--no-figures")
                self.assertEqual(rc, 0, err)
                self.assertNotIn("internal error", err)
                self.assertIn(what, err)
                with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                    md = f.read().replace("\\", "")   # Markdown's escapes
                self.assertIn(what, md)

    def test_a_well_typed_machine_json_has_no_such_problem(self):
        res = tb_results.load(FIXTURE)
        self.assertEqual([str(p) for p in res.problems], [])


@unittest.skipUnless(HAVE_SCIPY, "compare needs scipy (python3-scipy)")
class CompareProfiles(unittest.TestCase):
    """12: compare names the run settings in which A and B differ."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def compare(self, a, b):
        p = subprocess.run([sys.executable, COMPARE, a, b], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_profile_seed_and_budget_differences(self):
        a = copy_fixture(os.path.join(self.tmp, "a"))
        b = copy_fixture(os.path.join(self.tmp, "b"))
        self.assertNotIn("warning: the runs differ", self.compare(a, b))

        def smoke(m):
            m["run"].update(profile="smoke", seed=2, lateness="50us")
        edit_machine(b, smoke)
        out = self.compare(a, b).splitlines()
        warn = [l for l in out if l.startswith("warning: the runs differ")]
        self.assertEqual(len(warn), 3, out[-8:])
        self.assertIn("warning: the runs differ in profile: A quick, B smoke", warn[0])
        seed = tb_results.load(a).fact("seed")     # the JSON context's
        self.assertIn("in seed: A %s, B 2" % seed, warn[1])
        self.assertIn("in lateness budget: A (not recorded), B 50us", warn[2])
        # before the counts and the geometric mean they qualify
        gmean = [i for i, l in enumerate(out) if "instances in both" in l][0]
        self.assertLess(out.index(warn[-1]), gmean)


if __name__ == "__main__":
    unittest.main()
