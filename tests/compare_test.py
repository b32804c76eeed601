#!/usr/bin/env python3
"""compare_test.py — report/compare.py: its rule on a pair of runs of one
commit (tests/fixtures/compare-same: few instances flagged, geometric mean
near 1), on a run against a copy with every time tripled (all slower,
p printed), against a copy 5 % slower in every repetition (significant but
under the minimum effect: not flagged), on the 3-repetition quick fixture
(too few repetitions to test, no crash), on a missing directory (an
error naming it), and on hostile input (issue 31): a 5,000-digit number, a
results format it does not know or of the wrong type, a directory that is
not a results directory, 2000 damaged files; and through ./timerbench from
another directory, whose relative paths are the caller's.

Exit 77 (Meson's SKIP) when scipy is missing: the test command installs
python3-scipy.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, root)  # the checkout, for tbkit
from tbkit import compare  # noqa: E402
from tbkit import stats as tb_stats  # noqa: E402

if not tb_stats.have_scipy():
    print("SKIP: scipy (Debian package python3-scipy) is not installed")
    sys.exit(77)

same = os.path.join(here, "fixtures", "compare-same")
quick = os.path.join(here, "fixtures", "report-quick")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    else:
        print("ok:", what)


def verdicts(rows):
    out = {}
    for r in rows:
        out[r[4]] = out.get(r[4], 0) + 1
    return out


def scaled_copy(src, dst, factor):
    """A copy of results directory src whose micro times are all x factor."""
    shutil.copytree(src, dst)
    path = os.path.join(dst, "micro.json")
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        for k in ("real_time", "cpu_time", "ns_per_op"):
            if k in b:
                b[k] *= factor
    with open(path, "w") as f:
        json.dump(data, f)


a, b = os.path.join(same, "a"), os.path.join(same, "b")

# one directory against itself: nothing differs
rows, summary, problems = compare.compare(a, a)
check(rows and all(abs(r[3] - 1) < 1e-12 for r in rows), "self-compare ratios are 1")
check(verdicts(rows) == {"~": len(rows)}, "self-compare: nothing flagged")
check("flagged 0 of %d tested" % len(rows) in summary[0], "summary counts 0 flagged")
check("geometric mean of B/A 1.000" in summary[0], "self-compare geometric mean 1")
check(not problems, "fixture reads without problems")

# two runs of one commit: the rule flags few instances
rows, summary, problems = compare.compare(a, b)
v = verdicts(rows)
flagged = v.get("faster", 0) + v.get("slower", 0)
print("  same commit:", summary[0])
check(len(rows) == 87 and v.get("too few", 0) == 0, "87 instances, all testable (5 repetitions)")
check(flagged <= 0.10 * len(rows), "same commit: at most 10 %% flagged (%d of %d)" % (flagged, len(rows)))
gm = float(summary[0].split("geometric mean of B/A ")[1].split(";")[0])
check(abs(gm - 1) < 0.05, "same commit: geometric mean within 1 +- 0.05 (%.3f)" % gm)
check(all(r[5] is not None and r[5] < tb_stats.ALPHA for r in rows if r[4] in ("faster", "slower")),
      "every flagged instance has p < ALPHA")
check(all(abs(r[3] - 1) >= tb_stats.MIN_EFFECT for r in rows if r[4] in ("faster", "slower")),
      "every flagged instance differs by at least the minimum effect")

with tempfile.TemporaryDirectory() as tmp:
    slow = os.path.join(tmp, "slow")
    scaled_copy(a, slow, 3.0)
    rows, summary, problems = compare.compare(a, slow)
    v = verdicts(rows)
    check(rows and all(abs(r[3] - 3) < 1e-9 for r in rows), "tripled times give B/A = 3")
    check("geometric mean of B/A 3.000" in summary[0], "geometric mean 3")
    check(v.get("faster", 0) == 0, "no tripled instance is faster")
    # where every tripled repetition is above every original one (5 against
    # 5, p = 0.008) the test must flag it; where the spread is so wide that
    # they overlap, it may not (this fixture is very noisy)
    ra = compare.tb_results.load(a)
    apart = {compare.name_of(m) for m in ra.measurements.values()
             if m.times and max(m.times) < 3 * min(m.times)}
    slower = {r[0] for r in rows if r[4] == "slower"}
    check(len(apart) > 40 and apart <= slower,
          "every tripled instance whose repetitions do not overlap is slower (%d of %d; %d in all)"
          % (len(apart & slower), len(apart), len(slower)))
    check(all(r[5] is not None and r[5] < 0.05 for r in rows if r[4] == "slower"),
          "the flagged ones print a p-value under 0.05")

    # 5 % slower in every repetition: significant, yet under the minimum effect
    bit = os.path.join(tmp, "bit")
    scaled_copy(a, bit, 1.05)
    rows, summary, _ = compare.compare(a, bit, "insert/")
    check(rows and verdicts(rows) == {"~": len(rows)}, "5 % slower everywhere: nothing flagged")

    # the quick fixture has 3 repetitions: too few to test, said so
    rows, summary, _ = compare.compare(quick, quick)
    check(rows and verdicts(rows) == {"too few": len(rows)}, "3 against 3 repetitions: too few to test")
    check("too few repetitions to test %d" % len(rows) in summary[0], "summary counts the untestable")
    out = subprocess.run([sys.executable, os.path.join(root, "report", "compare.py"), quick, quick,
                          "--filter", "insert/"], capture_output=True, text=True)
    check(out.returncode == 0 and "too few repetitions to test" in out.stdout
          and "Traceback" not in out.stderr, "the command prints it and does not crash")

    out = subprocess.run([sys.executable, os.path.join(root, "report", "compare.py"), a, b],
                         capture_output=True, text=True)
    check(out.returncode == 0 and "flagged %d of 87 tested" % flagged in out.stdout
          and "rule: flagged when" in out.stdout, "the command prints the summary and its rule")

    # the machine's memory latency, recorded beside every repetition: said
    # for both runs, and a warning when it moved by more than the band
    def with_latency(src, dst, ns, waits):
        shutil.copytree(src, dst)
        path = os.path.join(dst, "micro.json")
        with open(path) as f:
            data = json.load(f)
        for bm in data["benchmarks"]:
            if bm.get("run_type") == "iteration":
                bm.update(mem_latency_ns=ns, slow_spell_waits=waits, slow_spell_redone=0)
        with open(path, "w") as f:
            json.dump(data, f)
    with_latency(a, os.path.join(tmp, "la"), 150.0, 0)
    with_latency(a, os.path.join(tmp, "lb"), 240.0, 1)
    with_latency(a, os.path.join(tmp, "lc"), 160.0, 0)
    _, summary, _ = compare.compare(os.path.join(tmp, "la"), os.path.join(tmp, "lb"))
    text = "\n".join(summary)
    # 87 instances x 5 repetitions, one wait each in B
    check("median: A 150 ns, B 240 ns (B/A 1.60)" in text and "waited out: A 0, B 435" in text,
          "both runs' memory latency and waits are printed")
    check("warning: the machine's memory was slower in B" in text,
          "a latency 60 % higher in B is warned about")
    _, summary, _ = compare.compare(os.path.join(tmp, "la"), os.path.join(tmp, "lc"))
    check(not any("warning" in line for line in summary), "7 % apart: no warning")
    _, summary, _ = compare.compare(a, b)
    check(not any("memory latency" in line for line in summary),
          "runs without the counter: nothing said of it")

    # the band's share by N: hand-made rows, one instance outside at N:10
    rows = [("insert/x/u/c/N:10", 1, 1.0, 1.0, "~", 1),
            ("insert/x/u/c/N:10", 1, 1.5, 1.5, "~", 1),
            ("cancel/x/u/c/N:2", 1, 1.05, 1.05, "~", 1),
            ("shim/empty/none/t", 1, 3.0, 3.0, "~", 1)]
    check(compare.within_by_n(rows) == [(2, 1, 1), (10, 1, 2)],
          "within the band by N: counts per N, instances without N left out")
    _, summary, _ = compare.compare(a, b)
    check(any(line.startswith("medians within +-10 % by N: ") for line in summary),
          "compare prints the share within the band by N")

    out = subprocess.run([sys.executable, os.path.join(root, "report", "compare.py"),
                          a, os.path.join(tmp, "nowhere")], capture_output=True, text=True)
    check(out.returncode == 2 and "nowhere" in out.stderr,
          "a missing directory is an error that names it")

    def compare_cmd(x, y, cwd=None):
        return subprocess.run([sys.executable, os.path.join(root, "report", "compare.py"), x, y],
                              capture_output=True, text=True, cwd=cwd)

    # a 5,000-digit number in micro.json: one damaged entry, no traceback
    huge = os.path.join(tmp, "huge")
    shutil.copytree(a, huge)
    with open(os.path.join(huge, "micro.json")) as f:
        text = f.read()
    i = text.index('"real_time":') + len('"real_time":')
    j = text.index(",", i)
    with open(os.path.join(huge, "micro.json"), "w") as f:
        f.write(text[:i] + " " + "9" * 5000 + text[j:])
    out = compare_cmd(a, huge)
    check(out.returncode == 0 and "Traceback" not in out.stderr
          and "micro.json: 1 entries were not in the expected form" in out.stderr,
          "a 5,000-digit number is one damaged entry, not a traceback")

    # results formats: newer than this checkout, or not a number
    def with_format(name, version):
        d = os.path.join(tmp, name)
        shutil.copytree(quick, d)
        with open(os.path.join(d, "machine.json")) as f:
            m = json.load(f)
        m["format_version"] = version
        with open(os.path.join(d, "machine.json"), "w") as f:
            json.dump(m, f)
        return d
    out = compare_cmd(quick, with_format("v999", 999))
    check(out.returncode == 2 and "results format 999" in out.stderr
          and "reads formats up to 2" in out.stderr and not out.stdout,
          "a results format it does not know is refused, as the report refuses it")
    out = compare_cmd(with_format("vstr", "2"), quick)
    check(out.returncode == 2 and '"2" (a string), not an integer' in out.stderr,
          "a format_version of the wrong type is named as such")

    # not a results directory: refused up front
    out = compare_cmd(tmp, a)
    check(out.returncode == 2 and "is not a results directory" in out.stderr,
          "a directory that is not a results directory is refused")

    # 2000 damaged files: ten lines and a count, not 2000 lines
    many = os.path.join(tmp, "many")
    shutil.copytree(a, many)
    for k in range(2000):
        open(os.path.join(many, "e%04d.json" % k), "w").close()
    out = compare_cmd(a, many)
    check(out.returncode == 0 and len(out.stderr.splitlines()) == 11
          and "... and 1990 more" in out.stderr, "the problems listed are capped")

    # ./timerbench from another directory: A and B are the caller's paths
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere)
    shutil.copytree(a, os.path.join(elsewhere, "a"))
    shutil.copytree(b, os.path.join(elsewhere, "b"))
    out = subprocess.run([os.path.join(root, "timerbench"), "compare", "a", "b"],
                         capture_output=True, text=True, cwd=elsewhere)
    check(out.returncode == 0 and "flagged %d of 87 tested" % flagged in out.stdout,
          "./timerbench compare a b from another directory reads that directory's a and b")

sys.exit(1 if failures else 0)
