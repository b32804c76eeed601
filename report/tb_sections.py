"""tb_sections — builds the report document, section by section, from the
records tb_results read.  Each section draws its figure, tabulates its
medians with their spread and states findings computed from them; a section
without data says so and names what is missing.

Prose here never holds a measured number as a literal: numbers enter
sentences only through the formatting helpers of tb_analysis.
"""

import os
import re
import shlex
import statistics

import tb_analysis as A
import tb_results
import tb_claims
import tb_counts
import tb_experiments
import tb_front
import tb_replay
import tb_stats as S
from tb_doc import Bold, Code, Doc
from tb_figures import FLOOR_COLOUR, RawPath, add_figure, assign_colours

# Micro-benchmark operations, in the order the figures show them.
# Files with problems the Limitations section names one by one; the rest
# are counted (a directory of 10^5 damaged files makes no 10^5-line report).
PROBLEMS_LISTED = 20

MICRO_OPS = ["fill", "insert", "cancel", "expire", "timeouts", "periodic"]
MICRO_WHAT = {
    "fill": "N schedules into an empty scheduler, growth of the structure "
            "included, per task",
    "insert": "schedule one task into a scheduler that already holds N pending "
              "tasks, including every step until the task sits in its final "
              "place (a wheel's inbox transfer included)",
    "cancel": "cancel one of N pending tasks, in random order",
    "expire": "cost per task when N due tasks fire as the virtual clock is "
              "advanced in steps",
    "timeouts": "steady state of a server: each operation schedules a timeout "
                "and most are cancelled before they fire while the clock "
                "moves on, with N live",
    "periodic": "cost per run when N periodic tasks run",
}
# Workloads in the order panels show them; the first one an operation has
# is its main workload (first figure), the others go to a second figure.
WORKLOAD_ORDER = ["uniform", "timeouts", "periodic", "short", "wide", "burst"]
# Names a benchmark may give the sleep-loop baseline ("the floor").
FLOOR_NAMES = ("floor", "sleep", "nanosleep", "clock_nanosleep")
# Configuration series (the `series=` key bench/ writes) and what they mean,
# for titles; an unknown series is shown by its name.
CONFIG_TEXT = {
    "h2h": "head-to-head, wheels at a common tick",
    "orig": "each original's defaults",
    "cover": "wheels sized to span the workload",
}
CONFIG_ORDER = ["h2h", "orig", "cover"]

# The four originals' roles, for the claims (a fifth backend is classified
# by the capabilities machine.json lists for it, when it lists them).
KNOWN_HEAPS = ("heapqueue", "timerthread")
KNOWN_WHEELS = ("timerwheel", "hierwheel")


class Ctx:
    """What every section shares: the results, figure drawer, the backends
    in registry order with their colours, and what sections found."""

    def __init__(self, res, figs):
        self.res = res
        self.figs = figs
        all_b = res.backends()
        have = {m.backend for m in res.measurements.values()
                if m.op not in tb_results.SELF_OPS}
        self.floor = [b for b in all_b if is_floor(b)]
        # Colours follow the registry position, so a backend keeps its
        # colour whether or not the others ran; only those with results
        # are listed.
        self.colours = assign_colours([b for b in all_b if not is_floor(b)])
        self.backends = [b for b in all_b if not is_floor(b) and b in have]
        for b in self.floor:
            self.colours[b] = FLOOR_COLOUR
        self.findings = []       # (priority, spans) for the summary
        self.missing = []        # (section, what is missing)
        self.growth = {}         # (op, config, workload, series) -> Growth
        self.series = {}         # (op, config, workload) -> {series: [(N, m)]}
        self.fig_count = 0
        self.memory = {}         # (backend, series, workload, N) -> bytes
        self.memory_main = None  # (N, workload, [(bytes, backend)])
        self.micro_best = {}     # op -> (N, workload, best, t, worst, t)
        self.rt = {}             # runtime sections' measurements, for claims
        self.caps = _caps_from_machine(res.machine)

    def colour(self, backend):
        return self.colours.get(backend, "#777777")

    def is_heap(self, b):
        c = self.caps.get(b)
        if c is not None:
            return "ticked" not in c and "tree" not in c
        return b in KNOWN_HEAPS

    def is_tree(self, b):
        """A balanced search tree (TB_CAP_TREE): the third family, in
        neither the heaps' nor the wheels' claims."""
        c = self.caps.get(b)
        return c is not None and "tree" in c

    def is_wheel(self, b):
        c = self.caps.get(b)
        if c is not None:
            return "ticked" in c
        return b in KNOWN_WHEELS

    def finding(self, priority, *spans):
        self.findings.append((priority, spans))

    def fig_name(self, stem):
        """A file name for the next figure; results name parts may hold
        any character, so only a safe subset of the stem is kept."""
        self.fig_count += 1
        return "%02d-%s" % (self.fig_count, re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:60])


def _caps_from_machine(machine):
    """{backend: {capability, ...}} as the run's binary listed them
    (machine.json build.backend_caps), else from a backends list of
    {"name", "caps"} entries; {} when the run did not record them."""
    out = {}
    build = (machine or {}).get("build")
    listed = build.get("backend_caps") if isinstance(build, dict) else None
    if isinstance(listed, dict):
        for name, caps in listed.items():
            if isinstance(name, str) and isinstance(caps, list):
                out[name] = {str(c).lower() for c in caps}
    reg = (machine or {}).get("backends")
    if isinstance(reg, list):
        for b in reg:
            if isinstance(b, dict) and isinstance(b.get("name"), str):
                caps = b.get("caps")
                if isinstance(caps, list):
                    out[b["name"]] = {str(c).lower() for c in caps}
                elif isinstance(caps, str):
                    out[b["name"]] = {c.strip().lower() for c in caps.split(",")}
    return out


def is_floor(backend):
    return backend.lower() in FLOOR_NAMES


def _floor_text(backend):
    """What a floor pseudo-backend of bench/runtime.c measures."""
    if backend == "floor":
        return ("pthread_cond_timedwait on CLOCK_MONOTONIC, signalled by each new "
                "earliest probe: the wait of every backend here, the floor they are held to")
    return "clock_nanosleep loop: the machine's own wake-up latency"


_SERIES_TICKS = {}


def config_text(config):
    """What a series means; the wheels' tick is read from the results."""
    ticks = ", ".join(sorted(_SERIES_TICKS.get(config, ())))
    if ticks and config == "h2h":
        return "head-to-head, wheels at a common %s tick" % ticks
    if ticks and config == "cover":
        return "wheels at a %s tick sized to span the workload" % ticks
    return CONFIG_TEXT.get(config, config)


def _config_sort(configs):
    return sorted(configs, key=lambda c: (CONFIG_ORDER.index(c) if c in CONFIG_ORDER
                                         else len(CONFIG_ORDER), c))


def series_label(m, with_config=False):
    """A series' name: the backend plus any parameter other than N (and
    the whole configuration when asked)."""
    extra = ["%s:%s" % (k, v) if v else k for k, v in sorted(m.params.items()) if k != "N"]
    parts = [m.backend] + extra
    if with_config:
        parts.append(m.config)
    return " ".join(parts)


