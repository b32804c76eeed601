#!/usr/bin/env python3
"""bench/run.py — runs a benchmark profile into one self-describing results
directory (Python standard library only).

    bench/run.py [--profile quick|standard|full] [--backends a,b]
                 [--filter REGEX] [--harness shim,micro,runtime]
                 [--out DIR] [--seed N] [--build DIR] [--no-build]

It builds timerbench-bench in release mode (meson + ninja, in --build,
default build/release), then runs each harness and writes into
results/<UTC timestamp>/ (or --out), whose path is the one line it prints
on stdout (./timerbench report captures it):

    shim.json, micro.json, runtime.json   Google Benchmark JSON, one per harness
    samples.csv                           raw lateness / period-error samples
    shim.log, micro.log, runtime.log      console output and stderr
    machine.json                          machine, build and run facts

`--profile counts` runs no harness: it builds timerbench-counts (counts.c)
and runs it under Valgrind's callgrind with its cache simulator for each
backend, op (insert, cancel, expire) and N (10^3, 10^5), and writes
counts.json: instructions, D1 and LL misses per operation, deterministic.
It adds counts.json to an existing results directory (--out) without
touching the rest; `./timerbench counts` prints the same table at once.

Progress (which benchmark of how many, elapsed time) goes to stderr.  The
exit status is non-zero only if a harness did not finish; benchmarks that
report an error (e.g. a structure that cannot hold N) are results, listed
in machine.json and on stderr.  bench/README.md describes the files.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESSES = ("shim", "micro", "runtime")


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cpu_model():
    for line in (read("/proc/cpuinfo", "") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def os_release():
    for line in (read("/etc/os-release", "") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def mem_total_kb():
    for line in (read("/proc/meminfo", "") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return None


def git(*args):
    try:
        return subprocess.check_output(["git", "-C", ROOT] + list(args),
                                       stderr=subprocess.DEVNULL,
                                       universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine_facts():
    governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    clock = read("/sys/devices/system/clocksource/clocksource0/"
                 "current_clocksource")
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity") else None,
        "memory_kb": mem_total_kb(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "os": os_release(),
        "arch": platform.machine(),
        "governor": governor,
        "clocksource": clock,
        "load_average_at_start": os.getloadavg(),
        "hostname": platform.node(),
        "python": platform.python_version(),
    }


def build(build_dir, jobs):
    """Configures (once) and builds the benchmark binary in release mode."""
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


def count_instances(binary, opts, harness):
    out = subprocess.run([binary] + base_args(opts, harness) +
                         ["--benchmark_list_tests=true"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    return len([l for l in out.stdout.splitlines() if l.strip()])


PROGRESS = re.compile(r"^tbb: \[(\d+)\] (.*), elapsed ([\d.]+) s$")


def run_harness(binary, opts, harness, outdir, total, t_start):
    """Runs one harness; returns (exit status, seconds)."""
    args = base_args(opts, harness) + [
        "--progress",
        "--benchmark_out=" + os.path.join(outdir, harness + ".json"),
        "--benchmark_out_format=json"]
    if harness == "runtime":
        args.append("--csv=" + os.path.join(outdir, "samples.csv"))
    t0 = time.monotonic()
    with open(os.path.join(outdir, harness + ".log"), "w") as log:
        proc = subprocess.Popen([binary] + args, stdout=log,
                                stderr=subprocess.PIPE,
                                universal_newlines=True, bufsize=1)
        for line in proc.stderr:
            m = PROGRESS.match(line.rstrip("\n"))
            if m:
                elapsed = time.monotonic() - t_start
                sys.stderr.write("[%s %s/%d] %6.0f s  %s\n" %
                                 (harness, m.group(1), total, elapsed,
                                  m.group(2)))
            else:
                log.write(line)
                sys.stderr.write(line)
        status = proc.wait()
    return status, time.monotonic() - t0


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


def main():
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
    opts = ap.parse_args()
    if isinstance(opts.seed, str):
        opts.seed = int(opts.seed, 0)
    harnesses = [h for h in opts.harness.split(",") if h]
    for h in harnesses:
        if h not in HARNESSES:
            ap.error("unknown harness %r" % h)

    if opts.profile == "counts":
        return counts_main(opts)

    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = opts.out or os.path.join(
        ROOT, "results", started.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(outdir, exist_ok=True)

    if opts.no_build:
        binary = os.path.join(opts.build_dir, "bench", "timerbench-bench")
    else:
        binary = build(opts.build_dir, opts.jobs)
    info = json.loads(subprocess.check_output([binary, "--info"],
                                              universal_newlines=True))

    facts = {
        "machine": machine_facts(),
        "build": info,
        "git": {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain"))},
        "run": {
            "profile": opts.profile,
            "seed": opts.seed,
            "seed_note": "null means the binary's default; the JSON "
                         "context records the seed used",
            "backends": opts.backends.split(",") if opts.backends
            else info["backends"],
            "filter": opts.filter,
            "harnesses": harnesses,
            "timer_slack_ns": info.get("timer_slack_ns"),
            "started_utc": started.isoformat(),
            "command": sys.argv,
        },
    }

    totals = {h: count_instances(binary, opts, h) for h in harnesses}
    sys.stderr.write("timerbench: profile %s, %s instances, into %s\n" %
                     (opts.profile, " + ".join("%d %s" % (totals[h], h)
                                               for h in harnesses), outdir))
    t_start = time.monotonic()
    status, seconds, errors = {}, {}, []
    for h in harnesses:
        status[h], seconds[h] = run_harness(binary, opts, h, outdir,
                                            totals[h], t_start)
        n, errs = summarize(os.path.join(outdir, h + ".json"))
        errors += errs
        sys.stderr.write("timerbench: %s done in %.0f s: %d results, "
                         "%d errors, exit %d\n" %
                         (h, seconds[h], n, len(errs), status[h]))

    facts["run"]["finished_utc"] = datetime.datetime.now(
        datetime.timezone.utc).isoformat()
    facts["run"]["seconds"] = seconds
    facts["run"]["total_seconds"] = time.monotonic() - t_start
    facts["run"]["exit_status"] = status
    facts["run"]["errors"] = errors
    facts["machine"]["load_average_at_end"] = os.getloadavg()
    with open(os.path.join(outdir, "machine.json"), "w") as f:
        json.dump(facts, f, indent=2)
        f.write("\n")
    for e in errors:
        sys.stderr.write("error: %s\n" % e)
    sys.stderr.write("timerbench: %s in %.0f s -> %s\n" %
                     ("FAILED" if any(status.values()) else
                      "done, %d benchmark errors" % len(errors) if errors
                      else "ok", facts["run"]["total_seconds"], outdir))
    print(outdir)  # the one line on stdout: callers capture it
    # A benchmark that reports an error is a result (a structure that
    # cannot hold N, say) and the report explains it; only a harness that
    # did not finish fails the run.
    return 1 if any(status.values()) else 0


# ---- the counts profile (instructions and simulated cache misses) --------

COUNTS_OPS = ("insert", "cancel", "expire")
COUNTS_N = (1000, 100000)
# One fixed cache model, so that the counts are the same on every machine
# (Valgrind would otherwise copy the host's caches, 512 MiB of "L3" on some
# virtual machines, where nothing misses): 32 KiB 8-way L1s, an 8 MiB
# 16-way last level, 64-byte lines.
COUNTS_CACHES = {"I1": (32768, 8, 64), "D1": (32768, 8, 64),
                 "LL": (8388608, 16, 64)}


def build_counts(build_dir, jobs):
    """Configures (once) and builds timerbench-counts; returns its path."""
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        subprocess.check_call(["meson", "setup", build_dir, ROOT,
                               "--buildtype=release"], stdout=sys.stderr)
    cmd = ["ninja", "-C", build_dir, "bench/timerbench-counts"]
    if jobs:
        cmd[1:1] = ["-j", str(jobs)]
    subprocess.check_call(cmd, stdout=sys.stderr)
    return os.path.join(build_dir, "bench", "timerbench-counts")


def counts_backends(binary):
    """{backend: True if remove-on-cancel changes it}, registry order."""
    out = {}
    for line in subprocess.check_output([binary, "--list"],
                                        universal_newlines=True).splitlines():
        parts = line.split()
        if parts:
            out[parts[0]] = "roc" in parts[1:]
    return out


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


def parse_callgrind(path):
    """{event: total} and the cache descriptions of one callgrind output."""
    events, totals, desc = None, None, []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("desc:"):
                desc.append(line[5:].strip())
            elif line.startswith(("summary:", "totals:")) and events:
                totals = [int(x) for x in line.split()[1:]]
    if not events or totals is None:
        raise ValueError("%s: no events or totals line" % path)
    totals += [0] * (len(events) - len(totals))
    return dict(zip(events, totals)), desc


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
    return res


def run_counts(binary, plan, jobs, seed=None, progress=True):
    """Runs the plan (jobs at a time); returns the results in plan order."""
    import concurrent.futures
    import tempfile
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


def valgrind_version():
    try:
        return subprocess.check_output(["valgrind", "--version"],
                                       universal_newlines=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


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
    backends = opts.backends.split(",") if opts.backends else \
        list(counts_backends(binary))
    plan = counts_plan(binary, backends, COUNTS_OPS, COUNTS_N)
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
    with open(os.path.join(outdir, "counts.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if not os.path.exists(os.path.join(outdir, "machine.json")):
        with open(os.path.join(outdir, "machine.json"), "w") as f:
            json.dump({"machine": machine_facts(), "git": doc["git"],
                       "run": {"profile": "counts", "backends": backends,
                               "started_utc": started.isoformat()}},
                      f, indent=2)
            f.write("\n")
    bad = [r for r in results if r.get("error")]
    for r in bad:
        sys.stderr.write("error: %s: %s\n" % (r.get("name"), r["error"]))
    sys.stderr.write("timerbench: counts in %.0f s, %d results, %d errors "
                     "-> %s\n" % (doc["seconds"], len(results), len(bad),
                                   outdir))
    print(outdir)
    return 1 if bad and len(bad) == len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
