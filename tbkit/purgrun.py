"""tbkit.purgrun — the purgatory experiment's sweep (issue 41): runs
timerbench-play (bench/play.c) for every C subject, both shapes, at rates
up the profile's grid, and writes purgatory.json (Python standard library
only).

    python3 -m tbkit.purgrun --out DIR [--profile quick|standard|full]
                             [--build DIR | --binary PATH] [--no-build]
                             [--backends a,b] [--subjects a,b]
                             [--rates R,R,...] [--seconds S]
                             [--repetitions K] [--seed N]

Subjects are what `timerbench-play --list` prints: every registered
backend (--backends narrows them, as bench/run.py's option does), the
floor (the player's own limit) and every library subject built in;
--subjects names exactly which.  For each subject and shape (few, many)
the rates go up the grid, each rate played `repetitions` times (the same
seeds for every subject, so all get the same traces), until the profile's
stop rule: the sweep of a subject and shape stops at its first saturated
rate (`stop_after` 1: quick, standard) or after `stop_after` saturated
rates in a row (2: full).  A rate is saturated when more than half of its
repetitions are (the players' rule: bench/player.h, PL_SAT_*); in quick
and standard a saturated rate is confirmed by one more play ("confirm").  A play
that fails (the subject cannot open, a schedule fails, a fire breaks the
contract) ends that subject's sweep and is listed in "skipped" with why.

purgatory.json (written whole, through a temporary name, after every
subject, so it is a valid document at any moment):

    {"format": 1, "profile": str,
     "pinning": {"player_cpu": int|null, "subject_cpu": int|null, "note": str},
     "grid": {"rates": [...], "seconds": float, "repetitions": int},
     "rows": [one row per play, bench/player.h struct pl_result's keys],
     "skipped": [{"subject": str, "why": str}]}

Progress goes to stderr, one line per play.  Exit status: 0 done (rows
written, some subjects perhaps skipped), 1 the binary is missing or
nothing could be played, 2 bad arguments.

bench/run.py's quick, standard and full profiles call `purgatory_into`
after the libs harness.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from tbkit import formats as F
from tbkit import runstate as RS
from tbkit import machine as M

ROOT = M.ROOT
BINARY = os.path.join("bench", "timerbench-play")
SHAPES = ("few", "many")
FORMAT = 1

# The grid per profile (issue 41's shared design).  standard: 10,000 x 2^k
# up to 2,560,000, 0.5 s plays (the shared design said 0.4 s), one repetition, a sweep stops at its first
# saturated rate; quick (and smoke, the tests'): 10k, 40k, 160k, 0.2 s;
# full: 10,000 x 2^(k/2) up to 5,120,000, 2 s plays, three repetitions,
# stopping after two saturated rates in a row.  `confirm`: a rate whose
# single repetition saturated is played once more (repetition 1) and is
# saturated only if that one is too (the majority rule of rate_saturated:
# both of two), so that one stall of this shared machine does not end a
# sweep.  `stride` 3: standard climbs three grid steps at a time (10k,
# 80k, 640k, 2.56M) and plays the steps it skipped below its first
# saturated rate, lowest first (sweep()).  standard plays 0.5 s: a play
# shorter than the 200 ms timeout never has the structure expiring while
# it inserts (its first timeout fires after its last arrival), so
# standard's plays are 2.5 timeouts long, and it plays the backends and
# the floor; the libraries (`sides`) are quick's and full's (DECISIONS.md
# D43, D45).  quick's 0.2 s plays are the reduced sweep the issue allows.
GRIDS = {
    "smoke": {"rates": [10000, 40000, 160000], "seconds": 0.2,
              "repetitions": 1, "stop_after": 1, "confirm": 0},
    "quick": {"rates": [10000, 40000, 160000], "seconds": 0.2,
              "repetitions": 1, "stop_after": 1, "confirm": 1},
    "standard": {"rates": [10000 * 2 ** k for k in range(9)],
                 "seconds": 0.5, "repetitions": 1, "stop_after": 1,
                 "confirm": 1, "stride": 3, "sides": ("backend", "floor")},
    "full": {"rates": [int(round(10000 * 2 ** (k / 2.0))) for k in range(19)],
             "seconds": 2.0, "repetitions": 3, "stop_after": 2,
             "confirm": 0},
}

# The profiles of bench/run.py that run the purgatory step (smoke, the
# tests' profile, runs it only through this module).
PROFILE_STEP = ("quick", "standard", "full")

# The row's keys (bench/player.h pl_row_json; tbkit/purgatory.py reads them).
ROW_KEYS = ("subject", "side", "structure", "shape", "repetition",
            "target_rate", "offered_rate", "achieved_rate", "requests",
            "seconds", "lag_p50_ns", "lag_p99_ns", "lag_max_ns",
            "lag_growth_ns", "saturated", "why", "cpu_ns_per_request",
            "player_cpu_ns_per_request", "subject_cpu_ns_per_request",
            "fired", "fired_share", "timeouts_due", "lateness_growth_ns",
            "lateness_p50_ns", "lateness_p99_ns", "peak_pending",
            "peak_zombies")


class PlayError(Exception):
    """A play that did not give a row: its subject's sweep ends."""


