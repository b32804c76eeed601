#!/usr/bin/env python3
"""tests/resume_test.py — the `bench` suite's check of interrupted runs:
real runs of bench/run.py over a tiny smoke selection, stopped by signals
at several points, left valid and resumable, and resumed to the same set of
instances an uninterrupted run measures; the argument errors, each with its
message and nothing built or written; stale and live locks; results
directories that are not ones or come from another format; the report of a
partial and of a resumed run; a full disk (issue 31, item 12), a
"to continue:" line pasted into a shell (item 13), the ./timerbench script
run from another directory (item 14).  Speed is never asserted, and no
wall-clock limit is set: a signal is sent when the run's own progress line
says the point has been reached.

usage: resume_test.py TIMERBENCH_BENCH
"""
import csv
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN = os.path.join(ROOT, "bench", "run.py")
GENERATE = os.path.join(ROOT, "report", "generate.py")
sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import bench as B  # noqa: E402
from tbkit import results as tb_results  # noqa: E402
from tbkit import runstate as RS  # noqa: E402

BINARY = None
BUILD = None
# A few micro instances, then runtime experiments that each take a while
# in real time: enough steps to stop the run before, in and between them.
FILTER = r"fill/heapqueue/(uniform|short)|lateness/|idle/heapqueue"
PROFILE = "smoke"


def run_py(*args, **kw):
    return subprocess.run([sys.executable, RUN] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, **kw)


def common(out):
    return ["--build-dir", BUILD, "--no-build", "--profile", PROFILE,
            "--filter", FILTER, "--out", out]


class Started:
    """A run.py in its own process group (as a terminal's job is), with its
    stderr read as it comes."""

    def __init__(self, args):
        self.proc = subprocess.Popen([sys.executable, RUN] + args,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE,
                                     universal_newlines=True,
                                     start_new_session=True)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)
            self.cond.notify_all()

    def wait_for(self, pattern):
        """Blocks until a stderr line matches; False if the run ended first."""
        rx = re.compile(pattern)
        with self.cond:
            i = 0
            while True:
                while i < len(self.lines):
                    if self.lines[i] is None:
                        return False
                    if rx.search(self.lines[i]):
                        return True
                    i += 1
                self.cond.wait()

    def finish(self):
        out = self.proc.stdout.read()
        status = self.proc.wait()
        self.reader.join()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return status, out, "\n".join(l for l in self.lines if l is not None)


def load_dir(out):
    """machine.json and every JSON file, each of which must parse."""
    docs = {}
    for f in os.listdir(out):
        if f.endswith(".json"):
            with open(os.path.join(out, f)) as fh:
                docs[f] = json.load(fh)   # a partial document would raise
    return docs


def instances_in(doc):
    return {b["run_name"] for b in doc["benchmarks"]
            if b.get("run_type") == "iteration"}


def all_instances(out):
    got = set()
    for h in B.HARNESSES:
        p = os.path.join(out, h + ".json")
        if os.path.exists(p):
            with open(p) as f:
                got |= instances_in(json.load(f))
    return got


def listed(filter_=FILTER):
    names = set()
    for h in B.HARNESSES:
        names |= set(RS.list_instances(BINARY, ["--profile=" + PROFILE,
                                                "--harness=" + h,
                                                "--benchmark_filter=" + filter_]))
    return names