def legend_groups(ms):
    """Groups measurements with an N into lines: backend, plus the
    configuration keys that differ between that backend's measurements
    here (e.g. roc=on / roc=off); {label: [m sorted by N]}."""
    by_backend = {}
    for m in ms:
        if m.n is None or m.median is None or m.error:
            continue
        by_backend.setdefault(m.backend, []).append(m)
    out = {}
    for b, bms in by_backend.items():
        keys = set()
        for m in bms:
            keys.update(m.cfg)
        varying = [k for k in sorted(keys) if k != "series"
                   and len({m.cfg.get(k) for m in bms}) > 1]
        for m in bms:
            extra = ["%s=%s" % (k, m.cfg.get(k, "-")) for k in varying]
            extra += ["%s:%s" % (k, v) for k, v in sorted(m.params.items()) if k != "N"]
            if not m.cfg and len({x.config for x in bms}) > 1:
                extra.append(m.config)
            out.setdefault(" ".join([b] + extra), []).append(m)
    for v in out.values():
        v.sort(key=lambda m: m.n)
    return out


def workloads_of(ms):
    wl = {m.workload for m in ms}
    return sorted(wl, key=lambda w: (WORKLOAD_ORDER.index(w) if w in WORKLOAD_ORDER
                                     else len(WORKLOAD_ORDER), w))


def _backend_sort_key(ctx):
    order = {b: i for i, b in enumerate(ctx.backends + ctx.floor)}
    return lambda label_backend: order.get(label_backend, len(order))


# ---------------------------------------------------------------------------

def build(res, figs):
    ctx = Ctx(res, figs)
    _SERIES_TICKS.clear()
    for m in res.measurements.values():
        if m.cfg.get("tick"):
            _SERIES_TICKS.setdefault(m.series, set()).add(m.cfg["tick"])
    body = Doc("")
    micro_ops = micro_section(ctx, body)
    memory_section(ctx, body)
    tb_counts.counts_section(ctx, body)
    tb_experiments.runtime_sections(ctx, body)
    other_section(ctx, body, micro_ops)
    tb_replay.replay_section(ctx, body)
    claims = tb_claims.evaluate(ctx)
    for prio, idx in ((12, 7), (13, 0), (18, 1), (19, 3)):
        c = claims[idx]
        if c["verdict_kind"] != tb_claims.UNTESTED:
            ctx.finding(prio, c["claim"], ": ", Bold(c["verdict"]), " (", *c["measured"], ").")
    after = Doc("")
    claims_section(ctx, after, claims)
    choose_section(ctx, after)
    limitations_section(ctx, after)

    doc = Doc("timerbench report")
    summary_section(ctx, doc, claims)
    how_to_read_section(ctx, doc)
    machine_section(ctx, doc)
    method_section(ctx, doc, micro_ops)
    doc.blocks += body.blocks + after.blocks
    return doc


# ---- summary, reading guide, machine, method -----------------------------

def run_state_text(res):
    """What happened to the run, for the summary, as paragraphs of spans:
    none for a run that went through in one go (or a results format that
    does not say)."""
    run, status = res.run, res.status
    sessions = [s for s in run.get("sessions", []) if isinstance(s, dict)]
    out = []
    if status == "running" and not res.missing:
        # machine.json was left "running" (the run was killed before it
        # could say more) but every instance is in the files
        out.append((Bold("Unfinished record:"),
                    " machine.json still says the run is running, yet every "
                    "instance it expected is in the results files; the "
                    "report is complete.",))
    elif status in ("interrupted", "incomplete", "running"):
        intr = run.get("interrupted") if isinstance(run.get("interrupted"), dict) else {}
        why = ("was stopped by %s at %s after %s s, %s" % (
            intr.get("signal"), intr.get("at_utc"), A.fmt_num(intr.get("after_seconds")),
            intr.get("where")) if intr.get("signal") else
               "did not finish" + (" (%s)" % intr["where"] if intr.get("where") else ""))
        out.append((Bold("Partial results:"),
                    " the run %s; %s were not measured, and every finding and claim "
                    "that needs them says so instead of deciding on the rest "
                    "(Limitations lists them). " % (
                        why, tb_claims.missing_text(res.missing) if res.missing
                        else "some instances"),
                    Code("./timerbench report --resume " + shlex.quote(res.root)),
                    " measures the missing ones."))
    resumed = [s for s in sessions[1:] if s.get("started_utc")]
    if resumed:
        def one(s):
            intr = s.get("interrupted") if isinstance(s.get("interrupted"), dict) else {}
            return "session %s started %s, %s%s" % (
                s.get("session"), s.get("started_utc"), s.get("status", "status unknown"),
                " by %s at %s" % (intr["signal"], intr.get("at_utc")) if intr.get("signal") else "")
        out.append((Bold("The run was resumed:"),
                    " %s." % "; ".join(one(s) for s in sessions)))
    return out


def summary_section(ctx, doc, claims):
    doc.h(2, "Summary", "summary")
    for spans in run_state_text(ctx.res):
        doc.p(*spans)
    picked = sorted(ctx.findings, key=lambda f: f[0])[:4]
    if not picked:
        doc.p("This results directory holds no measurement from which a finding "
              "could be computed; the sections below say what is missing.")
    else:
        doc.ul([spans for _, spans in picked])
    verdicts = {}
    for c in claims:
        verdicts[c["verdict_kind"]] = verdicts.get(c["verdict_kind"], 0) + 1
    if claims:
        doc.p("Verdicts on the %d classic claims checked below: " % len(claims),
              "; ".join("%s: %d" % (k, n) for k, n in sorted(verdicts.items())), ".")


