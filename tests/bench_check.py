#!/usr/bin/env python3
"""tests/bench_check.py — the `bench` test suite: runs every harness of
timerbench-bench at the smoke profile and checks its output for sanity.

Checked: the JSON parses; the context records profile, seed, timer slack and
build facts; every result name follows <op>/<backend>/<workload>/<config>/N:<n>;
every registered backend appears in every micro operation and runtime
experiment; no benchmark failed except the shim's deliberate one; no task
fired early; sample counts match what was scheduled; the shim's self-tests
report exactly what they were built to report (manual time, BigO, operation
counts, reuse); the CSV's weights add up to each result's sample count.
Speed is never asserted.

usage: bench_check.py TIMERBENCH_BENCH [--keep DIR]
"""
import contextlib
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import bench as tb_bench  # noqa: E402

MICRO_OPS = ["fill", "insert", "cancel", "expire", "timeouts", "periodic",
             "reschedule"]
# The reschedule op's strategies (bench/micro.c); `again` only on the
# backends the context's reschedule_in_place names.
STRATEGIES = ("restart", "again", "lazy")
# Its idle workload: a gap of mean 3 s passes the 10 s timeout with
# probability e^-10/3 per request.
IDLE_TIMEOUTS_PER_KOP = 1000 * math.exp(-10 / 3)
# The structure's work per operation (tb_stats deltas across the timed
# parts), on every micro result; bench/README.md defines them.
WORK_COUNTERS = ["sift_levels_per_op", "visits_per_op", "rounds_per_op",
                 "cascades_per_op", "bucket_offers_per_op", "ticks_per_op",
                 "transfers_per_op", "page_faults_per_kop",
                 "ctx_switches_per_kop", "grown_bytes_per_op",
                 "timed_growth_bytes"]
# The lateness floors, one per wait primitive (bench/runtime.c).
FLOORS = ("floor", "nanosleep")
RUNTIME_OPS = ["lateness", "jitter", "burst", "idle", "producers",
               "interference", "workers"]
# Google Benchmark's own name segments, dropped to get the canonical name.
GB_SEGMENT = re.compile(r"^(manual_time|real_time|process_time|"
                        r"iterations:\d+|repeats:\d+|threads:\d+|"
                        r"min_time:[\d.]+)$")
NAME = re.compile(r"^(?P<op>[a-z]+)/(?P<backend>[a-z0-9_]+)/"
                  r"(?P<workload>[a-z0-9]+)/(?P<config>[^/]+)/N:(?P<n>\d+)$")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def canonical(run_name):
    return "/".join(p for p in run_name.split("/") if not GB_SEGMENT.match(p))


def parse_name(run_name):
    """Splits a canonical result name; None if it breaks the grammar."""
    m = NAME.match(canonical(run_name))
    if not m:
        return None
    d = m.groupdict()
    d["n"] = int(d["n"])
    cfg = {}
    for kv in d["config"].split(","):
        if "=" not in kv:
            return None
        k, v = kv.split("=", 1)
        cfg[k] = v
    d["cfg"] = cfg
    return d


def run(binary, outdir, harness):
    out = os.path.join(outdir, harness + ".json")
    cmd = [binary, "--profile=smoke", "--harness=" + harness,
           "--benchmark_out=" + out, "--benchmark_out_format=json"]
    if harness == "runtime":
        cmd.append("--csv=" + os.path.join(outdir, "samples.csv"))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if not check(proc.returncode == 0, "%s exited %d: %s" %
                 (harness, proc.returncode, proc.stderr[-2000:])):
        return None
    with open(out) as f:
        return json.load(f)


def iteration_runs(doc):
    return [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]


def check_context(doc, harness):
    ctx = doc["context"]
    for key in ("profile", "seed", "timer_slack_ns", "backends", "build_type",
                "pinned_cpu", "cpu_clock_overhead_ns",
                "c_compiler", "google_benchmark", "git_commit",
                "clock_overhead_ns", "workload.uniform"):
        check(key in ctx, "%s: context lacks %s" % (harness, key))
    check(ctx.get("profile") == "smoke", "%s: profile is not smoke" % harness)


def check_errors(doc, harness, allowed=()):
    for b in iteration_runs(doc):
        if b.get("error_occurred"):
            check(any(a in b["name"] for a in allowed),
                  "%s: %s failed: %s" % (harness, b["name"],
                                         b.get("error_message")))


