"""tbkit.trace (command tools/tb_trace.py) — the timerbench trace format (DECISIONS.md D4): a strict
reader that checks every rule, a writer, and the statistics a trace's
README quotes.  The importer (perf2trace.py), the generators (tracegen.py)
and the tests share it, so everything this directory writes is read back
by the same rules.

    python3 tools/tb_trace.py FILE        check FILE, print its statistics

The statistics include the budgets of a v2 trace: how many armings carry
a slack, the slack's min/p50/p90/p99/max (as the replay's
`budget.slack_ns`, in the trace's unit) and slack / delay (p50, p99, max).

Exit status: 0 a valid trace; 2 an invalid one (`tb_trace: FILE:LINE:
why` on stderr, as the replay refuses it: DECISIONS.md D5), a bad
argument, or a file that cannot be opened or is not a regular file
(`tb_trace: FILE: why`).

The format, in short (D4 is the reference):

    #timerbench-trace v1 unit=us
    # any comment lines
    time,op,id,delay,period
    0,schedule,1,200000,
    1500,cancel,1,,
    2000,periodic,2,1000,500
    2500,reschedule,2,3000,

The limits, the same in the replay's reader (bench/replay.c): a line is at
most 4096 bytes, not counting its end (\\n, or \\r\\n: a CR before the
newline is accepted); no line holds a NUL byte; the file does not start
with a UTF-8 byte-order mark; a field is ASCII digits only (no sign, no
space, no other script's digits) and at most 20 of them; every time,
delay, period and deadline (time + delay), times the unit, is below 2^62
ns; an id is at most 2^63-1.  A file is read line by line, never whole,
and only a regular file is read (a FIFO or a device could have no end).

Liveness, which the schedule-of-a-live-id error and the two counted cases
depend on, is decided by the trace alone, with every timer taken to fire
exactly at its deadline (time + delay): a one-shot is live at time T while
T < deadline.  A periodic timer stays live until cancelled or rescheduled.
The tools in this directory never reuse an id, so that boundary never
decides anything in what they write.

The periodic timers of one trace may make at most 10^7 runs between
them (DECISIONS.md D6, MAX_PERIODIC_RUNS in bench/replay.c), counted once
the file is read as the replay counts them: one at each multiple of the
period from the first deadline up to the timer's end included (the cancel
or reschedule that ends it, or one period past the last event line); the
trace is refused at the line of the timer that takes the sum past the
limit.  The writer refuses such a trace too.

This reader accepts and refuses exactly what the replay does (D5), for
the same reason on the same line and in the same words (checked on every
fixture, tests/trace_test.py): `#` lines among the events are ignored;
a delay on a cancel, or a period on an op other than periodic, is checked
as an integer and ignored; bytes that are not UTF-8 in a comment are kept
as U+FFFD, and in a field they are quoted as \\xNN in its error.  Format
v2 adds the slack column (bench/REPLAY.md, "The format"): empty, or a
lateness budget that deadline + slack keeps below 2^62 ns; a cancel takes
none.  A trace without events is an error, as in the replay.  The writer
writes the strict subset: only the fields an op uses, comments before the
header only, v1 unless some event has a slack.
"""
import io
import os
import re
import stat
import sys
import tempfile

from tbkit import formats as tb_formats

MAGIC = "#timerbench-trace v1 unit="
MAGIC_V2 = "#timerbench-trace v2 unit="      # v2: the slack column
UNITS = ("ns", "us", "ms")
UNIT_NS = {"ns": 1, "us": 1000, "ms": 1000000}
HEADER = "time,op,id,delay,period"
HEADER_V2 = HEADER + ",slack"
OPS = ("schedule", "cancel", "reschedule", "periodic")
ID_MAX = 2 ** 63 - 1
# every time, delay, period and deadline, in ns, is below this: the
# replay's clock (TB_MAX_DELAY, include/timerbench/scheduler.h)
LIMIT_NS = 2 ** 62
LINE_MAX = 4096          # a line's bytes, not counting its \n or \r\n
DIGITS_MAX = 20          # 2^63 has 19 digits: more is out of range anyway
# the runs the periodic timers of one trace may make between them, counted
# as the replay counts them (MAX_PERIODIC_RUNS, bench/replay.c; D6)
PERIODIC_RUNS_MAX = 10 ** 7
SHOWN_BYTES = 40         # of a bad field, quoted in its error
BOM = b"\xef\xbb\xbf"
# ASCII digits only: int() would also take a sign, spaces, underscores and
# other scripts' digits ('١')
_DIGITS = re.compile(r"[0-9]+\Z", re.ASCII)


