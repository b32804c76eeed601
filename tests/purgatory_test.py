#!/usr/bin/env python3
"""purgatory_test.py — the `purgatory` suite: timerbench-play (bench/play.c,
bench/player.c), the open-loop real-time player of issue 41, and its sweep
driver (tbkit/purgrun.py).

    python3 tests/purgatory_test.py TIMERBENCH_PLAY [-v]

- a small trace played on the floor and on every backend: every operation
  issued at or after its intended time, in order, its lag measured (the
  row's lag figures are those of the operations), every uncancelled
  timeout fired once, none early, the cancelled ones never;
- the purgatory generator: cancel share about 92 % (few) and 50 % (many),
  arrival rate near the target with exponential gaps, seeded;
- a trace too fast for the machine (every operation at one instant, or a
  huge --scale, or a rate no player can issue) is reported saturated with
  its lag, never as a rate;
- bad input: clear errors, exit 2;
- the driver: its stop rule on a fake player, then a tiny grid end to end
  (purgatory.json's format, the rows' keys, the sweep stopping at the
  first saturated rate).

Real time on a shared machine: no wall-clock limit is asserted; margins
are generous (cancels 50 ms before their deadlines, a lateness bound of
seconds).
"""

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BINARY = None

sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import purgrun  # noqa: E402

MS = 1000000


