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
