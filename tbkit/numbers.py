"""tbkit.numbers — the arithmetic behind every sentence of the report
(bottom layer).

Growth fits, crossover points, ratios and percentile helpers.  Every rule
that turns numbers into words (what counts as "flat", as "grows") is a
named constant here, and the report prints those rules in its "How to
read it" section, so a reader can check each verdict by hand.
"""

import math
import statistics

# A series "stays flat" when its time at the largest N is under FLAT_RATIO
# times its time at the smallest N; it "grows" at or above GROW_RATIO.
FLAT_RATIO = 1.5
GROW_RATIO = 1.5
# Log-log slopes: below LOG_SLOPE_MAX a growing series is sub-linear
# (consistent with log n plus cache effects); at or above it, closer to n.
LOG_SLOPE_MAX = 0.5
# "Much" larger / smaller for the behavioural claims.
CLEAR_FACTOR = 2.0


# The structure's work per operation, as bench/micro.c exports it (issue
# 14, DECISIONS D2): counted by the backend in tb_stats across the timed
# parts, divided by the operations.  `rounds` is part of `visits`, so the
# total leaves it out.
WORK_COUNTERS = ("sift_levels_per_op", "visits_per_op", "rounds_per_op",
                 "cascades_per_op", "bucket_offers_per_op", "ticks_per_op",
                 "transfers_per_op")
WORK_IN_TOTAL = tuple(c for c in WORK_COUNTERS if c != "rounds_per_op")


def work_of(m):
    """{counter: median per op} of the work counters m carries, or None
    when it carries none (a run from before they were exported)."""
    got = {c: m.counter(c) for c in WORK_COUNTERS}
    got = {c: v for c, v in got.items() if v is not None}
    return got or None


def work_total(m):
    """The structure's work per operation (sum of the counters, rounds
    counted once, inside visits), or None without counters."""
    w = work_of(m)
    if w is None:
        return None
    return sum(v for c, v in w.items() if c in WORK_IN_TOTAL)


def _least_squares(pts):
    """Slope and intercept of the least-squares line through [(x, y)], or
    None with fewer than two points or every x the same."""
    if len(pts) < 2:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    return slope, my - slope * mx


def fit_loglog(points):
    """Least-squares slope and intercept of ln(t) against ln(N).
    points: [(N, t)] with N, t > 0.  None with fewer than two points."""
    return _least_squares([(math.log(n), math.log(t)) for n, t in points
                           if n and t and n > 0 and t > 0])


def fit_log2(points):
    """Least-squares t = a + b * log2(N): b is ns added per doubling of N.
    Returns (a, b), or None with fewer than two points."""
    fit = _least_squares([(math.log2(n), t) for n, t in points
                          if n and n > 0 and t is not None])
    if fit is None:
        return None
    b, a = fit
    return a, b


class Growth:
    """How one series (ns/op against N) grows."""

    def __init__(self, points):
        self.points = sorted((n, t) for n, t in points if n and t)
        self.ok = len(self.points) >= 2
        if not self.ok:
            return
        self.n_lo, self.t_lo = self.points[0]
        self.n_hi, self.t_hi = self.points[-1]
        self.ratio = self.t_hi / self.t_lo if self.t_lo > 0 else float("inf")
        fit = fit_loglog(self.points)
        self.slope = fit[0] if fit else None
        lfit = fit_log2(self.points)
        self.per_doubling = lfit[1] if lfit else None

    def shape(self):
        """'flat', 'sub-linear growth' or 'near-linear growth' by the
        module's thresholds."""
        if not self.ok:
            return "unknown"
        if self.ratio < FLAT_RATIO:
            return "flat"
        if self.slope is not None and self.slope < LOG_SLOPE_MAX:
            return "sub-linear growth"
        return "near-linear growth"

    def grows(self):
        return self.ok and self.ratio >= GROW_RATIO

    def flat(self):
        return self.ok and self.ratio < FLAT_RATIO