def check_shim(doc):
    check_errors(doc, "shim", allowed=("selftest/error",))
    runs = {canonical(b["run_name"]): b for b in iteration_runs(doc)}
    err = runs.get("selftest/error/none/timing=auto/N:1")
    check(err is not None and err.get("error_occurred") and
          "deliberate" in err.get("error_message", ""),
          "shim: the deliberate setup failure was not reported as an error")
    for k in (1, 8, 64, 512):
        b = runs.get("selftest/manual/none/timing=manual/N:%d" % k)
        if check(b is not None, "shim: selftest/manual N:%d missing" % k):
            check(abs(b["real_time"] - k) < 1e-6 * k,
                  "shim: manual time %g ns, expected %d" % (b["real_time"], k))
            check(b["ops_seen"] == b["iterations"],
                  "shim: manual N:%d saw %g ops in %d iterations" %
                  (k, b["ops_seen"], b["iterations"]))
            check(abs(b["ops_rate"] - 1e9 / k) < 1e-3 * 1e9 / k,
                  "shim: rate counter %g, expected %g" % (b["ops_rate"],
                                                         1e9 / k))
    bigo = [b for b in doc["benchmarks"]
            if b.get("aggregate_name") == "BigO" and "selftest/manual" in
            b["name"]]
    if check(len(bigo) == 1, "shim: no BigO for selftest/manual"):
        check(bigo[0]["big_o"] == "N" and
              abs(bigo[0]["real_coefficient"] - 1.0) < 1e-6,
              "shim: BigO %s %g, expected N 1" % (bigo[0]["big_o"],
                                                  bigo[0]["real_coefficient"]))
    ops = runs.get("selftest/ops/none/timing=auto/N:37")
    if check(ops is not None, "shim: selftest/ops missing"):
        check(ops["ops_seen"] == ops["iterations"] and
              ops["iterations"] % 37 == 0,
              "shim: %g ops in %d iterations (batches of 37)" %
              (ops["ops_seen"], ops["iterations"]))
    reuse = runs.get("selftest/reuse/none/timing=manual/N:37")
    if check(reuse is not None, "shim: selftest/reuse missing"):
        check(reuse["setups"] == 1, "shim: a reused instance was set up %g "
              "times" % reuse["setups"])
    for n in (1, 64, 1024):
        check("shim/empty/none/timing=auto/N:%d" % n in runs,
              "shim: overhead benchmark N:%d missing" % n)


def by_backend(doc, harness):
    """{(op, backend): [parsed names]} over the iteration runs."""
    seen = {}
    for b in iteration_runs(doc):
        p = parse_name(b["run_name"])
        if not check(p is not None, "%s: name breaks the grammar: %s" %
                     (harness, b["run_name"])):
            continue
        if p["backend"] not in FLOORS:
            check("series" in p["cfg"], "%s: no series in %s" %
                  (harness, b["run_name"]))
        b["_p"] = p
        seen.setdefault((p["op"], p["backend"]), []).append(b)
    return seen


