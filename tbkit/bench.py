"""tbkit.bench — bench/run.py: runs a benchmark profile into one self-describing results
directory (Python standard library only).

    bench/run.py [--profile quick|standard|full] [--backends a,b]
                 [--filter REGEX] [--harness shim,micro,runtime]
                 [--out DIR] [--seed N] [--build DIR] [--no-build]
                 [--lateness SPEC]
    bench/run.py --resume DIR [--force] [--build DIR] [--no-build]
    bench/run.py --recover DIR

It builds timerbench-bench in release mode (meson + ninja, in --build,
default build/release), then runs each harness and writes into
results/<UTC timestamp>/ (or --out), whose path is the one line it prints
on stdout (./timerbench report captures it):

    shim.json, micro.json, runtime.json,  Google Benchmark JSON, one per harness
    libs.json                             (libs: the event-loop libraries,
                                          bench/libs.c)
    samples.csv                           raw lateness / period-error samples
    shim.log, micro.log, runtime.log,     console output and stderr
    libs.log
    replay.json, replay.log, traces/      standard and full profiles: the
                                          shipped kernel trace and one trace
                                          per generator model (written into
                                          traces/) replayed on every backend
                                          (bench/replay.py; skipped, with the
                                          reason in machine.json, when a file
                                          is missing)
    purgatory.json                        quick, standard and full profiles:
                                          the purgatory experiment on the C
                                          subjects in real time (issue 41,
                                          tbkit/purgrun.py; machine.json
                                          run.purgatory)
    jvm.json, jvm.log                     standard and full profiles: the
                                          JVM originals (jvm/TimerBench.java,
                                          size standard or full), when the
                                          JDK and Netty are installed
                                          (skipped, with the reason in
                                          machine.json run.jvm, otherwise)
    cyclictest.txt                        rt-tests' cyclictest output, when
                                          installed: an outside reference for
                                          lateness (its percentiles are in
                                          machine.json run.cyclictest)
    machine.json                          machine, build and run facts

Method (bench/README.md, "Method"): the single-threaded harnesses (shim,
micro) run pinned to one core; repetitions are interleaved; a micro
instance whose median has not settled after the profile's repetitions gets
more, up to a time budget (SETTLE below), and its JSON entries are merged.

`--profile counts` runs no harness: it builds timerbench-counts (counts.c)
and runs it under Valgrind's callgrind with its cache simulator for each
backend, op (insert, cancel, expire) and N (10^3, 10^5), insert and
cancel also on the heaps' worst-case workload (`worst`), and writes
counts.json: instructions, D1 and LL misses per operation, deterministic.
It adds counts.json to an existing results directory (--out) without
touching the rest; `./timerbench counts` prints the same table at once.

Progress (which benchmark of how many, elapsed time) goes to stderr.  The
exit status is non-zero only if a harness did not finish; benchmarks that
report an error (e.g. a structure that cannot hold N) are results, listed
in machine.json and on stderr.  bench/README.md describes the files.

Every finished benchmark instance is kept the moment it finishes (the
harness's journal, see tbkit/runstate.py), and the JSON files are rewritten
whole after each harness, so they are valid at any moment.  SIGINT,
SIGTERM and SIGHUP stop the run cleanly: the instance under way is
abandoned, machine.json says where the run stopped and what is missing, and
the exit status is 128 + the signal.  --resume DIR runs only the missing
instances, with the run's own profile, seed, backends and filter, and
refuses a different commit or machine unless --force.  --recover DIR only
rebuilds the files of a run that was killed before it could (SIGKILL).
Bad arguments (unknown backend or an empty --backends, an --out in use, not
empty or a symbolic link to nowhere, a filter that selects nothing) are
refused before anything is built or run, exit 2.

A results file that cannot be written (a full disk: the harness's journal,
a log, a JSON file) stops the run as a signal does, once, with one message:
the harness is stopped, what finished is kept, machine.json says
"interrupted" with the error (when it can still be written), the command
that continues the run is printed, and the exit status is 1.  That
command, like every one printed to be pasted, is shell-quoted.
"""
import argparse
import concurrent.futures
import copy
import datetime
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from tbkit import precision as P
from tbkit import purgjvm as PURGJVM
from tbkit import purgrun as PURG
from tbkit import replayrun as REPLAY
from tbkit import runstate as RS
from tbkit.machine import (COUNTS_CACHES, ROOT, callgrind_by_file, git, machine_facts,
                           parse_callgrind,
                           pin_cpu, valgrind_version)

HARNESSES = ("shim", "micro", "runtime", "libs")
# Harnesses whose timed work runs in one thread: pinned to one core (the
# libraries' loops run in the harness's own thread, lateness and idle
# included).
PINNED = ("shim", "micro", "libs")

# The stopping rule of the micro repetitions.  A median has settled when
# its estimated relative standard error, 1.2533 * 1.4826 * MAD / median /
# sqrt(n) (the normal-theory standard error of a median, sigma estimated
# from the median absolute deviation), is at most SETTLE_SE.  Unsettled
# instances get `reps` more repetitions, interleaved among themselves, in
# up to `rounds` rounds and within `seconds` of extra run time (the worst
# first, as many as the time of a repetition measured in the main pass
# lets fit).
SETTLE_SE = 0.025
SETTLE = {"smoke": {"rounds": 0, "reps": 0, "seconds": 0},
          "quick": {"rounds": 1, "reps": 3, "seconds": 45},
          "standard": {"rounds": 2, "reps": 5, "seconds": 60},
          "full": {"rounds": 3, "reps": 10, "seconds": 1800}}
# cyclictest loops of 1 ms per profile (one thread, pinned, SCHED_OTHER).
CYCLICTEST_LOOPS = {"smoke": 200, "quick": 2000, "standard": 10000,
                    "full": 100000}
CYCLICTEST_HIST_US = 10000

# The JVM step (issue 32, jvm/README.md): the harness's size per profile,
# its jar in the build directory, Debian's Netty, and the fixed heap the
# harness is meant to run with (no repetition pays for growing it).
JVM_SIZE = {"standard": "standard", "full": "full"}
JVM_JAR = os.path.join("jvm", "timerbench-jvm.jar")
NETTY_JAR = "/usr/share/java/netty-common.jar"
JVM_HEAP = ["-Xms2g", "-Xmx2g"]
# Progress: the harness prints a line per repetition of each cell; one in
# this many seconds is shown (all are in jvm.log), the others' lines always.
JVM_PROGRESS_SECONDS = 5.0


def build(build_dir, jobs, stop=None):
    """Configures (once) and builds the benchmark binary in release mode,
    holding the build directory's lock (runstate.build_lock: another run
    building there is waited for)."""
    with RS.build_lock(build_dir, stop):
        return _build(build_dir, jobs)


def _build(build_dir, jobs):
    # stdout is reserved for the results path: tools talk on stderr
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.check_call(["meson", "setup", build_dir, ROOT,
                               "--buildtype=release", "-Dbench=enabled"],
                              stdout=sys.stderr)
    else:
        subprocess.check_call(["meson", "configure", build_dir,
                               "--buildtype=release", "-Dbench=enabled"],
                              stdout=sys.stderr)
    cmd = ["ninja", "-C", build_dir, "bench/timerbench-bench"]
    if jobs:
        cmd[1:1] = ["-j", str(jobs)]
    subprocess.check_call(cmd, stdout=sys.stderr)
    return os.path.join(build_dir, "bench", "timerbench-bench")


