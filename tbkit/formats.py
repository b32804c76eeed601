"""tbkit.formats — the results format's constants and the file primitives
every writer of a results directory shares (bottom layer: standard library
only, no project import).

One copy of: the results format version machine.json carries, the names
of the lock and journal directory, Google Benchmark's own name segments,
how a JSON integer is read, and the write-then-rename every results file
and report goes through.
"""

import json
import os

# machine.json's format_version.  1: without format_version (timerbench
# before issue 17); 2: status, instances, sessions, journals.  The reader
# (tbkit.results) reads 1 to FORMAT_VERSION, the runner writes it.
FORMAT_VERSION = 2
LOCK = ".lock"
JOURNAL_DIR = "journal"
# Google Benchmark appends these `key:value` / bare parts to a name.
GB_SUFFIX_KEYS = ("repeats", "iterations", "min_time", "min_warmup_time",
                  "threads")
GB_SUFFIX_WORDS = ("manual_time", "real_time", "process_time")
# Digits of a JSON integer read as a number; longer ones (Python refuses
# past 4300) are read as a float, an overflow that the checks then refuse.
MAX_INT_DIGITS = 1000


def json_int(text):
    """An integer of a JSON text: exact when it has at most MAX_INT_DIGITS
    digits, else a float (inf past 308 digits), never Python's ValueError
    for more than 4300 digits."""
    if len(text) <= MAX_INT_DIGITS:
        return int(text)
    return float(text)


def loads(text):
    """json.loads as every reader of results must call it: a 5,000-digit
    number is a value the checks refuse, not an exception."""
    return json.loads(text, parse_int=json_int)


def write_synced(path, text):
    """Writes `text` to `path` and flushes it to the disk."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def atomic_write(path, text):
    """Writes `path` whole or not at all (temporary file, fsync, rename);
    on failure (a full disk) the old file stays and no temporary is left."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fill_then_rename(tmp, path, lambda: write_synced(tmp, text))


def fill_then_rename(tmp, path, fill):
    """Calls fill() (which writes the temporary file `tmp`), then renames
    `tmp` onto `path`.  On any failure, fill's or the rename's, `tmp` is
    removed and the error raised again: `path` is left as it was."""
    try:
        fill()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path, doc):
    """A JSON document written by atomic_write."""
    atomic_write(path, json.dumps(doc, indent=2) + "\n")


# ---- machine.json's types ------------------------------------------------------

# The JSON type of every machine.json field a reader or the runner uses, by
# its dotted name ("run.profile"): "string", "integer", "number" (integer
# or not), "boolean", "object", "list of T", and "or null".  A field absent
# is not a problem (older runs, other profiles, replay and counts
# directories lack many); one present with another type is, named by
# machine_type_problems.  Keys not listed are not checked.
_STR, _INT, _NUM, _OBJ = "string", "integer", "number", "object"
MACHINE_TYPES = {
    "format_version": _INT,
    "machine": _OBJ, "build": _OBJ, "git": _OBJ, "run": _OBJ,
    "instances": _OBJ,
    "machine.cpu_model": _STR + " or null", "machine.cores": _INT + " or null",
    "machine.cores_usable": _INT + " or null",
    "machine.memory_kb": _INT + " or null", "machine.kernel": _STR + " or null",
    "machine.kernel_version": _STR + " or null", "machine.os": _STR + " or null",
    "machine.arch": _STR + " or null", "machine.governor": _STR + " or null",
    "machine.clocksource": _STR + " or null", "machine.hostname": _STR + " or null",
    "machine.python": _STR + " or null",
    "machine.load_average_at_start": "list of number",
    "machine.load_average_at_end": "list of number",
    "build.timerbench_version": _STR, "build.git_commit": _STR + " or null",
    "build.build_type": _STR, "build.backends": "list of string",
    "build.backend_caps": _OBJ, "build.profiles": _OBJ,
    "build.timer_slack_ns": _INT + " or null",
    "git.commit": _STR + " or null", "git.dirty": "boolean",
    "git.diff_sha1": _STR + " or null",
    "run.profile": _STR, "run.seed": _INT + " or null",
    "run.seed_note": _STR, "run.backends": "list of string",
    "run.backends_arg": _STR + " or null", "run.filter": _STR + " or null",
    "run.lateness": _STR + " or null", "run.harnesses": "list of string",
    "run.timer_slack_ns": _INT + " or null", "run.pinned_cpu": _OBJ,
    "run.interleaved": "boolean", "run.started_utc": _STR,
    "run.finished_utc": _STR + " or null", "run.command": "list of string",
    "run.status": _STR, "run.sessions": "list of object",
    "run.seconds": _OBJ, "run.total_seconds": _NUM + " or null",
    "run.exit_status": _OBJ, "run.errors": "list of string",
    "run.interrupted": _OBJ + " or null", "run.resumed_utc": "list of string",
    "run.settle": _OBJ + " or null", "run.cyclictest": _OBJ + " or null",
    "run.replay": _OBJ + " or null", "run.jvm": _OBJ + " or null",
    "instances.expected": _OBJ, "instances.missing": _OBJ,
}


def json_type(v):
    """The JSON name of a value's type ("a string", "a number", ...)."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    return "a list" if isinstance(v, list) else "an object"


def _is(v, kind):
    if kind == "string":
        return isinstance(v, str)
    if kind == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "boolean":
        return isinstance(v, bool)
    if kind == "object":
        return isinstance(v, dict)
    if kind.startswith("list of "):
        return isinstance(v, list) and all(_is(x, kind[8:]) for x in v)
    raise ValueError("no JSON type %r" % kind)


def _typed(v, want):
    if want.endswith(" or null"):
        return v is None or _is(v, want[:-8])
    return _is(v, want)


def machine_type_problems(doc):
    """[(dotted name, message)] for every field of a machine.json document
    (a dict) whose type is not MACHINE_TYPES's, in the table's order; a
    field under a section that is not an object is not looked at (the
    section is the problem)."""
    out = []
    for name, want in MACHINE_TYPES.items():
        node, parts = doc, name.split(".")
        for p in parts[:-1]:
            node = node.get(p) if isinstance(node, dict) else None
        if not isinstance(node, dict) or parts[-1] not in node:
            continue
        v = node[parts[-1]]
        if not _typed(v, want):
            shown = json.dumps(v)
            out.append((name, "%s is %s (%s), where %s is expected" % (
                name, json_type(v), shown if len(shown) <= 40 else shown[:37] + "...",
                "a list of " + want[8:] + "s" if want.startswith("list of ")
                else ("an " if want[0] in "aeiou" else "a ") + want)))
    return out


def without_badly_typed(doc, keep=("format_version",)):
    """A copy of a machine.json document with every field that
    machine_type_problems names left out (so readers see it as absent),
    and those problems; the fields in `keep` stay, nor are they named
    (format_version: the reader has its own message for it)."""
    problems = [p for p in machine_type_problems(doc) if p[0] not in keep]
    clean = json.loads(json.dumps(doc))
    for name, _ in problems:
        node, parts = clean, name.split(".")
        for p in parts[:-1]:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return clean, problems