class TraceError(Exception):
    """A rule of the format broken at path:line (line None: the file as a
    whole, e.g. it cannot be opened or is not a regular file)."""

    def __init__(self, path, line, message):
        super().__init__("%s:%d: %s" % (path, line, message) if line
                         else "%s: %s" % (path, message))
        self.path = path
        self.line = line
        self.message = message


class Event:
    """One event line: time, op, id, delay (None for cancel), period
    (None unless periodic), and the line it came from."""
    __slots__ = ("time", "op", "id", "delay", "period", "line", "slack")

    def __init__(self, time, op, tid, delay=None, period=None, line=0,
                 slack=None):
        self.time = time
        self.op = op
        self.id = tid
        self.delay = delay
        self.period = period
        self.line = line
        self.slack = slack      # v2: the timer's lateness budget, or None

    def tuple(self):
        return (self.time, self.op, self.id, self.delay, self.period)

    def __repr__(self):
        return "Event%r" % (self.tuple(),)


class Trace:
    """A parsed trace: format version (1, or 2 with the slack column),
    unit, comment lines (without '#'), events and the counted (non-fatal)
    cases."""

    def __init__(self, unit, version=1):
        self.version = version
        self.unit = unit
        self.comments = []
        self.events = []
        self.cancel_unknown = 0
        self.reschedule_unknown = 0


def _show(text):
    """text quoted for a message as the replay's reader quotes it: at most
    SHOWN_BYTES of its bytes, each that is not printable ASCII as \\xNN,
    '...' after a cut; an error is short ASCII whatever the file holds."""
    raw = text.encode("utf-8", "surrogateescape")
    out = "".join(chr(b) if 0x20 <= b < 0x7f else "\\x%02x" % b
                  for b in raw[:SHOWN_BYTES])
    return "'%s%s'" % (out, "..." if len(raw) > SHOWN_BYTES else "")


def _field_int(path, lineno, name, text):
    """The value of a field of ASCII digits; no more than DIGITS_MAX of
    them, so that int() never meets a huge one."""
    if text == "":
        raise TraceError(path, lineno, "%s is empty" % name)
    if not _DIGITS.match(text):
        if text[:1] == "-" and _DIGITS.match(text[1:]) and text.strip("-0"):
            raise TraceError(path, lineno, "%s %s is negative"
                             % (name, _show(text)[1:-1]))
        raise TraceError(path, lineno, "%s %s is not an integer (digits "
                         "only: no sign, space or point)"
                         % (name, _show(text)))
    if len(text) > DIGITS_MAX:
        raise TraceError(path, lineno, "%s %s is out of range (%d digits, "
                         "more than %d)" % (name, _show(text)[1:-1],
                                            len(text), DIGITS_MAX))
    return int(text)


def _at_most_id(path, lineno, name, text):
    """The value of a field that must be at most 2^63-1 (an id, or a field
    the op does not use), as the replay's parse_int bounds it."""
    v = _field_int(path, lineno, name, text)
    if v > ID_MAX:
        raise TraceError(path, lineno, "%s %s is out of range (at most %d)"
                         % (name, _show(text)[1:-1], ID_MAX))
    return v


def _unused(path, lineno, name, text):
    """A field the op does not use: empty, or an integer that is ignored
    (checked as any field is, as the replay checks it)."""
    if text:
        _at_most_id(path, lineno, name, text)


def _below_limit(path, lineno, name, v, unit):
    """v (in unit) if v ns is below 2^62, else TraceError."""
    if v * UNIT_NS[unit] >= LIMIT_NS:
        raise TraceError(path, lineno, "%s %d %s is too large (it must be "
                         "below 2^62 ns)" % (name, v, unit))
    return v


def _value(path, lineno, name, text, unit):
    """A time, delay, period or slack: an integer field at most 2^63-1
    (as the replay reads every field), then below 2^62 ns."""
    return _below_limit(path, lineno, name,
                        _at_most_id(path, lineno, name, text), unit)


