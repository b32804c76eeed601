"""tbkit.analysis — what the report computes from a results directory
before anything is rendered (analysis layer): the backends in registry
order and their families, every micro series against N, the memory per
pending task, and the runtime experiments' measurements and labels, as
plain data (dicts, lists, numbers and the results' own records).  The
claims (tbkit.claims) and the sections read an Analysis; nothing here
draws or writes a document.
"""

from tbkit import results as tb_results
from tbkit import stats as S

# Micro-benchmark operations, in the order the figures show them.

MICRO_OPS = ["fill", "insert", "cancel", "expire", "timeouts", "periodic"]
# What each micro operation times, for its section and the method.
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
    "caller": ("the caller's part (timeouts: the clock moved untimed after each batch, "
               "so expiry and the tick walk are left out, as the JVM originals' "
               "workers do them off the caller's thread)"),
}
CONFIG_ORDER = ["h2h", "orig", "cover", "caller"]
RUNTIME_OPS = ["lateness", "jitter", "interference", "burst", "idle",
               "workers", "producers", "failing"]
KNOWN_OPS = RUNTIME_OPS + ["failure", "wallstep", "shim", "selftest"]
PCTS = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max")]
# The quantile each percentile counter stands for.
PCT_Q = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}


def pct_value(m, key, prefix=""):
    """A percentile counter's median over the repetitions, or None when too
    few samples back it (see tbkit.stats.pct_supported) or it is absent."""
    v = m.counter(prefix + key)
    q = PCT_Q.get(key)
    if v is None or q is None:
        return v
    return v if S.pct_supported(m.counter(prefix + "count"), q) else None


# The design's target: lateness p50 within this factor of the floor.
FLOOR_TARGET = 1.2



class Analysis:
    """One results directory, analysed: `res` (tbkit.results.Results),
    `backends` (registry order, those with results, floors left out),
    `floor` (the floor pseudo-backends), `caps` ({backend: capabilities}),
    `series` ({(op, series, workload): {label: [Measurement by N]}}),
    `micro_best` ({op: (N, workload, fastest, its median, slowest, its
    median)} at the largest N every line of the head-to-head main workload
    reached), `memory_main` ((N, workload, [(bytes per task, backend)]) at the
    largest N, or None), `rt` (the runtime experiments' measurements, labels
    and floor comparison, by experiment) and `ticks` ({series: {tick}})."""

    def __init__(self, res):
        self.res = res
        all_b = res.backends()
        have = {m.backend for m in res.measurements.values()
                if m.op not in tb_results.SELF_OPS}
        self.floor = [b for b in all_b if is_floor(b)]
        self.backends = [b for b in all_b if not is_floor(b) and b in have]
        self.caps = caps_from_machine(res.machine)
        self.ticks = {}
        for m in res.measurements.values():
            if m.cfg.get("tick"):
                self.ticks.setdefault(m.series, set()).add(m.cfg["tick"])
        self.series = micro_series(res)
        self.micro_best = micro_best(res, self.series, self.backend_sort_key())
        self.memory_main = memory_main(res)
        self.rt = runtime_data(res, self.floor)

    def is_heap(self, b):
        """A heap: neither ticked nor a tree, by the capabilities the run's
        binary listed (machine.json); False when it listed none."""
        c = self.caps.get(b)
        return c is not None and "ticked" not in c and "tree" not in c

    def is_tree(self, b):
        """A balanced search tree (TB_CAP_TREE): the third family, in
        neither the heaps' nor the wheels' claims."""
        c = self.caps.get(b)
        return c is not None and "tree" in c

    def is_wheel(self, b):
        """A ticked structure (TB_CAP_TICKED)."""
        c = self.caps.get(b)
        return c is not None and "ticked" in c

    def config_text(self, config):
        """What a series means; the wheels' tick is read from the results."""
        ticks = ", ".join(sorted(self.ticks.get(config, ())))
        if ticks and config == "h2h":
            return "head-to-head, wheels at a common %s tick" % ticks
        if ticks and config == "cover":
            return "wheels at a %s tick sized to span the workload" % ticks
        return CONFIG_TEXT.get(config, config)

    def backend_sort_key(self):
        """Registry position of a backend name (floors last, unknown after)."""
        order = {b: i for i, b in enumerate(self.backends + self.floor)}
        return lambda label_backend: order.get(label_backend, len(order))


def caps_from_machine(machine):
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


