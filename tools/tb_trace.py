#!/usr/bin/env python3
"""tb_trace.py — the timerbench trace format (DECISIONS.md D4): a strict
reader that checks every rule, a writer, and the statistics a trace's
README quotes.  The importer (perf2trace.py), the generators (tracegen.py)
and the tests share it, so everything this directory writes is read back
by the same rules.

    python3 tools/tb_trace.py FILE        check FILE, print its statistics
                                          (exit 1 with file:line on error)

The format, in short (D4 is the reference):

    #timerbench-trace v1 unit=us
    # any comment lines
    time,op,id,delay,period
    0,schedule,1,200000,
    1500,cancel,1,,
    2000,periodic,2,1000,500
    2500,reschedule,2,3000,

Liveness, which the schedule-of-a-live-id error and the two counted cases
depend on, is decided by the trace alone, with every timer taken to fire
exactly at its deadline (time + delay): a one-shot is live at time T while
T < deadline.  A periodic timer stays live until cancelled or rescheduled.
The tools in this directory never reuse an id, so that boundary never
decides anything in what they write.

This reader is stricter than D4 requires in three places, on purpose, so
that a trace the tools write is accepted by any reader of D4: a cancel
must leave delay and period empty, a schedule or reschedule must leave
period empty, and no comment may follow the header.  A trace without
events is an error, as in the replay.
"""
import re
import sys

MAGIC = "#timerbench-trace v1 unit="
UNITS = ("ns", "us", "ms")
HEADER = "time,op,id,delay,period"
OPS = ("schedule", "cancel", "reschedule", "periodic")
ID_MAX = 2 ** 63 - 1
_INT = re.compile(r"-?[0-9]+\Z")


class TraceError(Exception):
    """A rule of the format broken at path:line."""

    def __init__(self, path, line, message):
        super().__init__("%s:%d: %s" % (path, line, message))
        self.path = path
        self.line = line
        self.message = message


class Event:
    """One event line: time, op, id, delay (None for cancel), period
    (None unless periodic), and the line it came from."""
    __slots__ = ("time", "op", "id", "delay", "period", "line")

    def __init__(self, time, op, tid, delay=None, period=None, line=0):
        self.time = time
        self.op = op
        self.id = tid
        self.delay = delay
        self.period = period
        self.line = line

    def tuple(self):
        return (self.time, self.op, self.id, self.delay, self.period)

    def __repr__(self):
        return "Event%r" % (self.tuple(),)


class Trace:
    """A parsed trace: unit, comment lines (without '#'), events and the
    counted (non-fatal) cases."""

    def __init__(self, unit):
        self.unit = unit
        self.comments = []
        self.events = []
        self.cancel_unknown = 0
        self.reschedule_unknown = 0


def _field_int(path, lineno, name, text):
    if not _INT.match(text):
        raise TraceError(path, lineno, "%s %r is not an integer" % (name, text))
    v = int(text)
    if v < 0:
        raise TraceError(path, lineno, "%s %d is negative" % (name, v))
    return v