def crossover(series_a, series_b):
    """First N where series b becomes faster than series a (both [(N, t)]),
    interpolated geometrically between the two measured N around it.
    Returns (kind, n): kind 'cross' with the N, 'a_always' / 'b_always' when
    one is faster at every common N, 'mixed' for more than one crossing,
    or None when they share fewer than two N."""
    da, db = dict(series_a), dict(series_b)
    ns = sorted(set(da) & set(db))
    if len(ns) < 2:
        return None
    sign = [(1 if db[n] < da[n] else -1) for n in ns]   # +1: b faster
    changes = [i for i in range(1, len(ns)) if sign[i] != sign[i - 1]]
    if not changes:
        return ("b_always" if sign[0] > 0 else "a_always", None)
    if len(changes) > 1:
        # Take the last crossing if b stays ahead from there on.
        if sign[-1] < 0:
            return ("mixed", None)
        i = changes[-1]
    else:
        i = changes[0]
        if sign[i] < 0:
            return ("a_overtakes", _interp(ns[i - 1], ns[i], da, db))
    return ("cross", _interp(ns[i - 1], ns[i], da, db))


def _interp(n0, n1, da, db):
    # log(t_b/t_a) is assumed linear in log N between the two points.
    d0 = math.log(db[n0] / da[n0])
    d1 = math.log(db[n1] / da[n1])
    if d0 == d1:
        return n1
    f = d0 / (d0 - d1)
    return math.exp(math.log(n0) + f * (math.log(n1) - math.log(n0)))


def percentile(sorted_values, q):
    """Nearest-rank percentile (q in 0..100) of an already sorted list."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(math.ceil(q / 100.0 * len(sorted_values))) - 1))
    return sorted_values[k]


def cdf_points(sorted_values, limit=400):
    """At most `limit` (x, fraction <= x) points of an empirical CDF,
    spaced evenly in rank, always including the minimum and the maximum."""
    n = len(sorted_values)
    if n == 0:
        return []
    if n <= limit:
        idx = range(n)
    else:
        step = (n - 1) / (limit - 1)
        idx = sorted({int(round(i * step)) for i in range(limit)})
    return [(sorted_values[i], (i + 1) / n) for i in idx]


def geomean(values):
    vals = [v for v in values if v and v > 0]
    if not vals:
        return None
    return math.exp(statistics.fmean(math.log(v) for v in vals))


# ---- number formatting (one place, so tables and prose agree) ------------

def fmt_ns(ns):
    """A time with a unit chosen for reading: 12.3 ns, 4.56 us, 7.89 ms."""
    if ns is None:
        return "n/a"
    a = abs(ns)
    if a < 1e3:
        return "%.1f ns" % ns if a < 100 else "%.0f ns" % ns
    if a < 1e6:
        return "%.3g us" % (ns / 1e3)
    if a < 1e9:
        return "%.3g ms" % (ns / 1e6)
    return "%.3g s" % (ns / 1e9)


def fmt_num(v, digits=3):
    if v is None:
        return "n/a"
    if v != 0 and (abs(v) >= 1e15 or abs(v) < 1e-3):
        return "%.*g" % (digits, v)
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    return "%.*g" % (digits, v)


def fmt_ratio(r):
    if r is None:
        return "n/a"
    return "%.2f×" % r if r < 10 else "%.0f×" % r


def fmt_pct(f):
    return "n/a" if f is None else "%.1f %%" % (100.0 * f)


def fmt_n(n):
    """N as a power of ten when it is one (10^6), else with separators."""
    if n is None:
        return "n/a"
    n = float(n)
    if n > 0:
        e = math.log10(n)
        if abs(e - round(e)) < 1e-9 and e >= 2:
            return "10^%d" % round(e)
    if n >= 1000:
        return "{:,.0f}".format(n)
    return "%.0f" % n


def _num_or(text, default=0.0):
    """A number from text such as "4", for sorting; `default` otherwise."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return default
