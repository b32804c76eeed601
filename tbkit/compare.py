"""tbkit.compare — report/compare.py (report layer): two results directories side by side.

For every benchmark instance present in both, prints the median time per
operation in A and B, the ratio B/A, the p-value of a two-sided
Mann-Whitney U test over the two sets of repetitions, and a verdict:
"faster" or "slower" only when the test says different (p < ALPHA) AND
the medians differ by at least MIN_EFFECT (tbkit.stats explains why: two runs
of one commit differ by more than the repetitions inside one run do);
"~" otherwise; "too few repetitions to test" when no ordering of so few
repetitions could reach ALPHA.  Ends with the number of instances flagged
(faster, slower) out of those tested, the geometric mean of B/A, and the
share of instances whose medians are within +-10 %; first, a warning for
each run setting in which the two differ (profile, seed, lateness
budget).  Reads the files
through tb_results, so damaged inputs are named, never a traceback.

A directory that is not a results directory, or is in a results format
this checkout does not read, is refused (exit 2), as the report refuses it.

usage: compare.py A B [--filter SUBSTRING]
"""
import math
import os
import statistics
import sys

from tbkit import analysis as AN
from tbkit import claims as C
from tbkit import results as tb_results
from tbkit import stats as S
from tbkit import verdict as V

# The reproducibility band the summary reports (issue 14's target).
BAND = 0.10
# Problems printed at most; the rest are counted.
MAX_PROBLEM_LINES = 10


def name_of(m):
    params = "/".join("%s:%s" % kv for kv in sorted(m.params.items()))
    return "/".join(x for x in (m.op, m.backend, m.workload, m.config, params) if x)


def _reps(m):
    """The repetitions' times; the median alone when the file kept only
    aggregates (then the pair is too few to test)."""
    return list(m.times) if m.times else [m.median]


class Refused(Exception):
    """A directory compare cannot read, and why, in words."""


def load(d):
    """tb_results.load of a results directory in a format this checkout
    reads; Refused otherwise."""
    why = tb_results.results_dir_problem(d)
    if why is not None:
        raise Refused(why)
    try:
        res = tb_results.load(d)
    except OSError as e:
        raise Refused("%s: cannot be read (%s)" % (d, e.strerror or e))
    why = tb_results.format_problem(res)
    if why is not None:
        raise Refused(why)
    return res


def compare(dir_a, dir_b, needle=""):
    """Returns (rows, summary lines, problems); rows are
    (name, median A, median B, ratio, verdict, p) with verdict one of
    "faster", "slower", "~", "too few".  Raises Refused for a directory
    that is not a results directory or not in a format this reads."""
    ra, rb = load(dir_a), load(dir_b)
    problems = [str(p) for p in ra.problems + rb.problems]
    rows = []
    for key, a in sorted(ra.measurements.items(), key=lambda kv: name_of(kv[1])):
        b = rb.measurements.get(key)
        if b is None or a.error or b.error or not a.median or not b.median:
            continue
        name = name_of(a)
        if needle and needle not in name:
            continue
        verdict, p, _ = S.compare_rule(_reps(a), _reps(b))
        rows.append((name, a.median, b.median, b.median / a.median, verdict, p))
    only_a = len(set(ra.measurements) - set(rb.measurements))
    only_b = len(set(rb.measurements) - set(ra.measurements))
    summary = []
    if rows:
        gmean = math.exp(sum(math.log(r[3]) for r in rows) / len(rows))
        faster = sum(1 for r in rows if r[4] == "faster")
        slower = sum(1 for r in rows if r[4] == "slower")
        few = sum(1 for r in rows if r[4] == "too few")
        tested = len(rows) - few
        flagged = faster + slower
        within = sum(1 for r in rows if abs(r[3] - 1) <= BAND)
        summary.append(
            "%d instances in both: flagged %d of %d tested (%s; B faster %d, "
            "B slower %d), not different (~) %d, too few repetitions to test %d; "
            "geometric mean of B/A %.3f; medians within +-%d %%: %d of %d (%s)"
            % (len(rows), flagged, tested,
               "%.1f %%" % (100.0 * flagged / tested) if tested else "n/a",
               faster, slower, tested - flagged, few, gmean, round(100 * BAND),
               within, len(rows), "%.1f %%" % (100.0 * within / len(rows))))
        by_n = within_by_n(rows)
        if len(by_n) > 1:
            summary.append("medians within +-%d %% by N: %s" % (
                round(100 * BAND), "; ".join(
                    "%s: %d of %d (%.0f %%)" % (n, w, t, 100.0 * w / t)
                    for n, w, t in by_n)))
        summary.append(
            "rule: flagged when the two-sided Mann-Whitney U test over the "
            "repetitions gives p < %g and the medians differ by at least %d %% "
            "(two runs of one commit differ by more than repetitions within "
            "one run); at most about %d %% of instances flagged is what two "
            "runs of one commit should show" % (S.ALPHA, round(100 * S.MIN_EFFECT),
                                                round(100 * S.ALPHA)))
    else:
        summary.append("no benchmark instance is present in both directories")
    if only_a or only_b:
        summary.append("only in A: %d, only in B: %d" % (only_a, only_b))
    summary[:0] = run_differences(ra, rb)
    summary.extend(machine_lines(ra.machine_state(), rb.machine_state()))
    return rows, summary, problems


# The run facts that change what an instance's numbers mean: two runs
# that differ in one compare the settings as well as the code.
RUN_FACTS = (("profile", "profile"), ("seed", "seed"),
             ("lateness", "lateness budget"))


