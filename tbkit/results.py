"""tbkit.results — reads one timerbench results directory into plain
records (results layer).

This is the only module that knows the on-disk format, so that when the
benchmark driver (bench/run.py) changes what it writes, only this file moves.

A results directory holds:
  - Google Benchmark JSON files ({"context": {...}, "benchmarks": [...]}),
    benchmark names `<op>/<backend>/<workload>/<config>/N:<n>` (more `key:value`
    parts and Google Benchmark's own suffixes such as `repeats:5`,
    `manual_time`, `threads:2` may follow);
  - samples.csv: raw samples (lateness, period error), header
    benchmark,metric,rep,seq,value_ns,weight, one (possibly thinned) sample
    a line;
  - machine.json: facts about the machine and the build, and (results
    format 2 on) the run's status: complete, or interrupted / incomplete
    with the instances still missing, and its sessions when it was resumed.
  - counts.json (bench/run.py --profile counts): instructions and simulated
    cache misses per operation, read into `Results.counts`.
  - replay.json (bench/replay.c, via `./timerbench replay` or the standard
    profile): timer traces replayed on every backend, read into
    `Results.replay` (one dict per trace, see _read_replay).
  - jvm.json (jvm/TimerBench.java, run by the standard and full profiles
    when the JDK and Netty are installed): the JVM originals measured,
    read into `Results.jvm` (see _read_jvm; jvm/README.md has the format).
  - purgatory.json and purgatory-jvm.json (issue 41: the purgatory
    experiment's players): read as JSON into `Results.purgatory` by name;
    their schema is checked by tbkit.purgatory, which refuses another format.

Nothing here raises on bad input: a file that cannot be read becomes a
`Problem` naming the file and saying what is wrong, and the caller decides
whether that is fatal (nothing usable at all) or one missing part.
"""

import csv
import json
import math
import os
import statistics

from tbkit import formats
from tbkit.formats import (FORMAT_VERSION, GB_SUFFIX_KEYS, GB_SUFFIX_WORDS,
                           loads)

# Google Benchmark appends these `key:value` / bare parts to a name.
_TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_AGGREGATES = ("mean", "median", "stddev", "cv")
# Files this package writes into a results directory; never read back.
# (Its figures/ and bench/run.py's journal/ are subdirectories: not read.)
_OWN_OUTPUTS = ("report.md", "report.html", "verdicts.json")
# What makes a directory a results directory: at its top level,
# machine.json or one of the files a run writes (bench/run.py,
# bench/replay.py, report/probe.c, the counts profile).  Google Benchmark
# JSON under another name counts too when it says so in its first bytes
# (results_dir_problem).  Every file of the format is at the top level:
# nothing below it is read.
# The purgatory experiment's files (issue 41): read here as JSON, their
# rows checked by tbkit.purgatory.
PURGATORY_FILES = ("purgatory.json", "purgatory-jvm.json")
KNOWN_FILES = ("machine.json", "micro.json", "runtime.json", "shim.json", "libs.json",
               "probe.json", "counts.json", "replay.json", "samples.csv",
               "jvm.json") + PURGATORY_FILES
# In a directory a run wrote, a file of these endings under another name
# than KNOWN_FILES is named as ignored (a copy, a file saved by hand): it
# looks like results and is not read.  Other files (logs, notes, the lock,
# a harness's .tmp) are not results in any form and are passed over.
IGNORED_NAMED = (".json", ".csv")
IGNORED_WHY = ("is not read: a results directory's files are known by name "
               "(%s), and this is none of them" % ", ".join(KNOWN_FILES))
# How much of another *.json is read to tell Google Benchmark output.
_SNIFF_BYTES = 4096

MAX_FILE_BYTES = 512 * 1024 * 1024
# Operations in which bench/ measures itself (shim overhead, self-tests):
# their second name segment is not a backend.
SELF_OPS = ("shim", "selftest")

# The micro's interface floor (issue 39: tb_backend_floor, insert and cancel
# through the interface with a structure that does nothing): the backend
# name its results carry.  Not a timer: Results.floor keeps them apart.
INTERFACE_FLOOR = "floor"
# The micro's operations (bench/micro.c, op_names): a "floor" of one of
# these is the interface's; the runtime experiments' floor (bench/runtime.c,
# the wait primitive) has operations of its own and stays a measurement.
MICRO_OP_NAMES = ("fill", "insert", "cancel", "expire", "timeouts",
                  "periodic", "reschedule")
# A time beyond this (about 31 years) is a damaged file, not a measurement.
MAX_TIME_NS = 1e18


class Problem:
    """One file (or part) that could not be used, and why, in plain words."""

    def __init__(self, path, what):
        self.path = path
        self.what = what

    def __str__(self):
        return "%s: %s" % (self.path, self.what)


