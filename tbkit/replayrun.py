"""tbkit.replayrun — bench/replay.py, `./timerbench replay`: replays timer traces on every
backend into a results directory that `./timerbench report --from DIR`
renders (Python standard library only).

    bench/replay.py TRACE... [--backends a,b] [--out DIR] [--reps R]
                    [--tick NS] [--lateness SPEC] [--no-sweep]
                    [--counts] [--build-dir DIR] [--no-build]

It checks the arguments (each trace is readable, each backend registered,
--out new or empty) before anything is built, builds timerbench-replay
(bench/replay.c) in --build-dir (default build/release, configured in
release mode if new), has it parse every trace (a bad trace is refused
with its FILE:LINE message, exit 2, before anything runs), then replays
them, showing its progress, and writes into DIR:

    replay.json    what bench/replay.c measured (bench/REPLAY.md),
                   with each trace's `verdict` (tbkit/replaydata.py)
    replay.log     its progress and messages
    machine.json   machine, build and run facts, as every results directory

--counts adds, per trace and backend, the instructions and simulated cache
misses per event of one checked replay under Valgrind's callgrind (the
counts profile's fixed cache model): deterministic figures, unlike times
on a loaded machine.

and prints DIR on stdout.  Exit status: 0 done, 1 a replay failed its
checks or could not run, 2 bad arguments or a bad trace.  A backend that
fails its checks fails alone: replay.json is still written, with that
backend's error in place of its numbers, DIR is still printed, and the exit
status is 1.  A trace path that is not a regular file (a FIFO, a device, a
directory) is refused before anything is built or locked.

bench/run.py's standard and full profiles call `replay_into` to add the
shipped kernel trace and the generators' traces to their results.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import signal
import stat
import subprocess
import sys
import time

from tbkit import precision as P
from tbkit import replaydata as RD
from tbkit import runstate as RS
from tbkit import machine as M

ROOT = M.ROOT
BINARY = os.path.join("bench", "timerbench-replay")
INT64_MAX = (1 << 63) - 1  # the largest --tick (bench/replay.c's int64_t)

# What the standard profile replays: the shipped kernel recording, both
# of its streams (timer-list timers and hrtimers, each with its slack),
# and one trace per generator model (tools/tracegen.py), kept small so
# that the whole replay step takes seconds.
KERNEL_TRACES = ((os.path.join("traces", "kernel-tcp-loopback.trace"), "kernel trace"),
                 (os.path.join("traces", "kernel-tcp-loopback-hrtimer.trace"),
                  "kernel hrtimer trace"))
TRACEGEN = os.path.join("tools", "tracegen.py")
MODELS = ("purgatory", "clientserver", "hold")
# counts: the Valgrind counts per event (deterministic) for the kernel
# trace, about 15 s under callgrind; the generators' traces only in full.
# sweep: the tick sweep of the ticked backends (bench/REPLAY.md, "The tick
# sweep"), every point in both profiles (the standard one's whole sweep
# took about 1 s over its four traces), with sweep_reps repetitions.
PROFILE_REPLAY = {"quick": None,
                  "standard": {"events": 20000, "reps": 9, "seed": 1,
                               "sweep": True, "sweep_reps": 5,
                               "counts": ("kernel trace",)},
                  "full": {"events": 200000, "reps": 15, "seed": 1,
                           "sweep": True, "sweep_reps": 9,
                           "counts": ("kernel trace", "model purgatory",
                                      "model clientserver", "model hold")}}


def build_replay(build_dir, jobs=None, stop=None):
    """Configures build_dir once (release) and builds timerbench-replay,
    holding the build directory's lock (runstate.build_target)."""
    return RS.build_target(build_dir, ROOT, BINARY, jobs, stop)