def base_args(opts, harness):
    args = ["--profile=" + opts.profile, "--harness=" + harness]
    if opts.backends:
        args.append("--backends=" + opts.backends)
    if opts.seed is not None:
        args.append("--seed=" + str(opts.seed))
    if opts.filter:
        args.append("--benchmark_filter=" + opts.filter)
    return args


PROGRESS = re.compile(r"^tbb: \[(\d+)\] (.*), elapsed ([\d.]+) s$")
# What the harness prints, once per instance, when its journal cannot be
# written (bench/shim.cc, journal_append's perror).
JOURNAL_ERROR = re.compile(r"^timerbench: journal: (.*)$")


class WriteFailure(Exception):
    """The run's results could not be written (a full disk); `started` is
    the harness's instance under way then, as run_harness returns it."""

    def __init__(self, what, started=None):
        Exception.__init__(self, what)
        self.started = started


def run_harness(binary, opts, harness, outdir, total, t_start, session=1,
                stop=None, lock=None, out=None, extra=()):
    """Runs one harness; returns (exit status, seconds, the last instance
    it started as (index, name) or None).  Its results go to its journal
    (tbkit.runstate) as each instance finishes; with `out` (the stopping
    rule's extra repetitions) to that file as Google Benchmark writes it."""
    args = base_args(opts, harness) + ["--progress"] + list(extra)
    if out:
        args += ["--benchmark_out=" + os.path.join(outdir, out),
                 "--benchmark_out_format=json"]
    else:
        args.append("--journal=" + RS.journal_path(outdir, harness, session))
        RS.trim_torn_line(RS.journal_path(outdir, harness, session))
    if harness in PINNED and opts.cpu is not None:
        args.append("--cpu=%d" % opts.cpu)
    if harness == "runtime":
        args.append("--csv=" + RS.journal_path(outdir, "samples", session))
    t0 = time.monotonic()
    started = None
    failed = []     # the first write error: the harness is stopped at once
    proc = None

    def fail(what):
        if not failed:
            failed.append(what)
            if proc is not None and proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGINT)
                except OSError:
                    pass
    try:
        with open(os.path.join(outdir, harness + ".log"),
                  "w" if session == 1 and not out else "a") as log:
            if session > 1 and not out:
                log.write("\n=== session %d (resumed %s) ===\n" % (session,
                                                                  RS.now_utc()))
                log.flush()
            proc = subprocess.Popen([binary] + args, stdout=log,
                                    stderr=subprocess.PIPE,
                                    universal_newlines=True, bufsize=1,
                                    pass_fds=(lock.fileno(),) if lock else ())
            if stop is not None:
                stop.child = proc
                if stop.signum is not None:
                    stop.handle(stop.signum, None)
            for line in proc.stderr:
                m = PROGRESS.match(line.rstrip("\n"))
                j = JOURNAL_ERROR.match(line.rstrip("\n"))
                if m:
                    started = (int(m.group(1)), m.group(2))
                    elapsed = time.monotonic() - t_start
                    RS.say("[%s %s/%d] %6.0f s  %s" %
                           (harness, m.group(1), total, elapsed, m.group(2)))
                elif j:
                    fail("%s: %s" % (RS.journal_path(outdir, harness, session),
                                     j.group(1)))
                elif not failed:
                    try:
                        log.write(line)
                    except OSError as e:
                        fail("%s: %s" % (log.name, e.strerror or e))
                    RS.say(line.rstrip("\n"))
            status = proc.wait()
            if stop is not None:
                stop.child = None
    except OSError as e:
        # the log could not be opened or flushed
        fail("%s: %s" % (e.filename or harness + ".log", e.strerror or e))
        if proc is not None:
            proc.wait()
        if stop is not None:
            stop.child = None
    if failed:
        raise WriteFailure(failed[0], started)
    return status, time.monotonic() - t0, started


# ---- the stopping rule ---------------------------------------------------

# Fields of a Google Benchmark entry that are not counters.
NOT_COUNTERS = {"name", "family_index", "per_family_instance_index",
                "run_name", "run_type", "repetitions", "repetition_index",
                "threads", "iterations", "real_time", "cpu_time",
                "time_unit", "aggregate_name", "aggregate_unit",
                "error_occurred", "error_message", "label", "big_o",
                "real_coefficient", "cpu_coefficient", "rms"}
AGGREGATES = ("mean", "median", "stddev", "cv")


def median_se(times):
    """Estimated relative standard error of the median of `times`."""
    if len(times) < 2:
        return math.inf
    med = statistics.median(times)
    if med <= 0:
        return math.inf
    mad = statistics.median(abs(t - med) for t in times)
    return 1.2533 * 1.4826 * mad / med / math.sqrt(len(times))


def instances(doc):
    """{run_name: [iteration entries]} of the instances that ran cleanly."""
    out = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") == "iteration":
            out.setdefault(b["run_name"], []).append(b)
    return {k: v for k, v in out.items()
            if not any(b.get("error_occurred") for b in v)}


def aggregate(values, how):
    vals = [v for v in values if isinstance(v, (int, float))
            and math.isfinite(v)]
    if not vals:
        return float("nan")
    if how == "mean":
        return statistics.fmean(vals)
    if how == "median":
        return statistics.median(vals)
    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
    if how == "stddev":
        return sd
    mean = statistics.fmean(vals)
    return sd / mean if mean else float("nan")


def merge_repetitions(doc, extra):
    """Adds the iteration entries of `extra` to the same instances of `doc`
    as further repetitions, and recomputes those instances' aggregates as
    Google Benchmark does (stddev over n - 1, cv = stddev / mean)."""
    more = instances(extra)
    runs = doc["benchmarks"]
    for name, new in more.items():
        old = [b for b in runs if b.get("run_name") == name and
               b.get("run_type") == "iteration"]
        if not old:
            continue
        last = max(i for i, b in enumerate(runs) if b is old[-1])
        for k, b in enumerate(new):
            b["repetition_index"] = len(old) + k
        runs[last + 1:last + 1] = new
        every = old + new
        for b in every:
            b["repetitions"] = len(every)
        fields = ["real_time", "cpu_time"] + sorted(
            {k for b in every for k in b if k not in NOT_COUNTERS})
        for a in runs:
            if (a.get("run_name") == name and a.get("run_type") ==
                    "aggregate" and a.get("aggregate_name") in AGGREGATES):
                a["repetitions"] = len(every)
                a["iterations"] = len(every)
                for f in fields:
                    a[f] = aggregate([b.get(f) for b in every],
                                     a["aggregate_name"])


