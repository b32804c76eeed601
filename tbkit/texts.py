"""tbkit.texts — the report's section introductions and method texts, written
once (base layer, issue 36): each fragment is a named constant, named after
the section and place it appears in (`MICRO_INTRO`, `METHOD_REPLAY`, ...),
so that prose is read and edited here and the section modules (tbkit.sec_*)
only compute what goes into it.

A fragment is plain text, or a template whose named fields `{name}` the
section fills with what it computed (numbers already formatted by
tbkit.numbers, names, links); `spans(template, **fields)` turns one into
the spans of a paragraph, with `**bold**` and `` `code` `` marked up in the
template itself.  Verdicts are said elsewhere (tbkit.claimtext); the
reference manual of the results is bench/README.md, which a fragment points
to rather than copies.
"""

import re

from tbkit.doc import Bold, Code

_MARK = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`|\{(\w+)\}")


def spans(template, **fields):
    """The spans of `template`: its text, `**x**` as Bold, `` `x` `` as
    Code, and each `{name}` replaced by fields[name] (a span, or a list or
    tuple of spans put in flat)."""
    out, at = [], 0
    for m in _MARK.finditer(template):
        if m.start() > at:
            out.append(template[at:m.start()])
        bold, code, name = m.groups()
        if bold is not None:
            out.append(Bold(bold))
        elif code is not None:
            out.append(Code(code))
        else:
            v = fields[name]
            out.extend(v if isinstance(v, (list, tuple)) else (v,))
        at = m.end()
    if at < len(template):
        out.append(template[at:])
    return tuple(out)


# ---- the summary's "How to read this report" and "Method" (tbkit.sec_summary)

HOW_TO_READ_NUMBERS = (
    "Every number in this report is computed from the results directory it was generated "
    "from; nothing is typed in. Times are medians over the repetitions of each benchmark; "
    "the spread is the coefficient of variation (standard deviation divided by the mean, "
    "as a percentage) of those repetitions, and error bars in the figures run from the "
    "fastest to the slowest repetition. Lower is better for every time.")

HOW_TO_READ_CLOCKS = (
    "Micro-benchmarks run on the virtual clock: no threads, no sleeping, so they measure "
    "the data structure. Runtime benchmarks run on the monotonic clock with the backends' "
    "own threads, so they measure the whole design, locks and wake-ups included.")

# fields: flat, grow (ratios), slope (the log-log slope's bound), clear (a factor)
HOW_TO_READ_WORDS = (
    "Words in findings follow fixed rules. A series is **flat** when its time at the "
    "largest N is under {flat} its time at the smallest N, and **grows** at or above "
    "{grow}; growth whose log-log slope is under {slope} is called sub-linear (what log n "
    "looks like on real caches), otherwise near-linear. Two medians differ only where the "
    "Mann-Whitney U test below says so; a crossover is reported only where the two lines "
    "differ significantly at both ends of N. A behavioural claim needs a factor of at "
    "least {clear} between the compared numbers to hold.")

# fields: alpha, few (repetitions per side that cannot reach it), min_p,
# confidence (a percentage), grow, flat
HOW_TO_READ_SIGNIFICANCE = (
    "**Significance.** Where a verdict compares two measured sets, it decides \"different\" "
    "with a two-sided Mann-Whitney U test over their repetitions at p < {alpha} and prints "
    "the p-value; a claim whose decisive comparison is not significant is **undecided at "
    "this noise** rather than given a side. With fewer repetitions than any ordering needs "
    "to reach p < {alpha} ({few} against {few} gives at best p = {min_p}) the comparison is "
    "too few repetitions to test. Growth is judged by the {confidence} % confidence interval "
    "of the ratio of the times at the largest and smallest N (the interval that inverts the "
    "same test): it grows when the whole interval is at or above {grow}, is flat when the "
    "whole interval is under {flat}, and is undecided otherwise; the structure's work "
    "counters (levels sifted, entries visited, ...) are counted, not timed, and are judged "
    "on their medians.")

# fields: tail (samples beyond a percentile), p50, p90, p99, p999 (samples
# each needs), rms (the largest RMS error a fit may have)
HOW_TO_READ_PERCENTILES = (
    "**Percentiles and fits.** A percentile q is printed only where at least {tail} / "
    "(1 − q) samples back it (p50: {p50}, p90: {p90}, p99: {p99}, p99.9: {p999} samples), so "
    "that at least {tail} samples lie beyond it; otherwise its cell says how many samples "
    "there were. A complexity fit (Google Benchmark's curves, least squares over the "
    "medians at each N) is shown only when its RMS error is at most {rms}; otherwise the "
    "finding says \"no fit\".")

# fields: reps, p50, p90, max (the probe's latencies), over (the factor
# over the 25th percentile), waits, redone
METHOD_MACHINE_STATE = (
    "**The machine during the run.** Before each repetition of a micro-benchmark the "
    "harness times a dependent load over a 16 MiB random cycle: this VM shares its "
    "last-level cache and memory with other tenants, and how much it gets moves over "
    "seconds to minutes. Over {reps} repetitions the latency was {p50} median, {p90} at the "
    "90th percentile, {max} at most. A repetition that found it over {over} times the run's "
    "25th percentile waited for the spell to pass (200 ms at a time, at most 1 s, at most "
    "2 min in a run): {waits} waits; a batch of 10 ms or more that ended in a spell was run "
    "again: {redone}. Times of instances whose data misses the cache are comparable "
    "between two runs only when their latencies agree (`timerbench compare` prints both); "
    "the work counts and the instruction counts below do not depend on it.")

METHOD_PEERS_DRIVER = (
    "**Against the side-by-side driver.** `../shared/peers` times the same backends through "
    "the same interface beside four reference C timers. Its figures and these differ by "
    "design: its add fills an empty structure with N timers (so the structure holds N/2 "
    "on average, and the first touch of its own handle array is in the timed part), while "
    "`insert` here adds a batch to a structure that already holds N; a lazy-cancel backend "
    "(heapqueue with remove-on-cancel off, timerthread) holds N to 1.25 N records here, the "
    "cancelled ones included until a purge, and none in the driver, so their insert costs "
    "more here at large N; its cancel takes all N in random order down to an empty "
    "structure, each first loading its handle from a random place of that array (a "
    "dependent miss that the reference timers' intrusive nodes do not make; "
    "docs/notes/2026-12-02-peers-driver-and-targets.md measures both costs), while "
    "`cancel` here holds N throughout; its delays are uniform over 10^6 ticks of each "
    "backend, the workloads here are defined in time (`uniform`: 1 ms to 1000 s).")