class Measurement:
    """One benchmark instance: every repetition of one name.

    `times` are per-repetition times in ns (real time, or the harness's
    `ns_per_op` counter when it reports one); `counters` maps each counter
    name to its per-repetition values.  `agg` holds Google Benchmark's own
    aggregates when the file had them (name -> {"time": ns, counters...})."""

    def __init__(self, key, source):
        self.key = key            # (op, backend, workload, config, params)
        self.op, self.backend, self.workload, self.config, params = key
        self.params = dict(params)
        self.n = _to_int(self.params.get("N"))
        # bench/ writes the configuration as "series=h2h,tick=1ms,...";
        # any other text is taken as the series name itself.
        self.cfg = parse_config(self.config)
        self.series = self.cfg.get("series", self.config)
        self.source = source
        self.times = []
        self.cpu_times = []
        self.counters = {}
        self.agg = {}
        self.agg_repetitions = 0
        self.threads = 1
        self.error = None

    # --- statistics over the repetitions --------------------------------
    @property
    def median(self):
        """Median ns/op: Google Benchmark's median aggregate when present
        (so report tables equal the JSON), else computed here."""
        if "median" in self.agg and self.agg["median"].get("time") is not None:
            return self.agg["median"]["time"]
        return statistics.median(self.times) if self.times else None

    @property
    def mean(self):
        if "mean" in self.agg and self.agg["mean"].get("time") is not None:
            return self.agg["mean"]["time"]
        return statistics.fmean(self.times) if self.times else None

    @property
    def stddev(self):
        if "stddev" in self.agg and self.agg["stddev"].get("time") is not None:
            return self.agg["stddev"]["time"]
        if len(self.times) < 2:
            return None
        try:
            return statistics.stdev(self.times)
        except (OverflowError, ValueError):
            return None

    @property
    def cv(self):
        """Coefficient of variation (stddev / mean) of the repetitions."""
        m, s = self.mean, self.stddev
        if m is None or s is None or m == 0:
            return None
        return s / m

    @property
    def low(self):
        """Lower end of the error bar: fastest repetition (or median - sd)."""
        if self.times:
            return min(self.times)
        s = self.stddev
        return None if s is None or self.median is None else self.median - s

    @property
    def high(self):
        if self.times:
            return max(self.times)
        s = self.stddev
        return None if s is None or self.median is None else self.median + s

    @property
    def repetitions(self):
        if self.times:
            return len(self.times)
        return self.agg_repetitions

    def counter(self, name):
        """Median over repetitions of one counter (aggregate when present)."""
        if "median" in self.agg and name in self.agg["median"]:
            return self.agg["median"][name]
        vals = self.counters.get(name)
        return statistics.median(vals) if vals else None

    def counter_names(self):
        names = set(self.counters)
        for a in self.agg.values():
            names.update(k for k in a if k != "time")
        return sorted(names)


class Results:
    """Everything read from one results directory."""

    def __init__(self, root):
        self.root = root
        self.measurements = {}   # key -> Measurement
        self.bigo = {}           # (op, backend, workload, config) -> dict
        self.sample_sets = {}    # (key, metric) -> [(value_ns, weight)]
        self.machine = None      # dict from machine.json, or None
        self.contexts = []       # (file, Google Benchmark context)
        self.problems = []       # Problem
        self.files = []          # files read successfully
        self.counts = []         # counts.json results: dicts, see read_counts
        self.counts_meta = None  # counts.json without its results
        self.format_version = None  # machine.json's, 1 when it has none
        self.missing = []        # keys of instances the run did not measure
        self.replay = []         # replay.json's traces: dicts, see _read_replay
        self.replay_meta = None  # replay.json without its traces
        self.jvm = None          # jvm.json, its results checked (_read_jvm), or None
        self.jvm_problem = None  # why jvm.json is not used, when it is there
        self.libs = {}           # libs.json: key -> Measurement, the event-loop
                                 # libraries (bench/libs.c), apart from the
                                 # backends' measurements
        self.purgatory = {}      # purgatory.json, purgatory-jvm.json: name -> the
                                 # parsed JSON (None: there but unreadable, the
                                 # reason in problems); tbkit.purgatory checks it
        self.floor = {}          # micro.json's interface floor (backend
                                 # INTERFACE_FLOOR, bench/micro.c): key ->
                                 # Measurement, apart from the timers', so
                                 # no section ranks it or fits it

    @property
    def run(self):
        """machine.json's run facts ({} when there are none)."""
        r = (self.machine or {}).get("run")
        return r if isinstance(r, dict) else {}

    @property
    def status(self):
        """complete, interrupted, incomplete, running; None before format 2."""
        s = self.run.get("status")
        return s if isinstance(s, str) else None

    def written_by(self):
        """"timerbench <version> (commit <hash>)" from machine.json."""
        b = (self.machine or {}).get("build")
        b = b if isinstance(b, dict) else {}
        return "timerbench %s (commit %s)" % (b.get("timerbench_version", "?"),
                                              b.get("git_commit", "?"))

    def machine_state(self):
        """What the shim saw of the machine during the run (bench/shim.cc,
        "memory latency"): {"latency": sorted ns per dependent load over 16
        MiB, one per repetition, "waits": repetitions' 200 ms waits for a
        slow spell to pass, "redone": long batches run again after one,
        "reps": repetitions}, or None when the run predates it."""
        lat, waits, redone, reps = [], 0, 0, 0
        for m in self.measurements.values():
            vals = m.counters.get("mem_latency_ns")
            if not vals:
                continue
            lat.extend(v for v in vals if v and v > 0)
            waits += int(sum(m.counters.get("slow_spell_waits") or []))
            redone += int(sum(m.counters.get("slow_spell_redone") or []))
            reps += len(vals)
        if not lat:
            return None
        return {"latency": sorted(lat), "waits": waits, "redone": redone,
                "reps": reps}

    def missing_for(self, ops, series=None, workload=None):
        """Keys of the missing instances of these operations (and series,
        workload): what a finding or claim over them would lack."""
        return [k for k in self.missing if k[0] in ops
                and (series is None or parse_config(k[3]).get("series", k[3]) == series)
                and (workload is None or k[2] == workload)]

    def select(self, op=None, backend=None, workload=None, config=None):
        """Measurements matching every given field, in a stable order."""
        out = [m for m in self.measurements.values()
               if (op is None or m.op == op)
               and (backend is None or m.backend == backend)
               and (workload is None or m.workload == workload)
               and (config is None or m.config == config)]
        out.sort(key=lambda m: (m.op, m.backend, m.workload, m.config,
                                m.n if m.n is not None else -1,
                                sorted(m.params.items())))
        return out

    def registry(self):
        """Backend names in registry order, as the run recorded them
        (machine.json's run/build facts, else the JSON context), or []."""
        m = self.machine or {}
        for where in (m.get("run"), m.get("build"), m):
            reg = where.get("backends") if isinstance(where, dict) else None
            if isinstance(reg, list):
                return [b.get("name") if isinstance(b, dict) else b for b in reg
                        if isinstance(b, str) or (isinstance(b, dict) and isinstance(b.get("name"), str))]
        reg = self.context_value("backends")
        if isinstance(reg, str):
            return [b for b in reg.split(",") if b]
        return []

    def fact(self, key):
        """A run fact such as "profile": machine.json (top level or its
        "run" part), else the JSON context."""
        m = self.machine or {}
        for where in (m.get("run"), m):
            if isinstance(where, dict) and key in where and where[key] is not None:
                return where[key]
        return self.context_value(key)

    def context_value(self, key):
        """A key of the first Google Benchmark context that has it."""
        for _, c in self.contexts:
            if key in c:
                return c[key]
        return None

    def context_prefixed(self, prefix):
        """{rest: value} for every context key "<prefix><rest>"."""
        out = {}
        for _, c in self.contexts:
            for k, v in c.items():
                if isinstance(k, str) and k.startswith(prefix) and k[len(prefix):] not in out:
                    out[k[len(prefix):]] = v
        return out

    def samples_for(self, m, metric):
        """Raw samples of one measurement's metric (all repetitions), as
        [(value_ns, weight)], or None.  Matches the CSV's benchmark name to
        the measurement with or without its N segment."""
        got = self.sample_sets.get((m.key, metric))
        if got is None:
            got = self.sample_sets.get((m.key[:4] + ((),), metric))
        return got

    def ops(self):
        return sorted({m.op for m in self.measurements.values() if m.op not in SELF_OPS})

    def backends(self):
        """Backends in registry order (machine.json's list), then by name."""
        seen = {m.backend for m in self.measurements.values() if m.op not in SELF_OPS}
        order = []
        for name in self.registry():
            if name not in order:
                order.append(name)
        rest = sorted(b for b in seen if b not in order)
        return order + rest


