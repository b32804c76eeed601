"""tbkit.precision — precision, the second axis (issue 27; bottom layer):
the grammar of a lateness budget (`--lateness SPEC`, tracegen's `--slack
SPEC`) and the precision classes a candidate's lateness falls in.

Pure functions on numbers and on the dicts of replay.json (bench/REPLAY.md,
"replay.json").  The verdict that recommends only structures which kept the
trace's budgets is tbkit.replaydata.budget_verdict, which bench/replay.py
writes into replay.json and the report calls, so the two never disagree.
Standard library only.
"""

import re

# <int><ns|us|ms|s>: an absolute budget; <number>%: a share of each delay
UNITS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}
MAX_NS = 1 << 62  # every budget is below 2^62 ns, as every trace time
ACCEPTED = ("<int><ns|us|ms|s> (an absolute budget, e.g. 50us, 1ms) or "
            "<number>% (a share of each delay, 0 < pct <= 100, at most 6 "
            "decimals, e.g. 1%, 12.5%)")
_ABS = re.compile(r"([0-9]{1,20})(ns|us|ms|s)\Z")
_PCT = re.compile(r"([0-9]{1,3})(?:\.([0-9]{1,6}))?%\Z")


def parse_spec(text):
    """A budget SPEC as {"spec": text, "kind": "abs", "value": ns} or
    {"spec": text, "kind": "pct", "value": percent}; ValueError naming the
    accepted forms for anything else.  The same grammar as
    bench/replay.c's parse_lateness (digits only, no sign or space)."""
    if not isinstance(text, str):
        raise ValueError("a lateness budget is text, got %r" % (text,))
    if text.startswith("-") and (_ABS.match(text[1:]) or _PCT.match(text[1:])):
        raise ValueError("%r is negative: a budget is how late a timer may "
                         "run, 0 or more" % text)
    m = _ABS.match(text)
    if m:
        ns = int(m.group(1)) * UNITS[m.group(2)]
        if ns >= MAX_NS:
            raise ValueError("%r is too large: a budget must be below 2^62 ns"
                             % text)
        return {"spec": text, "kind": "abs", "value": ns}
    m = _PCT.match(text)
    if m:
        e6 = int(m.group(1)) * 10 ** 6 + int((m.group(2) or "").ljust(6, "0"))
        if not 0 < e6 <= 100 * 10 ** 6:
            raise ValueError("%r: a share must be above 0%% and at most 100%%"
                             % text)
        return {"spec": text, "kind": "pct", "value": e6 / 1e6}
    raise ValueError("%r is not a lateness budget; accepted: %s" % (text, ACCEPTED))


def glue_values(argv, options=("--lateness",)):
    """argv with each OPTION VALUE pair whose VALUE starts with one "-"
    (`--lateness -5us`) written OPTION=VALUE: argparse takes such a value
    for an option and answers "expected one argument", where parse_spec
    has the error to give.  Everything else is left as it is."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if (a in options and i + 1 < len(argv) and argv[i + 1][:1] == "-"
                and argv[i + 1][1:2] != "-"):
            out.append("%s=%s" % (a, argv[i + 1]))
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def budget_ns(spec, delay_ns):
    """The budget SPEC (parse_spec's dict) gives a timer of `delay_ns`: the
    absolute value, or the share of the delay floored to whole ns, exactly
    as bench/replay.c computes it."""
    if spec["kind"] == "abs":
        return spec["value"]
    e8 = int(round(spec["value"] * 10 ** 6))
    return delay_ns * e8 // 10 ** 8


# ---- Precision classes ------------------------------------------------------

# Linux's timer wheel (kernelwheel/README.md, DECISIONS D11): a timer in
# level n >= 1 waits for a bucket of 8^n ticks and lies at least
# 63 * 8^(n-1) ticks away, so it runs less than 8^n ticks late: beyond its
# first tick, under (8^n - 1) / (63 * 8^(n-1) - 1) < 8/63 of its delay,
# armed on a tick or inside one; level 0 runs it within the tick.  So the
# kernel's arithmetic bounds every fire by one tick plus 8/63 of its delay
# (8/63 is 12.7 percent, a little more than the 1/8 often quoted: 63 ms +
# 1 ns at a 1 ms tick runs at 72 ms).
GRANULAR_SHARE = 8.0 / 63.0

# (name, test of a candidate's lateness): "exact" (never late), at most
# 50 us, at most 1 ms, every fire within one tick plus 8/63 of its delay
# (what Linux's wheel promises), any.
CLASSES = ("exact", "<= 50 us", "<= 1 ms", "<= 1 tick + 8/63 of the delay", "any")


def max_lateness(c):
    """A candidate's largest lateness in ns (backends[] or sweep[])."""
    late = c.get("lateness") or {}
    if "max_ns" in late:
        return late["max_ns"]
    return (late.get("ns") or {}).get("max")


def precision_class(c):
    """The tightest class a candidate's lateness fits."""
    mx = max_lateness(c)
    if mx is None:
        return "any"
    if mx == 0:
        return "exact"
    if mx <= 50000:
        return "<= 50 us"
    if mx <= 1000000:
        return "<= 1 ms"
    late = c.get("lateness") or {}
    # replay.json's largest lateness beyond one tick as a share of the
    # delay decides it exactly; without it (a sweep point), no fire later
    # than 1/8 of its delay is enough: 1/8 < one tick + 8/63
    beyond = late.get("beyond_tick_of_delay_max")
    if isinstance(beyond, (int, float)) and not isinstance(beyond, bool) \
            and beyond <= GRANULAR_SHARE:
        return CLASSES[3]
    if late.get("beyond_eighth_of_delay") == 0:
        return CLASSES[3]
    return "any"


def fits(c, cls):
    """Whether candidate c holds at precision class `cls`."""
    return CLASSES.index(precision_class(c)) <= CLASSES.index(cls)