def how_to_read_section(ctx, doc):
    doc.h(2, "How to read this report", "how-to-read")
    doc.p("Every number in this report is computed from the results directory "
          "it was generated from; nothing is typed in. Times are medians over "
          "the repetitions of each benchmark; the spread is the coefficient of "
          "variation (standard deviation divided by the mean, as a percentage) "
          "of those repetitions, and error bars in the figures run from the "
          "fastest to the slowest repetition. Lower is better for every time.")
    doc.p("Micro-benchmarks run on the virtual clock: no threads, no sleeping, "
          "so they measure the data structure. Runtime benchmarks run on the "
          "monotonic clock with the backends' own threads, so they measure the "
          "whole design, locks and wake-ups included.")
    doc.p("Words in findings follow fixed rules. A series is ", Bold("flat"),
          " when its time at the largest N is under ", A.fmt_ratio(A.FLAT_RATIO),
          " its time at the smallest N, and ", Bold("grows"), " at or above ",
          A.fmt_ratio(A.GROW_RATIO), "; growth whose log-log slope is under ",
          A.fmt_num(A.LOG_SLOPE_MAX), " is called sub-linear (what log n looks "
          "like on real caches), otherwise near-linear. Two medians differ only "
          "where the Mann-Whitney U test below says so; a crossover is reported "
          "only where the two lines differ significantly at both ends of N. A "
          "behavioural claim needs a factor of at least ",
          A.fmt_ratio(A.CLEAR_FACTOR), " between the compared numbers to hold.")
    # the most repetitions per side that still cannot reach significance
    few = max(k for k in range(1, 10) if not S.testable(k, k))
    doc.p(Bold("Significance."), " Where a verdict compares two measured sets, it "
          "decides \"different\" with a two-sided Mann-Whitney U test over their "
          "repetitions at p < %s and prints the p-value; a claim whose decisive "
          "comparison is not significant is " % A.fmt_num(S.ALPHA),
          Bold("undecided at this noise"), " rather than given a side. With fewer "
          "repetitions than any ordering needs to reach p < %s (%d against %d gives "
          "at best p = %s) the comparison is too few repetitions to test. Growth is "
          "judged by the %d %% confidence interval of the ratio of the times at the "
          "largest and smallest N (the interval that inverts the same test): it grows "
          "when the whole interval is at or above %s, is flat when the whole interval "
          "is under %s, and is undecided otherwise; the structure's work counters "
          "(levels sifted, entries visited, ...) are counted, not timed, and are judged "
          "on their medians." % (A.fmt_num(S.ALPHA), few, few, A.fmt_num(S.min_p(few, few)),
                                 round(100 * (1 - S.ALPHA)),
                                 A.fmt_ratio(A.GROW_RATIO), A.fmt_ratio(A.FLAT_RATIO)))
    doc.p(Bold("Percentiles and fits."), " A percentile q is printed only where at "
          "least %s / (1 − q) samples back it (p50: %s, p90: %s, p99: %s, p99.9: %s "
          "samples), so that at least %s samples lie beyond it; otherwise its cell says "
          "how many samples there were. A complexity fit (Google Benchmark's curves, "
          "least squares over the medians at each N) is shown only when its RMS "
          "error is at most %s; otherwise the finding says \"no fit\"."
          % (A.fmt_num(S.PCT_TAIL_SAMPLES), A.fmt_num(S.pct_min_samples(0.5)),
             A.fmt_num(S.pct_min_samples(0.9)), A.fmt_num(S.pct_min_samples(0.99)),
             A.fmt_num(S.pct_min_samples(0.999)), A.fmt_num(S.PCT_TAIL_SAMPLES),
             A.fmt_pct(S.FIT_MAX_RMS)))
    if ctx.backends:
        doc.p("Each backend keeps one colour in every figure: ",
              *_join([(Code(b), " (%s)" % _colour_name(ctx.colour(b))) for b in ctx.backends]),
              "." + (" The floors (one per wait primitive) are drawn in black." if ctx.floor else ""))


def _colour_name(hexcol):
    names = {"#0072B2": "blue", "#D55E00": "vermilion", "#009E73": "green",
             "#CC79A7": "pink", "#E69F00": "orange", "#56B4E9": "sky blue",
             "#8C564B": "brown", "#F0E442": "yellow", "#7F7F7F": "grey",
             "#17BECF": "cyan"}
    return names.get(hexcol, hexcol)


def _join(items, sep=", "):
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(sep)
        out.extend(it if isinstance(it, tuple) else (it,))
    return out


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten("%s.%s" % (prefix, k) if prefix else str(k), value[k], out)
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            out.append((prefix, ", ".join("%.6g" % v if isinstance(v, float) else str(v)
                                          for v in value)))
        else:
            for i, v in enumerate(value):
                _flatten("%s[%d]" % (prefix, i), v, out)
    elif isinstance(value, float):
        out.append((prefix, "%.6g" % value))
    else:
        out.append((prefix, "" if value is None else str(value)))