def lines(f, path, limit=LINE_MAX):
    """Yield (number, bytes, ended) for each line of the binary stream f,
    read one line at a time with a bounded readline: the line's bytes
    without its end (\\n, or \\r\\n; a last line without a newline loses
    a final \\r too) and whether a newline ended it.  TraceError at the
    first line of more than limit bytes."""
    n = 0
    while True:
        raw = f.readline(limit + 2)      # room for the line, \r and \n
        if not raw:
            return
        n += 1
        ended = raw.endswith(b"\n")
        body = raw[:-1] if ended else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        if len(body) > limit:
            raise TraceError(path, n, "line longer than %d bytes" % limit)
        yield n, body, ended


def _text(path, n, body):
    """The line's text; bytes that are not UTF-8 kept as surrogates, so
    that an error quotes them as \\xNN (the replay reads bytes)."""
    if b"\0" in body:
        raise TraceError(path, n, "line holds a NUL byte")
    return body.decode("utf-8", "surrogateescape")


def _comment(line):
    """A comment's text without its '#'; bytes that are not UTF-8 as
    U+FFFD, as the replay shows them."""
    return line[1:].encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace").strip()


class _Periodic:
    """A periodic arming, for the run count: its line, id, first deadline
    and period (in the unit) and the time a cancel or reschedule ended it
    (None: left running)."""
    __slots__ = ("line", "id", "deadline", "period", "ended")

    def __init__(self, line, tid, deadline, period):
        self.line, self.id = line, tid
        self.deadline, self.period, self.ended = deadline, period, None


def periodic_runs(timers, t_last, unit):
    """(runs in all, None) for the periodic armings `timers` (in the order
    the trace creates them) of a trace whose last event line is at t_last,
    or (None, (line, why)) for the first one that takes the sum past
    PERIODIC_RUNS_MAX.  Each makes one run at each multiple of its period
    from its first deadline up to its end included, the end being the
    cancel or reschedule that ends it, or one period after t_last for one
    left running: as bench/replay.c's periodic_runs counts them, its
    message word for word (the sum saturates at 2^64-1 as the C one)."""
    total = 0
    for p in timers:
        end = p.ended if p.ended is not None else t_last + p.period
        runs = 0 if end < p.deadline else (end - p.deadline) // p.period + 1
        total = min(total + runs, 2 ** 64 - 1)
        if total > PERIODIC_RUNS_MAX:
            return None, (p.line, (
                "periodic timer id %d (every %d ns, %s) makes %d runs, %d "
                "with the periodic timers before it: more than the %d runs "
                "a trace may make"
                % (p.id, p.period * UNIT_NS[unit],
                   "until the trace ends it" if p.ended is not None else
                   "left running: stopped one period past the trace's end",
                   runs, total, PERIODIC_RUNS_MAX)))
    return total, None