def settle(binary, opts, outdir, t_start, main_seconds, stop=None,
           lock=None):
    """Runs more repetitions of the micro instances whose median has not
    settled (SETTLE_SE), merging them into micro.json.  Returns the facts
    for machine.json."""
    rule = SETTLE[opts.profile]
    path = os.path.join(outdir, "micro.json")
    facts = {"rule": "relative standard error of the median, 1.2533 * "
                     "1.4826 * MAD / median / sqrt(n), at most %g; else %d "
                     "more repetitions, up to %d rounds within %d s" %
                     (SETTLE_SE, rule["reps"], rule["rounds"],
                      rule["seconds"]),
             "rounds": []}
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return facts
    inst = instances(doc)
    reps = sum(len(v) for v in inst.values())
    per_rep = main_seconds / reps if reps else 0.0
    spent = 0.0
    for rnd in range(rule["rounds"]):
        se = {k: median_se([b["real_time"] for b in v])
              for k, v in inst.items()}
        unsettled = sorted((k for k in se if se[k] > SETTLE_SE),
                           key=lambda k: -se[k])
        if not unsettled:
            break
        fit = int((rule["seconds"] - spent) / (per_rep * rule["reps"])) \
            if per_rep > 0 else len(unsettled)
        chosen = unsettled[:max(0, fit)]
        if not chosen:
            break
        regex = "^(%s)$" % "|".join(re.sub(r"([.\[\](){}*+?|^$\\])",
                                           r"\\\1", k) for k in chosen)
        out = "micro.settle%d.json" % (rnd + 1)
        sys.stderr.write("timerbench: %d of %d micro instances not settled; "
                         "%d more repetitions of %d of them\n" %
                         (len(unsettled), len(inst), rule["reps"], len(chosen)))
        if stop is not None and stop.signum:
            break
        status, secs, _ = run_harness(
            binary, opts, "micro", outdir, len(chosen), t_start, stop=stop,
            lock=lock, out=out,
            extra=["--benchmark_filter=" + regex,
                   "--benchmark_repetitions=%d" % rule["reps"],
                   "--benchmark_enable_random_interleaving=true"])
        spent += secs
        try:
            with open(os.path.join(outdir, out)) as f:
                extra = json.load(f)
        except (OSError, ValueError):
            facts["rounds"].append({"instances": len(chosen),
                                    "seconds": secs, "exit": status,
                                    "merged": False})
            break
        merge_repetitions(doc, extra)
        os.remove(os.path.join(outdir, out))
        inst = instances(doc)
        facts["rounds"].append({"unsettled": len(unsettled),
                                "instances": len(chosen),
                                "seconds": secs, "exit": status,
                                "merged": True})
    se = {k: median_se([b["real_time"] for b in v]) for k, v in inst.items()}
    facts["unsettled_after"] = sorted(k for k in se if se[k] > SETTLE_SE)
    facts["instances"] = len(inst)
    facts["seconds"] = spent
    if facts["rounds"]:
        RS.write_json(path, doc)   # whole or not at all, as every results file
    return facts


# ---- cyclictest ---------------------------------------------------------

def cyclictest(opts, outdir):
    """rt-tests' cyclictest as an outside reference for the lateness floors:
    one thread, pinned, SCHED_OTHER (as the backends' threads), 1 ms
    interval, without tuning the machine (--default-system).  Writes
    cyclictest.txt (its output); returns its percentiles in ns (from its
    histogram) for machine.json, or a reason.  Not a .json of its own: the
    report reads every .json of the directory as Google Benchmark output."""
    exe = shutil.which("cyclictest")
    if not exe:
        return {"ran": False, "why": "cyclictest not installed (rt-tests)"}
    loops = CYCLICTEST_LOOPS[opts.profile]
    cmd = [exe, "--default-system", "-m", "-q", "-t", "1", "-i", "1000",
           "-l", str(loops), "-h", str(CYCLICTEST_HIST_US)]
    if opts.cpu is not None:
        cmd += ["-a", str(opts.cpu)]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True,
                              timeout=loops / 1000.0 * 3 + 30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"ran": False, "why": str(e)}
    with open(os.path.join(outdir, "cyclictest.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n" + proc.stdout)
    res = {"ran": proc.returncode == 0, "command": cmd,
           "exit": proc.returncode, "interval_us": 1000,
           "histogram_limit_us": CYCLICTEST_HIST_US}
    res.update(parse_cyclictest(proc.stdout))
    return res


def parse_cyclictest(text):
    """count, overflows, min, mean, max and nearest-rank p50 ... p999 (ns)
    from cyclictest -q -h output; a rank that falls among the histogram's
    overflows is given cyclictest's maximum."""
    hist, summary = [], {}
    for line in text.splitlines():
        m = re.match(r"^(\d+)\s+(\d+)$", line)
        if m:
            hist.append((int(m.group(1)), int(m.group(2))))
            continue
        m = re.match(r"^# (Total|Min Latencies|Avg Latencies|Max Latencies|"
                     r"Histogram Overflows):\s+(\d+)", line)
        if m:
            summary[m.group(1)] = int(m.group(2))
    overflow = summary.get("Histogram Overflows", 0)
    count = sum(c for _, c in hist) + overflow
    res = {"count": count, "overflows": overflow}
    for key, name in (("Min Latencies", "min"), ("Avg Latencies", "mean"),
                      ("Max Latencies", "max")):
        if key in summary:
            res[name] = summary[key] * 1000
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99),
                    ("p999", 0.999)):
        rank = max(1, math.ceil(q * count)) if count else 0
        seen, val = 0, None
        for us, c in hist:
            seen += c
            if seen >= rank:
                val = us * 1000
                break
        # a rank among the overflows: at least the histogram's limit
        res[name] = val if val is not None or not count else \
            res.get("max", CYCLICTEST_HIST_US * 1000)
    res["enough_for_p999"] = count >= 10000
    return res