def interface_floor(res, op):
    """The micro's interface floor for `op` (Results.floor, bench/micro.c:
    tb_backend_floor through the same batches), the measured ones in order
    of N; [] when the run has none."""
    return sorted((m for m in res.floor.values()
                   if m.op == op and m.n is not None and not m.error and m.median),
                  key=lambda m: m.n)


def floor_text(backend):
    """What a floor pseudo-backend of bench/runtime.c measures."""
    if backend == "floor":
        return ("pthread_cond_timedwait on CLOCK_MONOTONIC, signalled by each new "
                "earliest probe: the wait of every backend here, the floor they are held to")
    return "clock_nanosleep loop: the machine's own wake-up latency"


def config_sort(configs):
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


def bytes_per_task(m):
    for k in ("bytes_per_task", "bytes_per_pending", "bytes/task", "bytes_per_timer"):
        v = m.counter(k)
        if v is not None:
            return v
    return None


def labels_for(ms, drop=("series",)):
    """A legend label per measurement: its backend plus the configuration
    keys (and parameters other than N) that differ between that backend's
    measurements in `ms`.  Returns {id(m): label}."""
    by_backend = {}
    for m in ms:
        by_backend.setdefault(m.backend, []).append(m)
    out = {}
    for b, bms in by_backend.items():
        keys = []
        for m in bms:
            keys += [k for k in m.cfg if k not in keys]
        varying = [k for k in keys if k not in drop and len({m.cfg.get(k) for m in bms}) > 1]
        pkeys = sorted({k for m in bms for k in m.params if k != "N"})
        pvary = [k for k in pkeys if len({m.params.get(k) for m in bms}) > 1]
        for m in bms:
            extra = ["%s=%s" % (k, m.cfg.get(k, "-")) for k in varying]
            extra += ["%s:%s" % (k, m.params.get(k, "-")) for k in pvary]
            if not m.cfg and len({x.config for x in bms}) > 1:
                extra.append(m.config)
            out[id(m)] = " ".join([b] + extra)
    return out


def counter_spread(m, name):
    """(median, lowest, highest) of one counter over the repetitions."""
    med = m.counter(name)
    if med is None:
        return None
    vals = m.counters.get(name) or [med]
    return (med, min(vals), max(vals))


def slack_of(m):
    return m.cfg.get("slack", "default")


def primary_floor(floor):
    """The floor the backends are held to: `floor` (bench/runtime.c: the
    condition-variable wait every backend uses) when the run has it, else
    the first floor it has, else None."""
    return "floor" if "floor" in floor else (floor[0] if floor else None)


def leader_pairs(ms):
    """(backend, leader=on measurement, leader=off measurement) per backend
    and series that has both."""
    out = []
    by = {}
    for m in ms:
        if m.cfg.get("leader") in ("on", "off"):
            rest = tuple((k, v) for k, v in m.cfg.items() if k != "leader")
            by.setdefault((m.backend, rest), {})[m.cfg["leader"]] = m
    for (b, _), d in sorted(by.items()):
        if "on" in d and "off" in d:
            out.append((b, d["on"], d["off"]))
    return out


def missing_text(keys):
    """"3 instances of insert (heapqueue/uniform N 10^5, ...)": short."""
    by_op = {}
    for k in keys:
        by_op.setdefault(k[0], []).append(k)
    parts = []
    for op, ks in sorted(by_op.items()):
        parts.append("%d of %s" % (len(ks), op))
    return "%d instance%s (%s)" % (len(keys), "" if len(keys) == 1 else "s", ", ".join(parts))


def profile_micro(res):
    """The run's profile's micro facts as the binary listed them
    (machine.json build.profiles.<profile>.micro), or {} for a run from
    before they were recorded."""
    build = (res.machine or {}).get("build")
    profs = build.get("profiles") if isinstance(build, dict) else None
    p = profs.get(res.run.get("profile")) if isinstance(profs, dict) else None
    m = p.get("micro") if isinstance(p, dict) else None
    return m if isinstance(m, dict) else {}


# ---- the analyses the claims read ------------------------------------------

def micro_ops(res):
    """The micro operations this run has results with an N for."""
    return [op for op in MICRO_OPS if any(m.n is not None for m in res.select(op=op))]


