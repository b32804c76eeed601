#!/usr/bin/env python3
"""compare.py — two results directories side by side.

For every benchmark instance present in both, prints the median time per
operation in A and B, the ratio B/A, and whether the difference is within
the noise (the ratio is under 1 + 2 x the larger coefficient of variation
of the two, the report's own rule).  Ends with the geometric mean of the
ratios and counts of faster, slower and within-noise instances.  Reads the
files through tb_results, so damaged inputs are named, never a traceback.

usage: compare.py A B [--filter SUBSTRING]
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tb_results  # noqa: E402


def name_of(m):
    params = "/".join("%s:%s" % kv for kv in sorted(m.params.items()))
    return "/".join(x for x in (m.op, m.backend, m.workload, m.config, params) if x)


def within_noise(a, b):
    cvs = [c for c in (a.cv, b.cv) if c is not None]
    if not cvs:
        return None
    ratio = max(a.median, b.median) / min(a.median, b.median)
    return ratio < 1 + 2 * max(cvs)


def compare(dir_a, dir_b, needle=""):
    """Returns (rows, summary lines, problems); rows are
    (name, median A, median B, ratio, noise flag)."""
    ra, rb = tb_results.load(dir_a), tb_results.load(dir_b)
    problems = [str(p) for p in ra.problems + rb.problems]
    rows = []
    for key, a in sorted(ra.measurements.items(), key=lambda kv: name_of(kv[1])):
        b = rb.measurements.get(key)
        if b is None or a.error or b.error or not a.median or not b.median:
            continue
        name = name_of(a)
        if needle and needle not in name:
            continue
        rows.append((name, a.median, b.median, b.median / a.median,
                     within_noise(a, b)))
    only_a = len(set(ra.measurements) - set(rb.measurements))
    only_b = len(set(rb.measurements) - set(ra.measurements))
    summary = []
    if rows:
        gmean = math.exp(sum(math.log(r[3]) for r in rows) / len(rows))
        noise = sum(1 for r in rows if r[4])
        faster = sum(1 for r in rows if not r[4] and r[3] < 1)
        slower = sum(1 for r in rows if not r[4] and r[3] > 1)
        summary.append("%d instances in both: geometric mean of B/A %.3f; "
                       "B faster %d, B slower %d, within the noise %d"
                       % (len(rows), gmean, faster, slower, noise))
    else:
        summary.append("no benchmark instance is present in both directories")
    if only_a or only_b:
        summary.append("only in A: %d, only in B: %d" % (only_a, only_b))
    return rows, summary, problems


def fmt_ns(v):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= scale:
            return "%.3g %s" % (v / scale, unit)
    return "%.3g ns" % v


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--filter")]
    needle = ""
    for i, a in enumerate(argv):
        if a.startswith("--filter="):
            needle = a.split("=", 1)[1]
        elif a == "--filter" and i + 1 < len(argv):
            needle = argv[i + 1]
            args.remove(needle)
    if len(args) != 2:
        sys.stderr.write("usage: compare.py A B [--filter SUBSTRING]\n")
        return 2
    for d in args:
        if not os.path.isdir(d):
            sys.stderr.write("compare: %s: no such results directory\n" % d)
            return 2
    rows, summary, problems = compare(args[0], args[1], needle)
    print("%-70s %10s %10s %7s  %s" % ("benchmark", "A", "B", "B/A", "noise"))
    for name, a, b, ratio, noise in rows:
        flag = {True: "within", False: "", None: "?"}[noise]
        print("%-70s %10s %10s %7.3f  %s" % (name, fmt_ns(a), fmt_ns(b), ratio, flag))
    for line in summary:
        print(line)
    for p in problems:
        sys.stderr.write("compare: %s\n" % p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