def check_micro(doc, backends):
    check_errors(doc, "micro")
    seen = by_backend(doc, "micro")
    for op in MICRO_OPS:
        for be in backends:
            check((op, be) in seen, "micro: %s has no %s results" % (be, op))
    check_reschedule(doc, seen, backends)
    # the interface's floor (issue 39, tb_backend_floor): insert and cancel
    # only, each at every N, a structure that does nothing, so none of the
    # structure's work counters moves and a cancel holds exactly N
    floor_ops = {op for op, be in seen if be == "floor"}
    check(floor_ops == {"insert", "cancel"},
          "micro: the interface floor ran %s, expected insert and cancel" %
          sorted(floor_ops))
    for b in iteration_runs(doc):
        p = b.get("_p")
        if not p or p["backend"] != "floor" or b.get("error_occurred"):
            continue
        check(b["real_time"] > 0 and b.get("pending_per_n") == 1,
              "micro: %s: time %r, holds %r N" % (
                  b["name"], b["real_time"], b.get("pending_per_n")))
        for c in ("sift_levels_per_op", "visits_per_op", "rounds_per_op",
                  "cascades_per_op", "bucket_offers_per_op", "ticks_per_op"):
            check(b.get(c) == 0, "micro: %s: the floor did structure work "
                  "(%s = %r)" % (b["name"], c, b.get(c)))
    families = {canonical(b["run_name"]).rsplit("/N:", 1)[0]
                for b in iteration_runs(doc)}
    # one family per N (each with its own minimum time): every family
    # name has every N of the profile, and Google Benchmark fits none
    ns = {}
    for b in iteration_runs(doc):
        fam, _, n = canonical(b["run_name"]).rpartition("/N:")
        ns.setdefault(fam, set()).add(n)
    for fam in families:
        # the timeouts precision sweep runs at the profile's precision_n
        # only (1000 in smoke): one N, many ticks
        want = {"1000"} if "series=precision" in fam else {"100", "1000"}
        check(ns.get(fam) == want,
              "micro: %s measured at N %s, expected %s" %
              (fam, sorted(ns.get(fam, ())), " and ".join(sorted(want))))
    check(not any(b.get("aggregate_name") == "BigO" for b in doc["benchmarks"]
                  if b["name"].split("/")[0] in MICRO_OPS),
          "micro: a Google Benchmark fit over a one-N family")
    for b in iteration_runs(doc):
        p = b.get("_p")
        if not p or b.get("error_occurred"):
            continue
        check(b["real_time"] > 0, "micro: %s took no time" % b["name"])
        for c in WORK_COUNTERS:
            if check(c in b, "micro: %s lacks the counter %s" %
                     (b["name"], c)):
                check(math.isfinite(b[c]) and
                      (b[c] >= 0 or c == "grown_bytes_per_op"),
                      "micro: %s: %s = %r" % (b["name"], c, b[c]))
        # The machine's state beside every repetition (bench/shim.cc).
        check(b.get("mem_latency_ns", 0) > 0 and
              b.get("slow_spell_waits", -1) >= 0 and
              b.get("slow_spell_redone", -1) >= 0,
              "micro: %s lacks the memory latency it started with" % b["name"])
        # Growth is fill's subject and no one else's: the pool and a heap's
        # array are reserved and warmed up before anything is timed.
        if p["op"] in ("insert", "cancel"):
            check(b.get("timed_growth_bytes") == 0,
                  "micro: %s grew by %s bytes inside its timed parts" %
                  (b["name"], b.get("timed_growth_bytes")))
        if p["op"] == "fill":
            check(b.get("timed_growth_bytes", 0) > 0 and
                  b.get("grown_bytes_per_op", 0) > 0,
                  "micro: %s grew nothing while filling" % b["name"])
        if p["op"] == "expire":
            check(b.get("completed", 0) > 0 and b.get("time_cuts") == 0,
                  "micro: %s completed %s, cut by time %s times" %
                  (b["name"], b.get("completed"), b.get("time_cuts")))
        if p["op"] == "fill":
            check(b["bytes_per_task"] > 0, "micro: %s holds no bytes" %
                  b["name"])
            # the structure's own count against the allocator's, where the
            # allocator can tell (mallinfo2 is 0 under sanitizers)
            if b["malloc_bytes_per_task"] > 0:
                ratio = b["malloc_bytes_per_task"] / b["bytes_per_task"]
                check(0.8 < ratio < 1.5,
                      "micro: %s bytes_held %.1f/task but malloc %.1f/task" %
                      (b["name"], b["bytes_per_task"],
                       b["malloc_bytes_per_task"]))
        if p["op"] == "timeouts":
            check(abs(b["cancelled_per_op"] - 0.95) < 0.03,
                  "micro: %s cancelled %.3f per op" % (b["name"],
                                                       b["cancelled_per_op"]))
            check(abs(b["fired_per_op"] - 0.05) < 0.03,
                  "micro: %s fired %.3f per op" % (b["name"],
                                                   b["fired_per_op"]))
        if p["cfg"].get("series") == "precision":
            check_precision(b, p)
        if p["op"] in ("insert", "cancel"):
            # a lazy backend holds up to N/4 zombies more (bench/micro.c,
            # "Holding N"), N/3 when it cleans them itself (Go's heap)
            check(0.99 <= b["pending_per_n"] <= 1.34,
                  "micro: %s holds %.2f N" % (b["name"], b["pending_per_n"]))
        if p["workload"] == "worst" and p["backend"] in WORST_HEAPS:
            check_worst(b, p)
        if "transferred" in b and p["op"] == "insert":
            check(b["transferred"] > 0.99, "micro: %s left %.2f of its inserts"
                  " in the inbox" % (b["name"], 1 - b["transferred"]))