class Interrupted(unittest.TestCase):
    """Stopped by a signal at several points, then resumed."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tb-resume-")
        cls.expected = listed()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_partial(self, out, signame):
        docs = load_dir(out)
        m = docs["machine.json"]
        self.assertEqual(m["format_version"], RS.FORMAT_VERSION)
        self.assertEqual(m["run"]["status"], "interrupted")
        self.assertEqual(m["run"]["interrupted"]["signal"], signame)
        self.assertGreater(m["run"]["interrupted"]["after_seconds"], 0)
        missing = {n for v in m["instances"]["missing"].values() for n in v}
        expected = {n for v in m["instances"]["expected"].values() for n in v}
        self.assertEqual(expected, self.expected)
        self.assertTrue(missing, "an interrupted run has missing instances")
        have = all_instances(out)
        # what the files hold is exactly what is not missing
        self.assertEqual(have, expected - missing)
        self.assertEqual(m["run"]["interrupted"]["missing_instances"], len(missing))
        # samples only of finished instances
        p = os.path.join(out, "samples.csv")
        if os.path.exists(p):
            with open(p) as f:
                names = {r["benchmark"] for r in csv.DictReader(f)}
            self.assertTrue(names <= {RS.canonical(n) for n in have})
        self.assertTrue(os.path.exists(os.path.join(out, RS.LOCK)) is False,
                        "a stopped run leaves no lock")
        return m, missing

    def report_md(self, out):
        """Generates the report of `out` (no figures), asserts that the
        generator succeeded and returns report.md's text."""
        rep = subprocess.run([sys.executable, GENERATE, out, "--no-figures"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(os.path.join(out, "report.md")) as f:
            return f.read()

    def resume(self, out, *extra):
        r = run_py("--build-dir", BUILD, "--no-build", "--resume", out, *extra)
        return r

    def check_complete(self, out, sessions):
        docs = load_dir(out)
        m = docs["machine.json"]
        self.assertEqual(m["run"]["status"], "complete")
        self.assertEqual(m["instances"]["missing"], {})
        self.assertEqual(len(m["run"]["sessions"]), sessions)
        self.assertEqual(len(m["run"]["resumed_utc"]), sessions - 1)
        self.assertEqual(all_instances(out), self.expected)
        self.assertFalse(os.path.exists(os.path.join(out, RS.JOURNAL_DIR)))
        # the same profile and seed in every session's JSON context
        for h in ("micro", "runtime"):
            ctx = docs[h + ".json"]["context"]
            self.assertEqual(ctx["profile"], PROFILE)
        return m

    def interrupt(self, name, when, sig, group=True):
        out = os.path.join(self.tmp, name)
        s = Started(common(out))
        self.assertTrue(s.wait_for(when), "the run ended before " + when)
        if group:
            os.killpg(s.proc.pid, sig)    # as a terminal's Ctrl-C does
        else:
            s.proc.send_signal(sig)       # `kill` of run.py alone
        status, stdout, err = s.finish()
        return out, status, stdout, err

    def test_sigint_in_first_harness_then_resume(self):
        out, status, stdout, err = self.interrupt(
            "int-micro", r"^\[micro 2/", signal.SIGINT)
        self.assertEqual(status, 128 + signal.SIGINT, err)
        self.assertEqual(stdout.strip(), out)
        m, missing = self.check_partial(out, "SIGINT")
        # the signal lands at instance 2 or a later one that started since
        self.assertRegex(m["run"]["interrupted"]["where"], r"^in micro, instance [2-9]")
        self.assertIn("stopped by SIGINT", err)
        self.assertIn("partial results (valid files) are in " + out, err)
        self.assertIn("to continue: bench/run.py --resume " + out, err)
        # the report of the partial directory: what is there, and exactly
        # what is missing; claims that need it are not tested
        md = self.report_md(out)
        self.assertIn("Partial results:", md)
        lim = md[md.index("## Limitations"):]
        for n in missing:
            k = tb_results.parse_name(n)
            self.assertIn("`%s`" % "/".join(k[:4]), lim)
        claims = md[md.index("## What the classic"):md.index("## Which one")]
        self.assertIn("not tested: the run stopped before", claims)
        r = self.resume(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resuming " + out, r.stderr)
        m = self.check_complete(out, 2)
        self.assertEqual(m["run"]["sessions"][0]["status"], "interrupted")
        md = self.report_md(out)
        self.assertIn("The run was resumed:", md)
        self.assertIn("interrupted by SIGINT at", md)
        self.assertNotIn("Partial results:", md)
        # complete: a second resume has nothing to do
        r = self.resume(out)
        self.assertEqual(r.returncode, 0)
        self.assertIn("nothing to resume", r.stderr)

    def test_sigterm_to_runpy_alone_in_second_harness_twice(self):
        out, status, _, err = self.interrupt(
            "term-runtime", r"^\[runtime 3/", signal.SIGTERM, group=False)
        self.assertEqual(status, 128 + signal.SIGTERM, err)
        m, _ = self.check_partial(out, "SIGTERM")
        self.assertRegex(m["run"]["interrupted"]["where"],
                         r"^in runtime, instance ([3-9]|\d\d)")
        # every micro instance came before: all kept
        self.assertEqual(m["instances"]["done"]["micro"],
                         len(m["instances"]["expected"]["micro"]))
        # stop the resumed session too, then finish in a third
        s = Started(["--build-dir", BUILD, "--no-build", "--resume", out])
        self.assertTrue(s.wait_for(r"^\[runtime 2/"))
        os.killpg(s.proc.pid, signal.SIGHUP)   # the terminal went away
        status, _, err = s.finish()
        self.assertEqual(status, 128 + signal.SIGHUP, err)
        self.check_partial(out, "SIGHUP")
        r = self.resume(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_complete(out, 3)

    def test_killed_without_a_word_is_recovered(self):
        out = os.path.join(self.tmp, "killed")
        s = Started(common(out))
        self.assertTrue(s.wait_for(r"^\[runtime 2/"))
        os.killpg(s.proc.pid, signal.SIGKILL)   # no handler runs
        s.finish()
        with open(os.path.join(out, "machine.json")) as f:
            self.assertEqual(json.load(f)["run"]["status"], "running")
        # the journal kept what finished; --recover folds it in
        r = run_py("--recover", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stale lock of pid %d" % s.proc.pid, r.stderr)
        m = load_dir(out)["machine.json"]
        self.assertEqual(m["run"]["status"], "interrupted")
        self.assertEqual(m["instances"]["done"]["micro"],
                         len(m["instances"]["expected"]["micro"]))
        self.assertEqual(all_instances(out) & self.expected, all_instances(out))
        r = self.resume(out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_complete(out, 2)

    def test_other_commit_refused_unless_forced(self):
        out, status, _, _ = self.interrupt("commit", r"^\[micro 1/", signal.SIGINT)
        self.assertEqual(status, 128 + signal.SIGINT)
        path = os.path.join(out, "machine.json")
        with open(path) as f:
            m = json.load(f)
        m["git"]["commit"] = "0" * 40
        m["machine"]["cpu_model"] = "another CPU"
        RS.write_json(path, m)
        r = self.resume(out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("commit: " + "0" * 40, r.stderr)
        self.assertIn("machine cpu_model: another CPU", r.stderr)
        self.assertIn("--force", r.stderr)
        self.assertEqual(load_dir(out)["machine.json"]["run"]["status"], "interrupted")
        r = self.resume(out, "--force")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("continuing despite", r.stderr)
        self.check_complete(out, 2)

    def test_continue_line_is_shell_quoted(self):
        # a results directory whose name holds a quote, a newline and
        # command substitutions: the printed line, pasted into a shell,
        # names that directory and runs nothing else
        where = os.path.join(self.tmp, "paste")
        os.makedirs(where)
        out = os.path.join(self.tmp, "it's \"q\"\n`touch PWNED` $(touch PWNED2)")
        echo = "%s -c 'import sys; print(repr(sys.argv[1:]))' --resume" % sys.executable
        s = Started(["--build-dir", BUILD, "--no-build", "--profile", PROFILE,
                     "--filter", FILTER, "--harness", "micro", "--out", out,
                     "--resume-command", echo])
        self.assertTrue(s.wait_for(r"^\[micro 1/"))
        os.killpg(s.proc.pid, signal.SIGINT)
        status, _, err = s.finish()
        self.assertEqual(status, 128 + signal.SIGINT, err)
        line = err.split("timerbench: to continue: ", 1)[1]
        self.assertTrue(line.endswith("\n") or not line.endswith(out), line)
        pasted = subprocess.run(["bash", "-c", line.rstrip("\n")], cwd=where,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
        self.assertEqual(pasted.stdout.strip(), repr(["--resume", out]), pasted.stderr)
        self.assertEqual(os.listdir(where), [], "the pasted line ran a command")

    def test_journal_gone_while_running_keeps_the_results_files(self):
        # issue 31, item 15: machine.json says "running", its journal is
        # gone; what the harnesses' JSON holds is done, not missing
        out, status, _, err = self.interrupt(
            "nojournal", r"^\[runtime 2/", signal.SIGINT)
        self.assertEqual(status, 128 + signal.SIGINT, err)
        path = os.path.join(out, "machine.json")
        with open(path) as f:
            m = json.load(f)
        n_micro = len(m["instances"]["expected"]["micro"])
        m["run"]["status"] = "running"
        m["instances"]["missing"] = dict(m["instances"]["expected"])
        RS.write_json(path, m)
        shutil.rmtree(os.path.join(out, RS.JOURNAL_DIR))
        r = run_py("--recover", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = load_dir(out)["machine.json"]
        self.assertNotIn("micro", m["instances"]["missing"])
        self.assertEqual(m["instances"]["done"]["micro"], n_micro)
        have = {RS.canonical(n) for n in all_instances(out)}
        missing = {RS.canonical(n) for v in m["instances"]["missing"].values() for n in v}
        self.assertFalse(have & missing, "an instance in the files is listed missing")


class WriteFailures(unittest.TestCase):
    """A full disk stops the run once, cleanly, and the run can be resumed
    (issue 31, item 12)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-full-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_stopped(self, r, out, what):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(r.stderr.count("No space left on device"), 1, r.stderr)
        self.assertIn("timerbench: cannot write the results: ", r.stderr)
        self.assertIn("to continue once there is room: bench/run.py --resume " + out,
                      r.stderr)
        m = load_dir(out)["machine.json"]
        self.assertEqual(m["run"]["status"], "interrupted")
        self.assertIn(what, m["run"]["interrupted"]["error"])
        self.assertIn("No space left on device", m["run"]["interrupted"]["error"])
        self.assertFalse(os.path.exists(os.path.join(out, RS.LOCK)))
        self.assertEqual([f for f in os.listdir(out) if ".tmp-" in f], [])
        r = run_py("--build-dir", BUILD, "--no-build", "--resume", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(load_dir(out)["machine.json"]["run"]["status"], "complete")

    def test_harness_journal_on_a_full_disk(self):
        # the harness's journal is /dev/full: every write fails with ENOSPC,
        # as on a full disk; the harness says so for each instance
        fake = os.path.join(self.tmp, "build")
        os.makedirs(os.path.join(fake, "bench"))
        wrapper = os.path.join(fake, "bench", "timerbench-bench")
        with open(wrapper, "w") as f:
            f.write("#!%s\nimport os, sys\n"
                    "a = ['--journal=/dev/full' if x.startswith('--journal=') else x "
                    "for x in sys.argv[1:]]\nos.execv(%r, [%r] + a)\n"
                    % (sys.executable, BINARY, BINARY))
        os.chmod(wrapper, 0o755)
        out = os.path.join(self.tmp, "out")
        r = run_py("--build-dir", fake, "--no-build", "--profile", PROFILE,
                   "--filter", FILTER, "--out", out)
        self.check_stopped(r, out, "journal")

    def test_results_file_on_a_full_disk(self):
        # writing micro.json fails as on a full disk (bench/run.py in a
        # process whose tbkit.formats.atomic_write raises ENOSPC for it)
        out = os.path.join(self.tmp, "out")
        code = ("import errno, os, sys\n"
                "sys.path.insert(0, %r)\n"
                "from tbkit import bench as run, formats\n"
                "real = formats.atomic_write\n"
                "def full(path, text):\n"
                "    if path.endswith('micro.json'):\n"
                "        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path + '.tmp')\n"
                "    real(path, text)\n"
                "formats.atomic_write = full\n"
                "sys.exit(run.main(sys.argv[1:]))\n" % ROOT)
        r = subprocess.run([sys.executable, "-c", code, "--build-dir", BUILD,
                            "--no-build", "--profile", PROFILE, "--filter", FILTER,
                            "--harness", "micro", "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.check_stopped(r, out, "micro.json")


class BadArguments(unittest.TestCase):
    """Each refused before anything is built, run or written."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-args-")
        self.empty_build = os.path.join(self.tmp, "no-build-here")
        os.makedirs(self.empty_build)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def refused(self, *args, build=None):
        out = os.path.join(self.tmp, "out")
        r = run_py("--build-dir", build or self.empty_build, "--out", out, *args)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertFalse(os.path.exists(out), "nothing is written")
        self.assertEqual(os.listdir(self.empty_build), [], "nothing is built")
        return r.stderr

    def test_unknown_backend_lists_the_registered(self):
        err = self.refused("--backends", "heapqueue,nosuch")
        self.assertIn("no backend 'nosuch'", err)
        for b in RS.registered_backends(ROOT):
            self.assertIn(b, err)

    def test_unknown_profile(self):
        err = self.refused("--profile", "nosuch")
        self.assertIn("invalid choice: 'nosuch'", err)

    def test_filter_that_selects_nothing(self):
        err = self.refused("--no-build", "--filter", "^nothing/matches$",
                           build=BUILD)
        self.assertIn("selects no benchmark", err)

    def test_out_not_empty(self):
        out = os.path.join(self.tmp, "full")
        os.makedirs(out)
        with open(os.path.join(out, "notes.txt"), "w") as f:
            f.write("mine\n")
        r = run_py("--build-dir", self.empty_build, "--out", out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("exists and is not empty", r.stderr)
        self.assertEqual(os.listdir(out), ["notes.txt"])
        self.assertEqual(os.listdir(self.empty_build), [])

    def test_out_locked_by_a_live_run(self):
        out = os.path.join(self.tmp, "busy")
        os.makedirs(out)
        with open(os.path.join(out, RS.LOCK), "w") as f:
            f.write(json.dumps({"pid": os.getpid(), "host": "here"}))
            f.flush()
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            r = run_py("--build-dir", self.empty_build, "--out", out)
            self.assertEqual(r.returncode, 2)
            self.assertIn("in use by another run (pid %d" % os.getpid(), r.stderr)
            r = run_py("--build-dir", self.empty_build, "--resume", out)
            self.assertEqual(r.returncode, 2)
        self.assertEqual(os.listdir(self.empty_build), [])

    def test_resume_keeps_the_runs_own_options(self):
        err = self.refused("--resume", self.tmp, "--profile", "quick")
        self.assertIn("--profile", err)
        self.assertIn("a resumed run keeps its own profile", err)

    def test_stale_lock_is_taken_over(self):
        out = os.path.join(self.tmp, "stale")
        os.makedirs(out)
        dead = subprocess.Popen(["true"])
        dead.wait()
        with open(os.path.join(out, RS.LOCK), "w") as f:
            f.write(json.dumps({"pid": dead.pid, "started_utc": "earlier"}))
        r = run_py("--build-dir", BUILD, "--no-build", "--profile", PROFILE,
                   "--filter", "fill/heapqueue/uniform", "--harness", "micro",
                   "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stale lock of pid %d" % dead.pid, r.stderr)
        self.assertEqual(load_dir(out)["machine.json"]["run"]["status"], "complete")

    def test_resume_of_what_is_not_a_results_directory(self):
        r = run_py("--build-dir", self.empty_build, "--resume", self.tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not a results directory: it has no machine.json", r.stderr)
        r = run_py("--build-dir", self.empty_build, "--resume",
                   os.path.join(self.tmp, "absent"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such results directory", r.stderr)
        self.assertEqual(os.listdir(self.empty_build), [])

    def test_results_of_other_formats(self):
        # format 1: the committed fixture, written before format_version
        old = os.path.join(HERE, "fixtures", "report-quick")
        r = run_py("--build-dir", self.empty_build, "--resume", old)
        self.assertEqual(r.returncode, 2)
        self.assertIn("written by timerbench 0.1.0 (commit 79efacbc57e7), "
                      "results format 1", r.stderr)
        rep = subprocess.run([sys.executable, GENERATE, old, "--no-figures",
                              "--out", os.path.join(self.tmp, "rep1")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        with open(os.path.join(self.tmp, "rep1", "report.md")) as f:
            self.assertIn("in results format 1", f.read())
        # a newer format than this checkout knows: refused, saying who wrote it
        new = os.path.join(self.tmp, "newer")
        shutil.copytree(old, new)
        with open(os.path.join(new, "machine.json")) as f:
            m = json.load(f)
        m["format_version"] = 99
        m["build"]["timerbench_version"] = "9.9.9"
        RS.write_json(os.path.join(new, "machine.json"), m)
        r = run_py("--build-dir", self.empty_build, "--resume", new)
        self.assertEqual(r.returncode, 2)
        self.assertIn("timerbench 9.9.9 (commit 79efacbc57e7) in results format 99", r.stderr)
        rep = subprocess.run([sys.executable, GENERATE, new, "--no-figures"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        self.assertEqual(rep.returncode, 2)
        self.assertIn("timerbench 9.9.9 (commit 79efacbc57e7) in results format 99",
                      rep.stderr)
        self.assertFalse(os.path.exists(os.path.join(new, "report.md")))

    def test_empty_backends_are_refused(self):
        # `--backends ''` meant every backend
        err = self.refused("--no-build", "--backends", "")
        self.assertIn("--backends '' has an empty name", err)
        err = self.refused("--no-build", "--backends", "heapqueue,,quadheap")
        self.assertIn("has an empty name", err)

    def test_out_onto_a_dangling_symlink(self):
        # refused before anything is built, not FileExistsError after
        out = os.path.join(self.tmp, "link")
        os.symlink(os.path.join(self.tmp, "gone"), out)
        r = run_py("--build-dir", BUILD, "--no-build", "--profile", PROFILE,
                   "--filter", FILTER, "--out", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn("is a symbolic link to %s, which does not exist"
                      % os.path.join(self.tmp, "gone"), r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "gone")))
        # the counts profile adds to a directory: the same refusal
        r = run_py("--build-dir", self.empty_build, "--profile", "counts", "--out", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is a symbolic link to", r.stderr)
        self.assertEqual(os.listdir(self.empty_build), [])

    def test_format_version_of_the_wrong_type(self):
        d = os.path.join(self.tmp, "str")
        shutil.copytree(os.path.join(HERE, "fixtures", "report-quick"), d)
        with open(os.path.join(d, "machine.json")) as f:
            m = json.load(f)
        m["format_version"] = "2"
        RS.write_json(os.path.join(d, "machine.json"), m)
        r = run_py("--build-dir", self.empty_build, "--resume", d)
        self.assertEqual(r.returncode, 2)
        self.assertIn('format_version is "2", a JSON string, not an integer', r.stderr)

    def test_timerbench_script_says_why(self):
        # the case: the reason on the terminal, not in micro.log
        r = subprocess.run([os.path.join(ROOT, "timerbench"), "bench",
                            "--backends", "nosuch", "--out",
                            os.path.join(self.tmp, "o")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no backend 'nosuch'; the registered backends are: ", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")))


class CallerPaths(unittest.TestCase):
    """./timerbench run from another directory: every path argument is the
    caller's (issue 31, item 14), and a bad --from is a bad argument (exit
    2, item 15).  Each case is refused or re-renders: nothing is run."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-cwd-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def script(self, *args):
        return subprocess.run([os.path.join(ROOT, "timerbench")] + list(args),
                              cwd=self.tmp, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)

    def test_resume(self):
        shutil.copytree(os.path.join(HERE, "fixtures", "report-quick"),
                        os.path.join(self.tmp, "old"))
        r = self.script("report", "--resume", "old")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("%s was written by timerbench 0.1.0" % os.path.join(self.tmp, "old"),
                      r.stderr)

    def test_out(self):
        # "bench" is also a directory of the checkout: --out must be this one
        os.makedirs(os.path.join(self.tmp, "bench"))
        open(os.path.join(self.tmp, "bench", "mine"), "w").close()
        r = self.script("bench", "--out", "bench")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--out %s exists and is not empty" % os.path.join(self.tmp, "bench"),
                      r.stderr)

    def test_from(self):
        shutil.copytree(os.path.join(HERE, "fixtures", "report-quick"),
                        os.path.join(self.tmp, "r"))
        r = self.script("report", "--from", "r")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "r", "report.md")))
        r = self.script("report", "--from", "nowhere")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(os.path.join(self.tmp, "nowhere") + ": no such results directory",
                      r.stderr)
        r = self.script("report", "--from", "/")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("/ is not a results directory", r.stderr)

    def test_replay_traces(self):
        # a directory where a trace is named: refused by replay's check,
        # before anything is built (and --backends would refuse it next)
        os.makedirs(os.path.join(self.tmp, "t.trace"))
        r = self.script("replay", "t.trace", "--backends", "nosuch")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(os.path.join(self.tmp, "t.trace") + ":", r.stderr)
        self.assertNotIn("no such trace file", r.stderr)


class Pieces(unittest.TestCase):
    """The journal's reading and the filters, on hand-made input."""

    def test_exact_filters_select_exactly(self):
        names = sorted(listed("fill/|lateness/floor"))
        self.assertTrue(any("." in n or "=" in n for n in names))
        picked = names[::3]
        got = []
        for flt in RS.exact_filters(picked):
            got += RS.list_instances(BINARY, ["--profile=" + PROFILE,
                                              "--benchmark_filter=" + flt,
                                              "--harness=micro,runtime"])
        self.assertEqual(sorted(got), sorted(picked))

    def test_long_selections_are_split(self):
        names = ["op/b/w/series=h2h/N:%d/manual_time" % i for i in range(5000)]
        flts = RS.exact_filters(names)
        self.assertGreater(len(flts), 1)
        self.assertTrue(all(len(f) < 2 * RS.MAX_FILTER_CHARS for f in flts))
        joined = "|".join(f[2:-2] for f in flts)
        self.assertEqual(joined.count("|") + 1, 5000)

    def test_torn_line_and_incomplete_instance(self):
        d = tempfile.mkdtemp(prefix="tb-journal-")
        try:
            os.makedirs(os.path.join(d, RS.JOURNAL_DIR))
            a = "a/x/w/series=h2h/N:1/manual_time"
            b = "a/x/w/series=h2h/N:2/manual_time"
            it = lambda n, i: {"name": n, "run_name": n, "run_type": "iteration",
                               "repetitions": 2, "repetition_index": i, "real_time": 1.0}
            ag = lambda n: {"name": n + "_mean", "run_name": n, "run_type": "aggregate",
                            "aggregate_name": "mean", "real_time": 1.0}
            lines = [{"context": {"profile": "smoke"}, "benchmarks": []},
                     {"benchmarks": [it(a, 0), it(a, 1)]}, {"benchmarks": [ag(a)]},
                     {"benchmarks": [it(b, 0), it(b, 1)]}]
            with open(RS.journal_path(d, "micro", 1), "w") as f:
                f.write("".join(json.dumps(l) + "\n" for l in lines))
                f.write('{"benchmarks": [{"name": "torn')
            facts = {"run": {"sessions": [{"session": 1}]},
                     "instances": {"expected": {"micro": [a, b]}}}
            missing = RS.commit(d, facts)
            # b's runs are there but not its mean: it did not finish
            self.assertEqual(missing["micro"], [b])
            with open(os.path.join(d, "micro.json")) as f:
                doc = json.load(f)
            self.assertEqual([x["name"] for x in doc["benchmarks"]], [a, a, a + "_mean"])
            self.assertEqual(doc["context"]["profile"], "smoke")
        finally:
            shutil.rmtree(d)

    def test_a_complete_harness_is_sealed(self):
        d = tempfile.mkdtemp(prefix="tb-journal-")
        try:
            os.makedirs(os.path.join(d, RS.JOURNAL_DIR))
            a = "a/x/w/series=h2h/N:1/manual_time"
            run = {"name": a, "run_name": a, "run_type": "iteration",
                   "repetitions": 1, "repetition_index": 0, "real_time": 1.0}
            with open(RS.journal_path(d, "micro", 1), "w") as f:
                f.write(json.dumps({"context": {}, "benchmarks": []}) + "\n")
                f.write(json.dumps({"benchmarks": [run]}) + "\n")
            facts = {"run": {"sessions": [{"session": 1}]},
                     "instances": {"expected": {"micro": [a]}}}
            self.assertEqual(RS.commit(d, facts), {"micro": []})
            self.assertEqual(facts["instances"]["sealed"], ["micro"])
            # what is done to a finished harness's file afterwards stays
            path = os.path.join(d, "micro.json")
            with open(path) as f:
                doc = json.load(f)
            doc["benchmarks"].append(dict(run, repetition_index=1))
            RS.write_json(path, doc)
            RS.commit(d, facts)
            with open(path) as f:
                self.assertEqual(len(json.load(f)["benchmarks"]), 2)
        finally:
            shutil.rmtree(d)

    def test_family_and_canonical_names(self):
        n = "lateness/floor/light/slack=default/N:0/iterations:1/repeats:1/manual_time"
        self.assertEqual(RS.canonical(n), "lateness/floor/light/slack=default/N:0")
        self.assertEqual(RS.family_of(n),
                         "lateness/floor/light/slack=default/iterations:1/repeats:1/manual_time")
        self.assertEqual(RS.family_of("fill/heapqueue/uniform/series=h2h/N:100/manual_time"),
                         "fill/heapqueue/uniform/series=h2h/manual_time")

    def test_reader_and_writer_agree_on_the_format(self):
        self.assertEqual(tb_results.FORMAT_VERSION, RS.FORMAT_VERSION)


class MachineFieldsAndArguments(unittest.TestCase):
    """Issue 42: machine.json with a field of the wrong type is refused by
    --resume naming the field, never a traceback (11); a backend named
    twice and a negative --lateness are argument errors of their own (12)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-")
        self.empty_build = os.path.join(self.tmp, "no-build-here")
        os.makedirs(self.empty_build)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def interrupted_run(self, **run):
        """A format-2 results directory stopped mid-run, with `run`'s fields
        set in machine.json's run."""
        d = os.path.join(self.tmp, "run-%d" % len(os.listdir(self.tmp)))
        shutil.copytree(os.path.join(HERE, "fixtures", "report-quick"), d)
        with open(os.path.join(d, "machine.json")) as f:
            m = json.load(f)
        m["format_version"] = RS.FORMAT_VERSION
        m["run"].update(status="interrupted", sessions=[])
        m["run"].update(run)
        m["instances"] = {"expected": {}, "missing": {}}
        RS.write_json(os.path.join(d, "machine.json"), m)
        return d

    def test_a_field_of_the_wrong_type_is_named(self):
        for field, value, what in (
                ("profile", 3, "run.profile is a number (3), where a string is expected"),
                ("sessions", 5, "run.sessions is a number (5), where a list of objects"),
                ("harnesses", "micro", "run.harnesses is a string (\"micro\"), where a "
                                       "list of strings"),
                ("seed", "1", "run.seed is a string"),
                ("status", ["interrupted"], "run.status is a list")):
            d = self.interrupted_run(**{field: value})
            # (--force: past the machine and commit check, where a wrong
            # type was a TypeError traceback)
            for args in (["--check", "--resume", d],
                         ["--build-dir", self.empty_build, "--resume", d],
                         ["--build-dir", self.empty_build, "--resume", d, "--force"]):
                with self.subTest(field=field, args=args[0], force="--force" in args):
                    r = run_py(*args)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertNotIn("Traceback", r.stderr)
                    self.assertIn("fields of the wrong type", r.stderr)
                    self.assertIn(what, r.stderr)
                    self.assertEqual(os.listdir(self.empty_build), [])

    def test_duplicates_and_negative_budgets(self):
        out = os.path.join(self.tmp, "out")
        for args, what in (
                (["--backends", "heapqueue,quadheap,heapqueue"],
                 "--backends names 'heapqueue' more than once"),
                (["--lateness", "-5us"], "'-5us' is negative"),
                (["--lateness", "-12.5%"], "'-12.5%' is negative")):
            with self.subTest(args=args):
                r = run_py("--build-dir", self.empty_build, "--out", out, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(what, r.stderr)
                self.assertNotIn("expected one argument", r.stderr)
                self.assertFalse(os.path.exists(out))
                self.assertEqual(os.listdir(self.empty_build), [])


class ConcurrentBuilds(unittest.TestCase):
    """Issue 42, item 2: two runs at once with one build directory take
    turns at configuring and building it (runstate.build_lock) instead of
    the second failing on Meson's lock.  meson and ninja are stand-ins on
    PATH: the meson one refuses to run while another is in the directory,
    as Meson does, and holds the directory a while; the ninja one links the
    real harness into place."""

    FAKE_MESON = """#!/bin/sh
# $1 is setup or configure, $2 the build directory
mkdir -p "$2"
if ! mkdir "$2/.in-use" 2>/dev/null; then
    echo "Some other Meson process is already using this build directory. Exiting." >&2
    exit 1
fi
echo "$1" >>"$2/../meson.calls"
sleep 2
touch "$2/build.ninja"
rmdir "$2/.in-use"
"""
    FAKE_NINJA = """#!/bin/sh
# ninja [-j N] -C DIR TARGET: the target linked to the real harness
while [ "$1" != -C ]; do shift; done
mkdir -p "$2/bench"
ln -sf '%s' "$2/bench/timerbench-bench"
"""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-42-build-")
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        for name, text in (("meson", self.FAKE_MESON), ("ninja", self.FAKE_NINJA % BINARY)):
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(bin_dir, name), 0o755)
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_two_runs_at_once_share_the_build_directory(self):
        build = os.path.join(self.tmp, "build")
        procs = [subprocess.Popen(
            [sys.executable, RUN, "--build-dir", build, "--profile", PROFILE,
             "--filter", "fill/heapqueue/uniform", "--harness", "micro",
             "--out", os.path.join(self.tmp, "out%d" % k)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            env=self.env) for k in (1, 2)]
        done = [p.communicate() + (p.returncode,) for p in procs]
        for out, err, status in done:
            self.assertNotIn("Some other Meson process", err)
            self.assertEqual(status, 0, err)
        for k in (1, 2):
            m = load_dir(os.path.join(self.tmp, "out%d" % k))["machine.json"]
            self.assertEqual(m["run"]["status"], "complete")
        with open(os.path.join(self.tmp, "meson.calls")) as f:
            self.assertEqual(sorted(f.read().split()), ["configure", "setup"])
        self.assertTrue(os.path.exists(RS.build_lock_path(build)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BINARY = os.path.abspath(sys.argv.pop(1))
    BUILD = os.path.dirname(os.path.dirname(BINARY))
    unittest.main(verbosity=2)