def parse_stream(f, path="<trace>"):
    """Parse and check a trace read line by line from the binary stream f;
    return a Trace or raise TraceError naming the first broken rule and
    its line, in the replay's words and in its order (bench/replay.c
    parse_stream: a line's fields, then its slack, the time order, the
    id's liveness, the deadline and deadline + slack; the periodic runs
    once the whole file is read)."""
    it = lines(f, path)
    first = next(it, None)
    if first is None:
        raise TraceError(path, 1, "empty file: not a timerbench trace")
    head = _text(path, 1, first[1])
    if first[1].startswith(BOM):
        raise TraceError(path, 1, "starts with a UTF-8 byte-order mark; "
                         "save the file without it")
    version = 2 if head.startswith(MAGIC_V2) else 1
    unit = head[len(MAGIC):]
    if (version == 1 and not head.startswith(MAGIC)) or unit not in UNITS:
        raise TraceError(path, 1, "not a timerbench trace: the first line "
                         "must be '%s<ns|us|ms>' (or v2, with the slack "
                         "column), got %s" % (MAGIC, _show(head)))
    tr = Trace(unit, version)
    header = HEADER_V2 if version == 2 else HEADER
    nfields = header.count(",") + 1
    last = 1
    for n, body, _ in it:
        last = n
        line = _text(path, n, body)
        if line == "":
            continue
        if line.startswith("#"):
            tr.comments.append(_comment(line))
            continue
        if line == HEADER_V2 and version == 1:
            raise TraceError(path, n, "a slack column needs format v2 (the "
                             "first line says v1): expected the header "
                             "line '%s'" % HEADER)
        if line != header:
            raise TraceError(path, n, "expected the header line '%s' (after "
                             "the first line and '#' comments), got %s"
                             % (header, _show(line)))
        break
    else:
        # the replay names the last line read
        raise TraceError(path, last, "no header line '%s' before the end of "
                         "the file" % header)
    live = {}          # id -> (deadline or None: periodic, line, _Periodic)
    periodic = []      # every periodic arming, in order
    last_time = None
    last_line = 0
    for n, body, ended in it:
        last = n
        line = _text(path, n, body)
        if line == "" or line.startswith("#"):
            continue        # a comment among the events says nothing
        fields = line.split(",")
        if len(fields) != nfields:
            if not ended and len(fields) < nfields:
                raise TraceError(path, n, "truncated last line: no newline "
                                 "and %d of %d fields (the file was cut "
                                 "short?)" % (len(fields), nfields))
            if version == 1 and len(fields) == 6:
                raise TraceError(path, n, "a slack column needs format v2 "
                                 "(the first line says v1): expected 5 "
                                 "fields (%s), got 6" % HEADER)
            raise TraceError(path, n, "expected %d fields (%s), got %d"
                             % (nfields, header, len(fields)))
        t_s, op, id_s, d_s, p_s = fields[:5]
        sl_s = fields[5] if version == 2 else ""
        # in the replay's order: time, id, then the op
        t = _value(path, n, "time", t_s, unit)
        tid = _at_most_id(path, n, "id", id_s)
        if op not in OPS:
            raise TraceError(path, n, "unknown op %s (schedule, cancel, "
                             "reschedule, periodic)" % _show(op))
        delay = period = None
        if op == "cancel":
            _unused(path, n, "delay", d_s)
        else:
            if d_s == "":
                raise TraceError(path, n, "%s needs a delay" % op)
            delay = _value(path, n, "delay", d_s, unit)
        if op == "periodic":
            if p_s == "":
                raise TraceError(path, n, "periodic needs a period")
            period = _value(path, n, "period", p_s, unit)
            if period == 0:
                raise TraceError(path, n, "period must be > 0")
        else:
            _unused(path, n, "period", p_s)
        slack = None
        if sl_s:
            if op == "cancel":
                raise TraceError(path, n, "cancel takes no slack (got %s): a "
                                 "slack belongs to a schedule, reschedule "
                                 "or periodic" % _show(sl_s))
            slack = _value(path, n, "slack", sl_s, unit)
        if last_time is not None and t < last_time:
            raise TraceError(path, n, "time %s goes backwards (line %d was "
                             "at %d %s)" % (t_s, last_line, last_time, unit))
        last_time, last_line = t, n
        cur = live.get(tid)
        is_live = cur is not None and (cur[0] is None or t < cur[0])
        if op in ("schedule", "periodic") and is_live:
            raise TraceError(path, n, "%s of id %d, which is still live "
                             "(scheduled on line %d%s); a re-arm is a "
                             "reschedule" % (op, tid, cur[1],
                                             ", periodic" if cur[0] is None
                                             else ""))
        if op == "cancel" or (op == "reschedule" and is_live):
            if is_live:
                if cur[2] is not None:
                    cur[2].ended = t
                del live[tid]
            elif op == "cancel":
                tr.cancel_unknown += 1
        elif op == "reschedule":
            tr.reschedule_unknown += 1
        if op != "cancel":
            u = UNIT_NS[unit]
            if (t + delay) * u >= LIMIT_NS:
                raise TraceError(path, n, "deadline (time + delay) %d ns is "
                                 "too large (it must be below 2^62 ns)"
                                 % ((t + delay) * u))
            if slack and (t + delay + slack) * u >= LIMIT_NS:
                raise TraceError(path, n, "deadline + slack %d + %d ns is "
                                 "too large (it must be below 2^62 ns)"
                                 % ((t + delay) * u, slack * u))
            p = None
            if op == "periodic":
                p = _Periodic(n, tid, t + delay, period)
                periodic.append(p)
            live[tid] = (None if p else t + delay, n, p)
        tr.events.append(Event(t, op, tid, delay, period, n, slack))
    if not tr.events:
        # as the replay: a trace that replays nothing is a mistake; it
        # names the last line read
        raise TraceError(path, last, "no events after the header")
    tr.periodic_runs, err = periodic_runs(periodic, last_time, unit)
    if err:
        raise TraceError(path, *err)
    return tr