# What a path that is not a regular file is, for the refusal (as the
# binary names it).
FILE_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
              (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_traces(traces):
    """Each trace is a readable regular file; a RunError names the first
    that is not (its content is checked by the binary).  A FIFO or a device
    is refused here, before anything is built or locked: reading one would
    block the replay, or never end."""
    for t in traces:
        try:
            st = os.stat(t)
        except FileNotFoundError:
            raise RS.RunError("%s: no such trace file" % t)
        except OSError as e:
            raise RS.RunError("%s: cannot be read: %s" % (t, e.strerror))
        if not stat.S_ISREG(st.st_mode):
            kind = [k for f, k in FILE_KINDS if f(st.st_mode)]
            raise RS.RunError("%s: not a regular file (%s)" % (
                t, kind[0] if kind else "of another kind"))
        if not os.access(t, os.R_OK):
            raise RS.RunError("%s: cannot be read" % t)


def parse_check(binary, traces, backends=None, tick=None):
    """Has the binary check the backends, that each ticked one takes
    `tick` (it creates each with it), and parse every trace; a RunError
    carries its message."""
    # errors="replace": the binary's messages are ASCII, but a path it
    # names may be any bytes
    p = subprocess.run([binary, "--parse-only"] +
                       (["--backends", backends] if backends else []) +
                       (["--tick", str(tick)] if tick else []) + list(traces),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    if p.returncode != 0:
        msg = p.stderr.strip()
        if msg.startswith("timerbench-replay: "):
            raise RS.RunError(msg[len("timerbench-replay: "):])
        raise RS.RunError("bad trace: " + msg)
    return p.stdout


def replay_errors(path):
    """The backends that failed their checks in a whole replay.json, as
    "BACKEND on TRACE: ERROR"; None when the file is not whole JSON (the
    binary died while writing it)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
        return ["%s on %s: %s" % (b.get("name"), t.get("name"), b["error"])
                for t in doc["traces"] for b in t["backends"] if "error" in b]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def add_verdicts(path):
    """Writes each trace's `verdict` (tbkit/replaydata.py budget_verdict,
    the rule the report applies too) into the replay.json at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        doc = json.load(f)
    for t in doc.get("traces", []):
        t["verdict"] = RD.budget_verdict(t)
    RS.write_json(path, doc)


def run_replay(binary, traces, outdir, backends=None, reps=5, tick=None,
               log=None, lateness=None, sweep=True, sweep_reps=None,
               stop=None):
    """Runs the replay into outdir/replay.json, its progress on stderr and
    into outdir/replay.log, and adds each trace's verdict; returns (exit
    status, seconds, last message).  A replay in which some backends failed
    their checks (exit 1) still writes replay.json, with those backends'
    errors in it.  With `stop` (an installed runstate.Stop), a signal to
    this process is passed on to the binary, and replay.json is not
    written once one came (the binary's partial output is removed)."""
    cmd = [binary, "--reps", str(reps), "--out",
           os.path.join(outdir, "replay.json.tmp")]
    if backends:
        cmd += ["--backends", backends]
    if tick:
        cmd += ["--tick", str(tick)]
    if lateness:
        cmd += ["--lateness", lateness]
    if not sweep:
        cmd += ["--no-sweep"]
    if sweep_reps:
        cmd += ["--sweep-reps", str(sweep_reps)]
    cmd += list(traces)
    t0 = time.monotonic()
    last = ""
    with open(log or os.path.join(outdir, "replay.log"), "a",
              encoding="utf-8", errors="replace") as lf:
        lf.write("$ %s\n" % " ".join(cmd))
        with subprocess.Popen(cmd, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace",
                              preexec_fn=M.pin_self) as p:
            if stop is not None:
                stop.child = p
                if stop.signum is not None:  # came before the child did
                    p.send_signal(signal.SIGINT)
            for line in p.stderr:
                lf.write(line)
                lf.flush()
                sys.stderr.write("timerbench: " + line)
                last = line.strip() or last
            st = p.wait()
            if stop is not None:
                stop.child = None
    tmp = os.path.join(outdir, "replay.json.tmp")
    stopped = stop is not None and stop.signum is not None
    if not stopped and st in (0, 1) and os.path.exists(tmp) and \
            replay_errors(tmp) is not None:
        add_verdicts(tmp)
        os.replace(tmp, os.path.join(outdir, "replay.json"))
    elif os.path.exists(tmp):
        os.unlink(tmp)
    return st, time.monotonic() - t0, last


def count_one(binary, trace, backend, tick, tmpdir):
    """Instructions and simulated cache misses of one checked total pass of
    `trace` on `backend` (callgrind, collection on inside total_pass only,
    the fixed cache model of run.py's counts profile); a dict, or one with
    "error"."""
    out = os.path.join(tmpdir, "cg.%s.%d.out" % (backend, abs(hash(trace))))
    cache = ["--%s=%d,%d,%d" % ((k,) + v) for k, v in sorted(M.COUNTS_CACHES.items())]
    cmd = (["valgrind", "--tool=callgrind", "--cache-sim=yes",
            "--toggle-collect=total_pass", "--callgrind-out-file=" + out] + cache +
           [binary, "--total-only", "--backends", backend] +
           (["--tick", str(tick)] if tick else []) + [trace])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    try:
        if p.returncode != 0:
            tail = [l for l in p.stderr.splitlines() if not l.startswith("==")]
            return {"error": "exit %d: %s" % (p.returncode, " ".join(tail[-3:])[:300])}
        events = int(p.stdout.split()[2])
        ev, _ = M.parse_callgrind(out)
    except (ValueError, IndexError, OSError) as e:
        return {"error": "unreadable output: %s" % e}
    finally:
        if os.path.exists(out):
            os.unlink(out)

    def per(*keys):
        return sum(ev.get(k, 0) for k in keys) / float(events)
    return {"instructions_per_event": per("Ir"),
            "d1_misses_per_event": per("D1mr", "D1mw"),
            "ll_misses_per_event": per("ILmr", "DLmr", "DLmw")}


def add_counts(binary, traces, outdir, backends=None, tick=None, jobs=2,
               which=None):
    """Adds each backend's Valgrind counts per event (`counts`) to
    outdir/replay.json, for the traces whose index is in `which` (default
    all); returns the number of errors."""
    import tempfile
    path = os.path.join(outdir, "replay.json")
    with open(path) as f:
        doc = json.load(f)
    names = backends.split(",") if backends else \
        [b["name"] for b in doc["traces"][0]["backends"]]
    jobs_list = [(i, t, b) for i, t in enumerate(traces) for b in names
                 if which is None or i in which]
    t0 = time.monotonic()
    results = {}
    with tempfile.TemporaryDirectory(prefix="tb-replay-counts-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            futs = {pool.submit(count_one, binary, t, b, tick, tmp): (i, b)
                    for i, t, b in jobs_list}
            for n, f in enumerate(concurrent.futures.as_completed(futs), 1):
                results[futs[f]] = f.result()
                RS.say("timerbench: replay counts [%d/%d] %s on %s, %.0f s" % (
                    n, len(jobs_list), futs[f][1],
                    os.path.basename(traces[futs[f][0]]), time.monotonic() - t0))
    bad = 0
    for i, t in enumerate(doc["traces"]):
        for b in t["backends"]:
            r = results.get((i, b["name"]))
            if r is not None:
                b["counts"] = r
                bad += "error" in r
    doc["counts"] = {"valgrind": M.valgrind_version(),
                     "caches": {k: {"size": v[0], "assoc": v[1], "line": v[2]}
                                for k, v in M.COUNTS_CACHES.items()},
                     "what": "one checked total pass per trace and backend under "
                             "valgrind --tool=callgrind --cache-sim=yes "
                             "--toggle-collect=total_pass, divided by the events"}
    RS.write_json(path, doc)
    return bad


def profile_traces(profile, workdir):
    """The standard profile's traces: [(path, what)] and [(what, why
    skipped)].  The generators' traces are written into workdir/traces."""
    conf = PROFILE_REPLAY.get(profile)
    if not conf:
        return [], []
    have, skipped = [], []
    for rel, what in KERNEL_TRACES:
        kernel = os.path.join(ROOT, rel)
        if os.path.exists(kernel):
            have.append((kernel, what))
        else:
            skipped.append((what, "%s is not in this checkout" % rel))
    gen = os.path.join(ROOT, TRACEGEN)
    if not os.path.exists(gen):
        skipped += [("model " + m, "%s is not in this checkout" % TRACEGEN) for m in MODELS]
        return have, skipped
    os.makedirs(os.path.join(workdir, "traces"), exist_ok=True)
    for m in MODELS:
        out = os.path.join(workdir, "traces", m + ".trace")
        p = subprocess.run([sys.executable, gen, m, "--seed", str(conf["seed"]),
                            "--events", str(conf["events"]), "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0 or not os.path.exists(out):
            why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            skipped.append(("model " + m, "tools/tracegen.py failed: %s" % why))
        else:
            have.append((out, "model " + m))
    return have, skipped


def replay_into(profile, build_dir, outdir, backends=None, jobs=None,
                build=True, lateness=None):
    """bench/run.py's replay step: replays the profile's traces into outdir
    (replay.json), with every timer's budget `lateness` (a SPEC of
    tb_precision.parse_spec) over the traces' own when given; returns the
    facts for machine.json's run.replay."""
    conf = PROFILE_REPLAY.get(profile)
    if not conf:
        return None
    t0 = time.monotonic()
    traces, skipped = profile_traces(profile, outdir)
    for what, why in skipped:
        RS.say("timerbench: replay: %s skipped: %s" % (what, why))
    facts = {"traces": [os.path.relpath(t, outdir) if t.startswith(outdir)
                        else os.path.relpath(t, ROOT) for t, _ in traces],
             "skipped": [{"trace": w, "why": y} for w, y in skipped],
             "reps": conf["reps"], "events": conf["events"],
             "seed": conf["seed"], "sweep": conf.get("sweep", False),
             "sweep_reps": conf.get("sweep_reps"), "lateness": lateness}
    if not traces:
        facts.update(status="skipped", seconds=time.monotonic() - t0)
        return facts
    try:
        binary = build_replay(build_dir, jobs) if build else \
            os.path.join(build_dir, BINARY)
        parse_check(binary, [t for t, _ in traces], backends)
        st, secs, last = run_replay(binary, [t for t, _ in traces], outdir,
                                    backends, conf["reps"], lateness=lateness,
                                    sweep=conf.get("sweep", False),
                                    sweep_reps=conf.get("sweep_reps"))
        facts["replay_seconds"] = secs
        which = {i for i, (_, what) in enumerate(traces)
                 if what in conf.get("counts", ())}
        if st == 0 and which:
            if not M.valgrind_version():
                facts["counts"] = "skipped: valgrind is not installed"
            else:
                bad = add_counts(binary, [t for t, _ in traces], outdir, backends,
                                 None, jobs or 2, which)
                facts["counts"] = "%d errors" % bad if bad else "complete"
    except (RS.RunError, subprocess.CalledProcessError, OSError) as e:
        st, last = 1, str(e)
    facts["status"] = "complete" if st == 0 else "failed"
    if st != 0:
        facts["error"] = last
        # the backends that failed their checks (the others' results are
        # in replay.json)
        failed = replay_errors(os.path.join(outdir, "replay.json"))
        if failed:
            facts["backend_errors"] = failed
        RS.say("timerbench: replay failed: %s" % last)
    facts["seconds"] = time.monotonic() - t0
    return facts


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="./timerbench replay",
        description="Replay timer traces (bench/REPLAY.md) on "
                    "every backend into a results directory.")
    ap.add_argument("traces", nargs="*", metavar="TRACE")
    ap.add_argument("--backends", help="comma-separated backend names "
                    "(default: every registered one)")
    ap.add_argument("--out", help="results directory (default "
                    "results/replay-<UTC time>)")
    ap.add_argument("--reps", type=int, default=5,
                    help="repetitions of each replay (1..64, default 5)")
    ap.add_argument("--tick", type=int, help="the wheels' tick in ns "
                    "(default 1 ms, the head-to-head series')")
    ap.add_argument("--lateness", metavar="SPEC",
                    help="every timer's lateness budget, over the trace's "
                    "own: " + P.ACCEPTED.replace("%", "%%"))
    ap.add_argument("--no-sweep", action="store_true",
                    help="leave out the tick sweep of the ticked backends")
    ap.add_argument("--build", "--build-dir", dest="build_dir",
                    default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--counts", action="store_true",
                    help="also count instructions and simulated cache misses "
                    "per event under Valgrind (deterministic; minutes)")
    ap.add_argument("--check", action="store_true",
                    help="only check the arguments, build nothing")
    opts = ap.parse_args(P.glue_values(argv))
    if not opts.traces:
        ap.error("give at least one trace file")
    if not 1 <= opts.reps <= 64:
        ap.error("--reps takes 1..64, got %d" % opts.reps)
    if opts.tick is not None and not 1 <= opts.tick <= INT64_MAX:
        # Python's int has no end: past INT64_MAX the binary would clamp it
        ap.error("--tick takes a positive number of ns up to %d, got %d"
                 % (INT64_MAX, opts.tick))
    if opts.lateness is not None:
        try:
            P.parse_spec(opts.lateness)
        except ValueError as e:
            ap.error("--lateness: %s" % e)
    return opts


# What a replay writes into its directory: removed again when a signal
# stops it, so that the directory is as it was and the same command runs
# into it again.
OWN_FILES = ("replay.json.tmp", "replay.json", "replay.log", "machine.json")


def undo(outdir, made, lock):
    """Removes what an interrupted replay wrote into outdir (OWN_FILES, its
    lock) and outdir itself when this run made it and it is left empty."""
    for f in OWN_FILES:
        try:
            os.unlink(os.path.join(outdir, f))
        except FileNotFoundError:
            pass
    RS.release_lock(lock, outdir)
    if made:
        try:
            os.rmdir(outdir)
        except OSError:
            pass


def main(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    outdir = opts.out or os.path.join(
        ROOT, "results", "replay-" + started.strftime("%Y%m%d-%H%M%S"))
    # Ctrl-C, SIGTERM, SIGHUP: no traceback, no partial file (undo)
    stop = RS.Stop()
    stop.install()
    try:
        check_traces(opts.traces)
        RS.check_backends(opts.backends, ROOT, variants=True)
        RS.check_new_out(outdir)
        if opts.check:
            return 0
        binary = os.path.join(opts.build_dir, BINARY)
        if not opts.no_build:
            binary = build_replay(opts.build_dir, opts.jobs, stop)
        elif not os.path.exists(binary):
            raise RS.RunError("--no-build: there is no %s" % binary)
        parse_check(binary, opts.traces, opts.backends, opts.tick)
    except RS.RunError as e:
        if stop.signum:
            RS.say("timerbench: replay: interrupted by %s before anything "
                   "was replayed; nothing was written" % stop.name)
            return 128 + stop.signum
        RS.say("timerbench: replay: %s" % e)
        return 2
    except subprocess.CalledProcessError as e:
        if stop.signum:
            RS.say("timerbench: replay: interrupted by %s during the build; "
                   "nothing was written" % stop.name)
            return 128 + stop.signum
        RS.say("timerbench: replay: %s failed (exit %s)" % (
            " ".join(str(a) for a in e.cmd), e.returncode))
        return 1
    if stop.signum:
        RS.say("timerbench: replay: interrupted by %s before anything was "
               "replayed; nothing was written" % stop.name)
        return 128 + stop.signum
    made = not os.path.isdir(outdir)
    os.makedirs(outdir, exist_ok=True)
    t0 = time.monotonic()
    lock = RS.acquire_lock(outdir)
    try:
        RS.say("timerbench: replaying %d trace%s on %s, %d repetitions, into %s" % (
            len(opts.traces), "s" if len(opts.traces) > 1 else "",
            opts.backends or "every backend", opts.reps, outdir))
        st, secs, last = run_replay(binary, opts.traces, outdir, opts.backends,
                                    opts.reps, opts.tick, lateness=opts.lateness,
                                    sweep=not opts.no_sweep, stop=stop)
        if st == 0 and opts.counts and not stop.signum:
            if not M.valgrind_version():
                RS.say("timerbench: replay --counts needs valgrind (Debian package valgrind)")
                st, last = 1, "valgrind is not installed"
            elif add_counts(binary, opts.traces, outdir, opts.backends, opts.tick,
                            opts.jobs or 2):
                st, last = 1, "some Valgrind counts failed (replay.json names them)"
            secs = time.monotonic() - t0

        def interrupted():
            """Undoes what the replay wrote and says so; the exit code."""
            undo(outdir, made, lock)
            RS.say("timerbench: replay: interrupted by %s; what it had "
                   "written was removed, %s is as it was: run the same "
                   "command again" % (stop.name, outdir))
            return 128 + stop.signum
        if stop.signum:
            code = interrupted()
            lock = None      # released by undo(), not by the finally
            return code
        # a replay whose checks failed on some backends: their errors, from
        # replay.json (the other backends' results are there too)
        json_path = os.path.join(outdir, "replay.json")
        errors = [] if st == 0 else \
            (os.path.exists(json_path) and replay_errors(json_path)) or [last]
        facts = {
            "format_version": RS.FORMAT_VERSION,
            "machine": M.machine_facts(),
            "git": {"commit": M.git("rev-parse", "HEAD"),
                    "dirty": bool(M.git("status", "--porcelain"))},
            "run": {"profile": "replay",
                    "backends": opts.backends.split(",") if opts.backends
                    else RS.registered_backends(ROOT),
                    "started_utc": started.isoformat(),
                    "finished_utc": RS.now_utc(),
                    "total_seconds": secs,
                    "command": sys.argv,
                    "status": "complete" if st == 0 else "failed",
                    "errors": errors,
                    "replay": {"traces": [os.path.abspath(t) for t in opts.traces],
                               "reps": opts.reps, "tick_ns": opts.tick,
                               "lateness": opts.lateness,
                               "sweep": not opts.no_sweep,
                               "status": "complete" if st == 0 else "failed",
                               "seconds": secs},
                    "sessions": []},
            "instances": {"expected": {}, "missing": {}},
        }
        facts["machine"]["load_average_at_end"] = os.getloadavg()
        RS.write_json(os.path.join(outdir, "machine.json"), facts)
        if stop.signum:   # while machine.json was written: not a whole run
            code = interrupted()
            lock = None      # released by undo(), not by the finally
            return code
    finally:
        if lock is not None:
            RS.release_lock(lock, outdir)
    if st != 0:
        RS.say("timerbench: replay failed (exit %d): %s" % (st, last))
        if os.path.exists(json_path):
            # what did pass is kept: the report renders it
            RS.say("timerbench: replay: the results of the backends that "
                   "passed their checks are in %s" % outdir)
            print(outdir)
        return 1 if st != 2 else 2
    RS.say("timerbench: replay done in %.1f s -> %s" % (secs, outdir))
    print(outdir)
    return 0