def machine_section(ctx, doc):
    doc.h(2, "Machine and build", "machine")
    res = ctx.res
    rows = []
    if res.machine is not None:
        flat = []
        # the instance lists are Limitations' business, not a fact table's
        _flatten("", {k: v for k, v in res.machine.items() if k != "instances"}, flat)
        rows += [(Code(k), v[:300]) for k, v in flat]
    seen = set()
    for path, c in res.contexts:
        for key in sorted(c):
            if key in seen or not isinstance(key, str) or key.startswith(("workload.", "backend.")):
                continue
            seen.add(key)
            v = c[key]
            if key == "caches" and isinstance(v, list):
                v = ", ".join("L%s %s %s KiB" % (x.get("level"), x.get("type"),
                                                (x.get("size") or 0) // 1024)
                              for x in v if isinstance(x, dict))
            elif isinstance(v, list):
                v = ", ".join(str(x) for x in v)
            elif isinstance(v, dict):
                v = ", ".join("%s=%s" % kv for kv in sorted(v.items()))
            rows.append((Code(key), str(v)[:300]))
    if res.machine is None:
        ctx.missing.append(("Machine and build", "no machine.json in the results directory"))
        doc.p("No machine.json in this results directory: the facts below are "
              "only those Google Benchmark and the harnesses put in the JSON context.")
    if rows:
        doc.table(["fact", "value"], rows)
    else:
        doc.p("No machine or build facts were recorded.")


def method_section(ctx, doc, micro_ops):
    doc.h(2, "Method", "method")
    res = ctx.res
    ms = [m for m in res.measurements.values() if m.op not in tb_results.SELF_OPS]
    reps = [m.repetitions for m in ms if m.repetitions]
    files = sorted({os.path.relpath(p, res.root) for p in res.files})
    doc.p("This report was generated from ", Code(os.path.basename(res.root.rstrip(os.sep))),
          ": %d benchmark instances in %d files." % (len(ms), len(files)))
    descr = res.context_prefixed("backend.")
    if ctx.backends:
        doc.table(["backend", "models", "colour"],
                  [[Code(b), str(descr.get(b, "(no description recorded)")), _colour_name(ctx.colour(b))]
                   for b in ctx.backends] +
                  [[Code(b), _floor_text(b), "black"] for b in ctx.floor])
    prof = res.fact("profile")
    if isinstance(prof, str):
        doc.p("Profile: ", Code(prof), ".")
    if reps:
        doc.p("Repetitions per instance: %d to %d (median %s); every time is the "
              "median of its repetitions." % (min(reps), max(reps), A.fmt_num(statistics.median(reps))))
    wdesc = res.context_prefixed("workload.")
    used = sorted({m.workload for m in ms if m.workload != "-"})
    if wdesc:
        doc.p("Workloads (delays are defined in time, never in ticks):")
        doc.table(["workload", "definition"],
                  [[Code(w), str(d)] for w, d in sorted(wdesc.items()) if w in used] or
                  [[Code(w), str(d)] for w, d in sorted(wdesc.items())])
    rest = [w for w in used if w not in wdesc]
    if rest:
        doc.p("Runtime experiments name their set-ups: ", *_join([Code(w) for w in rest]),
              " (each is described in its section).")
    seed = res.context_value("seed")
    if seed is None:
        seed = res.fact("seed")
    rule = res.context_value("seed_rule")
    if seed is not None:
        doc.p("Base seed ", Code(str(seed)), (("; each instance's seed: " + str(rule)) if rule else ""), ".")
    else:
        doc.p("The results do not record the workload seed.")
    st = res.machine_state()
    if st:
        lat = st["latency"]
        doc.p(Bold("The machine during the run."), " Before each repetition of a "
              "micro-benchmark the harness times a dependent load over a 16 MiB random cycle: this VM shares its "
              "last-level cache and memory with other tenants, and how much it gets moves "
              "over seconds to minutes. Over %d repetitions the latency was %s median, %s at the 90th "
              "percentile, %s at most. A repetition that found it over %.1f times the "
              "run's 25th percentile waited for the spell to pass (200 ms at a time, at "
              "most 1 s, at most 2 min in a run): %d waits; a batch of 10 ms or more that "
              "ended in a spell was run again: %d. Times of instances whose data misses "
              "the cache are comparable between two runs only when their latencies agree ("
              % (st["reps"], A.fmt_ns(statistics.median(lat)),
                 A.fmt_ns(lat[min(len(lat) - 1, int(0.9 * len(lat)))]),
                 A.fmt_ns(lat[-1]), 1.6, st["waits"], st["redone"]),
              Code("timerbench compare"), " prints both); the work counts and the "
              "instruction counts below do not depend on it.")
    if any(m.op in ("insert", "cancel", "expire") for m in ms):
        doc.p(Bold("Against the side-by-side driver."), " ", Code("../shared/peers"),
              " times the same backends through the same interface beside four reference "
              "C timers. Its figures and these differ by design: its add fills an empty "
              "structure with N timers (so the structure holds N/2 on average, and the "
              "first touch of its own handle array is in the timed part), while ",
              Code("insert"), " here adds a batch to a structure that already holds N; a "
              "lazy-cancel backend (heapqueue with remove-on-cancel off, timerthread) holds "
              "N to 1.25 N records here, the cancelled ones included until a purge, and none "
              "in the driver, so their insert costs more here at large N; its cancel takes all N in "
              "random order down to an empty structure, each first loading its handle from "
              "a random place of that array (a dependent miss that the reference timers' "
              "intrusive nodes do not make; bench/README measures both costs), while ",
              Code("cancel"), " here holds N throughout; its delays are uniform over 10^6 ticks of each backend, the "
              "workloads here are defined in time (", Code("uniform"), ": 1 ms to 1000 s).")
    keys = {}
    for m in ms:
        for k, v in m.cfg.items():
            keys.setdefault(k, set()).add(v)
    if keys:
        items = []
        for k in sorted(keys, key=lambda k: (k != "series", k)):
            vals = sorted(keys[k])
            if k == "series":
                items.append((Code("series"), ": ", *_join([(Code(v), "" if config_text(v) == v else
                                                            " (%s)" % config_text(v)) for v in vals])))
            else:
                items.append((Code(k), ": ", *_join([Code(v) for v in vals])))
        doc.p("Configurations are named ", Code("key=value,..."), " in each result; the keys and values in this run:")
        doc.ul(items)
    if micro_ops:
        doc.p("What each micro-benchmark operation includes:")
        doc.ul([(Code(op), ": " + MICRO_WHAT[op] + ".") for op in micro_ops if op in MICRO_WHAT])
    doc.p("Files read: ", *_join([Code(f) for f in files]), ".")


def _find_keys(obj, names, prefix=""):
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = "%s.%s" % (prefix, k) if prefix else str(k)
            if str(k).lower() in names:
                out.append((p, v if not isinstance(v, (dict, list)) else _short(v)))
            else:
                out += _find_keys(v, names, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _find_keys(v, names, "%s[%d]" % (prefix, i))
    return out


def _short(v):
    t = str(v)
    return t if len(t) < 80 else t[:77] + "..."


# ---- micro-benchmarks -----------------------------------------------------

def _series_order(ctx, series):
    key = _backend_sort_key(ctx)
    return sorted(series, key=lambda s: (key(series[s][0].backend), s))


def draw_n_figure(ctx, stem, title, panels, ylabel="time per operation (ns)",
                  xlabel="N (tasks pending)", value=None, linx=False, x=None):
    """panels: [(panel title, {series label: [Measurement]})].  value(m)
    gives (median, low, high) or None; default the time per operation.
    Returns the figure name, or None when nothing could be drawn."""
    if value is None:
        value = lambda m: (m.median, m.low, m.high)  # noqa: E731
    panels = [(t, s) for t, s in panels if s]
    if not panels:
        return None
    name = ctx.fig_name(stem)
    variables = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)),
                 "title": title, "npanels": len(panels),
                 "ylabel": ylabel, "xlabel": xlabel, "linx": int(bool(linx))}
    for k, (ptitle, series) in enumerate(panels, 1):
        blocks, colours, dashes = [], [], []
        variant_of = {}
        for label in _series_order(ctx, series):
            ms = series[label]
            rows = []
            for m in ms:
                v = value(m)
                if v is None or v[0] is None:
                    continue
                xv = x(m) if x is not None else m.n
                rows.append([xv, float(v[0]), float(v[1] if v[1] is not None else v[0]),
                             float(v[2] if v[2] is not None else v[0])])
            if not rows:
                continue
            b = ms[0].backend
            variant_of[b] = variant_of.get(b, 0) + 1
            blocks.append((label, rows))
            colours.append(ctx.colour(b))
            dashes.append(str(1 + (variant_of[b] - 1) % 5))
        if not blocks:
            return None
        ctx.figs.write_blocks("%s_%d" % (name, k), blocks, ["series", "median", "low", "high"])
        variables["ptitle_%d" % k] = ptitle
        variables["nseries_%d" % k] = len(blocks)
        variables["colours_%d" % k] = " ".join(colours)
        variables["dashes_%d" % k] = " ".join(dashes)
    if not ctx.figs.draw("micro", name, variables):
        return None
    return name


def _profile_micro(res):
    """The run's profile's micro facts as the binary listed them
    (machine.json build.profiles.<profile>.micro), or {} for a run from
    before they were recorded."""
    build = (res.machine or {}).get("build")
    profs = build.get("profiles") if isinstance(build, dict) else None
    p = profs.get(res.run.get("profile")) if isinstance(profs, dict) else None
    m = p.get("micro") if isinstance(p, dict) else None
    return m if isinstance(m, dict) else {}


def _left_to_full(res):
    """What of the micro-benchmarks this run's profile leaves to the full
    profile (from the binary's own profile facts)."""
    m = _profile_micro(res)
    if not m or res.run.get("profile") == "full":
        return []
    names = [("orig", "series orig"), ("cover", "series cover"),
             ("burst", "the burst workload"), ("wide_all", "the wide workload in fill and cancel")]
    return [what for k, what in names if m.get(k) is False]