def parse(text, path="<trace>"):
    """Parse and check a whole trace given as a string (by the same rules
    as a file: its UTF-8 bytes are read line by line)."""
    return parse_stream(io.BytesIO(text.encode("utf-8", "surrogatepass")),
                        path)


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode):
    """Why a file of this st_mode is not read, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((k for test, k in _KINDS if test(mode)), "not a plain file")
    return ("%s, not a regular file (only a regular file is read: a FIFO "
            "or a device need not end)" % kind)


def open_regular(path):
    """Open path for reading in binary if it is a regular file; otherwise
    TraceError(path, None, why) — never blocking on a FIFO."""
    try:
        why = _not_regular(os.stat(path).st_mode)
        if why is None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise TraceError(path, None, "cannot open: %s" % e.strerror) from None
    if why is None:
        # swapped for something else between the stat and the open?
        why = _not_regular(os.fstat(fd).st_mode)
        if why is None:
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        os.close(fd)
    raise TraceError(path, None, why)


def read(path):
    """Parse the trace file at path; TraceError on any broken rule (line
    None: not a regular file, or it cannot be opened)."""
    with open_regular(path) as f:
        try:
            return parse_stream(f, path)
        except OSError as e:
            raise TraceError(path, None, "cannot read: %s" % e.strerror) \
                from None


def check_comment(text):
    """ValueError if the comment text (without its '#'; its newlines part
    lines) would make a line outside the format; return its lines."""
    heads = []
    for part in str(text).split("\n"):
        line = "# %s" % part
        if "\0" in line:
            raise ValueError("a comment holds a NUL byte")
        try:
            size = len(line.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("a comment is not UTF-8 text: %s"
                             % _show(line[2:])) from None
        if size > LINE_MAX:
            raise ValueError("a comment line of %d bytes is longer than the "
                             "format's %d" % (size, LINE_MAX))
        heads.append(line)
    return heads


def _check_event(unit, prev, ev):
    """Why the event tuple breaks the format's fields and limits, or None."""
    if len(ev) not in (5, 6):
        return "not a (time, op, id, delay, period[, slack]) tuple"
    t, op, tid, delay, period = ev[:5]
    slack = ev[5] if len(ev) == 6 else None
    u = UNIT_NS[unit]
    if op not in OPS:
        return "unknown op %r" % (op,)
    for name, v in (("time", t), ("id", tid), ("delay", delay),
                    ("period", period), ("slack", slack)):
        if v is not None and (type(v) is not int or v < 0):
            return "%s %r is not an integer >= 0" % (name, v)
    if tid > ID_MAX:
        return "id %d above 2^63-1" % tid
    if t < prev:
        return "time goes backwards (%d after %d)" % (t, prev)
    if (delay is None) != (op == "cancel") or \
            (period is None) != (op != "periodic"):
        return "%s with delay %r and period %r" % (op, delay, period)
    if period == 0:
        return "period must be > 0"
    if op == "cancel" and slack is not None:
        return "cancel takes no slack"
    for name, v in (("time", t), ("delay", delay), ("period", period),
                    ("slack", slack),
                    ("deadline (time + delay)",
                     None if delay is None else t + delay),
                    ("deadline + slack",
                     None if slack is None else t + delay + slack)):
        if v is not None and v * u >= LIMIT_NS:
            return "%s %d %s is out of range (2^62 ns or more)" % (name, v,
                                                                  unit)
    return None


