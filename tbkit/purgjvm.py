"""tbkit.purgjvm — the JVM side of issue 41's purgatory experiment: runs
jvm/Purgatory.java (the open-loop player and its subjects DelayQueue,
STPE, STPE-roc and Netty, one sweep inside one JVM) into
outdir/purgatory-jvm.json and returns the facts for machine.json.

    jvm_purgatory(build_dir_or_jar, outdir, rates, seconds, repetitions,
                  stop, seed, profile=None, subjects=None, confirm=0,
                  build=True)

The grid (rates, play seconds, repetitions, stop rule) is the caller's
(tbkit/purgrun.py's GRIDS per profile); the subjects default to
PROFILE_SUBJECTS for the profile, all four otherwise.  Java, javac and
Debian's Netty are found as tbkit/bench.py's JVM step finds them (the
same paths; not imported from there, since bench.py imports this
module's caller); without them the step is skipped with the reason.  The
document is written through a temporary name, so a stopped run leaves
none; the player's progress goes to stderr and, in full, to
outdir/purgatory-jvm.log.  jvm/README.md ("The purgatory experiment")
describes the method and the file.
"""
import json
import math
import os
import shutil
import signal
import subprocess
import time

from tbkit import runstate as RS

# The jar in a build directory and Debian's Netty: the same paths as
# tbkit/bench.py's JVM_JAR and NETTY_JAR (jvm/meson.build builds the jar).
JAR = os.path.join("jvm", "timerbench-jvm.jar")
NETTY_JAR = "/usr/share/java/netty-common.jar"
# One JVM for the whole sweep, its heap fixed and touched before the first
# play (-XX:+AlwaysPreTouch), so that no play pays for growing it or for
# the first touch of its pages (on this VM about 1-5 s per GB, which a play
# would see as lag).  Its size follows the grid's largest play: a request
# costs the player's arrays about 70 bytes (two operations' times and
# codes, lag, deadline, lateness) and a subject's task object with its slot
# under 200, so 300 bytes a request, plus 256 MB for the JVM.
HEAP_BASE_MB, HEAP_PER_REQUEST, HEAP_MIN_MB, HEAP_MAX_MB = 256, 300, 512, 4096


def heap(rates, seconds):
    """The JVM's heap options for a grid."""
    need = HEAP_BASE_MB + max(rates) * seconds * HEAP_PER_REQUEST / 2 ** 20
    mb = int(min(HEAP_MAX_MB, max(HEAP_MIN_MB, 64 * math.ceil(need / 64))))
    return ["-Xms%dm" % mb, "-Xmx%dm" % mb, "-XX:+AlwaysPreTouch"]

SUBJECTS = ("DelayQueue", "STPE", "STPE-roc", "Netty", "floor")
# The standard profile's budget is 45 s with the JVM's start: all four
# subjects took 51 s at its grid (0.25 s plays, a saturated rate confirmed
# once), so quick and standard run the two the claim compares (Kafka's old
# purgatory and a wheel) and full runs all four (DECISIONS.md).
# `floor` is the JVM player alone (schedule and cancel do nothing): where
# it saturates is that player's limit, which the claim's JVM pair needs to
# tell a wheel that kept up from one the player could not push (D49).
PROFILE_SUBJECTS = {"smoke": ("DelayQueue", "Netty", "floor"),
                    "quick": ("DelayQueue", "Netty", "floor"),
                    "standard": ("DelayQueue", "Netty", "floor"), "full": SUBJECTS}
# The two cores the C players pin to (player on 0, subject on 1): the JVM
# as a whole is confined to them when the machine has both.
CPUS = (0, 1)


def missing():
    """Why the JVM cannot run the player (None when it can)."""
    gone = [what for what, ok in (
        ("java and javac (Debian's default-jdk-headless)",
         shutil.which("java") and shutil.which("javac")),
        ("%s (Debian's libnetty-java)" % NETTY_JAR, os.path.isfile(NETTY_JAR)))
        if not ok]
    return "%s not installed" % " and ".join(gone) if gone else None


