#!/usr/bin/env python3
"""replay_test.py — the `replay` suite: timerbench-replay (bench/replay.c)
on the trace fixtures of tests/fixtures/traces/, `./timerbench replay`'s
driver (bench/replay.py) and the report's section on replayed traces.

    python3 tests/replay_test.py TIMERBENCH_REPLAY [-v]

- every bad-trace rule of the format gets its FILE:LINE error and exit 2;
- the counted cases (cancel of an id not live, reschedule of one) are
  counted, not fatal;
- hand.trace is replayed on every backend and every fire, lateness and
  count is checked against values worked out by hand (below);
- a random trace (ids reused, same-instant events, zero delays, periodic
  timers, reschedules) replays on every backend with its checks passing;
- a replay results directory renders: section, table, verdict by its rule,
  a row in "Which one to use"; a damaged replay.json is named, not fatal.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRACES = os.path.join(HERE, "fixtures", "traces")
GENERATE = os.path.join(ROOT, "report", "generate.py")
DRIVER = os.path.join(ROOT, "bench", "replay.py")
HAVE_GNUPLOT = shutil.which("gnuplot") is not None
BINARY = None

sys.path.insert(0, os.path.join(ROOT, "report"))
import tb_replay
import tb_stats as S  # noqa: E402

MS = 1000000


def replay(*args, timeout=600):
    # errors="strict" on stderr: the binary's messages must be ASCII
    p = subprocess.run([BINARY] + list(args), capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("ascii")


def fixture(name):
    return os.path.join(TRACES, name)


class BadTraces(unittest.TestCase):
    """Each rule: the file, the line and what is wrong; exit 2, no crash."""

    CASES = [
        ("bad-first-line.trace", 1, "not a timerbench trace: the first line must be "
                                    "'#timerbench-trace v1 unit=<ns|us|ms>'"),
        ("bad-header.trace", 3, "expected the header line 'time,op,id,delay,period'"),
        ("unknown-op.trace", 4, "unknown op 'expire'"),
        ("time-backwards.trace", 6, "time 9 goes backwards (line 4 was at 10 us)"),
        ("schedule-live-id.trace", 4, "schedule of id 7, which is still live "
                                      "(scheduled on line 3)"),
        ("truncated.trace", 5, "truncated last line: no newline and 2 of 5 fields"),
        ("non-integer.trace", 4, "delay '1.5' is not an integer"),
        ("negative.trace", 3, "delay -5 is negative"),
        ("missing-delay.trace", 3, "schedule needs a delay"),
        ("zero-period.trace", 3, "period must be > 0"),
        ("too-many-fields.trace", 4, "expected 5 fields (time,op,id,delay,period), got 6"),
        ("empty.trace", 1, "empty file"),
        # one grammar with tools/tb_trace.py (issue 31, 10): digits only, at
        # most 20 of them, no byte-order mark
        ("bom.trace", 1, "starts with a UTF-8 byte-order mark; save the file without it"),
        ("plus-sign.trace", 3, "delay '+5' is not an integer"),
        ("leading-space.trace", 3, "delay ' 5' is not an integer"),
        ("too-many-digits.trace", 3, "delay 000000000000000000005 is out of range "
                                     "(21 digits, more than 20)"),
        # what a bad field holds is echoed as ASCII, at most 40 bytes (5)
        ("raw-bytes.trace", 3, "unknown op 'sch\\xe9dule\\x01\\x1b[31m'"),
        ("utf8-cut.trace", 3, "unknown op '%s...'" % ("\\xc3\\xa9" * 20)),
    ]

    def test_each_rule_names_file_line_and_reason(self):
        for name, line, what in self.CASES:
            for mode in (["--parse-only"], ["--reps", "1"]):
                with self.subTest(trace=name, mode=mode[0]):
                    rc, out, err = replay(*(mode + [fixture(name)]))
                    self.assertEqual(rc, 2, err)
                    self.assertEqual(out, "")
                    first = err.strip().splitlines()[0]
                    self.assertTrue(first.startswith("%s:%d: " % (fixture(name), line)), first)
                    self.assertIn(what, first)

    def test_no_such_file(self):
        rc, _, err = replay("--parse-only", fixture("nonexistent.trace"))
        self.assertEqual(rc, 2)
        self.assertIn("nonexistent.trace: cannot open", err)

    def test_a_bad_trace_among_good_ones_stops_before_replaying(self):
        rc, out, err = replay("--reps", "1", fixture("hand.trace"), fixture("unknown-op.trace"))
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertNotIn("checked", err)

    def test_bad_arguments(self):
        for args, what in ((["--backends", "nosuch", fixture("hand.trace")], "no backend 'nosuch'"),
                           (["--backends", "", fixture("hand.trace")],
                            "--backends '' has an empty name"),
                           (["--backends", "heapqueue,,quadheap", fixture("hand.trace")],
                            "--backends 'heapqueue,,quadheap' has an empty name"),
                           (["--reps", "0", fixture("hand.trace")], "--reps takes 1..64"),
                           (["--tick", "x", fixture("hand.trace")], "--tick takes"),
                           (["--bogus", fixture("hand.trace")], "unknown option '--bogus'"),
                           ([], "usage")):
            with self.subTest(args=args):
                rc, _, err = replay(*args)
                self.assertEqual(rc, 2)
                self.assertIn(what, err)


class Counted(unittest.TestCase):
    def test_counted_cases_are_not_fatal(self):
        rc, out, err = replay("--reps", "1", "--quiet", fixture("counted.trace"))
        self.assertEqual(rc, 0, err)
        t = json.loads(out)["traces"][0]
        # cancel 42 (never scheduled), cancel 1 at its deadline (it has
        # fired), cancel 2 after its cancel: 3; reschedule 2 (not live): 1
        self.assertEqual(t["cancel_unknown"], 3)
        self.assertEqual(t["reschedule_unknown"], 1)
        self.assertEqual(t["events"], 7)
        self.assertEqual(t["ops"], {"schedule": 2, "periodic": 0, "cancel": 4, "reschedule": 1})
        self.assertEqual(t["timers"], 3)     # 1, 2 (rescheduled as new), 2 again
        self.assertEqual(t["cancelled"], 1)  # only the cancel at 12 ms hit a live timer
        for b in t["backends"]:
            self.assertEqual(b["fires"], 2, b["name"])  # timer 1 at 10 ms, timer 2 at 14 ms
            self.assertNotIn("reschedule", b["ns_per_op"])
            self.assertEqual(b["ns_per_op"]["schedule"]["count"], 3)
            self.assertEqual(b["ns_per_op"]["cancel"]["count"], 1)


def ceil_to(v, tick):
    return -(-v // tick) * tick


class HandTrace(unittest.TestCase):
    """tests/fixtures/traces/hand.trace, worked out by hand (times in us):

      line  event                        timer           deadline
         5  0    schedule 1, 2500        A               2500
         6  0    schedule 2, 5000        B               5000
         7  1000 cancel 2                B cancelled
         8  1000 reschedule 3, 3000      C (3 not live:  4000
                                           reschedule_unknown)
         9  1500 cancel 9                (cancel_unknown)
        11  2000 reschedule 3, 1000      C cancelled, D  3000
        12  2000 periodic 4, 500, 1000   P               2500, 3500, ...
        13  3000 cancel 1                (A is due at 2500: it has fired:
                                          cancel_unknown)
        14  3000 schedule 1, 700         E (id 1 reused) 3700
        15  4000 schedule 5, 0           F               4000
      end: 4000; P is cancelled at 4000 + 1000 = 5000 after its runs at
      2500, 3500, 4500.  Timers 7 (A..F, P), cancelled by the trace 2
      (B, C), fires 7: A, D, E, F once, P three times.
      A heap runs each at its deadline: lateness 0.  A wheel at a 1 ms tick
      runs each at the first tick at or after its deadline: A 2500 -> 3000,
      D 3000, P 2500 -> 3000, 3500 -> 4000, 4500 -> 5000, E 3700 -> 4000,
      F 4000: late 500, 0, 500, 500, 500, 300, 0 = 2300 us in all, p50 500.
      Peak pending at 2000 us (after its events): A, B, C, D, P with the
      cancelled B and C still held by the heaps (remove-on-cancel off,
      Timer's lazy cancel): 5; Netty's wheel drops cancelled timeouts at
      its next tick, so C (cancelled at 2000) is still counted: 4; Kafka's
      wheel unlinks at once: 3; and so does STPE with remove-on-cancel on
      (heapqueue+roc, replayed beside heapqueue): 3; Go's heap (quadheap)
      cleans its zombies at a check once they pass a quarter of it (B, one
      of three, at the advance to 2000) and re-arms C in place as D
      (tb_reschedule: one timer fewer submitted): 3.
    """

    DEADLINES = [2500, 3000, 2500, 3500, 4500, 3700, 4000]
    PEAK = {"heapqueue": 5, "heapqueue+roc": 3, "timerthread": 5, "timerwheel": 4,
            "hierwheel": 3, "quadheap": 3}

    @classmethod
    def setUpClass(cls):
        rc, out, err = replay("--reps", "2", "--quiet", "--tick", str(MS), fixture("hand.trace"))
        if rc != 0:
            raise AssertionError("hand.trace replay failed: %s" % err)
        cls.doc = json.loads(out)
        cls.t = cls.doc["traces"][0]

    def test_trace_facts(self):
        t = self.t
        self.assertEqual(t["events"], 10)
        self.assertEqual(t["ops"], {"schedule": 4, "periodic": 1, "cancel": 3, "reschedule": 2})
        self.assertEqual((t["cancel_unknown"], t["reschedule_unknown"]), (2, 1))
        self.assertEqual((t["timers"], t["cancelled"]), (7, 2))
        self.assertAlmostEqual(t["cancel_ratio"], 2 / 7.0, places=5)
        self.assertEqual((t["start_ns"], t["end_ns"]), (0, 4000 * 1000))
        # delays A..F, P in ns: 0 500 700 1000 2500 3000 5000 us
        self.assertEqual(t["delay_ns"]["min"], 0)
        self.assertEqual(t["delay_ns"]["p50"], 1000 * 1000)
        self.assertEqual(t["delay_ns"]["max"], 5000 * 1000)
        self.assertEqual([p[0] for p in t["delay_cdf"]],
                         [x * 1000 for x in (0, 500, 700, 1000, 2500, 3000, 5000)])
        self.assertEqual(t["comments"][0][:1], "#")

    def test_every_registered_backend_replayed(self):
        names = [b["name"] for b in self.t["backends"]]
        self.assertGreaterEqual(len(names), 4)
        for n in self.PEAK:
            self.assertIn(n, names)

    def test_fires_lateness_and_counts(self):
        for b in self.t["backends"]:
            with self.subTest(backend=b["name"]):
                self.assertEqual(b["fires"], 7)
                self.assertEqual(b["lateness"]["fires"], 7)
                self.assertEqual(b["stats"]["fired"], 7)
                # a reschedule done in place submits no new timer
                in_place = b.get("reschedules_in_place", 0)
                self.assertIn(in_place, (0, 1))     # line 11 only
                self.assertEqual(b["stats"]["submitted"], 7 - in_place)
                self.assertEqual(b["checks"]["uncancelled_fired_once"], 4)
                self.assertEqual(b["checks"]["cancelled_never_fired"], 2)
                tick = b["tick_ns"]
                if b["ticked"]:
                    self.assertEqual(tick, MS)
                    late = sorted(ceil_to(d * 1000, tick) - d * 1000 for d in self.DEADLINES)
                else:
                    late = [0] * 7
                self.assertEqual(b["lateness"]["sum_ns"], sum(late))
                self.assertEqual(b["lateness"]["ns"]["p50"], late[3])
                self.assertEqual(b["lateness"]["ns"]["max"], late[-1])
                self.assertEqual(b["lateness"]["ticks"]["max"],
                                 late[-1] / float(tick) if b["ticked"] else 0)
                self.assertEqual(sum(b["lateness"]["whole_ticks_hist"]), 7)
                if b["name"] in self.PEAK:
                    self.assertEqual(b["peak_pending"], self.PEAK[b["name"]])
                self.assertGreater(b["bytes_at_peak"], 0)
                kinds = b["ns_per_op"]
                # 4 schedules + the reschedule of a non-live id; one live
                # cancel (line 7); one live reschedule; one periodic
                # advances of the per-kind pass: to each instant after the
                # first (1000, 2000, 3000, 4000) and to P's stop at 5000,
                # which also runs F (due 4000, scheduled at 4000)
                self.assertEqual({k: v["count"] for k, v in kinds.items()},
                                 {"schedule": 5, "periodic": 1, "cancel": 1,
                                  "reschedule": 1, "expire": 7, "advance": 5})
                self.assertEqual(b["advances"], 5)
                for k in ("ns_per_event", "cpu_ms_per_million_events"):
                    s = b[k]
                    self.assertEqual(len(s["reps"]), 2)
                    self.assertTrue(s["min"] <= s["median"] <= s["max"])
                # sampled after every event: the times are the trace's
                self.assertEqual([p[0] for p in b["pending_samples"]],
                                 [x * 1000 for x in (0, 0, 1000, 1000, 2000, 2000, 3000, 4000)])
                self.assertEqual(max(p[1] for p in b["pending_samples"]), b["peak_pending"])


class SameFormatAsTheTools(unittest.TestCase):
    """The replay's parser (C) and tools/tb_trace.py (the importer's and
    generators' reader, Python) implement D4 apart: they must reject the
    same lines and count the same things."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ROOT, "tools"))
        try:
            import tb_trace
        except ImportError:
            raise unittest.SkipTest("tools/tb_trace.py is not in this checkout")
        cls.T = tb_trace

    def test_same_errors_on_the_same_lines(self):
        for name, line, _ in BadTraces.CASES:
            with self.subTest(trace=name):
                with self.assertRaises(self.T.TraceError) as e:
                    self.T.read(fixture(name))
                self.assertEqual(e.exception.line, line)

    def test_same_counts(self):
        traces = [fixture("hand.trace"), fixture("counted.trace")]
        kernel = os.path.join(ROOT, "traces", "kernel-tcp-loopback.trace")
        if os.path.exists(kernel):
            traces.append(kernel)
        with tempfile.TemporaryDirectory() as tmp:
            gen = os.path.join(ROOT, "tools", "tracegen.py")
            if os.path.exists(gen):
                for model in ("purgatory", "clientserver", "hold"):
                    out = os.path.join(tmp, model + ".trace")
                    subprocess.run([sys.executable, gen, model, "--seed", "3", "--events",
                                    "2000", "--out", out], check=True, timeout=300)
                    traces.append(out)
            rc, out, err = replay("--reps", "1", "--quiet", "--backends", "hierwheel", *traces)
            self.assertEqual(rc, 0, err)
            for path, t in zip(traces, json.loads(out)["traces"]):
                with self.subTest(trace=os.path.basename(path)):
                    st = self.T.stats(self.T.read(path))
                    unit = {"ns": 1, "us": 1000, "ms": 1000000}[st["unit"]]
                    self.assertEqual(t["events"], st["events"])
                    self.assertEqual(t["ops"], st["ops"])
                    self.assertEqual(t["timers"], st["armings"])
                    self.assertEqual(t["cancelled"], st["cancelled"])
                    self.assertAlmostEqual(t["cancel_ratio"], st["cancel_ratio"], places=5)
                    self.assertEqual((t["cancel_unknown"], t["reschedule_unknown"]),
                                     (st["cancel_unknown"], st["reschedule_unknown"]))
                    self.assertEqual(t["delay_ns"]["min"], st["delay_min"] * unit)
                    self.assertEqual(t["delay_ns"]["max"], st["delay_max"] * unit)
                    self.assertEqual(t["end_ns"], st["duration"] * unit)
                    self.assertEqual(t["backends"][0]["checks"]["uncancelled_fired_once"],
                                     st["fired"])


class Encoding(unittest.TestCase):
    def test_a_comment_not_in_utf8_keeps_the_json_readable(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "latin1.trace")
            with open(p, "wb") as f:
                f.write(b"#timerbench-trace v1 unit=us\n# caf\xe9 \xe2\x89\xa4 1 ms\n"
                        b"time,op,id,delay,period\n0,schedule,1,5,\n")
            rc, out, err = replay("--reps", "1", "--quiet", "--backends", "heapqueue", p)
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["traces"][0]["comments"],
                             ["# caf\ufffd \u2264 1 ms"])