def write(out, unit, comments, events):
    """Write a trace to the text stream out: unit, comment lines (each
    without its '#'; a comment holding newlines becomes several lines) and
    events as (time, op, id, delay, period) tuples in time order (None for
    an empty field), or (time, op, id, delay, period, slack): format v2,
    with the slack column, when some event has a slack.  ValueError for a
    comment or an event outside the format's rules and limits, found before
    anything is written."""
    if unit not in UNITS:
        raise ValueError("unit must be one of %s" % (UNITS,))
    heads = []
    for c in comments:
        heads += check_comment(c)
    prev = 0
    v2 = False
    periodic, running = [], {}     # the periodic armings; id -> running one
    for i, ev in enumerate(events):
        why = _check_event(unit, prev, ev)
        if why:
            raise ValueError("event %d of %d %r: %s" % (i + 1, len(events),
                                                         tuple(ev), why))
        prev = ev[0]
        v2 = v2 or (len(ev) == 6 and ev[5] is not None)
        p = running.pop(ev[2], None)
        if p is not None and ev[1] in ("cancel", "reschedule"):
            p.ended = ev[0]
        if ev[1] == "periodic":
            running[ev[2]] = p = _Periodic(i + 1, ev[2], ev[0] + ev[3], ev[4])
            periodic.append(p)
    if periodic:
        _, err = periodic_runs(periodic, prev, unit)
        if err:
            raise ValueError("event %d of %d: %s" % (err[0], len(events),
                                                     err[1]))
    out.write("%s%s\n" % (MAGIC_V2 if v2 else MAGIC, unit))
    for h in heads:
        out.write(h + "\n")
    out.write((HEADER_V2 if v2 else HEADER) + "\n")
    for ev in events:
        t, op, tid, delay, period = ev[:5]
        line = "%d,%s,%d,%s,%s" % (
            t, op, tid, "" if delay is None else "%d" % delay,
            "" if period is None else "%d" % period)
        if v2:
            slack = ev[5] if len(ev) == 6 else None
            line += "," if slack is None else ",%d" % slack
        out.write(line + "\n")


def check_output(path):
    """Why a new file cannot be written at path (a directory, or its
    directory missing), or None; symlinks are followed."""
    if os.path.isdir(path):
        return "%s is a directory" % path
    d = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(d):
        return "cannot write %s: no directory %s" % (path, d)
    return None


def save(path, data):
    """Write the bytes data to path whole or not at all: into a temporary
    file beside it, renamed onto path only once complete, so that an
    error leaves an existing file as it was.  A symlink is followed (its
    target replaced, keeping the link); a device or FIFO already there
    (/dev/null, /dev/stdout) is written to directly.  OSError on failure,
    with nothing left behind."""
    why = check_output(path)
    if why:
        raise OSError(why)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "wb") as f:
            f.write(data)
        return
    real = os.path.realpath(path)
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(real),
                               prefix="." + os.path.basename(real) + ".",
                               suffix=".tmp")

    def fill():
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(mode))

    tb_formats.fill_then_rename(tmp, real, fill)


def emit(out, data):
    """Writes the bytes of a trace where a command's --out names: "-" is
    standard output (a reader that went away, as `| head` does, is not an
    error), anything else goes through save().  Returns None, or why the
    file could not be written."""
    if out == "-":
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            # the reader went away (| head): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return None
    try:
        save(out, data)
    except OSError as e:
        return ("cannot write %s: %s" % (out, e.strerror) if e.strerror
                else str(e))
    return None