def check_reschedule(doc, seen, backends):
    """The reschedule op (bench/micro.c): every backend under restart and
    lazy, and under again exactly where tb_reschedule moves a task in place
    (the context's reschedule_in_place, which must name some backend), at
    every N; series h2h on the idle workload only; the structure held at N
    (a lazy backend's restart up to N/4, N/3 for Go's heap, more); about
    e^-10/3 of the requests time out whatever the strategy; only lazy
    re-arms in its callbacks, and it re-arms about as often as a 10 s
    window after a re-arm holds a request."""
    ctx = doc["context"]
    in_place = [b for b in ctx.get("reschedule_in_place", "").split(",") if b]
    check(in_place, "micro: the context names no backend with tb_reschedule")
    for be in backends:
        want = {s for s in STRATEGIES if s != "again" or be in in_place}
        got = {}
        for b in seen.get(("reschedule", be), []):
            p = b["_p"]
            check(p["workload"] == "idle" and p["cfg"].get("series") == "h2h",
                  "micro: %s is not h2h on the idle workload" % b["name"])
            got.setdefault(p["cfg"].get("strategy"), set()).add(p["n"])
        check(set(got) == want, "micro: %s's reschedule strategies are %s, "
              "expected %s" % (be, sorted(map(str, got)), sorted(want)))
        for st, ns in got.items():
            check(ns == {100, 1000}, "micro: reschedule/%s strategy=%s at N "
                  "%s" % (be, st, sorted(ns)))
    for b in iteration_runs(doc):
        p = b.get("_p")
        if not p or p["op"] != "reschedule" or b.get("error_occurred"):
            continue
        name, st = b["name"], p["cfg"].get("strategy")
        for c in ("timeouts_per_kop", "rearms_per_kop", "pending_per_n",
                  "flushes_per_kop", "zombies_per_n"):
            check(c in b and math.isfinite(b[c]) and b[c] >= 0,
                  "micro: %s: %s = %r" % (name, c, b.get(c)))
        if "timeouts_per_kop" not in b or "rearms_per_kop" not in b:
            continue
        if st != "lazy":
            check(b["rearms_per_kop"] == 0,
                  "micro: %s re-armed in a callback under %s" % (name, st))
        # the shares only where the run counted enough requests to expect
        # 30 timeouts: a smoke run at N = 100 counts 96 to 1,260 (timerwheel's
        # lazy counted 16.7 per 1000 out of 120), and under the sanitizers a
        # handful (0 or 166.7 per 1000 out of 6).  A share is counted over
        # the kept timed batches only, a connection's timeouts coming in
        # runs: a factor of 3, which still fails a strategy that never times
        # out or always does
        if b.get("iterations", 0) * IDLE_TIMEOUTS_PER_KOP / 1000 >= 30:
            check(IDLE_TIMEOUTS_PER_KOP / 3 <= b["timeouts_per_kop"]
                  <= 3 * IDLE_TIMEOUTS_PER_KOP,
                  "micro: %s: %.1f timeouts per 1000 requests, expected about "
                  "%.1f" % (name, b["timeouts_per_kop"], IDLE_TIMEOUTS_PER_KOP))
            if st == "lazy":
                check(150 <= b["rearms_per_kop"] <= 600,
                      "micro: %s re-armed %.1f per 1000 requests" %
                      (name, b["rearms_per_kop"]))
        check(0.99 <= b.get("pending_per_n", 0) <= 1.34,
              "micro: %s holds %.2f N" % (name, b.get("pending_per_n", 0)))
        if st != "restart":
            # nothing cancelled: no zombie, exactly N timers
            check(b.get("zombies_per_n") == 0 and
                  b.get("pending_per_n") == 1,
                  "micro: %s holds %s N with %s N zombies" %
                  (name, b.get("pending_per_n"), b.get("zombies_per_n")))
        check(b.get("timed_growth_bytes") == 0,
              "micro: %s grew by %s bytes inside its timed parts" %
              (name, b.get("timed_growth_bytes")))


