#!/usr/bin/env python3
"""compare_test.py — report/compare.py on the committed quick-run fixture:
a directory against itself is all within the noise with a geometric mean of
exactly 1; against a copy whose micro times are doubled none is faster, every one
outside the noise is slower and the mean is 2; a missing directory is an error naming it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, os.path.join(root, "report"))
import compare  # noqa: E402

fixture = os.path.join(here, "fixtures", "report-quick")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    else:
        print("ok:", what)


rows, summary, problems = compare.compare(fixture, fixture)
check(rows and all(abs(r[3] - 1) < 1e-12 for r in rows), "self-compare ratios are 1")
check("geometric mean of B/A 1.000" in summary[0], "self-compare geometric mean 1")
check("B faster 0, B slower 0" in summary[0], "self-compare: nothing faster or slower")
check(not problems, "fixture reads without problems")

with tempfile.TemporaryDirectory() as tmp:
    slow = os.path.join(tmp, "slow")
    shutil.copytree(fixture, slow)
    path = os.path.join(slow, "micro.json")
    data = json.load(open(path))
    for b in data["benchmarks"]:
        for k in ("real_time", "cpu_time"):
            if k in b:
                b[k] *= 2
        if "ns_per_op" in b:
            b["ns_per_op"] *= 2
    json.dump(data, open(path, "w"))
    rows, summary, problems = compare.compare(fixture, slow, "insert/")
    check(rows and all(abs(r[3] - 2) < 1e-9 for r in rows), "doubled micro times give B/A = 2")
    check("geometric mean of B/A 2.000" in summary[0], "geometric mean 2")
    check("B faster 0," in summary[0], "no doubled instance is faster")
    noisy = sum(1 for r in rows if r[4])
    check("B slower %d" % (len(rows) - noisy) in summary[0],
          "every doubled instance outside the noise is slower")

    out = subprocess.run([sys.executable, os.path.join(root, "report", "compare.py"),
                          fixture, os.path.join(tmp, "nowhere")],
                         capture_output=True, text=True)
    check(out.returncode == 2 and "nowhere" in out.stderr,
          "a missing directory is an error that names it")

sys.exit(1 if failures else 0)