def stats(tr):
    """Statistics of a parsed trace, every timer taken to fire exactly at
    its deadline (the trace's own view, not any backend's):

    events, ops (count per op), duration (last time), armings (schedule,
    periodic and reschedule events: each starts one arming), cancelled
    (armings ended by a cancel or superseded by a reschedule while live),
    fired (one-shot armings whose deadline came first, including those
    still pending at the end, which a replay fires after the last event),
    cancel_ratio = cancelled / armings, delay_min/median/max over the
    armings' delays, peak_live (largest number of live timers right after
    an event), cancel_unknown, reschedule_unknown; the budgets (format
    v2): budgets (armings with a slack, which the replay counts as
    `timers_with_budget`), slack {min, p50, p90, p99, max} over them (in
    the unit, the replay's nearest-rank percentiles, so they are its
    `budget.slack_ns` divided by the unit), and slack_relative {p50, p99,
    max}: slack / delay over those whose delay is above 0 (None when
    there is none)."""
    import heapq
    ops = {op: 0 for op in OPS}
    live = {}          # id -> deadline or None (periodic)
    expiries = []      # (deadline, id) heap, lazily invalidated
    cancelled = 0
    oneshot_cancelled = 0
    peak = 0
    delays = []
    slacks = []
    relative = []
    for ev in tr.events:
        while expiries and expiries[0][0] <= ev.time:
            dl, tid = heapq.heappop(expiries)
            if live.get(tid, False) == dl:
                del live[tid]
        ops[ev.op] += 1
        if ev.op == "cancel" or (ev.op == "reschedule" and ev.id in live):
            if ev.id in live:
                cancelled += 1
                oneshot_cancelled += live.pop(ev.id) is not None
            if ev.op == "cancel":
                continue
        delays.append(ev.delay)
        if ev.slack is not None:
            slacks.append(ev.slack)
            if ev.delay:
                relative.append(ev.slack / ev.delay)
        if ev.op == "periodic":
            live[ev.id] = None
        else:
            live[ev.id] = ev.time + ev.delay
            heapq.heappush(expiries, (ev.time + ev.delay, ev.id))
        peak = max(peak, len(live))
    armings = ops["schedule"] + ops["periodic"] + ops["reschedule"]
    delays.sort()
    slacks.sort()
    relative.sort()
    return {
        "unit": tr.unit,
        "events": len(tr.events),
        "ops": ops,
        "duration": tr.events[-1].time if tr.events else 0,
        "armings": armings,
        "cancelled": cancelled,
        "fired": ops["schedule"] + ops["reschedule"] - oneshot_cancelled,
        "cancel_ratio": cancelled / armings if armings else 0.0,
        "delay_min": delays[0] if delays else None,
        "delay_median": delays[len(delays) // 2] if delays else None,
        "delay_max": delays[-1] if delays else None,
        "peak_live": peak,
        "cancel_unknown": tr.cancel_unknown,
        "reschedule_unknown": tr.reschedule_unknown,
        "budgets": len(slacks),
        "slack": {"min": slacks[0], "p50": rank(slacks, 0.5),
                  "p90": rank(slacks, 0.9), "p99": rank(slacks, 0.99),
                  "max": slacks[-1]} if slacks else None,
        "slack_relative": {"p50": rank(relative, 0.5),
                           "p99": rank(relative, 0.99),
                           "max": relative[-1]} if relative else None,
    }


def rank(v, q):
    """The nearest-rank q-quantile of the sorted list v, as bench/replay.c
    pct() takes it (rank ceil(q n), at least 1)."""
    r = min(max(int(q * len(v) + 0.999999), 1), len(v))
    return v[r - 1]


def _shown(path):
    """path for stdout, whatever bytes it holds."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: tb_trace.py TRACE  (a path that starts "
                         "with '-': ./-name)\n")
        return 2
    try:
        tr = read(argv[1])
    except TraceError as e:
        sys.stderr.write("tb_trace: %s\n" % e)
        return 2
    s = stats(tr)
    u = s["unit"]
    print("%s: valid timerbench trace v%d, unit=%s"
          % (_shown(argv[1]), tr.version, u))
    print("events %d: %s" % (s["events"], ", ".join(
        "%s %d" % (k, v) for k, v in s["ops"].items())))
    print("duration %d %s, peak live %d" % (s["duration"], u, s["peak_live"]))
    print("armings %d, cancelled or re-armed before firing %d "
          "(cancel ratio %.4f), one-shots that fire %d"
          % (s["armings"], s["cancelled"], s["cancel_ratio"], s["fired"]))
    if s["delay_min"] is not None:
        print("delay min %d, median %d, max %d %s"
              % (s["delay_min"], s["delay_median"], s["delay_max"], u))
    print("cancel_unknown %d, reschedule_unknown %d"
          % (s["cancel_unknown"], s["reschedule_unknown"]))
    if s["slack"] is None:
        print("slack: no timer carries a budget%s"
              % (" (format v1)" if tr.version == 1 else ""))
    else:
        sl, rel = s["slack"], s["slack_relative"]
        print("slack: %d of %d armings carry a budget; slack min %d, p50 %d, "
              "p90 %d, p99 %d, max %d %s"
              % (s["budgets"], s["armings"], sl["min"], sl["p50"], sl["p90"],
                 sl["p99"], sl["max"], u))
        if rel is not None:
            print("slack / delay (delay > 0): p50 %s, p99 %s, max %s"
                  % tuple(_pct(rel[k]) for k in ("p50", "p99", "max")))
    return 0


def _pct(x):
    """A share as a percentage: 3 significant digits, whole above 1000 %."""
    return "%.0f%%" % (100 * x) if x >= 10 else "%.3g%%" % (100 * x)