# The heaps' worst case (bench/bench.h, BH_WORST; DECISIONS D13), by name
# and arity: every insert climbs to the root, so its levels are the depth
# of the slot it starts in, at a size of N to 1.34 N (the zombies a lazy
# heap holds) and a batch; heapqueue's remove-on-cancel of the root sifts
# the last slot to the last level or the one above it.
WORST_HEAPS = {"heapqueue": 2, "timerthread": 2, "quadheap": 4}


def heap_depth(k, arity):
    """Levels from slot k (0-based) of a heap of `arity` to its root."""
    d = 0
    while k > 0:
        k = (k - 1) // arity
        d += 1
    return d


def check_worst(b, p):
    arity, n = WORST_HEAPS[p["backend"]], p["n"]
    lv = b["sift_levels_per_op"]
    batch = max(1, min(1024, n // 8))
    if p["op"] == "insert":
        lo = heap_depth(n, arity)
        hi = heap_depth(int(1.34 * n) + 2 * batch, arity)
        check(lo <= lv <= hi, "micro: %s climbs %.2f levels per insert, "
              "not the height (%d to %d)" % (b["name"], lv, lo, hi))
    elif p["cfg"].get("roc") == "on":
        h = heap_depth(n - 2, arity)  # the last slot once one has left
        check(h - 1 <= lv <= h, "micro: %s sifts %.2f levels per cancel of "
              "the root, not %d or %d" % (b["name"], lv, h - 1, h))
    else:
        check(lv == 0, "micro: %s: a lazy cancel sifted %.2f levels" %
              (b["name"], lv))


def check_precision(b, p):
    """One point of the timeouts precision sweep (bench/micro.c): its
    lateness counters are there, never negative (never early), the p99 at
    most the max; an exact backend (no tick) is never late, as the clock
    only moves to operations and every deadline falls on one; a ticked one
    is late by less than its delay."""
    name = b["name"]
    for c in ("lateness_max_ns", "lateness_p99_ns", "lateness_max_share",
              "lateness_fires", "step_ns", "tick_ns"):
        if not check(c in b and math.isfinite(b[c]) and b[c] >= 0,
                     "micro: %s: %s = %r" % (name, c, b.get(c))):
            return
    check(b["lateness_fires"] > 0, "micro: %s saw no timeout fire" % name)
    check(b["lateness_p99_ns"] <= b["lateness_max_ns"],
          "micro: %s: p99 %g above max %g" % (name, b["lateness_p99_ns"],
                                              b["lateness_max_ns"]))
    if "tick" not in p["cfg"]:
        check(b["lateness_max_ns"] == 0 and b["tick_ns"] == 0,
              "micro: %s, an exact structure, ran a timeout %g ns late" %
              (name, b["lateness_max_ns"]))
    else:
        check(b["lateness_max_share"] < 1,
              "micro: %s ran a timeout later than its delay" % name)


def check_runtime(doc, backends, samples_csv):
    check_errors(doc, "runtime")
    seen = by_backend(doc, "runtime")
    for op in RUNTIME_OPS:
        for be in backends:
            check((op, be) in seen, "runtime: %s has no %s results" % (be, op))
    # one floor per wait primitive: "floor" waits as every backend here
    # does (pthread_cond_timedwait), "nanosleep" in clock_nanosleep; each
    # at both slacks, and each backend names the floor it is held to
    for floor in FLOORS:
        slacks = {b["_p"]["cfg"].get("slack")
                  for b in seen.get(("lateness", floor), [])}
        check(slacks == {"default", "1ns"}, "runtime: the %s floor ran at "
              "slacks %s" % (floor, sorted(s for s in slacks if s)))
    for be in backends:
        check(doc["context"].get("floor_of." + be, "").split(" ")[0] in
              FLOORS,
              "runtime: no floor named for %s" % be)
    slack1 = [b for b in iteration_runs(doc)
              if b.get("_p") and b["_p"]["cfg"].get("slack") == "1ns"]
    check(slack1 and all(b["slack_ns"] == 1 for b in slack1),
          "runtime: the slack=1ns runs did not run with 1 ns of slack")
    weights = {}
    with open(samples_csv) as f:
        rows = csv.DictReader(f)
        check(rows.fieldnames == ["benchmark", "metric", "rep", "seq",
                                  "value_ns", "weight"],
              "runtime: CSV header is %s" % rows.fieldnames)
        for r in rows:
            key = (r["benchmark"], r["metric"], int(r["rep"]))
            weights[key] = weights.get(key, 0) + int(r["weight"])
    for b in iteration_runs(doc):
        p = b.get("_p")
        if not p or b.get("error_occurred"):
            continue
        name = canonical(b["run_name"])
        # no memory canary around a real-time experiment (TBB_NO_CANARY)
        check("mem_latency_ns" not in b and "slow_spell_redone" not in b,
              "runtime: %s took a memory-latency reading" % name)
        if "early" in b:
            check(b["early"] == 0, "runtime: %s fired %d tasks early" %
                  (name, b["early"]))
        op = p["op"]
        if op == "lateness":
            check(b["count"] == 20, "runtime: %s has %d samples" %
                  (name, b["count"]))
        if op == "burst":
            check(b["count"] == p["n"], "runtime: %s ran %d of %d" %
                  (name, b["count"], p["n"]))
        if op == "producers":
            check(b["count"] == p["n"] * int(p["cfg"]["producers"]),
                  "runtime: %s ran %d tasks" % (name, b["count"]))
        if op == "jitter":
            check(b["runs"] >= 2 and b["late_count"] == b["runs"],
                  "runtime: %s recorded %d runs" % (name, b["runs"]))
        if op == "interference":
            check(b["runs"] > 0, "runtime: %s: no 1 ms task ran" % name)
        if op == "idle":
            check(math.isfinite(b["cpu_ns_per_s"]) and b["cpu_ns_per_s"] >= 0,
                  "runtime: %s cpu %s" % (name, b["cpu_ns_per_s"]))
        count = b.get("count", b.get("late_count"))
        if count is not None:
            rep = b.get("repetition_index", 0)
            check(weights.get((name, "lateness", rep)) == count,
                  "runtime: CSV weights %s for %s, count %d" %
                  (weights.get((name, "lateness", rep)), name, count))


def check_profiles(info):
    """The sample-count rule (DECISIONS.md D37): a lateness configuration
    of the full profile holds at least 10^4 samples (its repetitions
    together), enough to back a p99.9; the standard profile's, at least
    5,000, so the p99 every lateness verdict reads has 50 beyond it."""
    profiles = info.get("profiles", {})
    for name, least in (("standard", 5000), ("full", 10000)):
        p = profiles.get(name)
        if check(p is not None, "--info lacks the %s profile" % name):
            total = p["light_samples"] * p["runtime_repetitions"]
            check(total >= least, "profile %s: %d lateness samples per "
                  "configuration (%d x %d), fewer than %d" %
                  (name, total, p["runtime_repetitions"],
                   p["light_samples"], least))
            # what the report's verdicts read stays in both (issue 27 moved
            # only the side series to full): wide insert and expire, the
            # timeouts precision sweep, 5 repetitions for Mann-Whitney
            m = p.get("micro", {})
            check(m.get("wide") is True and m.get("precision_n", 0) > 0 and
                  p["repetitions"] >= 5, "profile %s: micro %s, %d "
                  "repetitions" % (name, m, p["repetitions"]))
    full = profiles.get("full", {}).get("micro", {})
    check(all(full.get(k) is True for k in ("orig", "cover", "burst",
                                            "wide_all")),
          "profile full lacks a micro series: %s" % full)


def load_run_py():
    """bench/run.py's module, tbkit.bench (it runs nothing on import)."""
    return tb_bench


def check_run_py():
    """run.py's stopping rule, its merge of extra repetitions and its
    reading of cyclictest, on hand-made inputs."""
    r = load_run_py()
    check(r.median_se([100.0] * 5) == 0, "run.py: identical repetitions "
          "have not settled")
    # --lateness (issue 27): tb_precision's grammar, checked before any
    # build; a resumed run keeps its own
    check(r.parse_args(["--lateness", "12.5%"]).lateness == "12.5%",
          "run.py: --lateness 12.5% not taken")
    for bad in (["--lateness", "5x"], ["--lateness", "0%"],
                ["--resume", "x", "--lateness", "1ms"]):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                r.parse_args(bad)
            check(False, "run.py: %s accepted" % " ".join(bad))
        except SystemExit as e:
            check(e.code == 2, "run.py: %s exits %s" % (" ".join(bad), e.code))
    # MAD 10 of median 100 over 5: 1.2533 * 1.4826 * 0.1 / sqrt(5) = 8.3 %
    se = r.median_se([80.0, 90.0, 100.0, 110.0, 120.0])
    check(abs(se - 0.0831) < 1e-3 and se > r.SETTLE_SE,
          "run.py: median SE %r, expected 0.0831 (unsettled)" % se)
    check(r.median_se([100.0]) == math.inf, "run.py: one repetition settled")

    def it(name, i, t, c):
        return {"name": name, "run_name": name, "run_type": "iteration",
                "repetitions": 2, "repetition_index": i, "iterations": 1,
                "real_time": t, "cpu_time": t, "time_unit": "ns",
                "visits_per_op": c}

    def agg(name, how, t):
        return {"name": name + "_" + how, "run_name": name,
                "run_type": "aggregate", "aggregate_name": how,
                "repetitions": 2, "iterations": 2, "real_time": t,
                "cpu_time": t, "time_unit": "ns", "visits_per_op": 0}
    doc = {"benchmarks": [it("a", 0, 10.0, 1.0), it("a", 1, 20.0, 3.0),
                          agg("a", "mean", 15.0), agg("a", "median", 15.0),
                          agg("a", "stddev", 7.07), agg("a", "cv", 0.47),
                          it("b", 0, 5.0, 0.0)]}
    extra = {"benchmarks": [it("a", 0, 30.0, 5.0)]}
    r.merge_repetitions(doc, extra)
    runs = doc["benchmarks"]
    its = [b for b in runs if b["run_name"] == "a" and
           b["run_type"] == "iteration"]
    aggs = {b["aggregate_name"]: b for b in runs
            if b["run_type"] == "aggregate"}
    check([b["real_time"] for b in its] == [10.0, 20.0, 30.0] and
          [b["repetition_index"] for b in its] == [0, 1, 2] and
          all(b["repetitions"] == 3 for b in its),
          "run.py: merged repetitions %r" % [(b["real_time"],
                                             b["repetition_index"])
                                            for b in its])
    check(aggs["median"]["real_time"] == 20.0 and
          aggs["mean"]["real_time"] == 20.0 and
          abs(aggs["stddev"]["real_time"] - 10.0) < 1e-9 and
          abs(aggs["cv"]["real_time"] - 0.5) < 1e-9 and
          aggs["median"]["visits_per_op"] == 3.0 and
          aggs["median"]["repetitions"] == 3,
          "run.py: aggregates after the merge %r" % aggs)
    check(runs[-1]["run_name"] == "b" and len(runs) == 8,
          "run.py: the merge touched another instance")
    text = ("# Histogram\n000010 000004\n000020 000005\n000100 000001\n"
            "# Total: 000000010\n# Min Latencies: 00010\n"
            "# Avg Latencies: 00040\n# Max Latencies: 12000\n"
            "# Histogram Overflows: 00001\n")
    ct = r.parse_cyclictest(text)
    check(ct["count"] == 11 and ct["overflows"] == 1 and
          ct["p50"] == 20000 and ct["p90"] == 100000 and
          ct["p99"] == 12000000 and ct["min"] == 10000 and
          not ct["enough_for_p999"],
          "run.py: cyclictest read as %r" % ct)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    keep = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--keep" \
        else None
    info = json.loads(subprocess.check_output([binary, "--info"],
                                              universal_newlines=True))
    backends = info["backends"]
    check(backends, "the registry is empty")
    check_profiles(info)
    check_run_py()
    if keep:
        os.makedirs(keep, exist_ok=True)
        return check_all(binary, backends, keep)
    with tempfile.TemporaryDirectory(prefix="tb-bench-check-") as outdir:
        return check_all(binary, backends, outdir)


def check_all(binary, backends, outdir):
    for harness in ("shim", "micro", "runtime"):  # libs: tests/libs_analysis_test.py
        doc = run(binary, outdir, harness)
        if doc is None:
            continue
        check_context(doc, harness)
        if harness == "shim":
            check_shim(doc)
        elif harness == "micro":
            check_micro(doc, backends)
        else:
            check_runtime(doc, backends, os.path.join(outdir, "samples.csv"))
    for f in failures:
        print("FAIL:", f)
    print("%d problem(s); backends checked: %s" %
          (len(failures), ", ".join(backends)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
