#!/usr/bin/env python3
"""purgatory_libs_test.py — timerbench-play's event-loop library subjects
(bench/player_libs.c, issue 41) through the binary, as tbkit/purgrun.py
runs them:

    python3 tests/purgatory_libs_test.py TIMERBENCH_PLAY [-v]

- `--list` names them with side "library" and their structure;
- each plays a small trace file (40 requests 2 ms apart, 200 ms timeouts,
  every other one cancelled 10 ms after its schedule): exit 0, every
  operation issued in the trace's order at or after its intended time
  (`--lags`), the row's keys exactly the schema's, the uncancelled half
  fired, none earlier than a library's unit (1 ms at most);
- an unknown library name is refused (exit 2).

tests/player_libs_check.c checks the same subjects through the C API
(counts, shares, saturation, bad input).  Real time on a shared machine:
no wall-clock limit is asserted.  Skips (77) when no library is listed.
"""

import csv
import json
import os
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
N = 40


def play(*args):
    p = subprocess.run([BINARY] + [str(a) for a in args],
                       capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def libraries():
    rc, out, err = play("--list")
    if rc != 0:
        raise AssertionError("--list: exit %d: %s" % (rc, err))
    rows = [line.split("\t") for line in out.splitlines()]
    return [r for r in rows if r[1] == "library"]


class Libraries(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def trace(self):
        events = []
        for i in range(N):
            t = i * 2 * MS
            events.append((t, "schedule,%d,%d," % (i, 200 * MS)))
            if i % 2 == 0:
                events.append((t + 10 * MS, "cancel,%d,," % i))
        events.sort(key=lambda e: e[0])
        path = os.path.join(self.dir, "small.trace")
        with open(path, "w") as f:
            f.write("#timerbench-trace v1 unit=ns\ntime,op,id,delay,period\n")
            f.write("".join("%d,%s\n" % e for e in events))
        return path, events

    def test_listed(self):
        libs = libraries()
        names = [r[0] for r in libs]
        self.assertEqual(len(names), len(set(names)))
        for name, side, structure in libs:
            self.assertTrue(structure.strip(), name)

    def test_trace_on_every_library(self):
        path, events = self.trace()
        for name, _side, structure in libraries():
            with self.subTest(subject=name):
                lags = os.path.join(self.dir, "lags-%s.csv" % name)
                rc, out, err = play("--subject", name, "--trace", path,
                                    "--lags", lags)
                self.assertEqual(rc, 0, err)
                row = json.loads(out)
                self.assertEqual(sorted(row), sorted(purgrun.ROW_KEYS))
                self.assertEqual(row["subject"], name)
                self.assertEqual(row["side"], "library")
                self.assertEqual(row["structure"], structure)
                with open(lags) as f:
                    ops = list(csv.DictReader(f))
                self.assertEqual(len(ops), len(events))
                for (t, what), op in zip(events, ops):
                    self.assertEqual(int(op["intended_ns"]), t)
                    self.assertEqual(op["kind"], what.split(",")[0])
                lag = [int(op["lag_ns"]) for op in ops]
                self.assertTrue(all(x >= 0 for x in lag), lag)
                actual = [int(op["intended_ns"]) + x
                          for op, x in zip(ops, lag)]
                self.assertEqual(actual, sorted(actual), "out of order")
                self.assertEqual(row["lag_max_ns"], max(lag))
                self.assertEqual(row["requests"], N)
                self.assertEqual(row["fired"], N // 2)
                self.assertAlmostEqual(row["fired_share"], 0.5)
                # libuv and GLib count whole ms: up to 1 ms early
                self.assertGreaterEqual(row["lateness_p50_ns"], -1 * MS)
                self.assertGreaterEqual(row["peak_pending"], 1)
                self.assertEqual(row["peak_zombies"], 0)
                self.assertGreater(row["cpu_ns_per_request"], 0)
                self.assertGreater(row["player_cpu_ns_per_request"], 0)

    def test_unknown_library(self):
        rc, _out, err = play("--subject", "libnope", "--model", "purgatory",
                             "--shape", "few", "--rate", 1000,
                             "--seconds", 0.1)
        self.assertEqual(rc, 2)
        self.assertIn("libnope", err)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: purgatory_libs_test.py TIMERBENCH_PLAY [-v]")
    BINARY = sys.argv.pop(1)
    if not libraries():
        print("# no event-loop library was built into timerbench-play")
        sys.exit(77)
    unittest.main()