def summarize(path):
    """(results, errors) in one harness's JSON."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return 0, ["%s: missing or unreadable" % os.path.basename(path)]
    runs = [b for b in doc.get("benchmarks", [])
            if b.get("run_type") == "iteration"]
    errors = ["%s: %s" % (b["name"], b.get("error_message"))
              for b in runs if b.get("error_occurred")]
    return len(runs), errors


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Run a timerbench benchmark profile into a results "
                    "directory.")
    ap.add_argument("--profile", default=os.environ.get("TB_BENCH_PROFILE",
                                                        "standard"),
                    choices=["smoke", "quick", "standard", "full",
                             "counts"])
    ap.add_argument("--backends", help="comma-separated backend names")
    ap.add_argument("--filter", help="Google Benchmark filter regex")
    ap.add_argument("--harness", default=",".join(HARNESSES),
                    help="comma-separated: shim, micro, runtime")
    ap.add_argument("--out", help="results directory (default "
                    "results/<UTC timestamp>)")
    ap.add_argument("--seed", type=lambda s: int(s, 0),
                    default=os.environ.get("TB_BENCH_SEED"))
    ap.add_argument("--build", "--build-dir", dest="build_dir",
                    default=os.path.join(ROOT, "build", "release"),
                    help="meson build directory, configured here in release "
                    "mode if new (default build/release)")
    ap.add_argument("--no-build", action="store_true",
                    help="use the binary already in --build-dir")
    ap.add_argument("--jobs", type=int, help="ninja -j")
    ap.add_argument("--resume", metavar="DIR",
                    help="continue an interrupted run: run only its missing "
                    "instances, with its profile, seed, backends and filter")
    ap.add_argument("--recover", metavar="DIR",
                    help="only rebuild the files of a run killed before it "
                    "could (from its journals)")
    ap.add_argument("--force", action="store_true",
                    help="resume even if the commit or the machine differs")
    ap.add_argument("--check", action="store_true",
                    help="only check the arguments (and --resume's "
                    "directory) as a run would, before building; exit 2 "
                    "with the reason if one is bad")
    ap.add_argument("--resume-command", default="bench/run.py --resume",
                    help="the command the messages tell the user to continue "
                    "with (the results directory is appended)")
    ap.add_argument("--cpu", type=int, default=pin_cpu(),
                    help="core for the single-threaded harnesses (default "
                    "the last usable one)")
    ap.add_argument("--no-pin", dest="cpu", action="store_const", const=None,
                    help="do not pin")
    ap.add_argument("--no-settle", action="store_true",
                    help="no extra repetitions for unsettled medians")
    ap.add_argument("--no-replay", action="store_true",
                    help="standard and full profiles: do not replay the "
                    "kernel trace and the generators' traces")
    ap.add_argument("--no-purgatory", action="store_true",
                    help="quick, standard and full profiles: do not run the "
                    "purgatory experiment (tbkit/purgrun.py)")
    ap.add_argument("--no-jvm", action="store_true",
                    help="standard and full profiles: do not measure the JVM "
                    "originals (jvm/)")
    ap.add_argument("--lateness", metavar="SPEC",
                    help="the replay step's lateness budget for every timer, "
                    "over the traces' own (issue 27): %s" % P.ACCEPTED.replace("%", "%%"))
    opts = ap.parse_args(P.glue_values(sys.argv[1:] if argv is None else argv))
    if opts.lateness is not None:
        try:
            P.parse_spec(opts.lateness)
        except ValueError as e:
            ap.error("--lateness: %s" % e)
    if isinstance(opts.seed, str):
        opts.seed = int(opts.seed, 0)
    opts.harnesses = [h for h in opts.harness.split(",") if h]
    for h in opts.harnesses:
        if h not in HARNESSES:
            ap.error("unknown harness %r (shim, micro, runtime)" % h)
    if opts.resume and opts.recover:
        ap.error("--resume and --recover exclude each other")
    if opts.resume or opts.recover:
        given = [a.split("=")[0] for a in (sys.argv[1:] if argv is None else argv)
                 if a.split("=")[0] in ("--profile", "--backends", "--filter",
                                        "--harness", "--out", "--seed",
                                        "--lateness")]
        if given:
            ap.error("%s: a resumed run keeps its own profile, seed, backends, "
                     "filter, harnesses and directory" % ", ".join(given))
    return opts


def binary_path(opts):
    return os.path.join(opts.build_dir, "bench", "timerbench-bench")


def plan(binary, opts, built=True):
    """{harness: [instance names]} the run would measure; refuses a
    selection that is empty."""
    expected = {h: RS.list_instances(binary, base_args(opts, h))
                for h in opts.harnesses}
    if not any(expected.values()):
        raise RS.RunError(
            "the filter %r selects no benchmark of %s in the %s profile%s; "
            "--filter takes a Google Benchmark regex over names "
            "like fill/heapqueue/uniform/series=h2h/N:100%s" % (
                opts.filter, ", ".join(opts.harnesses), opts.profile,
                " with backends " + opts.backends if opts.backends else "",
                " (checked with the existing build)" if not built else ""))
    return expected


def binary_info(binary):
    return json.loads(subprocess.check_output([binary, "--info"],
                                              universal_newlines=True))


def start_fresh(opts, stop):
    """Checks the request, builds, and writes the new directory's
    machine.json; returns (binary, outdir, lock, facts)."""
    RS.check_backends(opts.backends, ROOT)
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = opts.out or os.path.join(
        ROOT, "results", started.strftime("%Y%m%d-%H%M%S"))
    RS.check_new_out(outdir)
    binary = binary_path(opts)
    if os.path.exists(binary) and (opts.filter or opts.backends):
        plan(binary, opts, False)  # a bad filter is refused before the build
    elif opts.no_build and not os.path.exists(binary):
        raise RS.RunError("--no-build: there is no %s" % binary)
    if not opts.no_build:
        binary = build(opts.build_dir, opts.jobs, stop)
    if stop.signum:
        raise RS.RunError("interrupted by %s during the build; nothing was "
                          "run or written" % stop.name)
    expected = plan(binary, opts)
    info = binary_info(binary)
    os.makedirs(outdir, exist_ok=True)
    lock = RS.acquire_lock(outdir)
    RS.check_new_out(outdir, held=True)  # nobody filled it meanwhile
    src = RS.source_state(ROOT)
    facts = {
        "format_version": RS.FORMAT_VERSION,
        "machine": machine_facts(),
        "build": info,
        "git": {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain")),
                "diff_sha1": src["diff_sha1"]},
        "run": {
            "profile": opts.profile,
            "seed": opts.seed,
            "seed_note": "null means the binary's default; the JSON "
                         "context records the seed used",
            "backends": opts.backends.split(",") if opts.backends
            else info["backends"],
            "backends_arg": opts.backends,
            "filter": opts.filter,
            "lateness": opts.lateness,
            "harnesses": opts.harnesses,
            "timer_slack_ns": info.get("timer_slack_ns"),
            "pinned_cpu": {h: (opts.cpu if h in PINNED else None)
                           for h in opts.harnesses},
            "interleaved": True,
            "started_utc": started.isoformat(),
            "command": sys.argv,
            "status": "running",
            "sessions": [],
        },
        "instances": {"expected": expected,
                      "missing": {h: v for h, v in expected.items() if v}},
    }
    return binary, outdir, lock, facts


def identity_differences(outdir, facts, force):
    """What differs between the run's source, build and machine and this
    one's; raises RunError unless `force`."""
    src = RS.source_state(ROOT)
    diffs = ["machine " + d for d in RS.machine_differences(
        facts.get("machine", {}), machine_facts())]
    if src["commit"] != facts.get("git", {}).get("commit"):
        diffs.append("commit: %s, now %s" % (facts.get("git", {}).get("commit"),
                                             src["commit"]))
    elif src["diff_sha1"] != facts.get("git", {}).get("diff_sha1"):
        diffs.append("uncommitted changes differ from the run's")
    if diffs and not force:
        raise RS.RunError("%s was measured on another build or machine; "
                          "results from both would be mixed:\n  %s\n"
                          "add --force to continue it anyway" % (
                              outdir, "\n  ".join(diffs)))
    return diffs


def start_resume(opts, stop):
    """Checks that DIR can be continued here, restores the run's options
    into opts and builds; returns (binary, outdir, lock, facts), or None
    when nothing is missing."""
    outdir = opts.resume
    facts = RS.load_machine(outdir)
    holder = RS.lock_holder(outdir)
    if holder is not None:
        raise RS.RunError("%s is in use by another run (pid %s on %s)" % (
            outdir, holder.get("pid", "?"), holder.get("host", "?")))
    run = facts["run"]
    if run.get("status") == "complete":
        return None
    opts.profile = run.get("profile", opts.profile)
    opts.seed = run.get("seed")
    opts.backends = run.get("backends_arg")
    opts.filter = run.get("filter")
    opts.lateness = run.get("lateness")
    opts.harnesses = run.get("harnesses") or list(HARNESSES)
    diffs = identity_differences(outdir, facts, opts.force)
    lock = RS.acquire_lock(outdir)
    RS.commit(outdir, facts)     # what a killed run.py could not commit
    binary = binary_path(opts)
    if not opts.no_build:
        binary = build(opts.build_dir, opts.jobs, stop)
    if stop.signum:
        raise RS.RunError("interrupted by %s during the build; %s is as it "
                          "was" % (stop.name, outdir))
    info = binary_info(binary)
    if info.get("git_commit") != facts.get("build", {}).get("git_commit") \
            and not opts.force:
        raise RS.RunError("%s was measured by a binary of commit %s; %s is of "
                          "%s (add --force to continue anyway)" % (
                              outdir, facts.get("build", {}).get("git_commit"),
                              binary, info.get("git_commit")))
    now = plan(binary, opts)
    if now != facts["instances"]["expected"] and not opts.force:
        raise RS.RunError("this binary lists other benchmark instances than "
                          "the run in %s did (add --force to run the missing "
                          "ones that it has)" % outdir)
    if diffs:
        RS.say("timerbench: continuing despite: " + "; ".join(diffs))
    return binary, outdir, lock, facts


