"""tbkit.runstate — what keeps a benchmark run's results valid when the run is
interrupted, and lets it continue (Python standard library only; used by
tbkit.bench and tbkit.replayrun).

A results directory in the making holds, besides the files
bench/README.md describes:

    .lock                      the running bench/run.py: pid, host, start
                               (an flock()ed file: a dead owner's lock is
                               stale and is taken over)
    journal/<harness>-<k>.jsonl
                               what session k's harness streamed: one Google
                               Benchmark JSON document a line, the context
                               first, then one line per finished instance
    journal/samples-<k>.csv    session k's raw samples

After every harness, and when the run stops for any reason, `commit`
rebuilds `<harness>.json` and `samples.csv` from the journals, keeping only
instances that finished, and writes them (and machine.json) by
write-then-rename: the directory's JSON files are always whole documents.
A run killed so hard that it could not commit (SIGKILL, power) leaves its
journals, and `--resume` (or `--recover`) commits them first.

machine.json carries `format_version` (FORMAT_VERSION), the run's `status`
(running, interrupted, incomplete, complete), every instance the run was
to measure (`instances.expected`), those still missing
(`instances.missing`), the harnesses whose JSON is final
(`instances.sealed`) and one entry per session (`run.sessions`).
"""

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from tbkit import formats
from tbkit.formats import (FORMAT_VERSION, GB_SUFFIX_KEYS, JOURNAL_DIR, LOCK,  # noqa: F401
                           loads, write_json)

# Google Benchmark's own name segments; what is left is the canonical name
# the samples CSV uses.
_GB_SEGMENT = re.compile(r"^(manual_time|real_time|process_time|"
                         r"iterations:\d+|repeats:\d+|threads:\d+|"
                         r"min_time:[\d.]+s?|min_warmup_time:[\d.]+s?)$")
# A --benchmark_filter argument stays well under Linux's 128 KiB per
# argument; more missing instances than fit run in several processes.
MAX_FILTER_CHARS = 60000


class RunError(Exception):
    """A reason not to start or continue a run, in words for the user."""


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def say(text):
    """A line on stderr that cannot fail: after SIGHUP the terminal is gone."""
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def shell_word(text):
    """`text` quoted for a POSIX shell: a results directory's name in a
    command the user is told to paste may hold quotes, newlines or
    backquotes."""
    return shlex.quote(text)


def canonical(run_name):
    """`<op>/<backend>/<workload>/<config>/N:<n>`: Google Benchmark's own
    segments dropped (the samples CSV's benchmark column)."""
    return "/".join(p for p in run_name.split("/") if not _GB_SEGMENT.match(p))


def family_of(run_name):
    """The run_name Google Benchmark gives a family's BigO/RMS entries: the
    instance's with its arguments (`N:100`, bare numbers) removed."""
    out = []
    for p in run_name.split("/"):
        k, colon, _ = p.partition(":")
        if (colon and k not in GB_SUFFIX_KEYS) or p.isdigit():
            continue
        out.append(p)
    return "/".join(out)