def micro_series(res):
    """{(op, series, workload): {label: [Measurement by N]}} for every micro
    operation, series (but the precision sweep) and workload."""
    out = {}
    for op in micro_ops(res):
        ms = [m for m in res.select(op=op) if m.n is not None]
        for series in config_sort({m.series for m in ms} - {"precision"}):
            sms = [m for m in ms if m.series == series]
            for wl in workloads_of(sms):
                out[(op, series, wl)] = legend_groups([m for m in sms if m.workload == wl])
    return out


def micro_best(res, series, key):
    """{op: (N, workload, fastest label, its median, slowest label, its
    median)} for each operation's head-to-head main workload, at the
    largest N every line reached; an operation with instances of that
    series missing, or with one line, has none."""
    out = {}
    for (op, config, wl), lines in series.items():
        if config != "h2h" or wl != workloads_of(res.select(op=op))[0]:
            continue
        if res.missing_for((op,), config, wl):
            continue
        order = sorted(lines, key=lambda s: (key(lines[s][0].backend), s))
        common = None
        for label in order:
            s = {m.n for m in lines[label]}
            common = s if common is None else common & s
        if common and len(order) > 1:
            n = max(common)
            at = sorted(((lines[l][[m.n for m in lines[l]].index(n)], l) for l in order),
                        key=lambda x: x[0].median)
            (best, bl), (worst, wl_) = at[0], at[-1]
            out[op] = (n, wl, bl, best.median, wl_, worst.median)
    return out


def memory_results(res):
    """The measurements with a bytes-per-task counter (the precision sweep,
    one N swept over the tick, left out)."""
    return [m for m in res.select() if not m.error and m.n is not None
            and bytes_per_task(m) is not None and m.series != "precision"]


def memory_main(res):
    """(N, workload, [(bytes per task, backend)] ascending) at the largest
    N, series h2h when it has that N, its first workload; None without
    memory results."""
    have = memory_results(res)
    if not have:
        return None
    n = max(m.n for m in have)
    main = [m for m in have if m.n == n and m.series == "h2h"] or [m for m in have if m.n == n]
    wl = workloads_of(main)[0]
    return (n, wl, sorted((bytes_per_task(m), m.backend) for m in main if m.workload == wl))


def runtime_data(res, floor_names):
    """{experiment: data} of the runtime experiments the claims and the
    recommendations read: lateness {ms, labels, early, vs_floor,
    floor_p50}, interference {ms, labels}, burst [ms], idle [ms] with
    idle_labels, workers [(backend, leader on, leader off)], failing [ms]."""
    rt = {}
    if not any(res.select(op=op) for op in RUNTIME_OPS):
        return rt
    ok = [m for m in res.select(op="lateness") if not m.error]
    if res.select(op="lateness"):
        late = rt.setdefault("lateness", {})
        labels = labels_for(ok, drop=("series", "slack"))
        primary = primary_floor(floor_names)
        floor = {slack_of(m): m for m in ok if m.backend == primary}
        for slack, f in sorted(floor.items()):
            fp50 = f.counter("p50")
            cand = [(m.counter("p50"), labels[id(m)], m) for m in ok
                    if m.backend not in floor_names and m.workload == "light"
                    and slack_of(m) == slack and m.counter("p50") is not None]
            if fp50 and cand and slack == "default":
                cand.sort(key=lambda c: c[0])
                late["vs_floor"] = [(l, v, v / fp50, m) for v, l, m in cand]
                late["floor_p50"] = fp50
        late["early"] = sum(m.counter("early") or 0 for m in ok
                            if m.counter("early") is not None)
        late["ms"] = ok
        late["labels"] = labels
    if res.select(op="interference"):
        ok = [m for m in res.select(op="interference") if not m.error]
        rt["interference"] = {"ms": ok, "labels": labels_for(ok)}
    if res.select(op="burst"):
        rt["burst"] = [m for m in res.select(op="burst") if not m.error]
    if res.select(op="idle"):
        ok = [m for m in res.select(op="idle") if not m.error]
        rt["idle"] = ok
        rt["idle_labels"] = labels_for(ok)
    if res.select(op="failing"):
        rt["failing"] = [m for m in res.select(op="failing") if not m.error]
    if res.select(op="workers"):
        rt["workers"] = leader_pairs([m for m in res.select(op="workers") if not m.error])
    return rt


def is_granular(an, labels):
    """Whether one of the labels is a granular wheel (TB_CAP_GRANULAR:
    Linux's levels), whose recommendation must say beside its speed that
    it fires late by up to a tick plus 8/63 of the delay."""
    return any("granular" in an.caps.get(l.split(" ")[0], ()) for l in labels)