def check_only(opts):
    """--check: what start_fresh / start_resume refuse before a build, with
    nothing built, run or written."""
    if opts.resume or opts.recover:
        d = opts.resume or opts.recover
        facts = RS.load_machine(d)
        holder = RS.lock_holder(d)
        if holder is not None:
            raise RS.RunError("%s is in use by another run (pid %s on %s)" % (
                d, holder.get("pid", "?"), holder.get("host", "?")))
        if opts.resume and facts["run"].get("status") != "complete":
            identity_differences(d, facts, opts.force)
        return 0
    RS.check_backends(opts.backends, ROOT)
    if opts.out:
        RS.check_new_out(opts.out)
    if os.path.exists(binary_path(opts)) and (opts.filter or opts.backends) \
            and opts.profile != "counts":
        plan(binary_path(opts), opts, False)
    return 0


def where(stopped):
    h, started, total, reps = stopped
    if not started:
        return "before %s's first instance" % h
    if reps > 1:
        # interleaved: progress counts one step per repetition
        return "in %s, step %d of %d (repetitions interleaved: %s)" % (
            h, started[0], total, started[1])
    return "in %s, instance %d of %d (%s)" % (h, started[0], total, started[1])


def repetitions(facts, opts, harness):
    """Repetitions per instance, as the binary's profile sets them."""
    prof = facts.get("build", {}).get("profiles", {}).get(opts.profile, {})
    if harness == "runtime":
        return max(1, prof.get("runtime_repetitions", 1))
    return max(1, prof.get("repetitions", 1))


def run_sessions(binary, opts, outdir, lock, facts, stop):
    """Runs every missing instance, commits after each harness and when
    stopped, and writes machine.json; returns the exit status.  A result
    that cannot be written stops the run (write_failed)."""
    run = facts["run"]
    session = len(run["sessions"]) + 1
    t_session = time.monotonic()
    entry = {"session": session, "started_utc": RS.now_utc(),
             "pid": os.getpid(), "command": sys.argv, "ran": {}}
    run["sessions"].append(entry)
    at = {}   # the harness under way: name, steps, repetitions
    try:
        return run_missing(binary, opts, outdir, lock, facts, stop, entry,
                           t_session, at)
    except (OSError, WriteFailure) as e:
        if isinstance(e, OSError):
            what = "%s: %s" % (e.filename, e.strerror) if e.filename else str(e)
        else:
            what = str(e)
        stopped = (at["h"], getattr(e, "started", None), at["total"],
                   at["reps"]) if at else None
        return write_failed(opts, outdir, lock, facts, stop, stopped, entry,
                            t_session, what)


def run_missing(binary, opts, outdir, lock, facts, stop, entry, t_session, at):
    """run_sessions' work; `at` is kept up to date with the harness under
    way, for the message when a write fails."""
    run = facts["run"]
    session = entry["session"]
    run["status"] = "running"
    os.makedirs(os.path.join(outdir, RS.JOURNAL_DIR), exist_ok=True)
    RS.write_json(os.path.join(outdir, "machine.json"), facts)
    missing = facts["instances"].get("missing", {})
    expected = facts["instances"]["expected"]
    missing_by_harness = {h: missing.get(h, []) for h in run["harnesses"] if missing.get(h)}
    n_all = sum(len(v) for v in expected.values())
    RS.say("timerbench: profile %s, %s instances%s, into %s" % (
        opts.profile, " + ".join("%d %s" % (len(v), h) for h, v in missing_by_harness.items()),
        " (the missing ones of %d; session %d)" % (n_all, session)
        if session > 1 else "", outdir))
    seconds = run.setdefault("seconds", {})
    status = run.setdefault("exit_status", {})
    stopped = None
    for h, names in missing_by_harness.items():
        if stop.signum:
            break
        # A first session selects with the run's own filter; a resumed one
        # names exactly the instances it still needs.
        filters = [None] if session == 1 else RS.exact_filters(names)
        for flt in filters:
            o = opts
            if flt is not None:
                o = copy.copy(opts)
                o.filter = flt
            reps = repetitions(facts, opts, h)
            at.update(h=h, total=len(names) * reps, reps=reps)
            st, secs, started = run_harness(binary, o, h, outdir,
                                            len(names) * reps, t_session,
                                            session, stop, lock)
            seconds[h] = seconds.get(h, 0.0) + secs
            status[h] = st
            if stop.signum or st != 0:
                stopped = (h, started, len(names) * reps, reps)
                break
        at.clear()
        left = RS.commit(outdir, facts)
        entry["ran"][h] = len(names) - len(left.get(h, []))
        # The stopping rule's extra repetitions go into micro.json once all
        # its instances are there (the file is then sealed: later commits
        # keep the merge); cyclictest once the runtime experiments are done.
        if not stop.signum and not left.get(h):
            if h == "micro" and not opts.no_settle:
                run["settle"] = settle(binary, opts, outdir, t_session,
                                       seconds[h], stop, lock)
                seconds["micro_settle"] = run["settle"]["seconds"]
            if h == "runtime":
                t0 = time.monotonic()
                run["cyclictest"] = cyclictest(opts, outdir)
                seconds["cyclictest"] = time.monotonic() - t0
        n, errs = summarize(os.path.join(outdir, h + ".json"))
        RS.say("timerbench: %s: %d of %d instances done, %d results, %d "
               "errors, %s" % (h, len(expected[h]) - len(left[h]),
                               len(expected[h]), n, len(errs),
                               "exit %d" % status[h] if status[h] >= 0 else
                               "stopped by " + signal.Signals(-status[h]).name))
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
        # A harness that failed leaves its missing instances to a resume;
        # the others still run.  A signal stops everything.
        if stop.signum:
            break
    # The purgatory step (issue 41; quick, standard and full profiles):
    # every C subject played in real time up the profile's grid (within 90 s
    # at standard), after the libs harness; a resumed run does it again
    # unless it completed.  --backends narrows the backends (floor and
    # libraries stay).
    if not stop.signum and not opts.filter and not opts.no_purgatory \
            and (run.get("purgatory") or {}).get("status") != "complete" \
            and opts.profile in PURG.PROFILE_STEP:
        run["purgatory"] = PURG.purgatory_into(
            opts.profile, opts.build_dir, outdir, opts.backends, opts.jobs,
            build=not opts.no_build, seed=opts.seed, stop=stop)
        seconds["purgatory"] = run["purgatory"]["seconds"]
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
    # The replay step (standard and full profiles): the shipped kernel
    # trace and one trace per generator model on every backend, a few
    # seconds; a resumed run does it once.
    if not stop.signum and not opts.filter and not opts.no_replay \
            and (run.get("replay") or {}).get("status") != "complete" \
            and REPLAY.PROFILE_REPLAY.get(opts.profile):
        # --lateness goes on to the replay (None: the traces' own budgets)
        run["replay"] = REPLAY.replay_into(opts.profile, opts.build_dir, outdir,
                                           opts.backends, opts.jobs,
                                           build=not opts.no_build,
                                           lateness=opts.lateness)
        seconds["replay"] = run["replay"]["seconds"]
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
    # The JVM step (standard and full profiles): the originals on the JVM,
    # about a minute at standard; a resumed run does it once it is complete,
    # and again when it was skipped or failed (a JDK installed since).
    if not stop.signum and not opts.filter and not opts.no_jvm \
            and (run.get("jvm") or {}).get("status") != "complete" \
            and JVM_SIZE.get(opts.profile):
        run["jvm"] = jvm_into(opts.profile, opts.build_dir, outdir, opts.jobs,
                              build=not opts.no_build, seed=opts.seed)
        seconds["jvm"] = run["jvm"]["seconds"]
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
    # The purgatory experiment on the JVM's timers (issue 41; standard and
    # full): the C step's grid, swept inside one JVM (tbkit/purgjvm.py).
    if not stop.signum and not opts.filter and not opts.no_jvm \
            and not opts.no_purgatory \
            and (run.get("purgatory_jvm") or {}).get("status") != "complete" \
            and JVM_SIZE.get(opts.profile):
        g = PURG.GRIDS[opts.profile]
        run["purgatory_jvm"] = PURGJVM.jvm_purgatory(
            opts.build_dir, outdir, g["rates"], g["seconds"], g["repetitions"],
            "first" if g["stop_after"] == 1 else "two",
            1 if opts.seed is None else opts.seed, profile=opts.profile,
            confirm=g.get("confirm", 0), build=not opts.no_build)
        seconds["purgatory_jvm"] = run["purgatory_jvm"]["seconds"]
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
    RS.commit(outdir, facts)
    return finish(opts, outdir, lock, facts, stop, stopped, entry, t_session)