class TotalOnly(unittest.TestCase):
    def test_one_checked_pass_per_backend(self):
        rc, out, err = replay("--total-only", fixture("hand.trace"))
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertGreaterEqual(len(lines), 4)
        for line in lines:
            self.assertTrue(line.startswith(fixture("hand.trace") + " "), line)
            self.assertTrue(line.endswith(" 10 events 7 fires"), line)


class FailedCheck(unittest.TestCase):
    def test_a_timer_run_after_its_cancel_is_an_error(self):
        # --skip-cancel 1: hand.trace's first cancel (B, line 7) never
        # reaches the backend, so B runs at 5 ms although cancelled
        rc, out, err = replay("--reps", "1", "--quiet", "--skip-cancel", "1",
                              fixture("hand.trace"))
        self.assertEqual(rc, 1)
        self.assertIn("check failed: the timer of line 6 (id 2) fired 1 times; "
                      "the trace cancels it", err)


def write_trace(path, unit, lines, data=None):
    """A trace file: header, event lines (or raw bytes `data` after the
    header)."""
    with open(path, "wb") as f:
        f.write(("#timerbench-trace v1 unit=%s\ntime,op,id,delay,period\n" % unit).encode())
        if data is not None:
            f.write(data)
        for line in lines:
            f.write((line + "\n").encode())
    return path