def registered_backends(root):
    """The registry, read from the top-level meson.build's `backends` list
    (no build needed)."""
    try:
        with open(os.path.join(root, "meson.build"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^backends\s*=\s*\[([^\]]*)\]", text, re.M)
    if not m:
        return None
    return re.findall(r"'([^']+)'", m.group(1))


# ---- the build directory ----------------------------------------------------

def build_lock_path(build_dir):
    """The lock file of a build directory: beside it, <build_dir>.lock
    (the directory itself may not exist before `meson setup`)."""
    return os.path.abspath(build_dir).rstrip(os.sep) + ".lock"


@contextlib.contextmanager
def build_lock(build_dir, stop=None, poll=0.1):
    """Holds the build directory's lock (flock on build_lock_path, which
    the ./timerbench script's configure and compile steps take too) while
    the block configures or builds in it: two runs at once (issue 42, item
    2) take turns instead of the second failing on Meson's own lock, and
    the second then finds the build done.  Says so on stderr when it has
    to wait.  With `stop` (an installed Stop), a signal while waiting is
    a RunError; nothing was built."""
    path = build_lock_path(build_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a+")
    try:
        waiting = False
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                    raise
            if not waiting:
                say("timerbench: %s is being built by another run; waiting "
                    "for it" % build_dir)
                waiting = True
            if stop is not None and stop.signum:
                raise RunError("interrupted by %s while waiting for the build "
                               "in %s" % (stop.name, build_dir))
            time.sleep(poll)
        yield
    finally:
        f.close()


def build_target(build_dir, root, target, jobs=None, stop=None):
    """Configures build_dir once (release, from the checkout `root`) and
    builds one ninja target in it (e.g. bench/timerbench-play), holding
    the build directory's lock (build_lock); returns the target's path.
    subprocess.CalledProcessError when meson or ninja fails."""
    with build_lock(build_dir, stop):
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            subprocess.check_call(["meson", "setup", build_dir, root,
                                   "--buildtype=release"], stdout=sys.stderr)
        cmd = ["ninja", "-C", build_dir, target]
        if jobs:
            cmd[1:1] = ["-j", str(jobs)]
        subprocess.check_call(cmd, stdout=sys.stderr)
    return os.path.join(build_dir, target)


def run_logged(cmd, log_path, show=None):
    """Runs cmd (stdout discarded) with its stderr appended to log_path,
    after a "$ cmd" line, and echoed to ours prefixed "timerbench: " where
    show(line) is true (None: every line); returns (exit status, its last
    non-empty stderr line).  OSError when the log or cmd cannot be opened."""
    last = ""
    with open(log_path, "a", encoding="utf-8", errors="replace") as lf:
        lf.write("$ %s\n" % " ".join(cmd))
        with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace") as p:
            for line in p.stderr:
                lf.write(line)
                lf.flush()
                last = line.strip() or last
                if show is None or show(line):
                    sys.stderr.write("timerbench: " + line)
            return p.wait(), last


def check_backends(backends, root, variants=False):
    """Every name of a --backends list is in meson.build's registry (no
    build needed); with `variants`, NAME+roc (NAME's remove-on-cancel
    variant, which the replay binary refuses for a backend without that
    policy) too.  An empty list (`--backends ''`, `a,,b`) is refused, not
    read as every backend, and so is a name given twice (it would be run,
and ranked, twice).  None (no --backends) passes.  Raises RunError."""
    if backends is None:
        return
    registered = registered_backends(root) or []
    names = backends.split(",")
    if not all(n.strip() for n in names):
        raise RunError("--backends %r has an empty name; give one or more "
                       "of: %s (or leave --backends out for all)" % (
                           backends, ", ".join(registered)))
    bad = [b for b in names
           if (b[:-4] if variants and b.endswith("+roc") else b) not in registered]
    if bad:
        raise RunError("no backend %s; the registered backends are: %s" % (
            ", ".join("'%s'" % b for b in bad), ", ".join(registered)))
    twice = sorted({n for n in names if names.count(n) > 1}, key=names.index)
    if twice:
        raise RunError("--backends names %s more than once; give each "
                       "backend once" % ", ".join("'%s'" % n for n in twice))


def source_state(root):
    """The source tree's commit and a hash of its uncommitted changes."""
    def git(*args):
        try:
            return subprocess.check_output(["git", "-C", root] + list(args),
                                           stderr=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError):
            return None
    head = git("rev-parse", "HEAD")
    diff = git("diff", "HEAD")
    return {"commit": head.decode().strip() if head else None,
            "diff_sha1": hashlib.sha1(diff).hexdigest() if diff else None}


def list_instances(binary, args):
    """Instance names the harness would run with `args`, in its order
    (Google Benchmark's --benchmark_list_tests: nothing is run)."""
    out = subprocess.run([binary] + args + ["--benchmark_list_tests=true"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if out.returncode != 0:
        raise RunError("%s cannot list its benchmarks: %s" % (
            os.path.basename(binary), out.stderr.strip() or
            "exit status %d" % out.returncode))
    return [l.strip() for l in out.stdout.splitlines() if l.strip()]


def exact_filters(names):
    """Google Benchmark filters (POSIX extended regexes) that select exactly
    `names`, each short enough for one command-line argument."""
    esc = [re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", n) for n in names]
    out, cur, size = [], [], 0
    for e in esc:
        if cur and size + len(e) + 1 > MAX_FILTER_CHARS:
            out.append(cur)
            cur, size = [], 0
        cur.append(e)
        size += len(e) + 1
    if cur:
        out.append(cur)
    return ["^(%s)$" % "|".join(c) for c in out]


# ---- the lock ---------------------------------------------------------------

def _proc_start(pid):
    """The process's start time in clock ticks since boot, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def read_lock(outdir):
    try:
        with open(os.path.join(outdir, LOCK)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def acquire_lock(outdir):
    """Takes the directory's lock for this process; returns the open file
    (keep it open: the lock lasts as long as it, and harnesses inherit it so
    it also outlives a killed run.py until they exit).  Raises RunError if
    another run holds it.  Says so when it takes over a stale lock."""
    path = os.path.join(outdir, LOCK)
    f = open(path, "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        f.close()
        if e.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise
        owner = read_lock(outdir) or {}
        raise RunError("%s is in use by another run (pid %s on %s, started "
                       "%s); wait for it, or stop it" % (
                           outdir, owner.get("pid", "?"),
                           owner.get("host", "?"), owner.get("started_utc", "?")))
    f.seek(0)
    try:
        old = json.loads(f.read() or "null")
    except ValueError:
        old = None
    if isinstance(old, dict) and old.get("pid"):
        say("timerbench: %s: stale lock of pid %s (started %s, no longer "
            "running) taken over" % (outdir, old.get("pid"), old.get("started_utc", "?")))
    f.seek(0)
    f.truncate()
    f.write(json.dumps({"pid": os.getpid(), "host": platform.node(),
                        "proc_start": _proc_start(os.getpid()),
                        "started_utc": now_utc()}) + "\n")
    f.flush()
    return f


def lock_holder(outdir):
    """The lock's content if a live process holds it, else None."""
    path = os.path.join(outdir, LOCK)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return read_lock(outdir) or {}
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    except OSError:
        return None
    return None


def release_lock(f, outdir):
    try:
        os.unlink(os.path.join(outdir, LOCK))
    except OSError:
        pass
    f.close()


# ---- the results directory ---------------------------------------------------

def check_new_out(outdir, held=False):
    """An --out for a new run: absent, or an empty directory (`held`: this
    process has taken its lock)."""
    if os.path.islink(outdir) and not os.path.exists(outdir):
        raise RunError("--out %s is a symbolic link to %s, which does not "
                       "exist" % (outdir, os.readlink(outdir)))
    if os.path.exists(outdir):
        if not os.path.isdir(outdir):
            raise RunError("--out %s exists and is not a directory" % outdir)
        holder = None if held else lock_holder(outdir)
        if holder is not None:
            raise RunError("--out %s is in use by another run (pid %s on %s)" % (
                outdir, holder.get("pid", "?"), holder.get("host", "?")))
        entries = [e for e in os.listdir(outdir) if e != LOCK]
        if entries:
            hint = ""
            if os.path.exists(os.path.join(outdir, "machine.json")):
                hint = "; to continue the run in it, use --resume %s" % shell_word(outdir)
            raise RunError("--out %s exists and is not empty (%d entries)%s" % (
                outdir, len(entries), hint))
    else:
        # It will be made: the nearest existing parent must take it.
        parent = os.path.dirname(os.path.abspath(outdir))
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            raise RunError("--out %s cannot be created: %s is not a writable "
                           "directory" % (outdir, parent))


def load_machine(outdir):
    """machine.json of a results directory written by this format, or a
    RunError that says what the directory is, or names each field whose
    type is not the format's (formats.machine_type_problems)."""
    if not os.path.isdir(outdir):
        raise RunError("%s: no such results directory" % outdir)
    path = os.path.join(outdir, "machine.json")
    if not os.path.exists(path):
        raise RunError("%s is not a results directory: it has no machine.json" % outdir)
    try:
        with open(path, encoding="utf-8") as f:
            facts = loads(f.read())
    except (OSError, ValueError) as e:
        raise RunError("%s: machine.json cannot be read (%s)" % (outdir, e))
    if not isinstance(facts, dict) or not isinstance(facts.get("run"), dict):
        raise RunError("%s is not a results directory: machine.json has no run facts" % outdir)
    version = facts.get("format_version")
    build = facts.get("build") if isinstance(facts.get("build"), dict) else {}
    who = "timerbench %s (commit %s)" % (build.get("timerbench_version", "?"),
                                         build.get("git_commit", "?"))
    if version is None:
        raise RunError("%s was written by %s, results format 1, which records "
                       "no interruption state: it cannot be resumed (report "
                       "--from still renders it)" % (outdir, who))
    if not isinstance(version, int) or isinstance(version, bool):
        kind = {str: "string", float: "number", bool: "boolean", list: "list",
                dict: "object"}.get(type(version), "value")
        raise RunError("%s: machine.json's format_version is %s, a JSON %s, not "
                       "an integer; this checkout knows formats 1 to %d"
                       % (outdir, json.dumps(version)[:40], kind, FORMAT_VERSION))
    if version > FORMAT_VERSION or version < 1:
        raise RunError("%s was written by %s in results format %s; this "
                       "checkout knows formats up to %d: use a newer checkout"
                       % (outdir, who, version, FORMAT_VERSION))
    typed = formats.machine_type_problems(facts)
    if typed:
        # a run is continued from these fields: one of another type would
        # be a traceback later, or a run resumed with the wrong options
        raise RunError("%s: machine.json has fields of the wrong type, so the "
                       "run cannot be continued from it:\n  %s" % (
                           outdir, "\n  ".join(m for _, m in typed)))
    return facts


def journal_path(outdir, name, session):
    return os.path.join(outdir, JOURNAL_DIR, "%s-%d.%s" % (
        name, session, "csv" if name == "samples" else "jsonl"))


def read_journal(path):
    """(context, [records]) of one journal; a torn last line (the process
    was killed while writing it) is left out."""
    ctx, records = None, []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return None, []
    for line in lines:
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        if ctx is None and isinstance(doc.get("context"), dict):
            ctx = doc["context"]
        b = doc.get("benchmarks")
        if isinstance(b, list):
            records.append([r for r in b if isinstance(r, dict)])
    return ctx, records


def trim_torn_line(path):
    """Cuts a journal back to its last whole line before it is appended to."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                f.truncate(end)
    except OSError:
        pass


def _complete(recs):
    """True when an instance's journal records are all Google Benchmark
    reports for it: it reports the runs, then (in a second line) their
    mean/median/stddev/cv when at least two runs succeeded."""
    runs = [r for r in recs if r.get("run_type") != "aggregate"]
    stats = [r for r in recs if r.get("run_type") == "aggregate"]
    ok = [r for r in runs if not r.get("error_occurred")]
    return bool(stats) or (bool(runs) and len(ok) < 2)


def collect(outdir, harness, sessions):
    """Every finished instance of one harness over the sessions:
    {instance: (session, [records])}, the first context, and
    {family: (session, [BigO/RMS records])}."""
    done, fits, context = {}, {}, None
    for k in sessions:
        ctx, groups = read_journal(journal_path(outdir, harness, k))
        if context is None:
            context = ctx
        found = {}
        for g in groups:
            for r in g:
                name = r.get("run_name")
                if not isinstance(name, str):
                    continue
                if r.get("aggregate_name") in ("BigO", "RMS"):
                    if name not in fits or fits[name][0] == k:
                        fits.setdefault(name, (k, []))[1].append(r)
                else:
                    found.setdefault(name, []).append(r)
        for name, recs in found.items():
            if name not in done and _complete(recs):
                done[name] = (k, recs)
    return done, fits, context


def commit(outdir, facts):
    """Rebuilds each harness's JSON and samples.csv from the journals (only
    finished instances, in the order the harness lists them) and updates
    facts' instance lists.  Returns {harness: [missing instances]}."""
    sessions = [s["session"] for s in facts["run"].get("sessions", [])]
    expected = facts["instances"]["expected"]
    missing, split, done_by, unexpected = {}, [], {}, {}
    sealed = facts["instances"].setdefault("sealed", [])
    for h, names in expected.items():
        done, fits, context = collect(outdir, h, sessions)
        if context is None and not done:
            # No journal at all: a run stopped while "running" whose
            # journals are gone keeps what its <harness>.json holds.
            have = results_file_instances(os.path.join(outdir, h + ".json"))
            missing[h] = [n for n in names if n not in have]
            if not missing[h] and h not in sealed:
                sealed.append(h)
            continue
        records, by_family, last_done = [], {}, {}
        for name in names:
            by_family.setdefault(family_of(name), []).append(name)
            if name in done:
                last_done[family_of(name)] = name
        for name in names:
            if name not in done:
                continue
            k, recs = done[name]
            done_by[canonical(name)] = k
            records += recs
            fam = family_of(name)
            if last_done[fam] != name:
                continue
            # A fit is kept when one process measured the whole family (as
            # Google Benchmark places it: after the family's last instance);
            # one a resumed session computed over part of it is not, and a
            # family measured in two sessions has none.
            fit = fits.get(fam)
            if fit and all(done.get(n, (None,))[0] == fit[0] for n in by_family[fam]):
                records += fit[1]
            elif len({done[n][0] for n in by_family[fam] if n in done}) > 1:
                split.append(fam)
        # Instances the harness ran under names it did not list (a probe
        # that decides which exist came out otherwise): kept, and named.
        extra = [n for n in done if n not in by_family.get(family_of(n), ())]
        for name in extra:
            records += done[name][1]
            done_by[canonical(name)] = done[name][0]
        if extra:
            unexpected[h] = extra
        missing[h] = [n for n in names if n not in done]
        # A harness whose every instance is in its JSON is sealed: later
        # commits leave that file alone, so that what is done to it after
        # the harness (more repetitions merged in, say) is kept.
        if h in sealed:
            continue
        doc = {"context": dict(context or {}), "benchmarks": records}
        write_json(os.path.join(outdir, h + ".json"), doc)
        if not missing[h]:
            sealed.append(h)
    _commit_samples(outdir, sessions, done_by)
    facts["instances"]["missing"] = {h: v for h, v in missing.items() if v}
    facts["instances"]["done"] = {h: len(expected[h]) - len(missing[h]) for h in expected}
    facts["instances"]["families_split"] = sorted(set(split))
    facts["instances"]["unexpected"] = unexpected
    return missing


def results_file_instances(path):
    """Names of the instances one harness's JSON holds whole (as _complete
    judges a journal's), or an empty set when it is absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = loads(f.read())
    except (OSError, ValueError):
        return set()
    entries = doc.get("benchmarks") if isinstance(doc, dict) else None
    by_name = {}
    for r in entries if isinstance(entries, list) else ():
        if isinstance(r, dict) and isinstance(r.get("run_name"), str) \
                and r.get("aggregate_name") not in ("BigO", "RMS"):
            by_name.setdefault(r["run_name"], []).append(r)
    return {n for n, recs in by_name.items() if _complete(recs)}


def _commit_samples(outdir, sessions, done_by):
    """samples.csv: each finished instance's rows from the session that
    finished it (rows of an abandoned instance are dropped)."""
    header, rows, any_file = None, [], False
    for k in sessions:
        path = journal_path(outdir, "samples", k)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        any_file = True
        lines = text.split("\n")
        if not text.endswith("\n"):
            lines = lines[:-1]     # torn last row
        for i, line in enumerate(lines):
            if not line:
                continue
            if i == 0 and line.startswith("benchmark,"):
                header = header or line
                continue
            name = line[1:].split('"', 1)[0] if line.startswith('"') else line.split(",", 1)[0]
            if done_by.get(name) == k:
                rows.append(line)
    if any_file:
        formats.atomic_write(os.path.join(outdir, "samples.csv"),
                     "\n".join([header or "benchmark,metric,rep,seq,value_ns,weight"] + rows) + "\n")


def finish_journals(outdir):
    """A complete run's journals are in its JSON files; they go."""
    shutil.rmtree(os.path.join(outdir, JOURNAL_DIR), ignore_errors=True)


# ---- interruption -------------------------------------------------------------

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stop:
    """The signal that stopped the run (None while it runs) and the harness
    process to pass it on to."""

    def __init__(self):
        self.signum = None
        self.at = None
        self.child = None

    def handle(self, signum, frame):
        if self.signum is None:
            self.signum = signum
            self.at = now_utc()
        child = self.child
        # A terminal's Ctrl-C reaches the harness too; a `kill` of run.py
        # alone does not, and a second signal changes nothing.
        if child is not None and child.poll() is None:
            try:
                child.send_signal(signal.SIGINT)
            except OSError:
                pass

    def install(self):
        for s in SIGNALS:
            signal.signal(s, self.handle)
        # A closed terminal must not turn the last messages into a crash.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    @property
    def name(self):
        return signal.Signals(self.signum).name if self.signum else None


def machine_differences(old, new):
    """What differs between the machine a run started on and this one."""
    keys = ("hostname", "cpu_model", "cores", "memory_kb", "kernel", "arch")
    return ["%s: %s, now %s" % (k, old.get(k), new.get(k)) for k in keys
            if old.get(k) != new.get(k)]