def micro_section(ctx, doc):
    res = ctx.res
    ops = [op for op in MICRO_OPS if any(m.n is not None for m in res.select(op=op))]
    doc.h(2, "Micro-benchmarks: cost per operation against N", "micro")
    if not ops:
        doc.p("No micro-benchmark results (", *_join([Code(o) for o in MICRO_OPS]),
              ") in this results directory: this section has no data.")
        ctx.missing.append(("Micro-benchmarks", "no results for any of " + ", ".join(MICRO_OPS)))
        return []
    absent = [o for o in MICRO_OPS if o not in ops]
    if absent:
        doc.p("Missing from these results: ", *_join([Code(o) for o in absent]),
              "; their panels and tables are absent.")
        ctx.missing.append(("Micro-benchmarks", "no results for " + ", ".join(absent)))
    doc.p("Virtual clock, one scheduler per backend, time per operation against "
          "the number of tasks N it holds; log-log axes, one line per backend "
          "(dashed: a policy variant of the same backend).")
    left = _left_to_full(res)
    if left:
        doc.p("This run's profile (", Code(str(res.run.get("profile"))), ") does not "
              "measure ", ", ".join(left), ": no verdict of this report reads them, and "
              "they are left to ", Code("--profile full"), " so that the profile keeps "
              "its time budget with the precision sweep.")
    all_ms = [m for op in ops for m in res.select(op=op) if m.n is not None]
    # series=precision is one N swept over the tick: its figure is the
    # cost-precision front ("Which one to use"), not a line against N
    for series in _config_sort({m.series for m in all_ms} - {"precision"}):
        main, more = [], []
        for op in ops:
            ms = [m for m in res.select(op=op) if m.series == series]
            for i, wl in enumerate(workloads_of(ms)):
                g = legend_groups([m for m in ms if m.workload == wl])
                if g:
                    (main if i == 0 else more).append(("%s, workload %s" % (op, wl), g))
        for panels, stem, what in ((main, "micro-" + series, "main workload of each operation"),
                                   (more, "micro-" + series + "-workloads", "other workloads")):
            if not panels:
                continue
            name = draw_n_figure(ctx, stem, "Time per operation against N, %s (%s)"
                                 % (config_text(series), what), panels)
            add_figure(ctx, doc, name,
                       ("Time per operation against N, series ", Code(series),
                        " (%s), %s. Log-log axes; error bars from the fastest to the "
                        "slowest repetition." % (config_text(series), what),),
                       "ns per operation against N, series " + series)
    for op in ops:
        micro_op_section(ctx, doc, op)
    parts = []
    for op in ("insert", "cancel", "expire", "timeouts"):
        if op in ctx.micro_best:
            n, wl, bl, bt, wl_, wt = ctx.micro_best[op]
            parts.append((Code(op), " (N = %s): " % A.fmt_n(n), Code(bl), " %s, slowest " % A.fmt_ns(bt),
                          Code(wl_), " %s (%s)" % (A.fmt_ns(wt), A.fmt_ratio(wt / bt))))
    if parts:
        ctx.finding(10, "Fastest per operation at the largest N, head-to-head: ", *_join(parts, "; "), ".")
    return ops


def _cell_median(m):
    if m is None or m.median is None:
        return "—" if m is None else "error"
    cv = m.cv
    return "%s (%s)" % (_ns_plain(m.median), A.fmt_pct(cv) if cv is not None else "n/a")


def _ns_plain(ns):
    """A median in ns as tables show it (one decimal below 1000)."""
    return "%.1f" % ns if abs(ns) < 1000 else "{:,.0f}".format(ns)


def micro_op_section(ctx, doc, op):
    res = ctx.res
    doc.h(3, "%s" % op, "micro-" + op)
    if op in MICRO_WHAT:
        doc.p("What is timed: ", MICRO_WHAT[op], ".")
    ms = [m for m in res.select(op=op) if m.n is not None]
    ns = sorted({m.n for m in ms})
    groups = {}
    for m in ms:
        groups.setdefault((m.series, m.workload, m.backend, m.config,
                           tuple(sorted((k, v) for k, v in m.params.items() if k != "N"))), {})[m.n] = m
    key = _backend_sort_key(ctx)
    sorder = {c: i for i, c in enumerate(_config_sort({g[0] for g in groups}))}
    worder = {w: i for i, w in enumerate(workloads_of(ms))}
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3], g[4])):
        series, wl, backend, config, extra = g
        label = " ".join([backend] + ["%s:%s" % kv for kv in extra])
        row = [Code(label), Code(wl), Code(config)]
        row += [_cell_median(groups[g].get(n)) for n in ns]
        rows.append(row)
    doc.table(["backend", "workload", "configuration"] +
              ["N = %s" % A.fmt_n(n) for n in ns], rows,
              numeric=set(range(3, 3 + len(ns))))
    doc.p("Cells: median ns per operation (coefficient of variation of the repetitions).")
    work_table(ctx, doc, groups, ns, sorder, worder, key)
    errors = [m for m in res.select(op=op) if m.error]
    if errors:
        doc.p("Benchmarks that reported an error: ",
              *_join([(Code("%s N=%s" % (m.backend, m.n)), ": " + m.error[:120]) for m in errors]), ".")
    for series in _config_sort({m.series for m in ms} - {"precision"}):
        sms = [m for m in ms if m.series == series]
        for wl in workloads_of(sms):
            lines = legend_groups([m for m in sms if m.workload == wl])
            ctx.series[(op, series, wl)] = lines
            items = micro_findings(ctx, op, series, wl, lines)
            if items:
                doc.p(Bold("Findings"), " (series ", Code(series), ", workload ", Code(wl), "):")
                doc.ul(items)


def _times(m):
    """The repetitions' times (the median alone when only aggregates were
    kept: then too few to test)."""
    return list(m.times) if m.times else [m.median]


def fit_text(label, fit):
    """A complexity fit as a finding when it explains the data (RMS at
    most S.FIT_MAX_RMS), else "no fit" and why."""
    if S.fit_explains(fit):
        who = ("Least-squares complexity fit (Google Benchmark's curves) of the medians of "
               if fit.get("source") == "medians" else "Google Benchmark's complexity fit for ")
        return (who, Code(label), ": O(%s), RMS %s." % (
            fit["big_o"], A.fmt_pct(fit["rms"])))
    why = ("its best curve, O(%s), misses the points by RMS %s, above %s" % (
        fit["big_o"], A.fmt_pct(fit["rms"]), A.fmt_pct(S.FIT_MAX_RMS))
        if fit.get("rms") is not None else "the fit has no RMS error to judge it by")
    return ("Complexity of ", Code(label), ": no fit (%s)." % why)


def _work_cell(m):
    if m is None:
        return "—"
    w = A.work_of(m)
    if w is None:
        return "n/a"
    parts = ["%s %s" % (c[:-len("_per_op")], A.fmt_num(v)) for c, v in
             ((c, w[c]) for c in A.WORK_COUNTERS if c in w) if v]
    return ", ".join(parts) if parts else "0"


def work_table(ctx, doc, groups, ns, sorder, worder, key):
    """The structure's work per operation beside the times, when the
    results carry the work counters (issue 14)."""
    if not any(A.work_of(m) for g in groups.values() for m in g.values()):
        return
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3], g[4])):
        series, wl, backend, config, extra = g
        label = " ".join([backend] + ["%s:%s" % kv for kv in extra])
        rows.append([Code(label), Code(wl), Code(config)] +
                    [_work_cell(groups[g].get(n)) for n in ns])
    doc.table(["backend", "workload", "configuration"] +
              ["N = %s" % A.fmt_n(n) for n in ns], rows)
    doc.p("Cells: the structure's work per operation, counted by the backend "
          "(median over the repetitions; 0: none of its counters moved). "
          "Counted, not timed, so free of the machine's noise: where the time "
          "grows with N and the work does not, the growth is the memory "
          "hierarchy's, not the structure's.")


