"""tbkit.stats — the statistics (bottom layer) behind every "different", "grows" and every
percentile or fit the report and `compare` print: one place, one set of
named thresholds, each printed by the report beside what it decides.

- Significance: the Mann-Whitney U test over the repetitions (two-sided,
  scipy.stats.mannwhitneyu, as Google Benchmark's compare.py and Go's
  benchstat use), at ALPHA.  With too few repetitions even the most
  extreme ordering cannot reach ALPHA (3 against 3 gives at best
  p = 0.1): such a pair is "too few repetitions to test", never a verdict.
- Confidence interval of a ratio of two sets of repetitions: the one that
  inverts the same test (Hodges-Lehmann), on the logarithms.
- `compare`'s rule: a difference is flagged only when it is significant AND
  at least MIN_EFFECT (see there for why).
- Percentiles: the q-quantile is shown only when at least
  PCT_TAIL_SAMPLES / (1 - q) samples back it.
- Complexity fits: shown only when their RMS error is at most FIT_MAX_RMS.
"""

import importlib.util
import math
import statistics

# Significance level of every test.
ALPHA = 0.05
# Smallest difference `compare` calls faster or slower, as a fraction of
# the median.  Repetitions inside one run are more alike than two runs of
# the same commit (layout, frequency and the other core's load change
# between runs, not between repetitions), so a test over the repetitions
# alone finds "significant" differences between two runs of one commit.
# 10 % is the suite's own reproducibility target (issue 14: at least 95 %
# of instances reproduce within +-10 % between two runs of one commit):
# a smaller difference cannot be told apart from a rerun.  benchstat's "~"
# is the same idea without the effect floor.
MIN_EFFECT = 0.10
# A percentile q needs at least PCT_TAIL_SAMPLES samples beyond it: n >=
# PCT_TAIL_SAMPLES / (1 - q), so p50 needs 20, p90 100, p99 1000 and p99.9
# 10^4 samples.  With fewer, the tail holds under ten samples and the
# "percentile" is one of the largest few (the maximum, at 500 samples and
# p99.9).
PCT_TAIL_SAMPLES = 10
# A Google Benchmark complexity fit (BigO) is shown only when its RMS
# error, relative to the mean time, is at most this: above it the curve
# misses the measured points by more than a fifth on average and explains
# little (issue 14 saw O(N) printed with RMS 101 %).
FIT_MAX_RMS = 0.20


def have_scipy():
    """Whether scipy (Debian's python3-scipy), which every test of
    significance needs, can be imported."""
    return importlib.util.find_spec("scipy") is not None