def backends_of(out):
    return {b["name"]: b for b in json.loads(out)["traces"][0]["backends"]}


class Hostile(unittest.TestCase):
    """The hostile traces of issue 31: each one crashed, hung, failed for
    nothing or was accepted in silence before."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_only_cancels_of_unknown_ids(self):
        # 1: drain() read the last event of a trace that replays none
        rc, out, err = replay("--reps", "1", "--quiet", fixture("cancels-only.trace"))
        self.assertEqual(rc, 0, err)
        t = json.loads(out)["traces"][0]
        self.assertEqual((t["events"], t["timers"], t["cancel_unknown"]), (2, 0, 2))
        self.assertEqual((t["start_ns"], t["end_ns"]), (0, 5000))
        self.assertEqual(t["delay_ns"], {})
        for b in t["backends"]:
            self.assertEqual(b["fires"], 0, b["name"])
            self.assertTrue(b["checks"]["passed"])

    def test_a_two_hour_timer_fires_on_every_backend(self):
        # 3: kernelwheel files a 2 h timer at a level of 4.4 min granularity
        # (1 ms tick); the drain used to give up after 4096 ticks
        rc, out, err = replay("--reps", "1", "--quiet", fixture("keepalive.trace"),
                              timeout=120)
        self.assertEqual(rc, 0, err)
        for name, b in backends_of(out).items():
            with self.subTest(backend=name):
                self.assertEqual(b["fires"], 2)
                late = b["lateness"]["ns"]["max"]
                if name == "kernelwheel":
                    # late by its level's granularity, seen at the exact
                    # tick it ran (a multiple of 8^6 ticks), under 1/7 of
                    # the delay
                    self.assertGreater(late, 4096 * MS)
                    self.assertEqual((7200000 * MS + late) % (8 ** 6 * MS), 0, late)
                    self.assertLess(late, 7200000 * MS // 7)
                elif not b["ticked"]:
                    self.assertEqual(late, 0)

    def test_every_level_of_the_kernel_wheel_drains(self):
        # 3: one-shots from an hour to the end of the format's range
        delays = [3600 * 1000, 86400 * 1000, 30 * 86400 * 1000, 365 * 86400 * 1000,
                  4611686018427]   # ms: 2^62 ns is 4611686018427.4 ms
        p = write_trace(self.path("levels.trace"), "ms",
                        ["0,schedule,%d,%d," % (i, d) for i, d in enumerate(delays)])
        rc, out, err = replay("--reps", "1", "--quiet", p, timeout=300)
        self.assertEqual(rc, 0, err)
        for name, b in backends_of(out).items():
            self.assertEqual(b["fires"], len(delays), name)
            self.assertLessEqual(b["lateness"]["beyond_tick_of_delay_max"], 8 / 63.0, name)

    def test_one_failed_backend_keeps_the_others(self):
        # 3: the check failure of one backend costs that backend only
        rc, out, err = replay("--reps", "2", "--quiet", "--skip-cancel", "1@timerwheel",
                              fixture("hand.trace"))
        self.assertEqual(rc, 1)
        self.assertIn("timerwheel on %s: check failed: the timer of line 6 (id 2) fired 1 "
                      "times" % fixture("hand.trace"), err)
        bs = backends_of(out)
        self.assertGreaterEqual(len(bs), 4)
        failed = bs.pop("timerwheel")
        self.assertIn("the timer of line 6 (id 2) fired 1 times", failed["error"])
        self.assertEqual(failed["checks"], {"passed": False, "error": failed["error"]})
        self.assertNotIn("ns_per_event", failed)
        for name, b in bs.items():
            self.assertNotIn("error", b, name)
            self.assertEqual(b["fires"], 7, name)
            self.assertEqual(len(b["ns_per_event"]["reps"]), 2, name)

    def test_periodic_runs_are_bounded(self):
        # 2: a 1 ns period cancelled at 1000 s would run 10^12 times
        for mode in (["--parse-only"], ["--reps", "1"]):
            rc, out, err = replay(*(mode + [fixture("periodic-too-many-runs.trace")]),
                                  timeout=60)
            self.assertEqual(rc, 2, err)
            self.assertEqual(out, "")
            self.assertTrue(err.startswith(
                "%s:5: periodic timer id 2 (every 1 ns, until the trace ends it) makes "
                "1000000000001 runs, 1000000000001 with the periodic timers before it: "
                "more than the 10000000 runs a trace may make" %
                fixture("periodic-too-many-runs.trace")), err)
        # a 1 us period over a trace that ends near 2^62 ns, left running
        p = write_trace(self.path("long.trace"), "ns",
                        ["0,periodic,1,0,1000", "4611686018427387000,schedule,2,1,"])
        rc, _, err = replay("--parse-only", p, timeout=60)
        self.assertEqual(rc, 2)
        self.assertIn("long.trace:3: periodic timer id 1 (every 1000 ns, left running: "
                      "stopped one period past the trace's end) makes 4611686018427389 runs",
                      err)
        # the limit itself: 10^7 runs in all pass, one more is refused, and
        # the timer named is the one that goes over
        for last, ok in ((4999999, True), (5000000, False)):
            p = write_trace(self.path("limit.trace"), "ns",
                            ["0,periodic,1,0,1", "0,periodic,2,0,1", "%d,cancel,1,," % last,
                             "%d,cancel,2,," % last])
            rc, out, err = replay("--parse-only", p, timeout=60)
            self.assertEqual(rc, 0 if ok else 2, err)
            if not ok:
                self.assertIn("limit.trace:4: periodic timer id 2 (every 1 ns, until the "
                              "trace ends it) makes 5000001 runs, 10000002 with the periodic "
                              "timers before it", err)

    def test_periodic_at_the_end_of_the_range(self):
        # 11: a periodic timer at 2^62 - 1 ns with that period: its next
        # deadline overflowed (UBSan) and its cancel "failed"; every backend
        # retires it when its next run would pass the end of the clock
        rc, out, err = replay("--reps", "1", "--quiet", fixture("periodic-end-of-clock.trace"))
        self.assertEqual(rc, 0, err)
        for name, b in backends_of(out).items():
            self.assertTrue(b["checks"]["passed"], name)
            if not b["ticked"]:
                self.assertEqual(b["fires"], 2, name)   # at 2^62 - 1 and 2^63 - 2

    def test_times_delays_and_periods_below_2_62_ns(self):
        # 10: 2^62 ns is refused, 2^62 - 1 accepted, and so for every unit
        cases = [("ns", "4611686018427387904,schedule,1,0,", "time 4611686018427387904 ns"),
                 ("ns", "0,schedule,1,4611686018427387904,", "delay 4611686018427387904 ns"),
                 ("us", "0,periodic,1,0,4611686018427388", "period 4611686018427388 us"),
                 ("ms", "0,schedule,1,4611686018428,", "delay 4611686018428 ms"),
                 ("ns", "4611686018427387903,schedule,1,1,", "deadline (time + delay) "
                                                            "4611686018427387904 ns")]
        for unit, line, what in cases:
            with self.subTest(line=line):
                p = write_trace(self.path("big.trace"), unit, [line])
                rc, _, err = replay("--parse-only", p)
                self.assertEqual(rc, 2, err)
                self.assertIn("big.trace:3: %s is too large (it must be below 2^62 ns)" % what,
                              err)
        p = write_trace(self.path("edge.trace"), "ms", ["0,schedule,1,4611686018427,",
                                                        "0,periodic,2,0,4611686018427"])
        rc, _, err = replay("--parse-only", p)
        self.assertEqual(rc, 0, err)

    def test_crlf_is_the_same_trace(self):
        # 10: CR LF line ends are accepted, with the same meaning as LF
        with open(fixture("crlf.trace"), "rb") as f:
            lf = f.read().replace(b"\r\n", b"\n")
        p = self.path("lf.trace")
        with open(p, "wb") as f:
            f.write(lf)
        rc, out, err = replay("--reps", "1", "--quiet", "--backends", "heapqueue",
                              fixture("crlf.trace"), p)
        self.assertEqual(rc, 0, err)
        a, b = json.loads(out)["traces"]
        for k in ("events", "ops", "timers", "cancelled", "delay_ns", "end_ns"):
            self.assertEqual(a[k], b[k], k)
        self.assertEqual(a["backends"][0]["fires"], b["backends"][0]["fires"])

    def test_more_than_256_traces(self):
        # 4: the rest were dropped in silence
        paths = [write_trace(self.path("t%03d.trace" % i), "us", ["0,schedule,1,%d," % (i + 1)])
                 for i in range(300)]
        rc, out, err = replay("--parse-only", *paths)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.splitlines()), 300)
        rc, out, err = replay("--reps", "1", "--quiet", "--backends", "heapqueue", *paths)
        self.assertEqual(rc, 0, err)
        traces = json.loads(out)["traces"]
        self.assertEqual([t["name"] for t in traces], [os.path.basename(p) for p in paths])
        self.assertEqual(traces[-1]["delay_ns"]["max"], 300 * 1000)

    def test_a_long_field_is_echoed_short(self):
        # 5: a bad field of 4000 bytes gives an error of a line, not 4000 bytes
        p = write_trace(self.path("wide.trace"), "us", ["0,%s,1,5," % ("x" * 4000)])
        rc, _, err = replay("--parse-only", p)
        self.assertEqual(rc, 2)
        self.assertIn("wide.trace:3: unknown op '%s...'" % ("x" * 40), err)
        self.assertLess(len(err), 300)

    def test_line_length(self):
        # 9: at most 4096 bytes without the line end, LF or CR LF
        for body, eol, ok in ((4096, b"\n", True), (4096, b"\r\n", True),
                              (4097, b"\n", False), (4097, b"\r\n", False)):
            with self.subTest(bytes=body, eol=eol):
                p = write_trace(self.path("line.trace"), "us", [],
                                b"#" + b"c" * (body - 1) + eol + b"0,schedule,1,5,\n")
                rc, _, err = replay("--parse-only", p)
                if ok:
                    self.assertEqual(rc, 0, err)
                else:
                    self.assertEqual(rc, 2)
                    self.assertEqual(err, "%s:3: line longer than 4096 bytes\n" % p)
        # a line of 64 MB (/dev/zero-like: NUL bytes) is refused when its
        # 4097th byte is read, not after the whole line
        p = self.path("zeros.trace")
        with open(p, "wb") as f:
            f.write(b"\0" * (64 << 20))
        rc, _, err = replay("--parse-only", p, timeout=60)
        self.assertEqual((rc, err), (2, "%s:1: line longer than 4096 bytes\n" % p))

    def test_not_a_regular_file(self):
        # 9: a FIFO blocked the replay for ever; /dev/zero ran it out of memory
        fifo = self.path("fifo.trace")
        os.mkfifo(fifo)
        for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"),
                           (self.tmp, "a directory")):
            with self.subTest(path=path):
                rc, out, err = replay("--parse-only", path, timeout=30)
                self.assertEqual(rc, 2)
                self.assertEqual(err, "%s: not a regular file (%s)\n" % (path, kind))


def random_trace(path, seed, n=3000, periodic=True):
    """Ids reused after their end, several events at one instant, zero
    delays, periodic timers, reschedules of live ids, cancels of dead ones."""
    r = random.Random(seed)
    lines = ["#timerbench-trace v1 unit=us", "# random test trace seed=%d" % seed,
             "time,op,id,delay,period"]
    t = 0
    live = {}  # id -> deadline (None: periodic)
    for _ in range(n):
        if r.random() < 0.6:
            t += r.choice((0, 0, 1, 37, 500, 1000, 2300))
        for i in [i for i, d in live.items() if d is not None and d <= t]:
            del live[i]
        x = r.random()
        i = r.randrange(60)
        if x < 0.45:
            if i in live:
                d = r.choice((0, 1, 999, 1000, 1001, 25000))
                lines.append("%d,reschedule,%d,%d," % (t, i, d))
                live[i] = t + d
            elif periodic and r.random() < 0.1:
                p = r.choice((700, 1000, 3000))
                d = r.choice((0, 5, 1500))
                lines.append("%d,periodic,%d,%d,%d" % (t, i, d, p))
                live[i] = None
            else:
                d = r.choice((0, 1, 250, 999, 1000, 4000, 60000))
                lines.append("%d,schedule,%d,%d," % (t, i, d))
                live[i] = t + d
        else:
            lines.append("%d,cancel,%d,," % (t, i))
            live.pop(i, None)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class RandomTraces(unittest.TestCase):
    def test_every_backend_passes_its_checks(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for seed in (1, 2, 3):
                p = os.path.join(tmp, "random-%d.trace" % seed)
                random_trace(p, seed, periodic=seed != 1)
                paths.append(p)
            for tick in (MS, 7 * 1000):
                rc, out, err = replay("--reps", "1", "--quiet", "--tick", str(tick), *paths)
                self.assertEqual(rc, 0, err)
                for t in json.loads(out)["traces"]:
                    oneshots = None
                    for b in t["backends"]:
                        self.assertTrue(b["checks"]["passed"])
                        if not b["ticked"]:
                            self.assertEqual(b["lateness"]["ns"]["max"], 0, b["name"])
                        elif t["ops"]["periodic"] == 0:
                            # a one-shot is never late by a whole tick on
                            # the virtual clock (a periodic timer whose
                            # period is shorter than the tick may be: its
                            # re-arms catch up), except on the kernel's
                            # wheel, whose levels may add up to 1/8 of the
                            # delay
                            self.assertLessEqual(b["lateness"]["beyond_tick_of_delay_max"],
                                                 0.125, b["name"])
                            if b["name"] != "kernelwheel":
                                self.assertLess(b["lateness"]["ns"]["max"], b["tick_ns"],
                                                b["name"])
                        n = b["checks"]["uncancelled_fired_once"]
                        oneshots = n if oneshots is None else oneshots
                        self.assertEqual(n, oneshots)


def results_dir(tmp, traces, reps="3"):
    out = os.path.join(tmp, "results")
    build_dir = os.path.dirname(os.path.dirname(BINARY))
    p = subprocess.run([sys.executable, DRIVER, "--no-build", "--build-dir", build_dir,
                        "--reps", reps, "--out", out] + traces,
                       capture_output=True, text=True, timeout=600)
    return p, out


class Driver(unittest.TestCase):
    """bench/replay.py, what `./timerbench replay` runs."""

    def test_argument_errors_before_anything_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            build_dir = os.path.dirname(os.path.dirname(BINARY))
            base = [sys.executable, DRIVER, "--no-build", "--build-dir", build_dir]
            os.makedirs(os.path.join(tmp, "full"))
            open(os.path.join(tmp, "full", "x"), "w").close()
            for args, what in (
                    ([os.path.join(tmp, "none.trace")], "none.trace: no such trace file"),
                    ([tmp], "not a regular file (a directory)"),
                    (["--backends", "heapqueue,nosuch", fixture("hand.trace")],
                     "no backend 'nosuch'; the registered backends are: heapqueue"),
                    (["--out", os.path.join(tmp, "full"), fixture("hand.trace")],
                     "exists and is not empty"),
                    ([fixture("schedule-live-id.trace")],
                     "bad trace: %s:4: schedule of id 7" % fixture("schedule-live-id.trace")),
                    (["--backends", "nosuch+roc", fixture("hand.trace")],
                     "no backend 'nosuch+roc'"),
                    (["--backends", "timerwheel+roc", fixture("hand.trace")],
                     "timerwheel has no remove-on-cancel policy: no 'timerwheel+roc'"),
                    (["--backends", "", fixture("hand.trace")],
                     "--backends '' has an empty name"),
                    (["--backends", "heapqueue,,quadheap", fixture("hand.trace")],
                     "--backends 'heapqueue,,quadheap' has an empty name"),
                    (["--reps", "0", fixture("hand.trace")], "--reps takes 1..64"),
                    ([], "give at least one trace file")):
                with self.subTest(args=args):
                    p = subprocess.run(base + args + ([] if "--out" in args else
                                                      ["--out", os.path.join(tmp, "o")]),
                                       capture_output=True, text=True, timeout=120)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertIn(what, p.stderr)
                    self.assertEqual(p.stdout, "")
                    self.assertFalse(os.path.exists(os.path.join(tmp, "o")))

    def test_results_directory(self):
        with tempfile.TemporaryDirectory() as tmp:
            p, out = results_dir(tmp, [fixture("hand.trace")], "2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), out)
            self.assertIn("repetition 2 of 2 done", p.stderr)   # progress shown
            self.assertEqual(sorted(os.listdir(out)), ["machine.json", "replay.json", "replay.log"])
            with open(os.path.join(out, "machine.json")) as f:
                m = json.load(f)
            self.assertEqual(m["run"]["profile"], "replay")
            self.assertEqual(m["run"]["status"], "complete")
            self.assertIn("cpu_model", m["machine"])
            self.assertIsInstance(m["format_version"], int)


class DriverHostile(unittest.TestCase):
    """bench/replay.py on the hostile inputs of issue 31."""

    def run_driver(self, tmp, *args, timeout=120):
        build_dir = os.path.dirname(os.path.dirname(BINARY))
        return subprocess.run([sys.executable, DRIVER, "--no-build", "--build-dir", build_dir,
                               "--out", os.path.join(tmp, "o")] + list(args),
                              capture_output=True, timeout=timeout)

    def test_raw_bytes_are_a_bad_trace_not_a_traceback(self):
        # 5: the binary's echo of a bad field was decoded as UTF-8
        for name in ("raw-bytes.trace", "utf8-cut.trace"):
            with self.subTest(trace=name), tempfile.TemporaryDirectory() as tmp:
                p = self.run_driver(tmp, fixture(name))
                err = p.stderr.decode("utf-8")
                self.assertEqual(p.returncode, 2, err)
                self.assertNotIn("Traceback", err)
                self.assertIn("bad trace: %s:3: unknown op 'sch" % fixture(name)
                              if name == "raw-bytes.trace" else
                              "bad trace: %s:3: unknown op '\\xc3\\xa9" % fixture(name), err)
                self.assertFalse(os.path.exists(os.path.join(tmp, "o")))

    def test_a_fifo_is_refused_before_anything_is_locked(self):
        # 9: a FIFO blocked the replay for ever, its lock left behind
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "f.trace")
            os.mkfifo(fifo)
            p = self.run_driver(tmp, fixture("hand.trace"), fifo, timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertIn("%s: not a regular file (a FIFO)" % fifo, p.stderr.decode())
            self.assertFalse(os.path.exists(os.path.join(tmp, "o")))
            p = self.run_driver(tmp, "/dev/zero", timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertIn("/dev/zero: not a regular file (a character device)",
                          p.stderr.decode())

    def test_a_failed_backend_keeps_the_others_results(self):
        # 3: one backend fails its check (the binary's test hook, added by a
        # wrapper in a stand-in build directory): exit 1, but replay.json
        # holds the others' results and the failure, machine.json names it,
        # and the directory is printed for the report
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "build", "bench"))
            wrapper = os.path.join(tmp, "build", "bench", "timerbench-replay")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\nexec '%s' --skip-cancel 1@timerwheel \"$@\"\n" % BINARY)
            os.chmod(wrapper, 0o755)
            out = os.path.join(tmp, "o")
            p = subprocess.run([sys.executable, DRIVER, "--no-build", "--build-dir",
                                os.path.join(tmp, "build"), "--out", out, "--reps", "1",
                                "--backends", "heapqueue,timerwheel,quadheap",
                                fixture("hand.trace")],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stdout.strip(), out)
            with open(os.path.join(out, "replay.json")) as f:
                names = {b["name"]: b for b in json.load(f)["traces"][0]["backends"]}
            self.assertEqual(sorted(names), ["heapqueue", "quadheap", "timerwheel"])
            self.assertIn("fired 1 times", names["timerwheel"]["error"])
            self.assertEqual(names["heapqueue"]["fires"], 7)
            self.assertEqual(names["quadheap"]["fires"], 7)
            with open(os.path.join(out, "machine.json")) as f:
                m = json.load(f)
            self.assertEqual(m["run"]["status"], "failed")
            self.assertEqual(m["run"]["errors"], ["timerwheel on hand.trace: " +
                                                  names["timerwheel"]["error"]])
            self.assertFalse(os.path.exists(os.path.join(out, "replay.json.tmp")))
            self.assertFalse(os.path.exists(os.path.join(out, ".lock")))

FAKE_TRACEGEN = """#!/usr/bin/env python3
# a stand-in for tools/tracegen.py MODEL --seed S --events N --out FILE
import sys
a = sys.argv[1:]
model, out, n = a[0], a[a.index("--out") + 1], int(a[a.index("--events") + 1])
if model == "hold":
    sys.exit("tracegen: hold: broken on purpose")