def _to_int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


_DURATION_UNITS = (("ns", 1), ("us", 1000), ("ms", 1000000), ("s", 1000000000))


def parse_duration_ns(text):
    """"1ms" / "100ms" / "30s" / "1500us" -> ns, or None."""
    if not isinstance(text, str):
        return None
    for unit, scale in sorted(_DURATION_UNITS, key=lambda u: -len(u[0])):
        if text.endswith(unit):
            num = _float(text[:-len(unit)])
            if num is not None and math.isfinite(num):
                return num * scale
            return None
    return None


def parse_config(config):
    """"series=h2h,tick=1ms,wheel=512" -> dict (insertion order kept);
    {} when the text is not a key=value list."""
    out = {}
    for part in config.split(","):
        k, eq, v = part.partition("=")
        if not eq or not k:
            return {}
        out[k.strip()] = v.strip()
    return out


def parse_name(name):
    """Splits `<op>/<backend>/<workload>/<config>/k:v/...` into a key.

    Google Benchmark's own suffixes are dropped; missing positional parts
    become "-".  Returns None for a name with no op."""
    if not isinstance(name, str) or not name:
        return None
    parts = name.split("/")
    positional, params = [], []
    for p in parts:
        if ":" in p:
            k, _, v = p.partition(":")
            if k in GB_SUFFIX_KEYS:
                continue
            params.append((k, v))
        elif p in GB_SUFFIX_WORDS:
            continue
        elif params:
            # a bare word after the parameters: keep it as a flag.
            params.append((p, ""))
        else:
            positional.append(p)
    if not positional or not positional[0]:
        return None
    while len(positional) < 4:
        positional.append("-")
    if len(positional) > 4:
        # extra positional parts belong to the configuration.
        positional = positional[:3] + ["/".join(positional[3:])]
    op, backend, workload, config = positional
    return (op, backend, workload, config, tuple(params))