def jvm_missing():
    """Why the JVM step cannot run (None when it can): java, javac or
    Debian's Netty missing."""
    gone = [what for what, ok in (
        ("java and javac (Debian's default-jdk-headless)",
         shutil.which("java") and shutil.which("javac")),
        ("%s (Debian's libnetty-java)" % NETTY_JAR, os.path.isfile(NETTY_JAR)))
        if not ok]
    if gone:
        return "%s not installed" % " and ".join(gone)
    return None


def jvm_into(profile, build_dir, outdir, jobs=None, build=True, seed=None):
    """bench/run.py's JVM step: builds the harness's jar in build_dir and
    runs it at the profile's size into outdir/jvm.json (written whole:
    through a temporary name), its progress on stderr (one line in
    JVM_PROGRESS_SECONDS) and in full into outdir/jvm.log; returns the
    facts for machine.json's run.jvm: {"size", "status": "complete",
    "skipped", "failed" or "stopped", "why" (not complete), "seconds",
    "harness_seconds" (the harness's own clock)}."""
    size = JVM_SIZE.get(profile)
    t0 = time.monotonic()
    facts = {"size": size}

    def done(status, why=None):
        facts["status"] = status
        if why:
            facts["why"] = why
            RS.say("timerbench: jvm: %s: %s" % (status, why))
        facts["seconds"] = time.monotonic() - t0
        return facts
    why = jvm_missing()
    if why:
        return done("skipped", why)
    jar = os.path.join(build_dir, JVM_JAR)
    if build:
        cmd = ["ninja", "-C", build_dir, JVM_JAR] + (["-j", str(jobs)] if jobs else [])
        with RS.build_lock(build_dir):
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, errors="replace")
        if p.returncode != 0:
            tail = (p.stdout.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            return done("skipped", "the jar could not be built in %s (%s); a build "
                        "directory configured before the JDK was installed needs "
                        "`meson setup --reconfigure`" % (build_dir, tail))
    if not os.path.isfile(jar):
        return done("skipped", "%s is not built" % jar)
    out = os.path.join(outdir, "jvm.json")
    tmp = out + ".tmp"
    # the forks' GC and compilation logs beside jvm.log
    cmd = (["java"] + JVM_HEAP + ["-cp", jar + os.pathsep + NETTY_JAR, "TimerBench",
                                  "--size", size, "--out", tmp,
                                  "--logs", os.path.join(outdir, "jvm-logs")]
           + (["--seed", str(seed)] if seed is not None else []))
    RS.say("timerbench: jvm: the originals at size %s (about %s)" % (
        size, "about a minute" if size == "standard" else "several minutes"))
    shown = [0.0]

    def show(line):
        # a repetition's line at most every JVM_PROGRESS_SECONDS, the rest always
        now = time.monotonic()
        if " rep " not in line or now - shown[0] >= JVM_PROGRESS_SECONDS:
            shown[0] = now
            return True
        return False
    try:
        st, last = RS.run_logged(cmd, os.path.join(outdir, "jvm.log"), show)
    except OSError as e:
        return done("failed", "%s: %s" % (e.filename or "java", e.strerror or e))
    if st != 0 or not os.path.isfile(tmp):
        if os.path.exists(tmp):
            os.unlink(tmp)
        if st < 0 or st >= 128:
            # a signal (Ctrl-C reaches java too): a resume runs it again
            return done("stopped", "the harness was stopped (%s); a resume runs it again"
                        % (signal.Signals(-st).name if st < 0 else "exit %d" % st))
        return done("failed", "the harness exited with %d: %s (jvm.log)" % (st, last))
    try:
        with open(tmp, encoding="utf-8") as f:
            facts["harness_seconds"] = json.load(f).get("elapsed_s")
    except (OSError, ValueError, AttributeError):
        os.unlink(tmp)
        return done("failed", "the harness wrote no whole JSON document (jvm.log)")
    os.replace(tmp, out)
    return done("complete")


def finish(opts, outdir, lock, facts, stop, stopped, entry, t_session):
    run = facts["run"]
    inst = facts["instances"]
    left = sum(len(v) for v in inst.get("missing", {}).values())
    total = sum(len(v) for v in inst["expected"].values())
    errors = []
    for h in run["harnesses"]:
        if os.path.exists(os.path.join(outdir, h + ".json")):
            errors += summarize(os.path.join(outdir, h + ".json"))[1]
    entry["finished_utc"] = RS.now_utc()
    entry["seconds"] = time.monotonic() - t_session
    run["finished_utc"] = entry["finished_utc"]
    run["total_seconds"] = sum(s.get("seconds", 0) for s in run["sessions"])
    run["errors"] = errors
    run["resumed_utc"] = [s["started_utc"] for s in run["sessions"][1:]]
    facts["machine"]["load_average_at_end"] = os.getloadavg()
    if stop.signum:
        run["status"] = entry["status"] = "interrupted"
        run["interrupted"] = entry["interrupted"] = {
            "signal": stop.name, "at_utc": stop.at,
            "after_seconds": entry["seconds"],
            "where": where(stopped) if stopped else "between harnesses",
            "missing_instances": left}
    elif left:
        run["status"] = entry["status"] = "incomplete"
    else:
        run["status"] = entry["status"] = "complete"
        run.pop("interrupted", None)
    RS.write_json(os.path.join(outdir, "machine.json"), facts)
    if run["status"] == "complete":
        RS.finish_journals(outdir)
    RS.release_lock(lock, outdir)
    for e in errors:
        RS.say("error: %s" % e)
    cont = "%s %s" % (opts.resume_command, RS.shell_word(outdir))
    if stop.signum:
        RS.say("timerbench: stopped by %s after %.0f s, %s: that instance "
               "was abandoned" % (stop.name, entry["seconds"],
                                  where(stopped) if stopped else "between harnesses"))
        RS.say("timerbench: %d of %d instances are done, %d missing; the "
               "partial results (valid files) are in %s" % (total - left, total, left, outdir))
        RS.say("timerbench: to continue: %s" % cont)
        code = 128 + stop.signum
    elif left:
        st = run["exit_status"].get(stopped[0]) if stopped else None
        how = ("was killed by %s (out of memory?)" % signal.Signals(-st).name
               if isinstance(st, int) and st < 0 else "exited %s" % st)
        RS.say("timerbench: FAILED: %s %s, %s; %d of %d instances missing "
               "in %s" % (stopped[0] if stopped else "a harness", how,
                          where(stopped) if stopped else "", left, total, outdir))
        RS.say("timerbench: to run the missing ones: %s" % cont)
        code = 1
    else:
        RS.say("timerbench: %s in %.0f s -> %s" % (
            "done, %d benchmark errors" % len(errors) if errors else "ok",
            entry["seconds"], outdir))
        code = 0
    try:
        print(outdir)  # the one line on stdout: callers capture it
        sys.stdout.flush()
    except OSError:
        pass
    # A benchmark that reports an error is a result (a structure that
    # cannot hold N, say) and the report explains it; only a harness that
    # did not finish, or a signal, fails the run.
    return code


def write_failed(opts, outdir, lock, facts, stop, stopped, entry, t_session, what):
    """The run could not write its results (`what`: the file and the
    error): keeps what it can, says so once, and how to continue; exit 1."""
    run = facts["run"]
    if stop.child is not None and stop.child.poll() is None:
        try:
            stop.child.send_signal(signal.SIGINT)
            stop.child.wait()
        except OSError:
            pass
    RS.say("timerbench: cannot write the results: %s; the run stops here" % what)
    try:
        RS.commit(outdir, facts)
    except OSError:
        pass    # the journals keep what finished; --resume commits them
    inst = facts["instances"]
    left = sum(len(v) for v in inst.get("missing", {}).values())
    total = sum(len(v) for v in inst["expected"].values())
    entry["finished_utc"] = run["finished_utc"] = RS.now_utc()
    entry["seconds"] = time.monotonic() - t_session
    run["total_seconds"] = sum(s.get("seconds", 0) for s in run["sessions"])
    run["resumed_utc"] = [s["started_utc"] for s in run["sessions"][1:]]
    run["status"] = entry["status"] = "interrupted"
    run["interrupted"] = entry["interrupted"] = {
        "signal": None, "at_utc": entry["finished_utc"],
        "after_seconds": entry["seconds"], "error": what,
        "where": "could not write its results (%s), %s" % (
            what, where(stopped) if stopped else "between harnesses"),
        "missing_instances": left}
    try:
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
        said = "machine.json says where it stopped"
    except OSError as e:
        said = ("machine.json could not be updated either (%s): it still "
                "says \"running\", and the resume reads the journals" % e.strerror)
    RS.release_lock(lock, outdir)
    RS.say("timerbench: %d of %d instances are done, %d missing, in %s; %s" % (
        total - left, total, left, outdir, said))
    RS.say("timerbench: to continue once there is room: %s %s" % (
        opts.resume_command, RS.shell_word(outdir)))
    try:
        print(outdir)
        sys.stdout.flush()
    except OSError:
        pass
    return 1


def recover(opts):
    """--recover DIR: commits the journals of a run that was killed."""
    outdir = opts.recover
    facts = RS.load_machine(outdir)
    holder = RS.lock_holder(outdir)
    if holder is not None:
        raise RS.RunError("%s is in use by a running run (pid %s); nothing "
                          "to recover" % (outdir, holder.get("pid", "?")))
    lock = RS.acquire_lock(outdir)
    run = facts["run"]
    if run.get("status") == "running":
        RS.commit(outdir, facts)
        left = sum(len(v) for v in facts["instances"].get("missing", {}).values())
        run["status"] = "interrupted" if left else "complete"
        last = run["sessions"][-1] if run.get("sessions") else {}
        last["status"] = run["status"]
        if left:
            run["interrupted"] = last["interrupted"] = {
                "signal": None, "at_utc": None, "missing_instances": left,
                "where": "unknown: the run stopped without recording why "
                         "(killed, or the machine went down)"}
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
        RS.say("timerbench: %s: recovered the journals of a run that stopped "
               "without finishing: %d instances missing" % (outdir, left))
    RS.release_lock(lock, outdir)
    print(outdir)
    return 0


def main(argv=None):
    opts = parse_args(argv)
    if opts.profile == "counts" and not (opts.check or opts.resume or opts.recover):
        # counts.json added to --out: no harness and nothing to resume, so
        # a signal ends it as usual
        try:
            RS.check_backends(opts.backends, ROOT)
            if opts.out and os.path.islink(opts.out) and not os.path.exists(opts.out):
                raise RS.RunError("--out %s is a symbolic link to %s, which does "
                                  "not exist" % (opts.out, os.readlink(opts.out)))
        except RS.RunError as e:
            RS.say("timerbench: %s" % e)
            return 2
        return counts_main(opts)
    stop = RS.Stop()
    stop.install()
    try:
        if opts.check:
            return check_only(opts)
        if opts.recover:
            return recover(opts)

        if opts.resume:
            started = start_resume(opts, stop)
            if started is None:
                RS.say("timerbench: %s is complete: nothing to resume" % opts.resume)
                print(opts.resume)
                return 0
            binary, outdir, lock, facts = started
            prev = facts["run"].get("interrupted") or {}
            RS.say("timerbench: resuming %s (stopped %s%s): profile %s, seed %s" % (
                outdir, prev.get("at_utc") or "at an unknown time",
                " by " + prev["signal"] if prev.get("signal") else "",
                opts.profile, "default" if opts.seed is None else opts.seed))
        else:
            binary, outdir, lock, facts = start_fresh(opts, stop)
        return run_sessions(binary, opts, outdir, lock, facts, stop)
    except RS.RunError as e:
        if stop.signum:
            RS.say("timerbench: interrupted by %s before any benchmark ran"
                   % stop.name)
            return 128 + stop.signum
        RS.say("timerbench: %s" % e)
        return 2
    except subprocess.CalledProcessError as e:
        if stop.signum:
            RS.say("timerbench: interrupted by %s before any benchmark ran"
                   % stop.name)
            return 128 + stop.signum
        RS.say("timerbench: %s failed (exit %s)" % (
            " ".join(str(a) for a in e.cmd), e.returncode))
        return 1
    except OSError as e:
        # before the run (its directory, lock, the build): nothing was run
        RS.say("timerbench: %s%s" % (
            "%s: " % e.filename if e.filename else "", e.strerror or e))
        return 1


# ---- the counts profile (instructions and simulated cache misses) --------

COUNTS_OPS = ("insert", "cancel", "expire")
COUNTS_N = (1000, 100000)
# The heaps' worst case (issue 29; bench/bench.h, BH_WORST): insert and
# cancel on the `worst` workload too, at the same N, beside the uniform
# ones above.
COUNTS_WORST_OPS = ("insert", "cancel")
def build_counts(build_dir, jobs):
    """Configures (once) and builds timerbench-counts, holding the build
    directory's lock; returns its path."""
    with RS.build_lock(build_dir):
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            subprocess.check_call(["meson", "setup", build_dir, ROOT,
                                   "--buildtype=release"], stdout=sys.stderr)
        cmd = ["ninja", "-C", build_dir, "bench/timerbench-counts"]
        if jobs:
            cmd[1:1] = ["-j", str(jobs)]
        subprocess.check_call(cmd, stdout=sys.stderr)
    return os.path.join(build_dir, "bench", "timerbench-counts")


def counts_list(binary):
    """The driver's --list: [(name, flags)], registry order, then the
    interface's floor (flagged "floor")."""
    out = []
    for line in subprocess.check_output([binary, "--list"],
                                        universal_newlines=True).splitlines():
        parts = line.split()
        if parts:
            out.append((parts[0], parts[1:]))
    return out


def counts_backends(binary):
    """{backend: True if remove-on-cancel changes it}, registry order; the
    timers only (the floor is not one: counts_floor)."""
    return {name: "roc" in flags for name, flags in counts_list(binary)
            if "floor" not in flags}


# The floor's operations: it runs nothing, so it has no expiry.
FLOOR_OPS = ("insert", "cancel")


def counts_floor(binary):
    """The name the driver gives the interface's floor (tb_backend_floor,
    not in the registry), or None if it has none."""
    for name, flags in counts_list(binary):
        if "floor" in flags:
            return name
    return None


def counts_plan(binary, backends, ops, ns):
    """[(backend, op, n, extra args)] for every backend, op and N; cancel
    twice where remove-on-cancel changes what the backend does (the driver
    names the variant in its result)."""
    roc = counts_backends(binary)
    plan = []
    for b in backends:
        for op in ops:
            for n in ns:
                if op == "cancel" and roc.get(b):
                    plan.append((b, op, n, ["--roc", "off"]))
                    plan.append((b, op, n, ["--roc", "on"]))
                else:
                    plan.append((b, op, n, []))
    return plan


def counts_profile_plan(binary, backends_opt=None):
    """(the timers, the plan) of --profile counts: the interface's floor's
    insert and cancel first (issue 39; unless `backends_opt`, a comma list
    as --backends gives it, leaves the floor out), then every timer's
    COUNTS_OPS and its worst workload's COUNTS_WORST_OPS at COUNTS_N."""
    floor = counts_floor(binary)
    names = backends_opt.split(",") if backends_opt else None
    backends = [b for b in names if b != floor] if names else \
        list(counts_backends(binary))
    plan = []
    if floor and (names is None or floor in names):
        plan += [(floor, op, n, []) for op in COUNTS_OPS if op in FLOOR_OPS
                 for n in COUNTS_N]
    plan += counts_plan(binary, backends, COUNTS_OPS, COUNTS_N)
    plan += [(b, op, n, extra + ["--workload", "worst"]) for b, op, n, extra
             in counts_plan(binary, backends, COUNTS_WORST_OPS, COUNTS_N)]
    return backends, plan


def counts_one(binary, backend, op, n, extra, tmpdir, seed=None):
    """Runs the driver under callgrind; returns one result dict, or a dict
    with "error"."""
    out = os.path.join(tmpdir, "cg.%s.%s.%d.%s.out" % (
        backend, op, n, "".join(extra).replace("-", "")))
    cache = ["--%s=%d,%d,%d" % ((k,) + v) for k, v in
             sorted(COUNTS_CACHES.items())]
    cmd = (["valgrind", "--tool=callgrind", "--cache-sim=yes",
            "--collect-atstart=no", "--callgrind-out-file=" + out] + cache +
           [binary, "--backend", backend, "--op", op, "--n", str(n)] + extra)
    if seed is not None:
        cmd += ["--seed", str(seed)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    what = "%s/%s N=%d %s" % (op, backend, n, " ".join(extra))
    if p.returncode != 0:
        tail = [l for l in p.stderr.splitlines() if not l.startswith("==")]
        return {"name": what, "error": "exit %d: %s" % (
            p.returncode, " ".join(tail[-3:])[:300])}
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
        ev, desc = parse_callgrind(out)
        by_file = callgrind_by_file(out)
    except (ValueError, IndexError, OSError) as e:
        return {"name": what, "error": "unreadable output: %s" % e}
    finally:
        if os.path.exists(out):
            os.unlink(out)
    ops = res.get("ops") or 0
    if ops <= 0:
        return dict(res, error="no operation was measured")

    def per(*keys):
        return sum(ev.get(k, 0) for k in keys) / float(ops)
    res["totals"] = ev
    res["instructions_per_op"] = per("Ir")
    res["d1_misses_per_op"] = per("D1mr", "D1mw")
    res["ll_misses_per_op"] = per("ILmr", "DLmr", "DLmw")
    res["cache_model"] = desc
    # instructions per operation by source file, relative to the checkout
    # (only with the binary's debug information: `./timerbench counts`
    # builds build/counts with -g; tbkit.countsdata.split groups them)
    files = {}
    for f, v in by_file.items():
        rel = os.path.relpath(os.path.normpath(f), ROOT) if f.startswith("/") else f
        files[rel] = files.get(rel, 0) + v / float(ops)
    if any(f != "???" for f in files):
        res["by_file"] = files
    return res


def run_counts(binary, plan, jobs, seed=None, progress=True):
    """Runs the plan (jobs at a time); returns the results in plan order."""
    results = [None] * len(plan)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tb-counts-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            futs = {pool.submit(counts_one, binary, b, op, n, extra, tmp,
                                seed): i
                    for i, (b, op, n, extra) in enumerate(plan)}
            done = 0
            for f in concurrent.futures.as_completed(futs):
                i = futs[f]
                results[i] = f.result()
                done += 1
                if progress:
                    sys.stderr.write("[counts %d/%d] %6.0f s  %s\n" % (
                        done, len(plan), time.monotonic() - t0,
                        results[i].get("name")))
    return results


def counts_main(opts):
    """--profile counts: counts.json into --out (created if need be)."""
    if not valgrind_version():
        sys.stderr.write("timerbench: the counts profile needs valgrind "
                         "(Debian package valgrind)\n")
        return 1
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = opts.out or os.path.join(
        ROOT, "results", started.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(outdir, exist_ok=True)
    if opts.no_build:
        binary = os.path.join(opts.build_dir, "bench", "timerbench-counts")
    else:
        binary = build_counts(opts.build_dir, opts.jobs)
    backends, plan = counts_profile_plan(binary, opts.backends)
    t0 = time.monotonic()
    results = run_counts(binary, plan, opts.jobs or 2, opts.seed)
    doc = {
        "what": "instructions and simulated cache misses per operation "
                "(valgrind --tool=callgrind --cache-sim=yes, collection on "
                "around the operation only; bench/counts.c)",
        "valgrind": valgrind_version(),
        "caches": {k: {"size": v[0], "assoc": v[1], "line": v[2]}
                   for k, v in COUNTS_CACHES.items()},
        "git": {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain"))},
        "started_utc": started.isoformat(),
        "seconds": time.monotonic() - t0,
        "results": results,
    }
    RS.write_json(os.path.join(outdir, "counts.json"), doc)
    if not os.path.exists(os.path.join(outdir, "machine.json")):
        RS.write_json(os.path.join(outdir, "machine.json"), {
            "format_version": RS.FORMAT_VERSION,
            "machine": machine_facts(), "git": doc["git"],
            "run": {"profile": "counts", "backends": backends,
                    "started_utc": started.isoformat(), "status": "complete",
                    "sessions": []},
            "instances": {"expected": {}, "missing": {}}})
    bad = [r for r in results if r.get("error")]
    for r in bad:
        sys.stderr.write("error: %s: %s\n" % (r.get("name"), r["error"]))
    sys.stderr.write("timerbench: counts in %.0f s, %d results, %d errors "
                     "-> %s\n" % (doc["seconds"], len(results), len(bad),
                                   outdir))
    print(outdir)
    return 1 if bad and len(bad) == len(results) else 0