def play(*args, timeout=300):
    p = subprocess.run([BINARY] + [str(a) for a in args],
                       capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("ascii")


def play_row(*args):
    rc, out, err = play(*args)
    if rc != 0:
        raise AssertionError("timerbench-play %s: exit %d: %s"
                             % (" ".join(map(str, args)), rc, err))
    return json.loads(out)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def read_trace(path):
    """[(t, op, id, delay)] of a v1 trace file."""
    ops = []
    with open(path) as f:
        lines = f.read().splitlines()
    assert lines[0] == "#timerbench-trace v1 unit=ns", lines[0]
    header = [i for i, line in enumerate(lines)
              if line == "time,op,id,delay,period"]
    for line in lines[header[0] + 1:]:
        t, op, tid, delay, _ = line.split(",")
        ops.append((int(t), op, int(tid), int(delay) if delay else None))
    return ops


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()


class SmallTrace(Base):
    """40 requests 2 ms apart, 60 ms timeouts; every other one cancelled
    10 ms after its schedule (50 ms before its deadline)."""

    N = 40

    def trace(self):
        events = []
        for i in range(self.N):
            t = i * 2 * MS
            events.append((t, "schedule,%d,%d," % (i, 60 * MS)))
            if i % 2 == 0:
                events.append((t + 10 * MS, "cancel,%d,," % i))
        events.sort(key=lambda e: e[0])
        text = "#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n" + \
            "".join("%d,%s\n" % e for e in events)
        return write(os.path.join(self.dir, "small.trace"), text), events

    def test_every_subject(self):
        path, events = self.trace()
        rc, out, _ = play("--list")
        self.assertEqual(rc, 0)
        subjects = [line.split("\t") for line in out.splitlines()]
        names = [s[0] for s in subjects]
        self.assertIn("floor", names)
        self.assertIn("heapqueue", names)
        sides = {s[0]: s[1] for s in subjects}
        self.assertEqual(sides["floor"], "floor")
        self.assertEqual(sides["hierwheel"], "backend")
        for name, side, _structure in subjects:
            if side not in ("backend", "floor"):
                continue  # the library subjects have their own tests
            with self.subTest(subject=name):
                self.check_play(name, path, events)

    def check_play(self, name, path, events):
        lags = os.path.join(self.dir, "lags-%s.csv" % name)
        row = play_row("--subject", name, "--trace", path, "--lags", lags)
        with open(lags) as f:
            ops = list(csv.DictReader(f))
        self.assertEqual(len(ops), len(events))
        # in the trace's order, each at its own intended time
        for (t, what), op in zip(events, ops):
            self.assertEqual(int(op["intended_ns"]), t)
            self.assertEqual(op["kind"], what.split(",")[0])
        lag = [int(op["lag_ns"]) for op in ops]
        self.assertTrue(all(x >= 0 for x in lag), "an operation before "
                        "its intended time: %s" % lag)
        actual = [int(op["intended_ns"]) + x for op, x in zip(ops, lag)]
        self.assertEqual(actual, sorted(actual), "issued out of order")
        self.assertEqual(row["lag_max_ns"], max(lag))
        srt = sorted(lag)
        self.assertEqual(row["lag_p50_ns"], srt[(len(srt) + 1) // 2 - 1])
        self.assertEqual(row["requests"], self.N)
        self.assertEqual(sorted(row), sorted(purgrun.ROW_KEYS))
        self.assertEqual(row["subject"], name)
        if name == "floor":
            self.assertEqual(row["side"], "floor")
            self.assertEqual(row["fired"], 0)
            self.assertIsNone(row["lateness_p50_ns"])
            self.assertIsNone(row["peak_pending"])
            return
        # the uncancelled half fired (the player exits 1 on a fire of a
        # cancelled request or one before its deadline)
        self.assertEqual(row["fired"], self.N // 2)
        self.assertAlmostEqual(row["fired_share"], 0.5)
        self.assertGreaterEqual(row["lateness_p50_ns"], 0)
        self.assertLess(row["lateness_p99_ns"], 5 * 1000 * MS)
        self.assertGreaterEqual(row["peak_pending"], 1)
        self.assertGreaterEqual(row["peak_zombies"], 0)
        self.assertGreater(row["cpu_ns_per_request"], 0)
        self.assertGreater(row["player_cpu_ns_per_request"], 0)
        self.assertGreater(row["offered_rate"], 0)
        # 78 ms from the first arrival to the last: 40 / 0.078 s
        self.assertAlmostEqual(row["offered_rate"], self.N / 0.078, delta=1)

    def test_reschedule(self):
        """A reschedule of a live timer is a cancel and a schedule of a new
        request at the same instant; a cancel of a fired one is left out."""
        text = ("#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n"
                "0,schedule,7,%d,\n" % (100 * MS) +
                "%d,reschedule,7,%d,\n" % (10 * MS, 20 * MS) +
                "%d,cancel,9,,\n" % (11 * MS) +
                "%d,schedule,8,%d,\n" % (12 * MS, 5 * MS))
        path = write(os.path.join(self.dir, "r.trace"), text)
        lags = os.path.join(self.dir, "r.csv")
        row = play_row("--subject", "heapqueue", "--trace", path,
                       "--lags", lags)
        with open(lags) as f:
            ops = [(o["kind"], int(o["intended_ns"])) for o in csv.DictReader(f)]
        self.assertEqual(ops, [("schedule", 0), ("cancel", 10 * MS),
                               ("schedule", 10 * MS), ("schedule", 12 * MS)])
        self.assertEqual(row["requests"], 3)
        self.assertEqual(row["fired"], 2)

    def test_scale(self):
        path, events = self.trace()
        lags = os.path.join(self.dir, "s.csv")
        row = play_row("--subject", "floor", "--trace", path, "--scale", "4",
                       "--lags", lags)
        with open(lags) as f:
            got = [int(o["intended_ns"]) for o in csv.DictReader(f)]
        self.assertEqual(got, [t // 4 for t, _ in events])
        self.assertAlmostEqual(row["offered_rate"], 4 * self.N / 0.078,
                               delta=1)


class Generator(Base):
    """The purgatory workload, dumped as a trace (--dump)."""

    def dump(self, shape, rate, seconds, seed=1):
        path = os.path.join(self.dir, "%s-%s.trace" % (shape, seed))
        rc, _, err = play("--model", "purgatory", "--shape", shape,
                          "--rate", rate, "--seconds", seconds,
                          "--seed", seed, "--dump", path)
        self.assertEqual(rc, 0, err)
        return path

    def check(self, shape, want_cancel):
        rate, seconds = 20000, 2.0
        ops = read_trace(self.dump(shape, rate, seconds))
        sched = [o for o in ops if o[1] == "schedule"]
        cancel = [o for o in ops if o[1] == "cancel"]
        n = len(sched)
        # Poisson: the count within 5 standard deviations of rate * seconds
        self.assertLess(abs(n - rate * seconds), 5 * math.sqrt(rate * seconds))
        share = len(cancel) / n
        self.assertLess(abs(share - want_cancel), 0.015,
                        "cancel share %.4f" % share)
        times = [o[0] for o in ops]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(o[3] == 200 * MS for o in sched))
        # each request scheduled once; a cancel after its schedule and
        # before its timeout
        at = {}
        for t, _, tid, _ in sched:
            self.assertNotIn(tid, at)
            at[tid] = t
        for t, _, tid, _ in cancel:
            self.assertLessEqual(at[tid], t)
            self.assertLess(t - at[tid], 200 * MS)
        # exponential gaps: mean 1/rate, coefficient of variation 1
        arr = [o[0] for o in sched]
        gaps = [b - a for a, b in zip(arr, arr[1:])]
        mean = sum(gaps) / len(gaps)
        sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps))
        self.assertAlmostEqual(mean, 1e9 / rate, delta=0.03 * 1e9 / rate)
        self.assertAlmostEqual(sd / mean, 1.0, delta=0.05)

    def test_few(self):
        # P(lognormal(ln 20 ms, ln 3 / 0.67449) < 200 ms) = 0.921
        self.check("few", 0.921)

    def test_many(self):
        # the median is the timeout: half complete in time
        self.check("many", 0.5)

    def test_seeded(self):
        def text(seed):
            with open(self.dump("few", 5000, 0.2, seed=seed)) as f:
                return f.read()
        a, b, c = text(3), text(3), text(4)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_row_rates(self):
        row = play_row("--subject", "floor", "--model", "purgatory",
                       "--shape", "few", "--rate", 20000, "--seconds", 0.3)
        self.assertEqual(row["target_rate"], 20000)
        self.assertEqual(row["shape"], "few")
        self.assertEqual(row["seconds"], 0.3)
        self.assertLess(abs(row["offered_rate"] / 20000 - 1), 0.1)
        self.assertLessEqual(row["achieved_rate"], row["offered_rate"] * 1.0001)


class TooFast(Base):
    """A trace faster than any machine: saturated, with its lag."""

    def test_one_instant(self):
        n = 200000
        lines = "".join("0,schedule,%d,%d,\n" % (i, 10 * MS) for i in range(n))
        path = write(os.path.join(self.dir, "burst.trace"),
                     "#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n"
                     + lines)
        row = play_row("--subject", "floor", "--trace", path)
        self.assertTrue(row["saturated"])
        self.assertIn("one instant", row["why"])
        self.assertIsNone(row["offered_rate"])
        self.assertIsNone(row["target_rate"])
        self.assertGreater(row["lag_max_ns"], 0)
        self.assertGreater(row["lag_growth_ns"], 0)
        self.assertEqual(row["requests"], n)

    def test_scale(self):
        path = os.path.join(self.dir, "g.trace")
        rc, _, err = play("--model", "purgatory", "--shape", "few", "--rate",
                          20000, "--seconds", 0.5, "--dump", path)
        self.assertEqual(rc, 0, err)
        row = play_row("--subject", "floor", "--trace", path, "--scale", 1e7)
        self.assertTrue(row["saturated"])
        self.assertIn("below offered", row["why"])
        self.assertLess(row["achieved_rate"], 0.95 * row["offered_rate"])
        self.assertGreater(row["lag_max_ns"], 0)

    def test_rate(self):
        # 10^6 requests in 10 ms: 10^8 a second, past any player
        row = play_row("--subject", "floor", "--model", "purgatory",
                       "--shape", "many", "--rate", 1e8, "--seconds", 0.01)
        self.assertTrue(row["saturated"])
        self.assertTrue(row["why"])
        self.assertLess(row["achieved_rate"], 0.95 * row["offered_rate"])


class BadInput(Base):
    def bad(self, want, *args):
        rc, out, err = play(*args)
        self.assertEqual(rc, 2, "%s: exit %d %s" % (args, rc, err))
        self.assertIn(want, err)
        self.assertEqual(out, "")

    def test_usage(self):
        g = ["--model", "purgatory", "--shape", "few", "--seconds", "0.1"]
        self.bad("unknown subject 'nope'", "--subject", "nope", "--rate", "1", *g)
        self.bad("--subject is required", "--rate", "1", *g)
        self.bad("rate must be a number above 0", "--subject", "floor",
                 "--rate", "0", *g)
        self.bad("rate must be a number above 0", "--subject", "floor",
                 "--rate", "-5", *g)
        self.bad("--rate wants a number, got 'fast'", "--subject", "floor",
                 "--rate", "fast", *g)
        self.bad("unknown shape 'some'", "--subject", "floor", "--rate", "1",
                 "--model", "purgatory", "--shape", "some", "--seconds", "1")
        self.bad("needs --rate and --seconds", "--subject", "floor",
                 "--model", "purgatory", "--shape", "few", "--rate", "10")
        self.bad("seconds must be above 0", "--subject", "floor", "--rate",
                 "10", "--model", "purgatory", "--shape", "few",
                 "--seconds", "0")
        self.bad("unknown model 'kafka'", "--subject", "floor", "--model",
                 "kafka")
        self.bad("either --model purgatory or --trace", "--subject", "floor")
        self.bad("either --model purgatory or --trace", "--subject", "floor",
                 "--trace", "x", "--rate", "1", *g)
        self.bad("unknown option '--fast'", "--subject", "floor", "--fast", "1")
        self.bad("--seed wants a whole number", "--subject", "floor",
                 "--seed", "-1", "--rate", "1", *g)
        self.bad("more than 2^30 requests", "--subject", "floor",
                 "--rate", "1e9", *g[:-1], "10")

    def test_traces(self):
        self.bad("cannot open", "--subject", "floor", "--trace",
                 os.path.join(self.dir, "none.trace"))
        notrace = write(os.path.join(self.dir, "no.trace"), "hello\n")
        self.bad("no.trace:1: not a timerbench trace", "--subject", "floor",
                 "--trace", notrace)
        back = write(os.path.join(self.dir, "back.trace"),
                     "#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n"
                     "5,schedule,1,10,\n3,schedule,2,10,\n")
        self.bad("back.trace:4: time 3 goes backwards", "--subject", "floor",
                 "--trace", back)
        per = write(os.path.join(self.dir, "per.trace"),
                    "#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n"
                    "0,schedule,1,10,\n1,periodic,2,10,10\n")
        self.bad("per.trace:4: periodic timer id 2", "--subject", "floor",
                 "--trace", per)
        ok = write(os.path.join(self.dir, "ok.trace"),
                   "#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n"
                   "0,schedule,1,10,\n")
        self.bad("scale must be a number above 0", "--subject", "floor",
                 "--trace", ok, "--scale", "0")
        self.bad("--scale is for --trace", "--subject", "floor", "--model",
                 "purgatory", "--shape", "few", "--rate", "1", "--seconds",
                 "1", "--scale", "2")


class NotARegularFile(Base):
    """--json, --lags and --dump onto a path that is no regular file (a
    FIFO here; /dev/null and /dev/stdout alike) write to it directly: a
    write-then-rename would replace the device or FIFO with a file (it
    once did, to this machine's /dev/null)."""

    def test_fifo_stays_a_fifo(self):
        import stat
        import threading
        with tempfile.TemporaryDirectory() as d:
            for opt in ("--json", "--lags", "--dump"):
                fifo = os.path.join(d, "out" + opt)
                os.mkfifo(fifo)
                got = []
                reader = threading.Thread(
                    target=lambda: got.append(open(fifo, "rb").read()))
                reader.start()
                rc, out, err = play("--subject", "floor", "--model", "purgatory",
                                    "--shape", "few", "--rate", "2000",
                                    "--seconds", "0.05", opt, fifo)
                reader.join(60)
                self.assertEqual(rc, 0, err)
                self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), opt)
                self.assertTrue(got and got[0], opt)
                self.assertEqual([n for n in os.listdir(d) if ".tmp" in n], [])


class Pinning(Base):
    """The player on the first usable CPU, the subject on the second; on
    one CPU nothing is pinned and the note says so."""

    def test_pinning(self):
        cpus = sorted(os.sched_getaffinity(0))
        rc, out, err = play("--pinning")
        self.assertEqual(rc, 0, err)
        pin = json.loads(out)
        if len(cpus) >= 2:
            self.assertEqual((pin["player_cpu"], pin["subject_cpu"]),
                             (cpus[0], cpus[1]))
        else:
            self.assertIsNone(pin["player_cpu"])
        rc, out, _ = play("--pinning", "--no-pin")
        self.assertEqual(json.loads(out)["player_cpu"], None)
        self.assertIn("--no-pin", json.loads(out)["note"])

    def test_one_cpu(self):
        if not shutil.which("taskset"):
            self.skipTest("no taskset (util-linux)")
        cpu = min(os.sched_getaffinity(0))
        p = subprocess.run(["taskset", "-c", str(cpu), BINARY, "--pinning"],
                           capture_output=True, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        pin = json.loads(p.stdout)
        self.assertEqual((pin["player_cpu"], pin["subject_cpu"]),
                         (None, None))
        self.assertIn("one CPU", pin["note"])
        # and a play runs there, unpinned
        p = subprocess.run(["taskset", "-c", str(cpu), BINARY, "--subject",
                            "heapqueue", "--model", "purgatory", "--shape",
                            "few", "--rate", "2000", "--seconds", "0.05"],
                           capture_output=True, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["subject"], "heapqueue")


def fake_row(subject, shape, rate, saturated, rep=0):
    return {"subject": subject, "shape": shape, "target_rate": rate,
            "saturated": saturated, "repetition": rep}


class StopRule(unittest.TestCase):
    """purgrun.sweep on a fake player whose subjects saturate at known
    rates."""

    def run_sweep(self, grid, saturates, fail=()):
        played = []

        def fake(subject, shape, rate, seconds, seed, rep):
            played.append((subject, shape, rate, rep))
            if (subject, rate) in fail:
                raise purgrun.PlayError("%s broke at %g" % (subject, rate))
            return fake_row(subject, shape, rate, saturates(subject, shape,
                                                             rate, rep), rep)
        rows, skipped = purgrun.sweep([("a", "backend"), ("b", "floor")],
                                      grid, fake)
        return played, rows, skipped

    def test_first_saturated(self):
        grid = dict(purgrun.GRIDS["standard"], stride=1)
        played, rows, skipped = self.run_sweep(
            grid, lambda s, sh, r, k: r >= (40000 if s == "a" else 160000))
        # the saturated rate confirmed by a second play (repetition 1)
        self.assertEqual([p[2:] for p in played if p[:2] == ("a", "few")],
                         [(10000, 0), (20000, 0), (40000, 0), (40000, 1)])
        self.assertEqual([p[2] for p in played if p[:2] == ("b", "many")],
                         [10000, 20000, 40000, 80000, 160000, 160000])
        self.assertEqual(len(rows), len(played))
        self.assertEqual(skipped, [])

    def first_saturated(self, rows, subject, shape):
        by_rate = {}
        for r in rows:
            if (r["subject"], r["shape"]) == (subject, shape):
                by_rate.setdefault(r["target_rate"], []).append(r)
        sat = [rate for rate, rs in by_rate.items()
               if purgrun.rate_saturated(rs)]
        return min(sat) if sat else None

    def test_stride_finds_the_same_rate(self):
        grid = purgrun.GRIDS["standard"]
        self.assertEqual(grid["stride"], 3)
        rates = grid["rates"]
        for limit in rates + [10 ** 9]:
            with self.subTest(limit=limit):
                played, rows, _ = self.run_sweep(
                    grid, lambda s, sh, r, k: r >= limit)
                self.assertEqual(self.first_saturated(rows, "a", "few"),
                                 limit if limit in rates else None)
                a = [p[2] for p in played if p[:2] == ("a", "few")]
                # every third rate and those skipped below the first
                # saturated: at most two grid steps past it
                self.assertTrue(all(r <= 4 * limit for r in a), a)
                # four coarse, two refined, each saturated one confirmed
                self.assertLessEqual(len(a), 4 + 2 + 2)
                # rows in rate order
                got = [r["target_rate"] for r in rows
                       if (r["subject"], r["shape"]) == ("a", "few")]
                self.assertEqual(got, sorted(got))
        played, _, _ = self.run_sweep(grid, lambda *a: False)
        self.assertEqual([p[2] for p in played if p[:2] == ("a", "few")],
                         [10000, 80000, 640000, 2560000])
        # saturated from 40000: 80000 (confirmed), then 20000 and 40000
        # (confirmed), lowest first, and the sweep stops
        played, _, _ = self.run_sweep(grid, lambda s, sh, r, k: r >= 40000)
        self.assertEqual([p[2:] for p in played if p[:2] == ("a", "few")],
                         [(10000, 0), (80000, 0), (80000, 1), (20000, 0),
                          (40000, 0), (40000, 1)])
        # saturated from 80000: 20000 and 40000 below it played, neither
        # saturated
        played, _, _ = self.run_sweep(grid, lambda s, sh, r, k: r >= 80000)
        self.assertEqual([p[2:] for p in played if p[:2] == ("a", "few")],
                         [(10000, 0), (80000, 0), (80000, 1), (20000, 0),
                          (40000, 0)])
        # a grid of eight: the last rate is played, not stepped over
        grid8 = dict(grid, rates=rates[:8])
        played, _, _ = self.run_sweep(grid8, lambda *a: False)
        self.assertEqual([p[2] for p in played if p[:2] == ("a", "few")],
                         [10000, 80000, 640000, 1280000])

    def test_unconfirmed_saturation_goes_on(self):
        grid = dict(purgrun.GRIDS["standard"], stride=1)
        self.assertEqual(grid["confirm"], 1)
        # a stall at 20000 (repetition 0 only), then saturated for real
        played, _, _ = self.run_sweep(
            grid, lambda s, sh, r, k: (r == 20000 and k == 0) or r >= 80000)
        self.assertEqual([p[2:] for p in played if p[:2] == ("a", "few")],
                         [(10000, 0), (20000, 0), (20000, 1), (40000, 0),
                          (80000, 0), (80000, 1)])
        # without confirmation the stall ends the sweep
        grid["confirm"] = 0
        played, _, _ = self.run_sweep(
            grid, lambda s, sh, r, k: (r == 20000 and k == 0) or r >= 80000)
        self.assertEqual([p[2] for p in played if p[:2] == ("a", "few")],
                         [10000, 20000])

    def test_never_saturated_plays_the_whole_grid(self):
        grid = dict(purgrun.GRIDS["standard"], stride=1)
        played, _, _ = self.run_sweep(grid, lambda *a: False)
        self.assertEqual(len(played), 2 * 2 * len(grid["rates"]))
        self.assertEqual(grid["rates"][-1], 2560000)

    def test_two_in_a_row(self):
        grid = dict(purgrun.GRIDS["full"], repetitions=1)
        self.assertEqual(grid["rates"][-1], 5120000)
        self.assertEqual(grid["stop_after"], 2)
        # one saturated rate alone (14142) does not stop the sweep
        sat = {14142, 40000, 56569}
        played, _, _ = self.run_sweep(grid, lambda s, sh, r, k: r in sat)
        self.assertEqual([p[2] for p in played if p[:2] == ("a", "few")],
                         [10000, 14142, 20000, 28284, 40000, 56569])

    def test_majority_of_repetitions(self):
        grid = {"rates": [1, 2, 3], "seconds": 0.1, "repetitions": 3,
                "stop_after": 1}
        # rate 2: one repetition of three saturated (not the rate); rate 3:
        # two of three (the rate)
        played, _, _ = self.run_sweep(
            grid, lambda s, sh, r, k: (r == 2 and k == 0) or (r == 3 and k < 2))
        self.assertEqual(len([p for p in played if p[:2] == ("a", "few")]), 9)
        grid["rates"] = [3, 4]
        played, _, _ = self.run_sweep(
            grid, lambda s, sh, r, k: (r == 3 and k < 2))
        self.assertEqual([p[2] for p in played if p[:2] == ("a", "few")],
                         [3, 3, 3])

    def test_failed_play_skips_the_subject_only(self):
        grid = {"rates": [1, 2, 3], "seconds": 0.1, "repetitions": 1,
                "stop_after": 1}
        played, rows, skipped = self.run_sweep(grid, lambda *a: False,
                                               fail={("a", 2)})
        self.assertEqual(skipped, [{"subject": "a", "why": "a broke at 2"}])
        self.assertEqual([p for p in played if p[0] == "a"],
                         [("a", "few", 1, 0), ("a", "few", 2, 0)])
        self.assertEqual(len([p for p in played if p[0] == "b"]), 6)
        self.assertEqual(len(rows), 7)

    def test_stopped_by_a_signal(self):
        grid = {"rates": [1, 2, 3], "seconds": 0.1, "repetitions": 1,
                "stop_after": 1}
        played, saved = [], []

        def fake(subject, shape, rate, seconds, seed, rep):
            played.append(rate)
            return fake_row(subject, shape, rate, False, rep)
        with self.assertRaises(purgrun.Stopped):
            purgrun.sweep([("a", "backend"), ("b", "floor")], grid, fake,
                          stopped=lambda: len(played) >= 4,
                          after_subject=lambda rows, sk: saved.append(
                              len(rows)))
        # no play after the signal, and the rows so far saved
        self.assertEqual(played, [1, 2, 3, 1])
        self.assertEqual(saved, [4])

    def test_subjects(self):
        listed = [("heapqueue", "backend"), ("hierwheel", "backend"),
                  ("floor", "floor"), ("libuv", "library")]
        self.assertEqual(purgrun.choose_subjects(listed), listed)
        self.assertEqual(purgrun.choose_subjects(listed, ["hierwheel"]),
                         listed[1:])
        self.assertEqual(purgrun.choose_subjects(listed, None, ["floor"]),
                         [("floor", "floor")])
        with self.assertRaisesRegex(ValueError, "unknown backend nope"):
            purgrun.choose_subjects(listed, ["nope"])
        with self.assertRaisesRegex(ValueError, "unknown subject libx"):
            purgrun.choose_subjects(listed, None, ["libx"])


class Driver(Base):
    """python3 -m tbkit.purgrun on a tiny grid, end to end."""

    def driver(self, *args):
        return subprocess.run(
            [sys.executable, "-m", "tbkit.purgrun", "--binary", BINARY]
            + list(args), capture_output=True, universal_newlines=True,
            cwd=ROOT, timeout=600)

    def test_tiny_grid(self):
        out = os.path.join(self.dir, "res")
        # the floor at 10^8 requests/s saturates: its sweep stops there,
        # and the rate after it is never played
        p = self.driver("--out", out, "--profile", "smoke", "--subjects",
                        "floor,hierwheel", "--rates", "5000,100000000,"
                        "200000000", "--seconds", "0.005")
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(out, "purgatory.json")
        self.assertEqual(p.stdout.strip(), path)
        self.assertIn("timerbench: purgatory:", p.stderr)
        with open(path) as f:
            doc = json.load(f)
        self.assertEqual(sorted(doc), ["format", "grid", "pinning",
                                       "profile", "rows", "skipped"])
        self.assertEqual(doc["format"], 1)
        self.assertEqual(doc["profile"], "smoke")
        self.assertEqual(doc["grid"], {"rates": [5000, 100000000, 200000000],
                                       "seconds": 0.005, "repetitions": 1})
        self.assertEqual(sorted(doc["pinning"]),
                         ["note", "player_cpu", "subject_cpu"])
        self.assertTrue(doc["pinning"]["note"])
        self.assertEqual(doc["skipped"], [])
        for row in doc["rows"]:
            self.assertEqual(sorted(row), sorted(purgrun.ROW_KEYS))
        for subject in ("floor", "hierwheel"):
            for shape in ("few", "many"):
                rates = [r["target_rate"] for r in doc["rows"]
                         if r["subject"] == subject and r["shape"] == shape]
                self.assertEqual(rates[:2], [5000, 100000000][:len(rates)])
                self.assertNotIn(200000000, rates)
                last = [r for r in doc["rows"] if r["subject"] == subject
                        and r["shape"] == shape][-1]
                self.assertTrue(last["saturated"], last)
        self.assertFalse(os.path.exists(path + ".tmp"))
        self.assertEqual([f for f in os.listdir(out)], ["purgatory.json"])

    def test_bad_arguments(self):
        out = os.path.join(self.dir, "res")
        p = self.driver("--out", out, "--subjects", "nope")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown subject nope", p.stderr)
        p = self.driver("--out", out, "--rates", "40000,10000")
        self.assertEqual(p.returncode, 2)
        self.assertIn("ascending", p.stderr)
        p = self.driver("--out", out, "--rates", "0")
        self.assertEqual(p.returncode, 2)
        self.assertFalse(os.path.exists(out))

    def test_run_py_step(self):
        """bench/run.py runs the step in quick, standard and full, each with
        a grid, and --no-purgatory leaves it out."""
        from tbkit import bench
        self.assertEqual(purgrun.PROFILE_STEP, ("quick", "standard", "full"))
        for profile in purgrun.PROFILE_STEP:
            self.assertIn(profile, purgrun.GRIDS)
        self.assertTrue(bench.parse_args(["--no-purgatory"]).no_purgatory)
        self.assertFalse(bench.parse_args([]).no_purgatory)

    def test_into_without_binary(self):
        facts = purgrun.purgatory_into("standard", self.dir, self.dir,
                                       build=False)
        self.assertEqual(facts["status"], "skipped")
        self.assertIn("is not built", facts["why"])
        self.assertIsNone(purgrun.purgatory_into("counts", self.dir, self.dir,
                                                 build=False))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: purgatory_test.py TIMERBENCH_PLAY [unittest args]")
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