def micro_findings(ctx, op, config, wl, series):
    items = []
    order = _series_order(ctx, series)
    for label in order:
        g = A.Growth([(m.n, m.median) for m in series[label]])
        ctx.growth[(op, config, wl, label)] = g
        if not g.ok:
            continue
        items.append((Code(label), ": %s at N = %s, %s at N = %s (%s; log-log slope %s, %s per doubling of N): %s." % (
            A.fmt_ns(g.t_lo), A.fmt_n(g.n_lo), A.fmt_ns(g.t_hi), A.fmt_n(g.n_hi),
            A.fmt_ratio(g.ratio), "%.2f" % g.slope if g.slope is not None else "n/a",
            ("%+.2f ns" % g.per_doubling) if g.per_doubling is not None else "n/a", g.shape())))
        m0 = series[label][0]
        w_lo, w_hi = A.work_total(series[label][0]), A.work_total(series[label][-1])
        if w_lo is not None and w_hi is not None:
            w_ratio = w_hi / w_lo if w_lo > 0 else (1.0 if w_hi == 0 else float("inf"))
            if g.grows() and w_ratio < A.FLAT_RATIO:
                why = "the time grows, the structure's work does not: the growth is the memory hierarchy's"
            elif g.grows():
                why = "the structure's work grows too (%s)" % A.fmt_ratio(w_ratio)
            else:
                why = "the time stays flat" if g.flat() else "the time grows less than the threshold"
            items.append((Code(label), ": work per operation %s at N = %s, %s at N = %s; %s." % (
                A.fmt_num(w_lo), A.fmt_n(g.n_lo), A.fmt_num(w_hi), A.fmt_n(g.n_hi), why)))
        fit = ctx.res.bigo.get((op, m0.backend, wl, m0.config))
        if fit and fit.get("big_o"):
            items.append(fit_text(label, fit))
    # A ranking or crossover over a series with instances missing could
    # name the wrong winner: none is given.
    gone = ctx.res.missing_for((op,), config, wl)
    if gone:
        items.append("No ranking or crossover: %s of this series were not measured "
                     "(see Limitations)." % tb_claims.missing_text(gone))
        return items
    # Ranking at the largest N every series reached.
    common = None
    for label in order:
        s = {m.n for m in series[label]}
        common = s if common is None else common & s
    if common and len(order) > 1:
        n = max(common)
        at = sorted(((series[l][[m.n for m in series[l]].index(n)], l) for l in order),
                    key=lambda x: x[0].median)
        (best, bl), (worst, wl_) = at[0], at[-1]
        d = S.decide(_times(worst), _times(best))
        how = ("; not a significant difference, " if d.kind == "undecided" else "; ") + d.text()
        items.append(("At N = %s " % A.fmt_n(n), Code(bl), " is fastest (%s); " % A.fmt_ns(best.median),
                      Code(wl_), " takes %s as long (%s%s)." % (
                          A.fmt_ratio(worst.median / best.median), A.fmt_ns(worst.median), how)))
        if config == "h2h" and wl == workloads_of(ctx.res.select(op=op))[0]:
            ctx.micro_best[op] = (n, wl, bl, best.median, wl_, worst.median)
    # Crossovers between every pair of series, when at both ends of the
    # N range the two differ significantly (Mann-Whitney over the
    # repetitions).
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            da = {m.n: m for m in series[a]}
            db = {m.n: m for m in series[b]}
            ns = sorted(set(da) & set(db))
            if len(ns) < 2 or not all(S.decide(_times(da[n]), _times(db[n])).significant
                                      for n in (ns[0], ns[-1])):
                continue
            c = A.crossover([(n, da[n].median) for n in ns], [(n, db[n].median) for n in ns])
            if c and c[0] == "cross":
                items.append((Code(b), " overtakes ", Code(a), " at N ≈ %s." % A.fmt_n(round(c[1]))))
            elif c and c[0] == "a_overtakes":
                items.append((Code(a), " overtakes ", Code(b), " at N ≈ %s." % A.fmt_n(round(c[1]))))
    return items


# ---- memory ---------------------------------------------------------------

def bytes_per_task(m):
    for k in ("bytes_per_task", "bytes_per_pending", "bytes/task", "bytes_per_timer"):
        v = m.counter(k)
        if v is not None:
            return v
    return None


def memory_section(ctx, doc):
    res = ctx.res
    doc.h(2, "Memory per pending task", "memory")
    # series=precision (one N, swept over the tick) is the front's, not N's
    have = [m for m in res.select() if not m.error and m.n is not None
            and bytes_per_task(m) is not None and m.series != "precision"]
    if not have:
        doc.p("No memory results (a benchmark with a ", Code("bytes_per_task"),
              " counter) in this results directory: this section has no data.")
        ctx.missing.append(("Memory", "no bytes_per_task counter in any result"))
        return
    ops = sorted({m.op for m in have})
    doc.p("Bytes the scheduler holds from its allocator divided by the number "
          "of pending tasks, against N, as counted by benchmark ",
          *_join([Code(o) for o in ops]), ".")

    def val(m):
        b = bytes_per_task(m)
        vals = m.counters.get("bytes_per_task") or [b]
        return (b, min(vals), max(vals))
    panels = []
    for series in _config_sort({m.series for m in have}):
        sms = [m for m in have if m.series == series]
        for wl in workloads_of(sms):
            g = legend_groups([m for m in sms if m.workload == wl])
            if g:
                panels.append(("series %s, workload %s" % (series, wl), g))
    name = draw_n_figure(ctx, "memory", "Bytes held per pending task", panels[:6],
                         ylabel="bytes per pending task (B)", value=val)
    add_figure(ctx, doc, name, ("Bytes held per pending task against N.",),
               "bytes per task against N")
    ns = sorted({m.n for m in have})
    groups = {}
    for m in have:
        groups.setdefault((m.series, m.workload, m.backend, m.config), {})[m.n] = m
    key = _backend_sort_key(ctx)
    sorder = {c: i for i, c in enumerate(_config_sort({g[0] for g in groups}))}
    worder = {w: i for i, w in enumerate(workloads_of(have))}
    rows = []
    for g in sorted(groups, key=lambda g: (sorder[g[0]], worder[g[1]], key(g[2]), g[3])):
        by_n = groups[g]
        rows.append([Code(g[2]), Code(g[1]), Code(g[3])] +
                    ["%.1f" % bytes_per_task(by_n[n]) if n in by_n else "—" for n in ns])
    doc.table(["backend", "workload", "configuration"] + ["N = %s" % A.fmt_n(n) for n in ns],
              rows, numeric=set(range(3, 3 + len(ns))))
    doc.p("Cells: median bytes per pending task over the repetitions.")
    n = max(ns)
    main = [m for m in have if m.n == n and m.series == "h2h"] or [m for m in have if m.n == n]
    wl = workloads_of(main)[0]
    at = sorted((bytes_per_task(m), m.backend) for m in main if m.workload == wl)
    ctx.memory_main = (n, wl, at)
    gone = res.missing_for(("fill", "timeouts"), None, wl)
    if gone and len(at) > 1:
        doc.p("No smallest or largest footprint is named: %s of this workload "
              "were not measured (see Limitations)." % tb_claims.missing_text(gone))
    elif len(at) > 1:
        lo, hi = at[0], at[-1]
        doc.ul([("At N = %s (workload " % A.fmt_n(n), Code(wl), ") the smallest footprint is ",
                 Code(lo[1]), " at %.1f B per task; the largest is " % lo[0], Code(hi[1]),
                 " at %.1f B (%s)." % (hi[0], A.fmt_ratio(hi[0] / lo[0]) if lo[0] > 0 else "n/a"))])
        ctx.finding(25, "Memory at N = %s: from %.1f B per pending task (" % (A.fmt_n(n), lo[0]),
                    Code(lo[1]), ") to %.1f B (" % hi[0], Code(hi[1]), ").")
    ctx.memory = {(m.backend, m.series, m.workload, m.n): bytes_per_task(m) for m in have}