def min_p(n1, n2):
    """The smallest two-sided p-value any ordering of n1 against n2
    repetitions can give: both extremes out of C(n1 + n2, n1) orderings."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def testable(n1, n2):
    """True when n1 against n2 repetitions can reach significance."""
    return min_p(n1, n2) <= ALPHA


def _clean(values):
    return [float(v) for v in values or () if v is not None and math.isfinite(v)]


def mann_whitney(a, b):
    """Two-sided Mann-Whitney U p-value of samples a and b; None when they
    are too few to test.  All values equal: 1.  Needs scipy (imported
    here, on first use, so that the runners, which decide nothing under
    the PATH python3 of `--check`, load without it); without it this
    raises ImportError."""
    a, b = _clean(a), _clean(b)
    if not testable(len(a), len(b)):
        return None
    if len(set(a) | set(b)) == 1:
        return 1.0
    from scipy.stats import mannwhitneyu
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else 1.0


class Decision:
    """How sample a compares with sample b (scaled by `factor`).
    kind: "greater" / "less" (significant), "undecided" (not significant)
    or "too few" (too few repetitions to test); p the p-value or None;
    ratio the median of a over factor x the median of b."""

    def __init__(self, kind, p, ratio, na, nb):
        self.kind, self.p, self.ratio, self.na, self.nb = kind, p, ratio, na, nb

    @property
    def significant(self):
        return self.kind in ("greater", "less")

    def text(self):
        """"p = 0.008" or "too few repetitions to test (1 and 1)"."""
        if self.kind == "too few":
            return "too few repetitions to test (%d and %d)" % (self.na, self.nb)
        return "p = %s" % fmt_p(self.p)


def decide(a, b, factor=1.0, shift=0.0):
    """Is a greater or less than factor x b + shift, by the Mann-Whitney U
    test over the two sets of repetitions?"""
    a = _clean(a)
    b = [factor * v + shift for v in _clean(b)]
    ma = statistics.median(a) if a else None
    mb = statistics.median(b) if b else None
    ratio = ma / mb if ma is not None and mb else None
    p = mann_whitney(a, b)
    if p is None:
        return Decision("too few", None, ratio, len(a), len(b))
    if p >= ALPHA or ratio is None or ratio == 1:
        return Decision("undecided", p, ratio, len(a), len(b))
    return Decision("greater" if ratio > 1 else "less", p, ratio, len(a), len(b))


def direction(d, want, min_effect=MIN_EFFECT):
    """What decision d says of an effect claimed in direction `want`
    ("greater": a over b; "less") by at least min_effect: "yes" when it is
    significant that way and at least that large; "no" when the medians go
    that way by less, or the other way, whatever the p-value (a smaller
    effect is not one a rerun brings back, so no test could make it
    support the claim); "undecided" when they go that way far enough but
    the test does not call it significant, or cannot be run.  A threshold
    on the effect as well as the test is what keeps a verdict from flipping
    between two runs of one commit: with the test alone, an effect near
    zero turns a claim from "does not hold" to "undecided" and back as its
    p-value wanders."""
    if d.ratio is None:
        return "undecided"
    # the same threshold either way on a log scale, as compare_rule's
    far = (d.ratio >= 1 + min_effect if want == "greater"
           else d.ratio * (1 + min_effect) <= 1)
    if not far:
        return "no"
    return "yes" if d.kind == want else "undecided"


def fmt_p(p):
    if p is None:
        return "n/a"
    return "%.2g" % p if p >= 0.001 else "%.1e" % p


# ---- confidence interval of a ratio (inverting the same test) ------------

_U_CACHE = {}


def _u_counts(n1, n2):
    """Number of orderings giving each U = 0 .. n1*n2 (no ties)."""
    key = (n1, n2)
    if key in _U_CACHE:
        return _U_CACHE[key]
    # f[i][j] = counts for i against j; built by the usual recursion
    prev = [[1] for _ in range(n2 + 1)]          # i = 0: only U = 0
    for i in range(1, n1 + 1):
        cur = [[1]]                               # j = 0: only U = 0
        for j in range(1, n2 + 1):
            a = prev[j]          # last element from sample 1 is smallest
            b = cur[j - 1]       # ... from sample 2: adds i to U
            size = i * j + 1
            row = [0] * size
            for u, c in enumerate(a):
                row[u] += c
            for u, c in enumerate(b):
                row[u + i] += c
            cur.append(row)
        prev = cur
    out = prev[n2]
    _U_CACHE[key] = out
    return out


def ratio_ci(hi, lo, conf=1 - ALPHA):
    """Confidence interval (low, high) of the ratio of hi's values to lo's
    (Hodges-Lehmann on the logarithms, exact Mann-Whitney critical value),
    or None when the repetitions are too few or not positive."""
    hi = [v for v in _clean(hi) if v > 0]
    lo = [v for v in _clean(lo) if v > 0]
    if not hi or not lo or not testable(len(hi), len(lo)) or len(hi) * len(lo) > 2500:
        return None
    counts = _u_counts(len(hi), len(lo))
    total = float(sum(counts))
    tail = (1 - conf) / 2
    acc, k = 0, 0
    for u, c in enumerate(counts):
        if (acc + c) / total > tail:
            break
        acc += c
        k = u + 1
    if k == 0:
        return None
    d = sorted(math.log(x) - math.log(y) for x in hi for y in lo)
    return math.exp(d[k - 1]), math.exp(d[len(d) - k])


# ---- compare's rule -------------------------------------------------------

def compare_rule(a, b):
    """B against A for `compare`: ("faster" | "slower" | "~" | "too few",
    p, ratio of medians B/A).  Flagged only when the test says different
    (p < ALPHA) and the medians differ by at least MIN_EFFECT."""
    d = decide(b, a)
    if d.kind == "too few":
        return "too few", None, d.ratio
    for want, verdict in (("greater", "slower"), ("less", "faster")):
        if direction(d, want) == "yes":
            return verdict, d.p, d.ratio
    return "~", d.p, d.ratio


# ---- percentiles and fits -------------------------------------------------

def pct_min_samples(q):
    """Samples a q-quantile (0 < q < 1) needs: PCT_TAIL_SAMPLES / (1 - q)."""
    return int(math.ceil(PCT_TAIL_SAMPLES / (1.0 - q) - 1e-9))


def pct_supported(count, q):
    """True when `count` samples back a q-quantile (max and min: any)."""
    if q <= 0 or q >= 1:
        return bool(count)
    return count is not None and count >= pct_min_samples(q)


def fit_explains(fit):
    """True when a complexity fit {"big_o", "rms"} explains the data."""
    return bool(fit and fit.get("big_o") and fit.get("rms") is not None
                and 0 <= fit["rms"] <= FIT_MAX_RMS)