def _read_text(path, problems):
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            problems.append(Problem(path, "too large to read (%d bytes)" % size))
            return None
        with open(path, "r", encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        problems.append(Problem(path, "not UTF-8 text (%s)" % e.reason))
    except OSError as e:
        problems.append(Problem(path, "cannot be read (%s)" % e.strerror))
    return None



def _load_json(path, problems):
    text = _read_text(path, problems)
    if text is None:
        return None
    if not text.strip():
        problems.append(Problem(path, "is empty"))
        return None
    try:
        return loads(text)
    except json.JSONDecodeError as e:
        what = "is not valid JSON (line %d, column %d: %s)" % (e.lineno, e.colno, e.msg)
        if _unclosed(text):
            what = "is truncated: the JSON ends before its brackets close (%d bytes read)" % len(text)
        problems.append(Problem(path, what))
    except RecursionError:
        problems.append(Problem(path, "is nested too deeply to be benchmark JSON"))
    except ValueError as e:
        problems.append(Problem(path, "cannot be read as JSON (%s)" % e))
    return None


def _unclosed(text):
    """True when a JSON text ends inside a string or with brackets open:
    the mark of a file cut short (a run killed while writing)."""
    depth, in_str, esc = 0, False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return in_str or depth > 0


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _read_benchmark_json(res, path, data):
    """Adds one Google Benchmark JSON document to `res`."""
    entries = data.get("benchmarks")
    if not isinstance(entries, list):
        res.problems.append(Problem(path, "has no \"benchmarks\" list (not Google Benchmark output)"))
        return
    ctx = data.get("context")
    if isinstance(ctx, dict):
        res.contexts.append((path, ctx))
    # the libraries are subjects, not backends: their results stay apart
    into = res.libs if isinstance(ctx, dict) and ctx.get("harness") == "libs" \
        else res.measurements
    skipped = 0
    used = 0
    for e in entries:
        if not isinstance(e, dict):
            skipped += 1
            continue
        run_name = e.get("run_name")
        if not isinstance(run_name, str):
            run_name = e.get("name")
        key = parse_name(run_name)
        if key is None:
            skipped += 1
            continue
        agg_name = e.get("aggregate_name") if e.get("run_type") == "aggregate" else None
        if agg_name is not None and not isinstance(agg_name, str):
            skipped += 1
            continue
        if agg_name in ("BigO", "RMS"):
            fit = res.bigo.setdefault(key[:4], {})
            if agg_name == "BigO":
                fit["big_o"] = e.get("big_o") if isinstance(e.get("big_o"), str) else None
                fit["coefficient"] = _number(e.get("real_coefficient"))
            else:
                fit["rms"] = _number(e.get("rms"))
            used += 1
            continue
        # the micro's interface floor is not a timer: apart, as the libraries
        dest = res.floor if into is res.measurements and key[1] == INTERFACE_FLOOR \
            and key[0] in MICRO_OP_NAMES else into
        m = dest.get(key)
        if m is None:
            m = dest[key] = Measurement(key, path)
        if e.get("error_occurred"):
            msg = e.get("error_message")
            m.error = msg if isinstance(msg, str) else "the benchmark reported an error"
            used += 1
            continue
        unit = e.get("time_unit", "ns")
        scale = _TIME_UNITS.get(unit) if isinstance(unit, str) else None
        real = _number(e.get("real_time"))
        cpu = _number(e.get("cpu_time"))
        if scale is None or real is None or not 0 <= real * scale < MAX_TIME_NS:
            skipped += 1
            continue
        counters = {}
        for k, v in e.items():
            if k in _KNOWN_FIELDS:
                continue
            n = _number(v)
            if n is not None:
                counters[k] = n
        # A harness that times batches itself reports ns per operation.
        t = counters.get("ns_per_op", real * scale)
        if not 0 <= t < MAX_TIME_NS:
            skipped += 1
            continue
        if isinstance(e.get("threads"), int):
            m.threads = e["threads"]
        if agg_name is None:
            m.times.append(t)
            if cpu is not None:
                m.cpu_times.append(cpu * scale)
            for k, v in counters.items():
                m.counters.setdefault(k, []).append(v)
        elif agg_name in _AGGREGATES:
            a = dict(counters)
            # cv is a ratio, not a time: keep it unscaled.
            a["time"] = real if agg_name == "cv" else t
            m.agg[agg_name] = a
            if isinstance(e.get("repetitions"), int) and not isinstance(e["repetitions"], bool):
                m.agg_repetitions = e["repetitions"]
        used += 1
    if skipped and not used:
        res.problems.append(Problem(path, "has no benchmark entries in the expected form"))
    elif skipped:
        res.problems.append(Problem(path, "%d entries were not in the expected form and were skipped" % skipped))
    if used:
        res.files.append(path)


_KNOWN_FIELDS = {
    "name", "family_index", "per_family_instance_index", "run_name",
    "run_type", "repetitions", "repetition_index", "threads", "iterations",
    "real_time", "cpu_time", "time_unit", "aggregate_name", "aggregate_unit",
    "error_occurred", "error_message", "label", "big_o", "real_coefficient",
    "cpu_coefficient", "rms",
}


def _read_csv(res, path):
    """A samples CSV, read a line at a time: a standard run's raw samples
    are millions of rows (hundreds of MB), and reading them whole took
    most of the report's rendering time and more memory than the rest."""
    try:
        f = open(path, "r", encoding="utf-8", newline="")
    except OSError as e:
        res.problems.append(Problem(path, "cannot be read (%s)" % e.strerror))
        return
    try:
        with f:
            rows = csv.reader(f)
            header = [h.strip() for h in next(rows, [])]
            if not header:
                res.problems.append(Problem(path, "is empty"))
                return
            if len(set(header)) != len(header) or any(not h for h in header):
                res.problems.append(Problem(path, "has no usable header line"))
                return
            if not {"benchmark", "metric", "value_ns"} <= set(header):
                res.problems.append(Problem(
                    path, "is not a samples CSV (its header lacks benchmark, "
                          "metric and value_ns)"))
                return
            _read_sample_csv(res, path, header, rows)
    except csv.Error as e:
        res.problems.append(Problem(path, "is not readable CSV (%s)" % e))
    except UnicodeDecodeError as e:
        res.problems.append(Problem(path, "not UTF-8 text (%s)" % e.reason))


def _read_sample_csv(res, path, header, rows):
    """bench/'s raw samples: benchmark,metric,rep,seq,value_ns,weight.
    A run repeats each benchmark name over thousands of rows: each name is
    parsed once."""
    col = {h: i for i, h in enumerate(header)}
    c_bench, c_metric, c_value = col["benchmark"], col["metric"], col["value_ns"]
    c_weight = col.get("weight")
    width = len(header)
    sets = {}      # (benchmark, metric) as written -> its list in sample_sets
    bad = used = 0
    for row in rows:
        if not row:
            continue
        if len(row) != width:
            bad += 1
            continue
        where = (row[c_bench], row[c_metric])
        samples = sets.get(where)
        if samples is None:
            key = parse_name(row[c_bench])
            samples = sets[where] = (None if key is None else
                                     res.sample_sets.setdefault(
                                         (key, row[c_metric].strip()), []))
        v = _number(_float(row[c_value]))
        w = _number(_float(row[c_weight])) if c_weight is not None else 1.0
        if samples is None or v is None or w is None or w <= 0:
            bad += 1
            continue
        samples.append((v, w))
        used += 1
    if not used:
        res.problems.append(Problem(path, "has no sample rows"))
        return
    if bad:
        res.problems.append(Problem(path, "%d malformed rows were skipped (truncated?)" % bad))
    res.files.append(path)


# Fields of one counts.json result the report uses, all numbers.
COUNT_FIELDS = ("n", "ops", "instructions_per_op", "d1_misses_per_op",
                "ll_misses_per_op")


def _read_counts(res, path):
    """counts.json: {"results": [{op, backend, workload, config, n, ops,
    instructions_per_op, d1_misses_per_op, ll_misses_per_op,
    work_per_op: {...}} or {name, error}], ...}."""
    data = _load_json(path, res.problems)
    if data is None:
        return
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        res.problems.append(Problem(path, "has no \"results\" list (not a counts file)"))
        return
    bad = 0
    for r in results:
        if not isinstance(r, dict):
            bad += 1
            continue
        if isinstance(r.get("error"), str):
            res.counts.append({"name": str(r.get("name", "?")), "error": r["error"]})
            continue
        if not all(isinstance(r.get(k), str) for k in ("op", "backend", "config")):
            bad += 1
            continue
        nums = {k: _number(r.get(k)) for k in COUNT_FIELDS}
        if any(v is None or v < 0 for v in nums.values()) or not nums["ops"]:
            bad += 1
            continue
        work = r.get("work_per_op")
        work = {k: _number(v) for k, v in work.items() if isinstance(k, str)
                and _number(v) is not None} if isinstance(work, dict) else {}
        rec = dict(nums, op=r["op"], backend=r["backend"], config=r["config"],
                   workload=r.get("workload") if isinstance(r.get("workload"), str) else "-",
                   work=work)
        rec["n"] = int(rec["n"])
        res.counts.append(rec)
    if bad:
        res.problems.append(Problem(path, "%d results were not in the expected form "
                                          "and were skipped" % bad))
    res.counts_meta = {k: v for k, v in data.items() if k != "results"}
    if res.counts:
        res.files.append(path)


# /2 (issue 37): forks, dropped repetitions, the timeouts workload at one
# timeout with its fired share and CPU per operation, expire on `short`;
# /1 documents (one JVM) are still read, as what they are.
JVM_FORMAT = "timerbench-jvm/2"
JVM_FORMATS = ("timerbench-jvm/1", JVM_FORMAT)
JVM_REP_FIELDS = ("ns_per_op", "bytes_per_op", "gc_ms", "gc_count", "jit_ms",
                  "mean_ns_per_op", "cpu_ns_per_task", "span_ms", "fired", "timeout_ns",
                  "fork", "compiles", "fired_share", "caller_cpu_ns_per_op",
                  "worker_cpu_ns_per_op", "cpu_ns_per_op", "stretch_ms", "lag_max_ms", "lag_median_ms",
                  "idle_cpu_ns_per_task")
JVM_REP_FLAGS = ("dropped", "paced")


def _read_jvm(res, path):
    """jvm.json, the JVM harness's document (jvm/README.md): {"format":
    "timerbench-jvm/2" (or /1), "subjects": [{name, original, config, c_backend}],
    "results": [{op, subject, n, reps: [{ns_per_op, bytes_per_op, gc_ms,
    gc_count, ...}]}], ...}.  A result of an unknown subject, without
    repetitions or with a repetition lacking a non-negative ns_per_op
    (expire's CPU per task, its idle part taken out, can be 0) is
    skipped (and counted in a Problem); a file of another format, or with
    nothing usable, leaves `res.jvm` None with the reason in
    `res.jvm_problem`."""
    problems = []
    data = _load_json(path, problems)

    def refuse(what):
        res.jvm_problem = what
        res.problems.append(Problem(path, what))
    if data is None:
        res.jvm_problem = problems[0].what if problems else "cannot be read"
        res.problems += problems
        return
    if not isinstance(data, dict) or data.get("format") not in JVM_FORMATS:
        return refuse("is not the JVM harness's output (format %s expected)"
                      % " or ".join(JVM_FORMATS))
    subjects = []
    for s in data.get("subjects") if isinstance(data.get("subjects"), list) else []:
        if isinstance(s, dict) and isinstance(s.get("name"), str):
            cb = s.get("c_backend")
            subjects.append({"name": s["name"],
                             "original": str(s.get("original", s["name"])),
                             "config": str(s.get("config", "")),
                             "c_backend": cb if isinstance(cb, str) and cb else None})
    names = {s["name"] for s in subjects}
    results, bad = [], 0
    raw = data.get("results")
    for r in raw if isinstance(raw, list) else []:
        ok = (isinstance(r, dict) and isinstance(r.get("op"), str)
              and r.get("subject") in names and _number(r.get("n")) is not None
              and _number(r.get("n")) > 0 and isinstance(r.get("reps"), list) and r["reps"])
        reps = []
        if ok:
            for x in r["reps"]:
                v = _number(x.get("ns_per_op")) if isinstance(x, dict) else None
                if v is None or v < 0:
                    ok = False
                    break
                one = {k: _number(x.get(k)) for k in JVM_REP_FIELDS
                       if _number(x.get(k)) is not None}
                one.update({k: x[k] for k in JVM_REP_FLAGS if isinstance(x.get(k), bool)})
                reps.append(one)
        if not ok:
            bad += 1
            continue
        results.append({"op": r["op"], "subject": r["subject"], "n": int(_number(r["n"])),
                        "reps": reps})
    if bad:
        res.problems.append(Problem(path, "%d results were not in the expected form "
                                          "and were skipped" % bad))
    if not results:
        return refuse("has no usable results")
    doc = {k: v for k, v in data.items() if k not in ("subjects", "results")}
    doc.update(subjects=subjects, results=results)
    res.jvm = doc
    res.files.append(path)


def _spread(v):
    """{"median", "min", "max", "reps"} with numbers, min <= median <= max,
    or None."""
    if not isinstance(v, dict):
        return None
    out = {k: _number(v.get(k)) for k in ("median", "min", "max")}
    if any(x is None or x < 0 for x in out.values()) or \
            not out["min"] <= out["median"] <= out["max"]:
        return None
    reps = v.get("reps")
    out["reps"] = [float(x) for x in reps if _number(x) is not None] \
        if isinstance(reps, list) else []
    return out


# Numbers every replayed backend has; a backend without them is skipped.
REPLAY_BACKEND_NUMBERS = ("peak_pending", "bytes_at_peak", "fires")
REPLAY_KINDS = ("schedule", "periodic", "cancel", "reschedule", "advance", "expire")


def _read_replay_backend(b):
    if not isinstance(b, dict) or not isinstance(b.get("name"), str):
        return None
    total = _spread(b.get("ns_per_event"))
    nums = {k: _number(b.get(k)) for k in REPLAY_BACKEND_NUMBERS}
    if total is None or any(v is None or v < 0 for v in nums.values()):
        return None
    kinds = {}
    per = b.get("ns_per_op") if isinstance(b.get("ns_per_op"), dict) else {}
    for k in REPLAY_KINDS:
        e = per.get(k)
        if isinstance(e, dict) and _number(e.get("count")):
            sp = _spread(e.get("ns"))
            if sp is not None:
                kinds[k] = dict(sp, count=int(e["count"]))
    late = b.get("lateness") if isinstance(b.get("lateness"), dict) else {}
    late_ns = late.get("ns") if isinstance(late.get("ns"), dict) else {}
    late_t = late.get("ticks") if isinstance(late.get("ticks"), dict) else {}
    c = b.get("counts") if isinstance(b.get("counts"), dict) else {}
    counts = {k: _number(c.get(k)) for k in ("instructions_per_event",
                                             "d1_misses_per_event", "ll_misses_per_event")}
    counts = counts if all(v is not None and v >= 0 for v in counts.values()) else None
    backend = b.get("backend") if isinstance(b.get("backend"), str) else b["name"]
    return dict(nums, name=b["name"], backend=backend, ns_per_event=total, kinds=kinds,
                counts=counts,
                cpu_ms_per_million_events=_spread(b.get("cpu_ms_per_million_events")),
                ticked=b.get("ticked") is True, tick_ns=_number(b.get("tick_ns")) or 0,
                lateness_ns={k: _number(v) for k, v in late_ns.items()},
                lateness_ticks={k: _number(v) for k, v in late_t.items()},
                beyond_tick_frac=_number(late.get("beyond_tick_of_delay_max")),
                budget=_budget_counts(late),
                pending=[(p[0], p[1]) for p in b.get("pending_samples", [])
                         if isinstance(p, list) and len(p) == 2
                         and _number(p[0]) is not None and _number(p[1]) is not None]
                if isinstance(b.get("pending_samples"), list) else [])


def _quantiles(v, keys):
    """{key: number} of the keys present as numbers >= 0, or None when v is
    not a dict or holds none of them."""
    if not isinstance(v, dict):
        return None
    out = {k: _number(v.get(k)) for k in keys}
    out = {k: x for k, x in out.items() if x is not None and x >= 0}
    return out or None


def _count(v):
    """A count >= 0 as an int, else None."""
    x = _number(v)
    return int(x) if x is not None and x >= 0 else None


def _budget_counts(late):
    """What a backend's lateness says against the timers' budgets (issue 27:
    beyond_budget, budget_fires, no_budget_fires, over_budget_ns, relative),
    or None for a replay.json from before budgets."""
    if "beyond_budget" not in late and "budget_fires" not in late:
        return None
    out = {k: _count(late.get(k)) for k in ("beyond_budget", "budget_fires",
                                            "no_budget_fires")}
    if out["beyond_budget"] is None or out["budget_fires"] is None:
        return None
    out["over_budget_ns"] = _quantiles(late.get("over_budget_ns"), ("p50", "p99", "max"))
    out["relative"] = _quantiles(late.get("relative"), ("p50", "p99", "max"))
    return out


def _read_sweep_point(p):
    """One (ticked backend, tick) point of a trace's sweep, or None when it is
    not in the contract's form.  A skipped point keeps its reason."""
    if not isinstance(p, dict) or not isinstance(p.get("name"), str) \
            or not isinstance(p.get("backend"), str) or _count(p.get("tick_ns")) is None:
        return None
    out = {"name": p["name"], "backend": p["backend"], "tick_ns": _count(p["tick_ns"])}
    if p.get("skipped"):
        out["skipped"] = str(p["skipped"])[:300]
        return out
    checks = p.get("checks") if isinstance(p.get("checks"), dict) else {}
    if checks.get("error") or checks.get("passed") is False:
        out["failed"] = str(checks.get("error") or "its check failed")[:300]
        return out
    late = p.get("lateness") if isinstance(p.get("lateness"), dict) else {}
    out["cpu_ms_per_million_events"] = _spread(p.get("cpu_ms_per_million_events"))
    out["ns_per_event"] = _spread(p.get("ns_per_event"))
    out["lateness"] = {k: _number(late.get(k)) for k in ("max_ns", "p99_ns")}
    out["budget"] = _budget_counts(late)
    if out["ns_per_event"] is None or any(v is None or v < 0
                                          for v in out["lateness"].values()):
        return None
    return out


def _read_budget(b):
    """A trace's budget entry: {source, timers_with_budget, timers, slack_ns}
    (slack_ns None when no timer had one), or None for a trace replayed
    before budgets existed."""
    if not isinstance(b, dict) or b.get("source") not in ("trace", "override", "none"):
        return None
    return {"source": b["source"], "timers_with_budget": _count(b.get("timers_with_budget")),
            "timers": _count(b.get("timers")),
            "slack_ns": _quantiles(b.get("slack_ns"), ("min", "p50", "p90", "p99", "max"))}


def _read_verdict(v):
    """replay.json's verdict as bench/replay.py wrote it (the report
    recomputes it with tbkit.replaydata.budget_verdict and says so if they differ)."""
    if not isinstance(v, dict) or not isinstance(v.get("recommended"), list):
        return None
    missed = v.get("missed") if isinstance(v.get("missed"), dict) else {}
    return {"recommended": [n for n in v["recommended"] if isinstance(n, str)],
            "kind": v.get("kind") if isinstance(v.get("kind"), str) else None,
            "rule": v.get("rule") if isinstance(v.get("rule"), str) else "",
            "within_budget": [n for n in v.get("within_budget", []) if isinstance(n, str)]
            if isinstance(v.get("within_budget"), list) else [],
            "missed": {k: _number(x) for k, x in missed.items() if _number(x) is not None}}


def _read_replay(res, path):
    """replay.json: {"traces": [{name, events, ops, cancel_ratio, delay_ns,
    delay_cdf, backends: [{name, ns_per_event: {median, min, max, reps},
    ns_per_op: {kind: {count, ns}}, peak_pending, bytes_at_peak, fires,
    lateness, pending_samples, ...}]}], reps, tick_ns, method}; since
    issue 27 also, per trace, format_version, budget, sweep[] and verdict,
    per backend the budget counts inside lateness, and at the top
    lateness_override.  Each of these may be absent (an older run)."""
    data = _load_json(path, res.problems)
    if data is None:
        return
    traces = data.get("traces") if isinstance(data, dict) else None
    if not isinstance(traces, list):
        res.problems.append(Problem(path, "has no \"traces\" list (not a replay file)"))
        return
    bad = 0
    for t in traces:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str) \
                or not _number(t.get("events")) or _number(t.get("cancel_ratio")) is None \
                or not isinstance(t.get("backends"), list):
            bad += 1
            continue
        # a backend whose check failed carries its error instead of numbers
        # (bench/replay.c): named as failed, not counted as damaged
        failed = [(b["name"], str(b["error"])[:300]) for b in t["backends"]
                  if isinstance(b, dict) and isinstance(b.get("name"), str)
                  and b.get("error")]
        backends = [_read_replay_backend(b) for b in t["backends"]
                    if not (isinstance(b, dict) and b.get("error"))]
        bad += sum(b is None for b in backends)
        backends = [b for b in backends if b is not None]
        if not backends and not failed:
            bad += 1
            continue
        delay = t.get("delay_ns") if isinstance(t.get("delay_ns"), dict) else {}
        ops = t.get("ops") if isinstance(t.get("ops"), dict) else {}
        res.replay.append({
            "name": t["name"], "file": t.get("file") if isinstance(t.get("file"), str) else t["name"],
            "events": int(t["events"]), "cancel_ratio": float(t["cancel_ratio"]),
            "timers": _number(t.get("timers")),
            "ops": {k: int(v) for k, v in ops.items() if _number(v) is not None},
            "cancel_unknown": _number(t.get("cancel_unknown")) or 0,
            "reschedule_unknown": _number(t.get("reschedule_unknown")) or 0,
            "delay_ns": {k: _number(v) for k, v in delay.items() if _number(v) is not None},
            "delay_cdf": [(p[0], p[1]) for p in t.get("delay_cdf", [])
                          if isinstance(p, list) and len(p) == 2
                          and _number(p[0]) is not None and _number(p[1]) is not None]
            if isinstance(t.get("delay_cdf"), list) else [],
            "comments": [c for c in t.get("comments", []) if isinstance(c, str)]
            if isinstance(t.get("comments"), list) else [],
            "duration_ns": (_number(t.get("end_ns")) or 0) - (_number(t.get("start_ns")) or 0),
            "backends": backends, "failed": failed,
            # issue 27: absent (None, []) in a replay.json from before budgets
            "format_version": _count(t.get("format_version")),
            "budget": _read_budget(t.get("budget")),
            "sweep": [p for p in (_read_sweep_point(p) for p in t.get("sweep", []))
                      if p is not None] if isinstance(t.get("sweep"), list) else [],
            "verdict": _read_verdict(t.get("verdict")),
            # the trace as written, for replaydata.budget_verdict (the rule
            # bench/replay.py applied, so both read the same fields)
            "raw": t})
    if bad:
        res.problems.append(Problem(path, "%d traces or backends were not in the expected "
                                          "form and were skipped" % bad))
    res.replay_meta = {k: v for k, v in data.items() if k != "traces"}
    ov = data.get("lateness_override")
    res.replay_meta["lateness_override"] = ov if isinstance(ov, dict) and \
        isinstance(ov.get("spec"), str) and ov.get("kind") in ("abs", "pct") else None
    if res.replay:
        res.files.append(path)