def command(jar, out, rates, seconds, repetitions, stop, seed, profile, subjects,
            confirm=0):
    """The argument list that runs the sweep (taskset first when CPUS are
    this process's to use)."""
    pin = []
    try:
        if shutil.which("taskset") and set(CPUS) <= os.sched_getaffinity(0):
            pin = ["taskset", "-c", ",".join(str(c) for c in CPUS)]
    except (AttributeError, OSError):
        pass
    return (pin + ["java"] + heap(rates, seconds)
            + ["-cp", jar + os.pathsep + NETTY_JAR, "Purgatory",
               "--shapes", "few,many",
               "--rates", ",".join(_rate(r) for r in rates),
               "--seconds", repr(float(seconds)),
               "--repetitions", str(int(repetitions)),
               "--stop", stop,
               "--confirm", str(int(confirm)),
               "--subjects", ",".join(subjects),
               "--seed", str(int(seed)),
               "--profile", profile,
               "--out", out])


def _rate(r):
    return str(int(r)) if float(r).is_integer() else repr(float(r))


def jvm_purgatory(build_dir_or_jar, outdir, rates, seconds, repetitions, stop,
                  seed, profile=None, subjects=None, confirm=0, build=True):
    """Runs the JVM purgatory sweep into outdir/purgatory-jvm.json.
    `build_dir_or_jar` is a build directory (its jvm/timerbench-jvm.jar,
    built there first with ninja when `build`) or the jar itself; `stop`
    is "first" or "two"; `confirm` plays up to that many more of a rate
    found saturated (purgrun.py's GRIDS "confirm").  Returns machine.json's facts: {"status":
    "complete", "skipped", "failed" or "stopped", "seconds", "why" (when
    not complete), "subjects", "rows" (complete: how many), "skipped_subjects"
    (complete: the document's skipped list)}."""
    t0 = time.monotonic()
    if subjects is None:
        subjects = PROFILE_SUBJECTS.get(profile, SUBJECTS)
    subjects = list(subjects)
    facts = {"subjects": subjects}

    def done(status, why=None):
        facts["status"] = status
        if why:
            facts["why"] = why
            RS.say("timerbench: purgatory-jvm: %s: %s" % (status, why))
        facts["seconds"] = time.monotonic() - t0
        return facts

    bad = [s for s in subjects if s not in SUBJECTS]
    if bad or not subjects:
        raise ValueError("purgjvm: unknown subjects %r (%s)" % (bad, ", ".join(SUBJECTS)))
    if stop not in ("first", "two"):
        raise ValueError("purgjvm: stop is 'first' or 'two', not %r" % (stop,))
    why = missing()
    if why:
        return done("skipped", why)
    if os.path.isdir(build_dir_or_jar):
        jar = os.path.join(build_dir_or_jar, JAR)
        if build:
            cmd = ["ninja", "-C", build_dir_or_jar, JAR]
            with RS.build_lock(build_dir_or_jar):
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   universal_newlines=True, errors="replace")
            if p.returncode != 0:
                tail = (p.stdout.strip().splitlines() or ["exit %d" % p.returncode])[-1]
                return done("skipped", "the jar could not be built in %s (%s); a build "
                            "directory configured before the JDK was installed needs "
                            "`meson setup --reconfigure`" % (build_dir_or_jar, tail))
    else:
        jar = build_dir_or_jar
    if not os.path.isfile(jar):
        return done("skipped", "%s is not built" % jar)
    out = os.path.join(outdir, "purgatory-jvm.json")
    tmp = out + ".part"
    cmd = command(jar, tmp, rates, seconds, repetitions, stop, seed, profile or "custom",
                  subjects, confirm)
    RS.say("timerbench: purgatory-jvm: %s at %d rates, %g s plays"
           % (", ".join(subjects), len(rates), seconds))
    try:
        st, last = RS.run_logged(cmd, os.path.join(outdir, "purgatory-jvm.log"))
    except OSError as e:
        return done("failed", "%s: %s" % (e.filename or "java", e.strerror or e))
    if st != 0 or not os.path.isfile(tmp):
        if os.path.exists(tmp):
            os.unlink(tmp)
        if st < 0 or st >= 128:
            return done("stopped", "the player was stopped (%s); a resume runs it again"
                        % (signal.Signals(-st).name if st < 0 else "exit %d" % st))
        return done("failed", "the player exited with %d: %s (purgatory-jvm.log)" % (st, last))
    try:
        with open(tmp, encoding="utf-8") as f:
            doc = json.load(f)
        rows, skipped = doc["rows"], doc["skipped"]
        if doc.get("format") != 1 or not isinstance(rows, list):
            raise ValueError(doc.get("format"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        os.unlink(tmp)
        return done("failed", "the player wrote no whole purgatory-jvm document "
                    "(purgatory-jvm.log)")
    os.replace(tmp, out)
    facts["rows"] = len(rows)
    facts["skipped_subjects"] = skipped
    return done("complete")