# ---- anything else --------------------------------------------------------

def other_section(ctx, doc, micro_ops):
    known = set(MICRO_OPS) | {"memory"} | set(tb_experiments.KNOWN_OPS)
    ops = [op for op in ctx.res.ops() if op not in known]
    if not ops:
        return
    doc.h(2, "Other measurements", "other")
    doc.p("Benchmarks in the results that no section above describes, shown as measured.")
    for op in ops:
        ms = ctx.res.select(op=op)
        doc.h(3, op)
        series = legend_groups(ms)
        if series:
            name = draw_n_figure(ctx, "other-" + op, "%s: time against N" % op,
                                 [(op, series)])
            add_figure(ctx, doc, name, ("Benchmark ", Code(op), " against N."), op)
        tb_experiments.generic_table(ctx, doc, ms)


# ---- claims, choice, limitations -------------------------------------------

def claims_section(ctx, doc, claims):
    doc.h(2, "What the classic write-ups claim, checked", "claims")
    doc.p("Each claim is checked against this run's measurements; the verdict "
          "is decided by the rule shown, never typed in.")
    rows = []
    for c in claims:
        rows.append([c["claim"], c["source"], c["experiment"], c["measured"],
                     (Bold(c["verdict"]),)])
    doc.table(["claim", "source", "experiment", "measured", "verdict"], rows)
    doc.p("Rules:")
    doc.ul([(Bold(c["claim"]), ": ", c["rule"]) for c in claims])


def _row_precision(ctx, rec):
    """The precision a recommendation of tb_claims.recommend holds at, from
    the recommended backends' capabilities and the tick they were measured
    at (a label's tick=, else the head-to-head series' tick of that backend
    in this run): exact for a structure without ticks, one tick for a
    wheel, 1/8 of the delay for a wheel with levels (TB_CAP_GRANULAR)."""
    names = [x for x in rec if isinstance(x, Code)]
    out = []
    for label in names:
        b = label.split(" ")[0]
        caps = ctx.caps.get(b)
        if caps is None:  # a run from before the capabilities were recorded
            caps = {"ticked"} if ctx.is_wheel(b) else set() if ctx.is_heap(b) else None
        if caps is None:
            out.append("%s: unknown (the run did not record its capabilities)" % b)
            continue
        if "ticked" not in caps:
            out.append("exact (%s)" % b if len(names) > 1 else "exact")
            continue
        m = re.search(r"tick=([0-9]+[a-z]+)", label)
        tick = m.group(1) if m else next(
            (x.cfg.get("tick") for x in ctx.res.select(backend=b)
             if x.cfg.get("series") == "h2h" and x.cfg.get("tick")), None)
        what = ("<= 1/8 of the delay (its levels), tick %s" if "granular" in caps
                else "<= one tick (%s)") % (tick or "?")
        out.append("%s (%s)" % (what, b) if len(names) > 1 else what)
    return "; ".join(out) if out else "n/a"


def _micro_front(ctx, doc):
    """The timeouts workload's cost-precision front (bench/micro.c,
    series=precision): the figure and its rows for the table, or [] when
    the run has no sweep (then the report says which profile has it)."""
    got = tb_front.micro_candidates(ctx.res)
    if got is None:
        if ctx.res.select(op="timeouts"):
            pm = _profile_micro(ctx.res)
            doc.p("The cost-precision front of the ", Code("timeouts"), " workload "
                  "(series=precision) was not measured in this run",
                  (": its profile (%s) has no precision sweep; " % ctx.res.run.get("profile")
                   if pm.get("precision_n") == 0 else "; "),
                  "the standard and full profiles sweep it.")
        return []
    n, step, cands = got
    doc.p(Bold("Cost against precision, server timeouts."), " The ", Code("timeouts"),
          " workload at N = %s with each ticked backend at each tick it accepts and each "
          "exact structure once; lateness is each fire's time on the virtual clock minus "
          "its deadline, seen by the task's callback; the clock moves in steps of %s "
          "(one per operation), so lateness below that step cannot show. "
          % (A.fmt_n(n), A.fmt_ns(step)),
          "Cheapest at each precision: ", tb_front.class_sentence(cands), ".")
    add_figure(ctx, doc, tb_front.draw_front(
        ctx, ctx.fig_name("timeouts-front"),
        "Server timeouts (N = %d): time per operation against lateness" % n,
        cands, "time per operation (ns)"),
        ("The ", Code("timeouts"), " workload: time per operation against the lateness "
         "it gave (left: max, right: p99), one line per ticked backend through its ticks, "
         "the exact structures at \"exact\"."), "cost-precision front, timeouts")
    rows = []
    for label, names, best in tb_front.cheapest_by_class(cands):
        if best is None or label == "any":
            continue
        rows.append(["Server timeouts (N = %s), precision %s" % (A.fmt_n(n), label),
                     tuple(_join([Code(x) for x in names], ", ")),
                     # the clock moves in steps: finer lateness cannot show
                     "%s (max lateness %s%s)" % (
                         label, A.fmt_ns(best["max_ns"]),
                         ", seen on a clock moving in steps of %s" % A.fmt_ns(step)
                         if step else ""),
                     "cheapest median time per operation of timeouts (series precision) "
                     "whose lateness fits the class",
                     "%s %s" % (best["name"], A.fmt_ns(best["cost"]))])
    if rows:
        ctx.finding(16, "Server timeouts by precision: ", *_join(
            [(r[0].split("precision ", 1)[1], " → ", Bold(", ".join(
                x for x in r[1] if isinstance(x, Code)))) for r in rows], "; "), ".")
    return rows