class Stopped(Exception):
    """A signal stopped the sweep (bench/run.py's Stop)."""


def build_play(build_dir, jobs=None, stop=None):
    """Configures build_dir once (release) and builds timerbench-play,
    holding the build directory's lock (runstate.build_target)."""
    return RS.build_target(build_dir, ROOT, BINARY, jobs, stop)


def list_subjects(binary):
    """[(name, side)] of `timerbench-play --list`, in its order."""
    out = subprocess.run([binary, "--list"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    subjects = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0]:
            subjects.append((parts[0], parts[1]))
    return subjects


def pinning(binary):
    """The pinning a play uses (`timerbench-play --pinning`)."""
    out = subprocess.run([binary, "--pinning"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    return json.loads(out)


def choose_subjects(listed, backends=None, subjects=None):
    """The subjects to sweep, in --list order: all, or the backends among
    `backends` (every other side kept), or exactly `subjects`.  Raises
    ValueError naming any unknown name."""
    names = [n for n, _ in listed]
    if subjects is not None:
        unknown = [s for s in subjects if s not in names]
        if unknown:
            raise ValueError("unknown subject %s (timerbench-play --list: %s)"
                             % (", ".join(unknown), ", ".join(names)))
        return [(n, s) for n, s in listed if n in subjects]
    if backends is not None:
        known = [n for n, s in listed if s == "backend"]
        unknown = [b for b in backends if b not in known]
        if unknown:
            raise ValueError("unknown backend %s (%s)"
                             % (", ".join(unknown), ", ".join(known)))
        return [(n, s) for n, s in listed
                if s != "backend" or n in backends]
    return list(listed)


def play(binary, subject, shape, rate, seconds, seed, repetition):
    """One play: its row (a dict of ROW_KEYS).  PlayError when the binary
    fails or writes no row."""
    fd, tmp = tempfile.mkstemp(prefix="purg-", suffix=".json")
    os.close(fd)
    try:
        cmd = [binary, "--subject", subject, "--model", "purgatory",
               "--shape", shape, "--rate", repr(float(rate)),
               "--seconds", repr(float(seconds)), "--seed", str(seed),
               "--repetition", str(repetition), "--json", tmp]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE,
                               universal_newlines=True, errors="replace",
                               timeout=60 + 20 * seconds)
        except subprocess.TimeoutExpired:
            raise PlayError("%s %s at %g/s: no answer in %.0f s"
                            % (subject, shape, rate, 60 + 20 * seconds))
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise PlayError("%s %s at %g/s: exit %d: %s"
                            % (subject, shape, rate, p.returncode, last))
        try:
            with open(tmp, encoding="utf-8") as f:
                row = json.load(f)
        except (OSError, ValueError) as e:
            raise PlayError("%s %s at %g/s: no row (%s)"
                            % (subject, shape, rate, e))
        if sorted(row) != sorted(ROW_KEYS):
            raise PlayError("%s %s at %g/s: the row's keys are not the "
                            "schema's" % (subject, shape, rate))
        return row
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def rate_saturated(rows):
    """A rate is saturated when more than half of its repetitions are."""
    return sum(1 for r in rows if r["saturated"]) * 2 > len(rows)


def sweep(subjects, grid, play_fn, seed=1, progress=None, after_subject=None,
          stopped=None):
    """The sweep: for each (name, side) and shape, rates up grid["rates"]
    with grid["repetitions"] plays each (play_fn(subject, shape, rate,
    seconds, seed, repetition) -> row), stopping after grid["stop_after"]
    saturated rates in a row.  With grid["stride"] k > 1 (and stop_after
    1) the rates go up k grid steps at a time, the last rate always among
    them, and at the first saturated one the rates skipped just below it
    are played, lowest first, up to the first saturated: the same first
    saturated grid rate as a step-by-step sweep finds (saturation grows
    with the rate), in fewer plays.  Rows come out in rate order per
    subject and shape.  Returns (rows, skipped); progress(row) after each
    play, after_subject(rows, skipped) after each subject.  Raises Stopped
    (the rows so far given to after_subject) once stopped() is true."""
    rows, skipped = [], []
    rates = list(grid["rates"])
    stride = grid.get("stride", 1) if grid["stop_after"] == 1 else 1

    def at_rate(name, shape, rate):
        these = []
        reps = grid["repetitions"]
        for rep in range(reps + grid.get("confirm", 0)):
            # a confirmation (rep >= repetitions) only of a rate its
            # repetitions found saturated
            if rep >= reps and not rate_saturated(these):
                break
            if stopped and stopped():
                raise Stopped()
            row = play_fn(name, shape, rate, grid["seconds"], seed + rep, rep)
            these.append(row)
            if progress:
                progress(row)
        return these

    def sweep_shape(name, shape, played):
        in_a_row, i, below = 0, 0, -1
        while i < len(rates):
            these = played[i] = at_rate(name, shape, rates[i])
            if rate_saturated(these):
                in_a_row += 1
                # the rates skipped below this one, lowest first
                for j in range(below + 1, i):
                    played[j] = at_rate(name, shape, rates[j])
                    if rate_saturated(played[j]):
                        return
                if in_a_row >= grid["stop_after"]:
                    return
            else:
                in_a_row = 0
            below = i
            # k steps up, the last rate never stepped over
            i = len(rates) - 1 if i < len(rates) - 1 < i + stride \
                else i + stride

    for name, _side in subjects:
        try:
            for shape in SHAPES:
                played = {}
                try:
                    sweep_shape(name, shape, played)
                finally:  # a failed play keeps the rows before it
                    for j in sorted(played):
                        rows.extend(played[j])
        except PlayError as e:
            if stopped and stopped():  # the signal killed the play too
                raise Stopped()
            skipped.append({"subject": name, "why": str(e)})
            RS.say("timerbench: purgatory: %s skipped: %s" % (name, e))
        except Stopped:
            if after_subject:
                after_subject(rows, skipped)
            raise
        if after_subject:
            after_subject(rows, skipped)
    return rows, skipped


def document(profile, pin, grid, rows, skipped):
    """purgatory.json's document."""
    return {"format": FORMAT, "profile": profile, "pinning": pin,
            "grid": {"rates": list(grid["rates"]),
                     "seconds": float(grid["seconds"]),
                     "repetitions": int(grid["repetitions"])},
            "rows": rows, "skipped": skipped}


def run(binary, outdir, profile, grid, subjects, seed=1, stopped=None, left=()):
    """Sweeps `subjects` with `grid` into outdir/purgatory.json; returns
    (rows, skipped).  `left`: the subjects the profile does not play,
    [{subject, why}], listed first in the file's skipped list."""
    pin = pinning(binary)
    out = os.path.join(outdir, "purgatory.json")
    t0 = time.monotonic()
    count = [0]

    def progress(row):
        count[0] += 1
        RS.say("timerbench: purgatory: %-12s %-4s %9.0f/s: achieved %9.0f/s, "
               "lag p99 %8.1f us%s  [%d plays, %.0f s]" % (
                   row["subject"], row["shape"], row["target_rate"],
                   row["achieved_rate"] or 0.0, row["lag_p99_ns"] / 1e3,
                   ", saturated (%s)" % row["why"] if row["saturated"] else "",
                   count[0], time.monotonic() - t0))

    def save(rows, skipped):
        F.write_json(out, document(profile, pin, grid, rows, list(left) + skipped))

    RS.say("timerbench: purgatory: %d subjects, rates %s..%s/s, %g s plays, "
           "%d repetition(s); %s" % (len(subjects), grid["rates"][0],
                                     grid["rates"][-1], grid["seconds"],
                                     grid["repetitions"], pin["note"]))
    save([], [])
    rows, skipped = sweep(
        subjects, grid,
        lambda *a: play(binary, *a), seed=seed, progress=progress,
        after_subject=save, stopped=stopped)
    save(rows, skipped)
    return rows, list(left) + skipped


def purgatory_into(profile, build_dir, outdir, backends=None, jobs=None,
                   build=True, seed=None, stop=None):
    """bench/run.py's purgatory step: the profile's sweep into
    outdir/purgatory.json; returns the facts for machine.json's
    run.purgatory: {"status": "complete", "skipped", "failed" or
    "stopped", "why" (not complete), "seconds", "plays",
    "subjects_skipped"}.  `stop` (bench/run.py's Stop): a signal ends the
    sweep before its next play ("stopped"; purgatory.json holds the
    subjects done)."""
    grid = GRIDS.get(profile)
    if not grid:
        return None
    if isinstance(backends, str):  # bench/run.py's --backends a,b
        backends = [b for b in backends.split(",") if b]
    t0 = time.monotonic()
    facts = {"grid": {"rates": grid["rates"], "seconds": grid["seconds"],
                      "repetitions": grid["repetitions"]}}

    def done(status, why=None):
        facts["status"] = status
        if why:
            facts["why"] = why
            RS.say("timerbench: purgatory: %s: %s" % (status, why))
        facts["seconds"] = time.monotonic() - t0
        return facts
    try:
        binary = build_play(build_dir, jobs) if build else \
            os.path.join(build_dir, BINARY)
    except (RS.RunError, subprocess.CalledProcessError, OSError) as e:
        return done("skipped", "timerbench-play could not be built: %s" % e)
    if not os.access(binary, os.X_OK):
        return done("skipped", "%s is not built" % binary)
    try:
        subjects = choose_subjects(list_subjects(binary), backends)
        sides = grid.get("sides")
        left = [{"subject": n, "why": "the %s profile plays the %s subjects only; "
                 "the others are in quick and full (DECISIONS.md D45)" % (
                     profile, " and ".join(sides))}
                for n, s in subjects if sides and s not in sides]
        subjects = [(n, s) for n, s in subjects if not sides or s in sides]
        rows, skipped = run(binary, outdir, profile, grid, subjects, left=left,
                            seed=1 if seed is None else seed,
                            stopped=(lambda: bool(stop.signum)) if stop
                            else None)
    except Stopped:
        return done("stopped", "stopped by a signal; a resume runs the step "
                    "again")
    except (subprocess.CalledProcessError, OSError, ValueError) as e:
        return done("failed", str(e))
    facts["plays"] = len(rows)
    facts["subjects_skipped"] = len(skipped)
    if not rows:
        return done("failed", "no play gave a row (purgatory.json skipped)")
    return done("complete")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="python3 -m tbkit.purgrun",
        description="The purgatory experiment's sweep (issue 41) into "
                    "DIR/purgatory.json.")
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--profile", default="standard", choices=sorted(GRIDS))
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"),
                    metavar="DIR")
    ap.add_argument("--binary", metavar="PATH",
                    help="timerbench-play to run (nothing is built)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--backends", metavar="a,b")
    ap.add_argument("--subjects", metavar="a,b")
    ap.add_argument("--rates", metavar="R,R,...",
                    help="the grid's rates instead of the profile's")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--repetitions", type=int)
    ap.add_argument("--seed", type=int, default=1)
    opts = ap.parse_args(argv)
    grid = dict(GRIDS[opts.profile])
    if opts.rates is not None:
        try:
            grid["rates"] = [float(r) for r in opts.rates.split(",")]
        except ValueError:
            ap.error("--rates: a comma-separated list of numbers, got %r"
                     % opts.rates)
        if not grid["rates"] or any(not r > 0 for r in grid["rates"]) or \
                grid["rates"] != sorted(grid["rates"]):
            ap.error("--rates: rates above 0, ascending")
        grid["rates"] = [int(r) if r == int(r) else r for r in grid["rates"]]
    if opts.seconds is not None:
        if not 0 < opts.seconds <= 60:
            ap.error("--seconds: above 0 and at most 60")
        grid["seconds"] = opts.seconds
    if opts.repetitions is not None:
        if not 1 <= opts.repetitions <= 100:
            ap.error("--repetitions: 1 to 100")
        grid["repetitions"] = opts.repetitions
    if opts.backends is not None and opts.subjects is not None:
        ap.error("--backends and --subjects: one or the other")
    for o in ("backends", "subjects"):
        v = getattr(opts, o)
        if v is not None:
            names = [n for n in v.split(",") if n]
            if not names:
                ap.error("--%s: empty" % o)
            setattr(opts, o, names)
    if os.path.exists(opts.out) and not os.path.isdir(opts.out):
        ap.error("--out %s: not a directory" % opts.out)
    return opts, grid


def main(argv=None):
    opts, grid = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.binary:
        binary = opts.binary
    elif opts.no_build:
        binary = os.path.join(opts.build, BINARY)
    else:
        binary = build_play(opts.build)
    if not os.access(binary, os.X_OK):
        RS.say("timerbench: purgatory: %s is not built" % binary)
        return 1
    try:
        subjects = choose_subjects(list_subjects(binary), opts.backends,
                                   opts.subjects)
    except ValueError as e:
        RS.say("timerbench: purgatory: %s" % e)
        return 2
    os.makedirs(opts.out, exist_ok=True)
    rows, _ = run(binary, opts.out, opts.profile, grid, subjects,
                  seed=opts.seed)
    print(os.path.join(opts.out, "purgatory.json"))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