def parse(text, path="<trace>"):
    """Parse and check a whole trace given as a string; return a Trace or
    raise TraceError naming the first broken rule and its line."""
    lines = text.split("\n")
    # split() leaves '' after a final newline; anything else there is a
    # last line without its newline
    unterminated = lines[-1] != ""
    if not unterminated:
        lines.pop()
    if not lines or not lines[0].startswith(MAGIC):
        raise TraceError(path, 1, "first line must be '%s<ns|us|ms>'" % MAGIC)
    unit = lines[0][len(MAGIC):]
    if unit not in UNITS:
        raise TraceError(path, 1, "unknown unit %r (ns, us or ms)" % unit)
    tr = Trace(unit)
    i = 1
    while i < len(lines) and (lines[i] == "" or lines[i].startswith("#")):
        if lines[i]:
            tr.comments.append(lines[i][1:].strip())
        i += 1
    if i >= len(lines) or lines[i] != HEADER:
        raise TraceError(path, i + 1, "expected the header line '%s'" % HEADER)
    i += 1
    live = {}          # id -> deadline (None: periodic)
    last_time = 0
    for idx in range(i, len(lines)):
        lineno = idx + 1
        line = lines[idx]
        if line == "":
            continue
        fields = line.split(",")
        if len(fields) != 5:
            if idx == len(lines) - 1 and unterminated and len(fields) < 5:
                raise TraceError(path, lineno,
                                 "truncated last line (no newline, %d of 5 "
                                 "fields)" % len(fields))
            raise TraceError(path, lineno, "expected 5 fields, got %d"
                             % len(fields))
        t_s, op, id_s, d_s, p_s = fields
        t = _field_int(path, lineno, "time", t_s)
        if op not in OPS:
            raise TraceError(path, lineno, "unknown op %r" % op)
        tid = _field_int(path, lineno, "id", id_s)
        if tid > ID_MAX:
            raise TraceError(path, lineno, "id %d above 2^63-1" % tid)
        if t < last_time:
            raise TraceError(path, lineno, "time goes backwards (%d after %d)"
                             % (t, last_time))
        last_time = t
        delay = period = None
        if op == "cancel":
            if d_s or p_s:
                raise TraceError(path, lineno, "cancel takes no delay or period")
        else:
            if d_s == "":
                raise TraceError(path, lineno, "%s needs a delay" % op)
            delay = _field_int(path, lineno, "delay", d_s)
            if op == "periodic":
                if p_s == "":
                    raise TraceError(path, lineno, "periodic needs a period")
                period = _field_int(path, lineno, "period", p_s)
                if period == 0:
                    raise TraceError(path, lineno, "period must be > 0")
            elif p_s:
                raise TraceError(path, lineno, "%s takes no period" % op)
        dl = live.get(tid, False)
        is_live = dl is not False and (dl is None or t < dl)
        if op in ("schedule", "periodic"):
            if is_live:
                raise TraceError(path, lineno, "%s of id %d, which is still "
                                 "live (a re-arm is a reschedule)" % (op, tid))
            live[tid] = None if op == "periodic" else t + delay
        elif op == "reschedule":
            if not is_live:
                tr.reschedule_unknown += 1
            live[tid] = t + delay
        else:
            if not is_live:
                tr.cancel_unknown += 1
            live.pop(tid, None)
        tr.events.append(Event(t, op, tid, delay, period, lineno))
    if not tr.events:
        # as the replay: a trace that replays nothing is a mistake
        raise TraceError(path, len(lines) + 1, "no events after the header")
    return tr


def read(path):
    """Parse the trace file at path (UTF-8); TraceError on any broken rule."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise TraceError(path, line, "not UTF-8") from None
    return parse(text, path)


def write(out, unit, comments, events):
    """Write a trace to the text stream out: unit, comment lines (each
    without its '#') and events as (time, op, id, delay, period) tuples
    in time order (None for an empty field)."""
    if unit not in UNITS:
        raise ValueError("unit must be one of %s" % (UNITS,))
    out.write("%s%s\n" % (MAGIC, unit))
    for c in comments:
        for part in str(c).split("\n"):
            out.write("# %s\n" % part)
    out.write(HEADER + "\n")
    for t, op, tid, delay, period in events:
        out.write("%d,%s,%d,%s,%s\n" % (
            t, op, tid, "" if delay is None else "%d" % delay,
            "" if period is None else "%d" % period))


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
    an event), cancel_unknown, reschedule_unknown."""
    import heapq
    ops = {op: 0 for op in OPS}
    live = {}          # id -> deadline or None (periodic)
    expiries = []      # (deadline, id) heap, lazily invalidated
    cancelled = 0
    oneshot_cancelled = 0
    peak = 0
    delays = []
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
        if ev.op == "periodic":
            live[ev.id] = None
        else:
            live[ev.id] = ev.time + ev.delay
            heapq.heappush(expiries, (ev.time + ev.delay, ev.id))
        peak = max(peak, len(live))
    armings = ops["schedule"] + ops["periodic"] + ops["reschedule"]
    delays.sort()
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
    }


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: tb_trace.py TRACE\n")
        return 2
    try:
        tr = read(argv[1])
    except (TraceError, OSError) as e:
        sys.stderr.write("tb_trace: %s\n" % e)
        return 1
    s = stats(tr)
    u = s["unit"]
    print("%s: valid timerbench trace v1, unit=%s" % (argv[1], u))
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