def run_differences(ra, rb):
    """A warning line per run fact of RUN_FACTS in which A and B differ
    (a smoke run against a quick one: other repetitions, minimum times and
    N), printed before the counts and the geometric mean."""
    out = []
    for key, what in RUN_FACTS:
        a, b = ra.fact(key), rb.fact(key)
        if a != b:
            out.append("warning: the runs differ in %s: A %s, B %s; the B/A "
                       "ratios and their geometric mean compare the %s as "
                       "well as the code" % (
                           what, "(not recorded)" if a is None else a,
                           "(not recorded)" if b is None else b,
                           "profiles" if key == "profile" else what + "s"))
    return out


def within_by_n(rows):
    """[(N, within the band, instances)] over the rows whose name has an N
    parameter, by N ascending: where the memory hierarchy's share of the
    time grows with N (data beyond the cache), so does the run-to-run
    spread, and the single share hides where it comes from."""
    groups = {}
    for r in rows:
        n = next((int(p[2:]) for p in r[0].split("/")
                  if p.startswith("N:") and p[2:].isdigit()), None)
        if n is not None:
            g = groups.setdefault(n, [0, 0])
            g[0] += abs(r[3] - 1) <= BAND
            g[1] += 1
    return [(n, w, t) for n, (w, t) in sorted(groups.items())]


# Two runs whose memory latency medians differ by more than this were taken
# on a machine in different states (see bench/shim.cc, "memory latency").
LATENCY_BAND = 0.15


def machine_lines(ma, mb):
    """What the two runs saw of the machine: the median memory latency
    before each repetition, and a warning when it moved."""
    if not ma or not mb:
        return []
    la = statistics.median(ma["latency"])
    lb = statistics.median(mb["latency"])
    out = ["memory latency (a dependent load over 16 MiB, before each "
           "repetition), median: A %.0f ns, B %.0f ns (B/A %.2f); slow spells "
           "waited out: A %d, B %d; long batches redone: A %d, B %d"
           % (la, lb, lb / la, ma["waits"], mb["waits"], ma["redone"], mb["redone"])]
    if abs(lb / la - 1) > LATENCY_BAND:
        out.append("warning: the machine's memory was %s in B than in A by more "
                   "than %d %%: instances whose data misses the cache differ for "
                   "that reason, not the code's"
                   % ("slower" if lb > la else "faster", round(100 * LATENCY_BAND)))
    return out


def fmt_ns(v):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= scale:
            return "%.3g %s" % (v / scale, unit)
    return "%.3g ns" % v


def verdicts_of(d, res=None):
    """(verdicts document, where it came from) of results directory `d`:
    its verdicts.json when the report wrote one, else the claims decided
    now on its results (then without "Which one to use", which the report
    decides)."""
    path = os.path.join(d, "verdicts.json")
    if os.path.isfile(path):
        try:
            return V.load(path), "verdicts.json"
        except V.Unreadable:
            pass
    res = res if res is not None else load(d)
    return V.document(C.evaluate(AN.Analysis(res))), "decided now"


def verdict_lines(dir_a, dir_b):
    """The two runs' verdicts side by side, as lines: a line per claim
    (its kind in A and B, "changed" where they differ, then the cases
    whose decision differs), the recommendations that changed, and the
    count of changed verdicts.
    Raises Refused as compare() does."""
    (va, wa), (vb, wb) = verdicts_of(dir_a), verdicts_of(dir_b)
    rows, recs = V.side_by_side(va, vb)
    width = max([len(r[0]) for r in rows] + [5])
    out = ["verdicts (A: %s, B: %s):" % (wa, wb),
           "%-*s  %-24s  %-24s" % (width, "claim", "A", "B")]
    ca = {c["id"]: c for c in va.get("claims", [])}
    cb = {c["id"]: c for c in vb.get("claims", [])}
    for cid, ka, kb, changed in rows:
        out.append("%-*s  %-24s  %-24s%s" % (width, cid, ka or "-", kb or "-",
                                             "  changed" if changed else ""))
        if changed and cid in ca and cid in cb:
            # what moved it: the cases whose decision differs
            for name, da, db in V.changed_cases(ca[cid], cb[cid]):
                out.append("    case %s: A %s, B %s" % (name, da or "-", db or "-"))
    for w, ra, rb in recs:
        out.append("recommendation changed: %s: A %s, B %s" % (
            w, ", ".join(ra) if ra else "-", ", ".join(rb) if rb else "-"))
    out.append("verdicts changed: %d of %d claims; recommendations changed: %d"
               % (sum(1 for r in rows if r[3]), len(rows), len(recs)))
    return out


VERDICT_TEXT = {"faster": "faster", "slower": "slower", "~": "~",
                "too few": "too few repetitions to test"}


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
    try:
        rows, summary, problems = compare(args[0], args[1], needle)
    except Refused as e:
        sys.stderr.write("compare: %s\n" % e)
        return 2
    print("%-70s %10s %10s %7s %8s  %s" % ("benchmark", "A", "B", "B/A", "p", "verdict"))
    for name, a, b, ratio, verdict, p in rows:
        print("%-70s %10s %10s %7.3f %8s  %s" % (name, fmt_ns(a), fmt_ns(b), ratio,
                                                S.fmt_p(p), VERDICT_TEXT[verdict]))
    for line in summary:
        print(line)
    for line in verdict_lines(args[0], args[1]):
        print(line)
    for p in problems[:MAX_PROBLEM_LINES]:
        sys.stderr.write("compare: %s\n" % p)
    if len(problems) > MAX_PROBLEM_LINES:
        sys.stderr.write("compare: ... and %d more\n" % (len(problems) - MAX_PROBLEM_LINES))
    return 0