def _float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _read_run_state(res, machine):
    v = machine.get("format_version", 1)
    res.format_version = v if isinstance(v, int) and not isinstance(v, bool) else None
    inst = machine.get("instances")
    missing = inst.get("missing") if isinstance(inst, dict) else None
    if isinstance(missing, dict):
        for names in missing.values():
            for n in names if isinstance(names, list) else ():
                key = parse_name(n) if isinstance(n, str) else None
                if key is not None:
                    res.missing.append(key)


def format_problem(res):
    """Why this checkout cannot read the directory's results format, in
    words (machine.json's format_version: absent means 1, else an integer
    from 1 to FORMAT_VERSION), or None when it can."""
    if res.machine is None or "format_version" not in res.machine:
        return None
    v = res.machine["format_version"]
    if isinstance(v, int) and not isinstance(v, bool):
        if 1 <= v <= FORMAT_VERSION:
            return None
        if v > FORMAT_VERSION:
            return ("%s was written by %s in results format %d; this checkout "
                    "reads formats up to %d: render it with a newer checkout"
                    % (res.root, res.written_by(), v, FORMAT_VERSION))
        return ("%s: machine.json's format_version is %d; results formats "
                "are numbered from 1" % (res.root, v))
    return ("%s: machine.json's format_version is %s (%s), not an integer; "
            "this checkout reads formats 1 to %d, written as a JSON number"
            % (res.root, json.dumps(v)[:40], formats.json_type(v), FORMAT_VERSION))