with open(out, "w") as f:
    f.write("#timerbench-trace v1 unit=us\\n# generator: fake %s\\ntime,op,id,delay,period\\n" % model)
    for i in range(n):
        f.write("%d,schedule,%d,%d,\\n" % (i, i, 1000 + i % 7))
"""


class ProfileStep(unittest.TestCase):
    """run.py's replay step (bench/replay.py replay_into) in a stand-in
    checkout: the kernel trace and each generator's trace are replayed, a
    missing file or a failing generator is skipped with its reason."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import replay as R
        self.R = R
        self.tmp = tempfile.mkdtemp()
        self.saved = (R.ROOT, dict(R.PROFILE_REPLAY))
        R.ROOT = os.path.join(self.tmp, "checkout")
        R.PROFILE_REPLAY["standard"] = {"events": 300, "reps": 1, "seed": 1}
        self.build_dir = os.path.dirname(os.path.dirname(BINARY))

    def tearDown(self):
        self.R.ROOT, pr = self.saved
        self.R.PROFILE_REPLAY.clear()
        self.R.PROFILE_REPLAY.update(pr)
        shutil.rmtree(self.tmp)

    def out(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        return d

    def test_nothing_there_is_skipped_with_reasons(self):
        os.makedirs(self.R.ROOT)
        facts = self.R.replay_into("standard", self.build_dir, self.out("a"), build=False)
        self.assertEqual(facts["status"], "skipped")
        self.assertEqual([s["trace"] for s in facts["skipped"]],
                         ["kernel trace", "model purgatory", "model clientserver", "model hold"])
        self.assertIn("traces/kernel-tcp-loopback.trace is not in this checkout",
                      facts["skipped"][0]["why"])
        self.assertIn("tools/tracegen.py is not in this checkout", facts["skipped"][1]["why"])
        self.assertIsNone(self.R.replay_into("quick", self.build_dir, self.out("q"), build=False))

    def test_traces_replayed(self):
        os.makedirs(os.path.join(self.R.ROOT, "tools"))
        os.makedirs(os.path.join(self.R.ROOT, "traces"))
        shutil.copy(fixture("hand.trace"),
                    os.path.join(self.R.ROOT, "traces", "kernel-tcp-loopback.trace"))
        with open(os.path.join(self.R.ROOT, "tools", "tracegen.py"), "w") as f:
            f.write(FAKE_TRACEGEN)
        out = self.out("b")
        facts = self.R.replay_into("standard", self.build_dir, out, build=False)
        self.assertEqual(facts["status"], "complete", facts)
        self.assertEqual(facts["skipped"], [{"trace": "model hold", "why":
                                             "tools/tracegen.py failed: tracegen: hold: "
                                             "broken on purpose"}])
        with open(os.path.join(out, "replay.json")) as f:
            doc = json.load(f)
        self.assertEqual([t["name"] for t in doc["traces"]],
                         ["kernel-tcp-loopback.trace", "purgatory.trace", "clientserver.trace"])
        self.assertEqual(doc["traces"][1]["events"], 300)
        self.assertEqual(doc["reps"], 1)
        self.assertTrue(os.path.exists(os.path.join(out, "traces", "purgatory.trace")))


class Report(unittest.TestCase):
    """A replay results directory renders as its own section."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        with open(os.path.join(cls.tmp, "small.trace"), "w") as f:
            f.write("#timerbench-trace v1 unit=us\ntime,op,id,delay,period\n")
            for i in range(2000):
                f.write("%d,schedule,%d,%d,\n" % (i * 10, i, 1000 + (i * 7919) % 50000))
                if i % 3:
                    f.write("%d,cancel,%d,,\n" % (i * 10 + 5, i))
        p, cls.out = results_dir(cls.tmp, [fixture("hand.trace"),
                                           os.path.join(cls.tmp, "small.trace")])
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        r = subprocess.run([sys.executable, GENERATE, cls.out], capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        with open(os.path.join(cls.out, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()
        with open(os.path.join(cls.out, "replay.json")) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def section(self):
        s = self.md.split("## Replayed traces", 1)
        self.assertEqual(len(s), 2, "no replay section")
        return s[1].split("\n## ", 1)[0]

    def test_section_table_and_verdicts(self):
        sec = self.section()
        for t in self.doc["traces"]:
            label = t["name"][:-len(".trace")]
            self.assertIn("### Trace %s" % label, sec)
            row = [l for l in sec.splitlines() if l.startswith("| `%s` |" % label)][0]
            self.assertIn("%.1f %%" % (100 * t["cancel_ratio"]), row)
            kind, text, best = tb_replay.verdict({"backends": [
                {"name": b["name"], "ns_per_event": b["ns_per_event"],
                 "cpu_ms_per_million_events": b["cpu_ms_per_million_events"]}
                for b in t["backends"]]})
            shown = best or "tied: " + ", ".join(tb_replay.tied_names(t))
            self.assertIn("**%s**" % shown, row)
            self.assertIn("**Which one for this trace:** %s." % text, sec)
            # the verdict follows its rule, from the JSON, on CPU time per
            # event (CPU ms per 10^6 events is the same number): decided
            # when every other median is more than MIN_EFFECT slower and
            # significantly so
            cpu = sorted(((b["cpu_ms_per_million_events"], b["name"])
                          for b in t["backends"]), key=lambda x: x[0]["median"])
            lo = cpu[0][0]
            apart = all(c["median"] > lo["median"] * (1 + S.MIN_EFFECT) and
                        S.decide(c["reps"], lo["reps"]).kind == "greater"
                        for c, _ in cpu[1:])
            self.assertEqual(best is not None, apart)
            if best:
                self.assertEqual(best, cpu[0][1])

    def test_which_one_to_use_has_a_row_per_trace(self):
        choose = self.md.split("## Which one to use", 1)[1].split("\n## ", 1)[0]
        for t in self.doc["traces"]:
            self.assertIn("Replay of trace %s (" % t["name"][:-len(".trace")], choose)

    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_figures(self):
        figs = os.listdir(os.path.join(self.out, "figures"))
        self.assertTrue(any("replay-delays" in f and f.endswith(".svg") for f in figs), figs)
        for t in self.doc["traces"]:
            stem = "replay-cost-" + t["name"][:-len(".trace")]
            self.assertTrue(any(stem in f and f.endswith(".png") for f in figs), (stem, figs))

    def test_verdict_rule(self):
        if S._mwu is None:
            self.skipTest("scipy (Debian package python3-scipy) is not installed")

        def t(*bs):
            return {"backends": [{"name": n, "ns_per_event": {
                "median": sorted(r)[len(r) // 2], "min": min(r), "max": max(r), "reps": list(r)}}
                for n, r in bs]}
        fast = (10, 10.2, 9.9, 10.1, 10.3, 9.8, 10.0)
        slow = (20, 20.5, 19.8, 20.2, 19.9, 20.1, 20.3)
        self.assertEqual(tb_replay.verdict(t(("a", fast), ("b", slow)))[2], "a")
        self.assertEqual(tb_replay.verdict(t(("b", slow), ("a", fast)))[2], "a")
        # within MIN_EFFECT of the best: tied, whatever the test says
        near = tuple(v * (1 + S.MIN_EFFECT / 2) for v in fast)
        v = tb_replay.verdict(t(("a", fast), ("b", near), ("c", slow)))
        self.assertEqual((v[0], v[2]), ("tied", None))
        self.assertEqual(tb_replay.tied_names(t(("a", fast), ("b", near), ("c", slow))),
                         ["a", "b"])
        # a slower median that the repetitions do not separate: tied
        wild = (10.5, 30, 9.0, 31, 9.5, 29, 12)
        self.assertEqual(tb_replay.verdict(t(("a", fast), ("b", wild)))[0], "tied")
        # one repetition each: too few to test, so not decided
        self.assertEqual(tb_replay.verdict(t(("a", (10,)), ("b", (20,))))[0], "tied")

    def test_valgrind_counts_column(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "r")
            shutil.copytree(self.out, d, ignore=shutil.ignore_patterns("figures", "report.*"))
            with open(os.path.join(d, "replay.json")) as f:
                doc = json.load(f)
            for i, b in enumerate(doc["traces"][0]["backends"]):
                b["counts"] = {"instructions_per_event": 900.0 - 100 * i,
                               "d1_misses_per_event": 1.5, "ll_misses_per_event": 0.25}
            with open(os.path.join(d, "replay.json"), "w") as f:
                json.dump(doc, f)
            r = subprocess.run([sys.executable, GENERATE, d, "--no-figures"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                md = f.read()
            names = [b["name"] for b in doc["traces"][0]["backends"]]
            self.assertIn("| `%s` |" % names[0], md)
            self.assertIn("900 (1.50, 0.250)", md)
            ranking = ", ".join("`%s` %d" % (n, 900 - 100 * i)
                                for i, n in reversed(list(enumerate(names))))
            self.assertIn("By instructions per event under Valgrind (deterministic, the same "
                          "on every run): %s." % ranking, md)

    def test_a_failed_backend_is_shown_as_failed(self):
        # bench/replay.c writes a backend whose check failed with its error
        # and no numbers: the report names it and decides on the others
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "r")
            shutil.copytree(self.out, d, ignore=shutil.ignore_patterns("figures", "report.*"))
            with open(os.path.join(d, "replay.json")) as f:
                doc = json.load(f)
            t0 = doc["traces"][0]
            victim = t0["backends"][0]["name"]
            t0["backends"][0] = {"name": victim, "backend": victim,
                                 "error": "timer 7 fired 2 ms early",
                                 "checks": {"passed": False, "error": "timer 7 fired 2 ms early"}}
            with open(os.path.join(d, "replay.json"), "w") as f:
                json.dump(doc, f)
            r = subprocess.run([sys.executable, GENERATE, d, "--no-figures"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("not in the expected form", r.stderr)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                md = f.read()
            sec = md.split("## Replayed traces", 1)[1].split("\n## ", 1)[0]
            self.assertIn("**Failed checks:** `%s` on `%s` (timer 7 fired 2 ms early)" % (
                victim, t0["name"][:-len(".trace")]), sec)
            row = [l for l in sec.splitlines()
                   if l.startswith("| `%s` |" % t0["name"][:-len(".trace")])][0]
            self.assertIn("failed its check", row)

    def test_damaged_replay_json_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "r")
            shutil.copytree(self.out, d, ignore=shutil.ignore_patterns("figures", "report.*"))
            with open(os.path.join(d, "replay.json"), "w") as f:
                f.write('{"traces": [{"name": "x"')
            r = subprocess.run([sys.executable, GENERATE, d, "--no-figures"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 2)
            self.assertIn("replay.json", r.stderr)
            self.assertIn("truncated", r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            with open(os.path.join(d, "replay.json"), "w") as f:
                json.dump({"traces": [{"name": "x", "events": 3, "cancel_ratio": 0.5,
                                       "backends": [{"name": "heapqueue"}]}]}, f)
            r = subprocess.run([sys.executable, GENERATE, d, "--no-figures"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 2)
            self.assertIn("not in the expected form", r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.path.exists(sys.argv[1]):
        sys.stderr.write("usage: replay_test.py TIMERBENCH_REPLAY [-v]\n")
        sys.exit(2)
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