def choose_section(ctx, doc):
    doc.h(2, "Which one to use", "choose")
    rows = [r[:2] + [_row_precision(ctx, r[1])] + r[2:] for r in tb_claims.recommend(ctx)]
    front = _micro_front(ctx, doc)
    rows += front + tb_replay.recommend_rows(ctx)
    if not rows:
        doc.p("The results hold too little to recommend a backend for any workload.")
        return
    doc.p("The recommendation for each workload is the backend with the best "
          "measured number in the experiment named as evidence. Backends within "
          "%s of the best are named together as tied: two runs of one commit "
          "differ by that much (Method), so an order among them would not come "
          "back when the run is repeated. Every row says the precision its "
          "recommendation holds at: exact (never late), within one tick of a wheel, "
          "or within 1/8 of the delay for a wheel with levels; the rows per precision "
          "class (exact, <= 50 us, <= 1 ms, <= 1/8 of the delay) name the cheapest "
          "structure, at any tick, whose measured lateness fits the class, and a "
          "replayed trace with budgets recommends only what kept every timer within "
          "its budget." % A.fmt_pct(S.MIN_EFFECT))
    doc.table(["workload", "recommended", "precision", "compared", "measured (best first)"],
              rows)


def limitations_section(ctx, doc):
    doc.h(2, "Limitations and noise", "limitations")
    res = ctx.res
    items = []
    cvs = [(m.cv, m) for m in res.measurements.values() if m.cv is not None]
    if cvs:
        cvs.sort(key=lambda x: x[0])
        med = statistics.median(c for c, _ in cvs)
        worst_cv, worst = cvs[-1]
        noisy = [m for c, m in cvs if c > 0.05]
        items.append("Spread of repetitions: median coefficient of variation %s; "
                     "%d of %d instances vary by more than 5 %%; the noisiest is %s at %s."
                     % (A.fmt_pct(med), len(noisy), len(cvs), worst.key[0] + "/" + worst.backend +
                        ("/N:%d" % worst.n if worst.n is not None else ""), A.fmt_pct(worst_cv)))
    reps = [m.repetitions for m in res.measurements.values() if m.repetitions
            and not m.error and m.op not in tb_results.SELF_OPS + ("failure",)]
    if reps and min(reps) < 3:
        items.append("Some instances ran fewer than three repetitions (minimum %d): "
                     "their spread says little." % min(reps))
    for path, c in res.contexts[:1]:
        if c.get("library_build_type") == "debug":
            items.append("Google Benchmark reports that its library was built as "
                         "\"debug\" (Debian's package): this affects only its own "
                         "bookkeeping outside the timed loop.")
        if c.get("cpu_scaling_enabled") is True:
            items.append("CPU frequency scaling was enabled: times may vary with the governor.")
        la = c.get("load_avg")
        cpus = c.get("num_cpus")
        if isinstance(la, list) and la and isinstance(cpus, int) and cpus > 0:
            if isinstance(la[0], (int, float)) and la[0] > 0.5 * cpus:
                items.append("The load average when the run started was %.2f on %d CPUs: "
                             "other work competed for the machine." % (la[0], cpus))
    shim = sorted((m for m in res.select(op="shim") if m.median is not None and m.n),
                  key=lambda m: m.n)
    if shim:
        items.append(("Harness overhead: an empty operation costs ",
                      *_join([("%s per iteration in batches of %s (%s)" % (
                          A.fmt_ns(m.median), A.fmt_num(m.n), m.cfg.get("timing", m.config)),)
                          for m in shim]), "; every time per operation includes it."))
    selftest_errs = [m for m in res.select(op="selftest") if m.error and "error" not in m.workload + m.backend]
    if selftest_errs:
        items.append(("The harness self-tests reported errors: ",
                      *_join([Code(m.key[1] + "/" + m.key[2]) for m in selftest_errs]), "."))
    errs = [m for m in res.measurements.values() if m.error and m.op not in tb_results.SELF_OPS]
    if errs:
        items.append(("%d benchmark instance%s reported errors instead of times, e.g. "
                      % (len(errs), "" if len(errs) == 1 else "s"),
                      Code(errs[0].key[0] + "/" + errs[0].backend), ": " + errs[0].error[:150] + "."))
    flt = res.fact("filter")
    if isinstance(flt, str) and flt:
        items.append(("The run was limited by the benchmark filter ", Code(flt),
                      ": what it excludes is missing from every section."))
    backends_run = res.fact("backends")
    if isinstance(backends_run, list) and backends_run:
        build = (res.machine or {}).get("build")
        built = build.get("backends") if isinstance(build, dict) else None
        built = [b for b in built if isinstance(b, str)] if isinstance(built, list) else []
        left_out = [b for b in built if b not in backends_run]
        if left_out:
            items.append(("Registered backends not run: ", *_join([Code(str(b)) for b in left_out]), "."))
    run_errors = res.fact("errors")
    if isinstance(run_errors, list) and run_errors:
        items.append(("The benchmark run recorded %d error%s, e.g. " % (
            len(run_errors), "" if len(run_errors) == 1 else "s"),
                      Code(str(run_errors[0])[:200]), "."))
    status = res.fact("exit_status")
    if isinstance(status, dict):
        bad = sorted(k for k, v in status.items() if v)
        if bad:
            items.append(("These harnesses exited with a failure status: ",
                          *_join([Code(str(b)) for b in bad]), "."))
    items += run_state_limitations(res)
    for p in res.problems[:PROBLEMS_LISTED]:
        items.append((Code(os.path.relpath(p.path, res.root)), " " + p.what + "; what it held is missing from this report."))
    if len(res.problems) > PROBLEMS_LISTED:
        items.append("... and %d more files with problems, not listed." % (
            len(res.problems) - PROBLEMS_LISTED))
    for sec, what in ctx.missing:
        items.append(("Missing data: ", Bold(sec), " — " + what + "."))
    for name, why in ctx.figs.failures:
        items.append(("Figure ", Code(name), " was not drawn: " + why + "."))
    items.append("Virtual-clock micro-benchmarks leave out locks and threads by design; "
                 "the runtime experiments include them, and their numbers depend on "
                 "the kernel's scheduler and timer slack of this machine.")
    doc.ul(items)


def run_state_limitations(res):
    """Limitations items for an interrupted, resumed or old-format run."""
    items = []
    if res.format_version == 1:
        items.append("This directory was written by %s in results format 1, which "
                     "records no run status: an interrupted run cannot be told from a "
                     "complete one here." % res.written_by())
    if res.missing:
        groups = {}
        for k in res.missing:
            n = dict(k[4]).get("N")
            groups.setdefault(k[:4], []).append(n)
        items.append(("The run did not measure %s (status %s): " % (
            tb_claims.missing_text(res.missing), res.status or "unknown"),
                      *_join([(Code("/".join(g)), " N = %s" % ", ".join(
                          A.fmt_n(int(n)) if n and n.isdigit() else str(n) for n in ns))
                              for g, ns in sorted(groups.items())], "; "), "."))
    inst = (res.machine or {}).get("instances")
    split = inst.get("families_split") if isinstance(inst, dict) else None
    if isinstance(split, list) and split:
        items.append(("Measured in two sessions of a resumed run, so without Google "
                      "Benchmark's complexity fit (it needs one process): ",
                      *_join([Code(str(f)) for f in split]), "."))
    extra = inst.get("unexpected") if isinstance(inst, dict) else None
    if isinstance(extra, dict) and any(extra.values()):
        items.append(("Instances the harness ran that it had not listed when the run "
                      "started (a probe that decides which exist came out otherwise): ",
                      *_join([Code(str(n)) for v in extra.values() for n in v]), "."))
    return items