def _sniff_benchmark_json(path):
    """True when a file's first bytes are those of Google Benchmark JSON: an
    object with a "context" or "benchmarks" key."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return False
    head = head.lstrip()
    return head.startswith(b"{") and (b'"context"' in head or b'"benchmarks"' in head)


def results_dir_problem(root):
    """None when `root` is a results directory (KNOWN_FILES), else why not,
    in words.  Looks at the directory's own entries only (a listing and at
    most _SNIFF_BYTES of each other *.json file): nothing below it."""
    if not os.path.isdir(root):
        return "%s: no such results directory" % root
    try:
        names = os.listdir(root)
    except OSError as e:
        return "%s: cannot be read (%s)" % (root, e.strerror or e)
    files = [n for n in names if os.path.isfile(os.path.join(root, n))]
    if any(n in KNOWN_FILES for n in files):
        return None
    if any(n.endswith(".json") and _sniff_benchmark_json(os.path.join(root, n))
           for n in files):
        return None
    return ("%s is not a results directory: it holds none of %s, nor Google "
            "Benchmark JSON" % (root, ", ".join(KNOWN_FILES)))


def load(root):
    """Reads every file of a results directory (its top level: the format
    has no subdirectories to read).  Never raises for bad content; raises
    OSError only when `root` itself cannot be listed."""
    res = Results(root)
    if not os.path.isdir(root):
        raise OSError(2, "no such directory", root)
    # machine.json first: a directory a run wrote (its machine.json is an
    # object) is read by the format's names only, so that a stray "micro
    # (copy).json" is not more repetitions (issue 42, item 3).  Without
    # one, Google Benchmark output under any *.json name is read, as
    # results_dir_problem accepts it.
    names = [os.path.join(root, f) for f in
             sorted(os.listdir(root), key=lambda f: (f != "machine.json", f))]
    for path in names:
        base = os.path.basename(path)
        if base in _OWN_OUTPUTS or not os.path.isfile(path):
            continue
        if res.machine is not None and base not in KNOWN_FILES:
            if base.lower().endswith(IGNORED_NAMED):
                res.problems.append(Problem(path, IGNORED_WHY))
            continue
        if base == "machine.json":
            data = _load_json(path, res.problems)
            if isinstance(data, dict):
                # a field of another type is named and read as absent
                data, typed = formats.without_badly_typed(data)
                for _, msg in typed:
                    res.problems.append(Problem(path, msg + "; left out"))
                res.machine = data
                res.files.append(path)
                _read_run_state(res, data)
            elif data is not None:
                res.problems.append(Problem(path, "is not a JSON object"))
        elif base == "counts.json":
            _read_counts(res, path)
        elif base == "replay.json":
            _read_replay(res, path)
        elif base == "jvm.json":
            _read_jvm(res, path)
        elif base in PURGATORY_FILES:
            res.purgatory[base] = _load_json(path, res.problems)
            if res.purgatory[base] is not None:
                res.files.append(path)
        elif base.endswith(".json"):
            data = _load_json(path, res.problems)
            if data is None:
                continue
            if not isinstance(data, dict):
                res.problems.append(Problem(path, "is not a JSON object (not Google Benchmark output)"))
                continue
            _read_benchmark_json(res, path, data)
        elif base.endswith(".csv"):
            _read_csv(res, path)
    for m in list(res.measurements.values()) + list(res.libs.values()) + \
            list(res.floor.values()):
        if m.error is None and not m.times and "median" not in m.agg:
            m.error = "no timing in the file"
        elif m.error is None and not (m.median or 0) > 0:
            # every harness times something that takes time: a zero is damage
            m.error = "a time of zero"
    # An instance whose results are in the files is not missing, whatever
    # machine.json says (a run stopped while "running", its journal gone).
    res.missing = [k for k in res.missing if k not in res.measurements and k not in res.libs
                   and k not in res.floor]
    fit_missing_complexity(res)
    return res


# Google Benchmark's candidate curves (complexity.cc), log base 2.
_CURVES = (("(1)", lambda n: 1.0), ("lgN", lambda n: math.log2(n)),
           ("N", lambda n: float(n)), ("NlgN", lambda n: n * math.log2(n)),
           ("N^2", lambda n: float(n) ** 2), ("N^3", lambda n: float(n) ** 3))


def fit_complexity(points):
    """Least-squares fit of time = c * f(N) for each of Google Benchmark's
    curves over (N, time) points, as its complexity.cc does (coefficient
    sum(t f) / sum(f^2); RMS of the residuals over the mean time); returns
    {"big_o" (its notation: "(1)", "lgN", ...), "coefficient", "rms"} of the curve with the smallest RMS, or
    None with fewer than 3 distinct N."""
    pts = sorted((n, t) for n, t in points if n and n > 0 and t is not None)
    if len({n for n, _ in pts}) < 3:
        return None
    mean = sum(t for _, t in pts) / len(pts)
    if mean <= 0:
        return None
    best = None
    for name, f in _CURVES:
        fs = [f(n) for n, _ in pts]
        den = sum(x * x for x in fs)
        if den <= 0:
            continue
        c = sum(x * t for x, (_, t) in zip(fs, pts)) / den
        rms = math.sqrt(sum((t - c * x) ** 2 for x, (_, t) in zip(fs, pts))
                        / len(pts)) / mean
        if best is None or rms < best["rms"]:
            best = {"big_o": name, "coefficient": c, "rms": rms,
                    "source": "medians"}
    return best


def fit_missing_complexity(res):
    """Fits every family of N-indexed measurements that Google Benchmark
    did not fit itself (the micro harness registers one family per N, so
    each gets its own minimum time), over the medians of its instances."""
    fam = {}
    for m in res.measurements.values():
        if m.error is None and m.n and m.median and set(m.params) == {"N"}:
            fam.setdefault(m.key[:4], []).append((m.n, m.median))
    for k, pts in fam.items():
        if k in res.bigo:
            continue
        fit = fit_complexity(pts)
        if fit:
            res.bigo[k] = fit
