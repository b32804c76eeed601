"""perf2trace.py — turn `perf script` text output of the Linux kernel's
timer tracepoints into a timerbench trace (DECISIONS.md D4), so that a
machine's own timer traffic can be replayed on every backend.

    perf record -e 'timer:timer_start,timer:timer_cancel,timer:timer_expire_entry,timer:hrtimer_start,timer:hrtimer_cancel,timer:hrtimer_expire_entry' -a -- LOAD
    perf script | tools/perf2trace.py [--stream timer|hrtimer] [--hz HZ]
                                      [--no-slack] [-o OUT]

Two streams, one per run:
- `--stream timer` (default): timer-list timers (timer:timer_start,
  timer_cancel, timer_expire_entry); unit=us.  A timer's delay is its
  `[timeout=N]` (expires - now, in jiffies; `now=` is accepted too)
  times 10^6/HZ, rounded (the event falls somewhere inside the current
  jiffy, so this deadline can lie up to one jiffy after the jiffy the
  kernel will expire it in; perf's timestamps do not say where the jiffy
  began).  HZ is measured from the trace (the jiffies
  that timer_start and timer_expire_entry report against their
  timestamps), snapped to 100, 250, 300 or 1000 when the trace spans at
  least 0.5 s and lands within 2 % of one; otherwise --hz, default 250
  (CONFIG_HZ of the machine the shipped trace was recorded on).  An
  explicit --hz wins; a measurement that disagrees is warned about.
- `--stream hrtimer`: hrtimers (timer:hrtimer_start, hrtimer_cancel,
  hrtimer_expire_entry); unit=ns.  The delay is softexpires minus the
  event's time on the timer's own clock (softexpires is the earliest the
  kernel may fire it; expires adds the slack the caller allowed).  perf's
  timestamps are not on the hrtimer's clock: the offset is measured from
  hrtimer_expire_entry, whose now= is that clock, one offset per clock
  base seen (offsets more than 1 s apart are different bases, e.g.
  CLOCK_REALTIME).  `perf record -k mono` and `perf script --ns` make
  this exact to the ns; without them it is good to some us.
  hrtimer_init/hrtimer_setup and the *_exit events carry no arming and are
  skipped.

The slack column (trace format v2; `--no-slack` writes v1 without it):
each start carries the lateness its caller accepted, which the replay
holds every backend to (DECISIONS.md D9).
- hrtimer stream: expires - softexpires of the hrtimer_start, in ns: the
  range the caller gave (hrtimer_start_range_ns; a user task's sleeps get
  its timer_slack_ns, 50 us by default; the tick 0).  A start whose
  expires is before its softexpires is bad input (the kernel never makes
  one).
- timer-list stream: these timers state no slack, so each gets the one
  the kernel's own wheel (Linux >= 4.8, kernel/time/timer.c) gives it:
  LVL_GRAN(level) = 8^level jiffies of the level calc_wheel_index puts
  it in, times 10^6/HZ us (rounded as the delay is).  The level comes
  from the timeout in jiffies (delta): level n is the first with delta <
  LVL_START(n + 1), LVL_START(n) = 63 << 3(n - 1) (LVL_BITS 6,
  LVL_CLK_SHIFT 3): 0..62 jiffies level 0 (granularity 1 jiffy), 63..503
  level 1 (8), 504..4031 level 2 (64), 4032..32255 level 3 (512), ...;
  beyond the last bound, the last level, LVL_DEPTH - 1 (LVL_DEPTH 9 when
  HZ > 100, else 8); a negative timeout (already due) level 0.  The
  kernel measures delta from its wheel's clock (base->clk), which can lag
  jiffies by a little on an idle CPU; when the input has the tracepoint's
  idx= (Linux >= 5.9; level = idx / 64), the importer counts in a
  comment line how often its level agrees with the kernel's.  The wheel
  runs a timer up to that granularity after its expiry (never before),
  so the budget is what Linux itself allows that timer: beyond level 0,
  at most 8/63 of its delay (LVL_GRAN(n) / LVL_START(n)), about 1/8.
A slack that would take deadline + slack to 2^62 ns is cut below it, and
counted in a comment line.

Time is the event's perf timestamp minus the first selected event's.
One trace id per timer address and life: an address armed again after its
timer ended (cancelled or expired) gets a new id; ids are never reused.
Kernel details the importer undoes, so the trace says what the callers did:
- the timer-list wheel traces timer_cancel when it detaches an expiring
  timer, just before timer_expire_entry: a timer_cancel followed by that
  address's timer_expire_entry (no start between) is the expiry, not a
  cancel;
- mod_timer() (and hrtimer_start() on a queued timer) detach the pending
  timer, tracing timer_cancel, and re-add it, tracing timer_start: a
  cancel directly followed on the same CPU by a start of the same address
  is one `reschedule` when no other sample of that CPU comes between them
  and they are at most 100 us apart (mod_timer's pair is ~1 us apart;
  a del_timer() directly followed by add_timer() folds the same way, and
  it is the same re-arm).  A start of a live timer with no cancel before
  it is a reschedule as well;
- a cancel or expiry of an address the trace never saw armed (armed
  before recording began) is dropped and counted.
Comment lines in the output record the source, stream, HZ or clock offsets
and the count of every line skipped or event folded, dropped or clamped.

Out of range: the trace format holds times, delays and deadlines below
2^62 ns (tb_trace.py).  A start whose delay or deadline is past that (a
bogus expires=, 4e33 us was seen) is dropped, as a start on an unmeasured
clock is: a live timer it would re-arm is cancelled there, and that
timer's later cancels and expiries are skipped.  The drops are counted in
a comment line and in a warning on stderr.

Bad input: a line naming one of the selected stream's events that cannot
be read (no timestamp, a missing or non-numeric field, a number of more
than 20 digits, digits other than ASCII), a timestamp going backwards or
2^62 ns or more after the first, input without a single event of the
stream, or with no timer left to replay once the above are dropped (the
replay refuses a trace without events), stops the import with
`perf2trace: FILE:LINE: why` and exit status 1.  So does a line longer
than 64 KiB (perf script's lines are a few hundred bytes): the input is
read one bounded line at a time, from stdin (a pipe, as usual) or from a
named regular file.  Any other line (other events, headers, blank lines)
is skipped and counted.

Exit status 2, before anything is read or written: a bad argument, a
--comment that is not UTF-8 or longer than a trace line, a named input
that is not a regular file (a FIFO or a device: pipe it into stdin), -o
onto a directory or into a missing one, or the output failing to be
written.  -o FILE is written whole or not at all: the trace is built and
encoded first, written to a temporary file beside FILE and renamed onto
it, so an existing FILE is left as it was on any error.
"""
import argparse
import io
import os
import re
import sys

from tbkit import trace as tb_trace

STREAMS = {
    "timer": {
        "start": "timer:timer_start",
        "cancel": "timer:timer_cancel",
        "expire": "timer:timer_expire_entry",
        "addr": "timer",
        "unit": "us",
    },
    "hrtimer": {
        "start": "timer:hrtimer_start",
        "cancel": "timer:hrtimer_cancel",
        "expire": "timer:hrtimer_expire_entry",
        "addr": "hrtimer",
        "unit": "ns",
    },
}
KNOWN_HZ = (100, 250, 300, 1000)
# mod_timer's detach and re-add are traced with IRQs off under the base
# lock: in the shipped recording 0.5 us apart at the median, 6.4 us at p99,
# 81 us at most (a vCPU preempted in between).  A cancel and a start
# further apart than this are two calls, never folded.
FOLD_NS = 100_000
DEFAULT_HZ = 250

# The timer wheel of Linux >= 4.8 (kernel/time/timer.c): level n holds
# timers in buckets of LVL_GRAN(n) = 8^n jiffies; calc_wheel_index puts a
# timer delta = expires - clk jiffies ahead in the first level n with
# delta < LVL_START(n + 1), LVL_START(n) = (LVL_SIZE - 1) << ((n - 1) *
# LVL_CLK_SHIFT), else in the last level (LVL_DEPTH - 1, the wheel's
# capacity cut at WHEEL_TIMEOUT_CUTOFF), and a timer already due
# ((long)delta < 0) at the next tick.
LVL_CLK_SHIFT = 3
LVL_BITS = 6
LVL_SIZE = 1 << LVL_BITS


def wheel_depth(hz):
    """LVL_DEPTH: 9 levels when HZ > 100, else 8 (kernel/time/timer.c)."""
    return 9 if hz > 100 else 8


def wheel_level(delta, hz):
    """The level calc_wheel_index puts a timer `delta` jiffies ahead in."""
    if delta < 0:
        return 0            # already due: its bucket is the current tick
    depth = wheel_depth(hz)
    for n in range(1, depth):
        if delta < (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT):
            return n - 1
    return depth - 1


def wheel_slack_jiffies(delta, hz):
    """LVL_GRAN of that level: the lateness the kernel's wheel accepts for
    a timer `delta` jiffies ahead (it runs it up to that much after its
    expiry, never before), in jiffies."""
    return 1 << (wheel_level(delta, hz) * LVL_CLK_SHIFT)

# perf script's lines are a few hundred bytes; a longer one is not perf
# script output, and is refused before it costs memory
PERF_LINE_MAX = 65536
DIGITS_MAX = tb_trace.DIGITS_MAX

# comm (may hold spaces and colons)  pid[/tid]  [cpu]  sec.frac:  [period]
# event:  fields.  Searched for, not matched from the start: the comm is
# what comes before, and no pattern of the comm's own (with \s* and \s+
# around it, a line of spaces took cubic time) has to be tried.  ASCII
# digits only (\d would take other scripts' digits, and int() with it).
_LINE = re.compile(
    r"\s(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?(?P<sec>\d+)\.(?P<frac>\d{1,9}):\s+"
    r"(?:\d+\s+)?(?P<event>[A-Za-z_]\w*:[A-Za-z_]\w*):(?:\s+(?P<fields>.*))?$",
    re.ASCII)
_FIELD = re.compile(r"\[?([A-Za-z_]\w*)=([^\s\]]*)\]?", re.ASCII)
_ADDR = re.compile(r"(?:0x)?[0-9a-fA-F]+\Z")
_INT = re.compile(r"-?[0-9]+\Z")


class InputError(Exception):
    """Bad input at path:line."""

    def __init__(self, path, line, message):
        super().__init__("%s:%d: %s" % (path, line, message))


class _Ev:
    __slots__ = ("kind", "ts", "cpu", "cpu_seq", "addr", "f", "line")


def _need(f, key, path, lineno, event, kind="int"):
    v = f.get(key)
    if v is None or v == "":
        raise InputError(path, lineno, "%s without %s=" % (event, key))
    if kind == "addr":
        if not _ADDR.match(v):
            raise InputError(path, lineno, "%s: %s=%r is not an address"
                               % (event, key, v))
        return v.lower().removeprefix("0x").lstrip("0") or "0"
    if not _INT.match(v):
        raise InputError(path, lineno, "%s: %s=%s is not an integer"
                         % (event, key, tb_trace._show(v)))
    if len(v.lstrip("-")) > DIGITS_MAX:
        raise InputError(path, lineno, "%s: %s= of %d digits is out of "
                         "range (at most %d)" % (event, key,
                                                 len(v.lstrip("-")),
                                                 DIGITS_MAX))
    return int(v)


def input_lines(f, path):
    """Each line of the binary stream f (a pipe works) as text without its
    newline, bytes that are not UTF-8 as U+FFFD, read one line at a time
    with a bounded readline: InputError at a line longer than
    PERF_LINE_MAX bytes."""
    n = 0
    while True:
        raw = f.readline(PERF_LINE_MAX + 2)
        if not raw:
            return
        n += 1
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        if len(body) > PERF_LINE_MAX:
            raise InputError(path, n, "line longer than %d bytes (perf "
                             "script's lines are a few hundred: is this "
                             "perf script output?)" % PERF_LINE_MAX)
        yield body.decode("utf-8", "replace")


def read_events(lines, stream, path):
    """Parse perf script lines; return (selected events, counters).
    Raises InputError on a malformed line of a selected event."""
    s = STREAMS[stream]
    kinds = {s["start"]: "start", s["cancel"]: "cancel",
             s["expire"]: "expire"}
    tokens = [name + ":" for name in kinds]
    evs = []
    cnt = {"lines": 0, "other_events": 0, "not_samples": 0}
    cpu_seq = {}
    last_ts = first_ts = None
    for lineno, raw in enumerate(lines, 1):
        cnt["lines"] += 1
        line = raw.rstrip("\n")
        m = _LINE.search(line)
        if not m:
            if any(t in line for t in tokens):
                raise InputError(path, lineno, "cannot read this %s line "
                                   "(expected 'comm pid [cpu] sec.frac: "
                                   "event: fields')" % next(
                                       t[:-1] for t in tokens if t in line))
            cnt["not_samples"] += 1
            continue
        cpu = m.group("cpu")
        # every sample counts for adjacency on its CPU: mod_timer's cancel
        # and start are adjacent because its base lock keeps IRQs off
        seq = cpu_seq.get(cpu, 0) + 1
        cpu_seq[cpu] = seq
        event = m.group("event")
        kind = kinds.get(event)
        if kind is None:
            cnt["other_events"] += 1
            continue
        if len(m.group("sec")) > DIGITS_MAX:
            raise InputError(path, lineno, "a timestamp of %d digits is out "
                             "of range" % len(m.group("sec")))
        ts = int(m.group("sec")) * 10 ** 9 + int(m.group("frac").ljust(9, "0"))
        if last_ts is not None and ts < last_ts:
            raise InputError(path, lineno, "timestamp %s.%s goes backwards"
                               % (m.group("sec"), m.group("frac")))
        if first_ts is None:
            first_ts = ts
        elif ts - first_ts >= tb_trace.LIMIT_NS:
            raise InputError(path, lineno, "timestamp %s.%s is 2^62 ns or "
                             "more after the first event's: out of the "
                             "format's range" % (m.group("sec"),
                                                 m.group("frac")))
        last_ts = ts
        f = dict(_FIELD.findall(m.group("fields") or ""))
        ev = _Ev()
        ev.kind, ev.ts, ev.cpu, ev.cpu_seq, ev.line = kind, ts, cpu, seq, lineno
        ev.addr = _need(f, s["addr"], path, lineno, event, "addr")
        if kind == "start":
            if stream == "timer":
                exp = _need(f, "expires", path, lineno, event)
                if "timeout" in f:
                    timeout = _need(f, "timeout", path, lineno, event)
                elif "now" in f:
                    timeout = exp - _need(f, "now", path, lineno, event)
                else:
                    raise InputError(path, lineno, "%s without timeout= "
                                       "or now=" % event)
                ev.f = {"timeout": timeout, "now": exp - timeout,
                        "idx": _need(f, "idx", path, lineno, event)
                        if "idx" in f else None}
            else:
                hard = _need(f, "expires", path, lineno, event)
                soft = _need(f, "softexpires", path, lineno, event)
                if hard < soft:
                    # hrtimer_set_expires_range_ns adds a slack >= 0
                    raise InputError(path, lineno, "%s: expires=%d before "
                                     "softexpires=%d (the kernel's hard "
                                     "expiry is never before its soft one)"
                                     % (event, hard, soft))
                # was_armed=1 (newer kernels) needs no reading: a start of
                # a live address is a reschedule whatever it says
                ev.f = {"soft": soft, "slack": hard - soft}
        elif kind == "expire":
            # jiffies (timer) or ns on the timer's clock (hrtimer)
            ev.f = {"now": _need(f, "now", path, lineno, event)}
        else:
            ev.f = {}
        evs.append(ev)
    return evs, cnt


def measure_hz(evs):
    """(jiffies per second, span in s) from the jiffies the timer-list
    events report against their timestamps; None when too short."""
    pts = [(e.ts, e.f["now"]) for e in evs if e.kind in ("start", "expire")]
    if len(pts) < 2:
        return None
    (t0, j0), (t1, j1) = pts[0], pts[-1]
    span = (t1 - t0) / 1e9
    if span <= 0:
        return None
    return (j1 - j0) / span, span


def choose_hz(evs, hz_opt):
    """(HZ, comment) following the rules in the module docstring."""
    m = measure_hz(evs)
    snapped = None
    if m and m[1] >= 0.5:
        near = min(KNOWN_HZ, key=lambda h: abs(h - m[0]))
        if abs(near - m[0]) <= 0.02 * near:
            snapped = near
    mtext = ("measured %.1f jiffies/s over %.2f s" % m) if m else \
        "not measurable (fewer than two timer events)"
    if hz_opt is not None:
        if snapped is not None and snapped != hz_opt:
            sys.stderr.write("perf2trace: warning: --hz %d, but the trace "
                             "measures HZ=%d (%s)\n" % (hz_opt, snapped, mtext))
        return hz_opt, "HZ=%d (from --hz; %s)" % (hz_opt, mtext)
    if snapped is not None:
        return snapped, "HZ=%d (%s)" % (snapped, mtext)
    return DEFAULT_HZ, ("HZ=%d (default: %s; give --hz)" % (DEFAULT_HZ, mtext))


def clock_offsets(evs):
    """Offsets perf timestamp - hrtimer clock, one per clock base seen in
    hrtimer_expire_entry (the smallest in each cluster: the entry is traced
    after now= was read, so the smallest gap is the closest)."""
    diffs = sorted(e.ts - e.f["now"] for e in evs if e.kind == "expire")
    offs = []
    for d in diffs:
        if offs and d - offs[-1][1] <= 10 ** 9:
            offs[-1][1] = d
        else:
            offs.append([d, d])
    return [lo for lo, _ in offs]


def convert(evs, stream, hz=None, offsets=None, slack=True):
    """Turn selected events into D4 tuples (time, op, id, delay, period,
    slack) in the stream's unit, slack None on a cancel; without slack,
    (time, op, id, delay, period); return (events, counters)."""
    unit_ns = 1000 if stream == "timer" else 1
    # a time, delay or deadline is below 2^62 ns (tb_trace.LIMIT_NS)
    limit = -(-tb_trace.LIMIT_NS // unit_ns)
    c = dict(folded=0, expiry_detach=0, cancel_before=0, expire_before=0,
             start_live=0, clamped=0, other_clock=0, live_end=0,
             out_of_range=0, after_dropped=0, first_out_of_range=None,
             slack_cut=0, level_checked=0, level_differs=0,
             first_level_differs=None)
    out = []               # (seq, time, op, id, delay, slack)
    live = {}              # addr -> id
    dropped = set()        # addrs whose last start was skipped
    pending = {}           # addr -> cancel _Ev not yet resolved
    next_id = [0]
    t0 = evs[0].ts if evs else 0

    def tm(e):
        return (e.ts - t0) // unit_ns

    def delay_of(e):
        if stream == "timer":
            d = e.f["timeout"]
            if d < 0:
                c["clamped"] += 1
                d = 0
            return (d * 10 ** 6 + hz // 2) // hz
        best = None
        for off in offsets or [0]:
            d = e.f["soft"] - (e.ts - off)
            if best is None or (d >= 0 and (best < 0 or d < best)) or \
                    (d < 0 and best < 0 and d > best):
                best = d
        if best > 10 ** 15:
            return "clock"   # a clock base no expiry in the trace showed
        if best < 0:
            c["clamped"] += 1
            best = 0
        return best

    def slack_of(e, d):
        """The start's slack in the unit (see the module docstring), cut
        so that deadline + slack stays below 2^62 ns."""
        if stream == "timer":
            delta = e.f["timeout"]
            lvl = wheel_level(delta, hz)
            if e.f["idx"] is not None:
                # the kernel's own choice: idx = level * 64 + bucket
                c["level_checked"] += 1
                if e.f["idx"] // LVL_SIZE != lvl:
                    c["level_differs"] += 1
                    if c["first_level_differs"] is None:
                        c["first_level_differs"] = e.line
            g = 1 << (lvl * LVL_CLK_SHIFT)
            sl = (g * 10 ** 6 + hz // 2) // hz
        else:
            sl = e.f["slack"]
        room = limit - 1 - tm(e) - d
        if sl > room:
            c["slack_cut"] += 1
            sl = room
        return sl

    def flush_cancel(addr):
        p = pending.pop(addr)
        out.append((p.line, tm(p), "cancel", live.pop(addr), None, None))

    for e in evs:
        a = e.addr
        p = pending.get(a)
        if e.kind == "cancel":
            if p is not None:
                flush_cancel(a)
            if a in live:
                pending[a] = e
            elif a in dropped:
                c["after_dropped"] += 1
            else:
                c["cancel_before"] += 1
        elif e.kind == "expire":
            if p is not None:
                pending.pop(a)
                c["expiry_detach"] += 1
                live.pop(a)
            elif a in live:
                live.pop(a)
            elif a in dropped:
                dropped.discard(a)
                c["after_dropped"] += 1
            else:
                c["expire_before"] += 1
        else:
            d = delay_of(e)
            if d != "clock" and (d >= limit or tm(e) + d >= limit):
                # a bogus expires= (4e33 us seen): past what the format
                # and the replay's clock hold
                c["out_of_range"] += 1
                if c["first_out_of_range"] is None:
                    c["first_out_of_range"] = (e.line, d)
                d = "range"
            if d in ("clock", "range"):
                if d == "clock":
                    c["other_clock"] += 1
                dropped.add(a)
                if p is not None:
                    flush_cancel(a)
                elif a in live:
                    # its re-arm is on a clock we cannot place: end it here
                    out.append((e.line, tm(e), "cancel", live.pop(a), None,
                                None))
                continue
            dropped.discard(a)
            sl = slack_of(e, d) if slack else None
            if p is not None and p.cpu == e.cpu and \
                    p.cpu_seq + 1 == e.cpu_seq and e.ts - p.ts <= FOLD_NS:
                pending.pop(a)
                c["folded"] += 1
                out.append((e.line, tm(e), "reschedule", live[a], d, sl))
                continue
            if p is not None:
                flush_cancel(a)
            if a in live:
                c["start_live"] += 1
                out.append((e.line, tm(e), "reschedule", live[a], d, sl))
            else:
                live[a] = next_id[0]
                next_id[0] += 1
                out.append((e.line, tm(e), "schedule", live[a], d, sl))
    for a in list(pending):
        flush_cancel(a)
    c["live_end"] = len(live)
    out.sort(key=lambda r: r[0])
    if slack:
        return [(t, op, i, d, None, sl) for _, t, op, i, d, sl in out], c
    return [(t, op, i, d, None) for _, t, op, i, d, _ in out], c


def run(lines, path, stream, hz_opt, out, extra=(), slack=True):
    """Import perf script lines from path into the stream out, with the
    extra comment lines first; return the list of D4 events written
    (format v2 with the slack column, or v1 when slack is False)."""
    evs, cnt = read_events(lines, stream, path)
    if not evs:
        other = "hrtimer" if stream == "timer" else "timer"
        names = ", ".join(sorted(STREAMS[stream][k]
                                 for k in ("start", "cancel", "expire")))
        raise InputError(path, max(1, cnt["lines"]),
                           "no %s events in %d lines (were they recorded? "
                           "--stream %s imports the %s events)"
                           % (names, cnt["lines"], other, other))
    comments = list(extra) + ["source: perf script of %s, stream %s (%s)"
                % (path, stream, ", ".join(sorted(STREAMS[stream][k]
                                                   for k in ("start", "cancel",
                                                             "expire")))),
                "importer: tools/perf2trace.py"]
    hz = offsets = None
    if stream == "timer":
        hz, hz_text = choose_hz(evs, hz_opt)
        comments.append(hz_text + "; delay = timeout jiffies * 10^6 / HZ us")
    else:
        offsets = clock_offsets(evs)
        comments.append("hrtimer clock offsets (perf time - clock, ns): %s; "
                        "delay = softexpires - event time on that clock"
                        % (", ".join(str(o) for o in offsets) or
                           "none measured, 0 assumed"))
    events, c = convert(evs, stream, hz, offsets, slack)
    unit = STREAMS[stream]["unit"]
    if not slack:
        comments.append("slack: none written (--no-slack): format v1")
    elif stream == "timer":
        checked = ("; the level agrees with the kernel's idx= on %d of %d "
                   "starts" % (c["level_checked"] - c["level_differs"],
                               c["level_checked"]) if c["level_checked"]
                   else "; the input has no idx= to check the level against")
        if c["level_differs"]:
            checked += " (the first that differs: line %d)" \
                % c["first_level_differs"]
        comments.append(
            "slack = the granularity the kernel's wheel (Linux >= 4.8) "
            "accepts for the timer: LVL_GRAN = 8^level jiffies of the level "
            "calc_wheel_index puts its timeout in (LVL_START(n) = 63 << "
            "3(n-1) jiffies, LVL_DEPTH %d at HZ=%d), * 10^6 / HZ us%s"
            % (wheel_depth(hz), hz, checked))
    else:
        comments.append("slack = expires - softexpires of the hrtimer_start "
                        "(ns): the range the caller allowed")
    if c["slack_cut"]:
        comments.append("slacks cut so that deadline + slack stays below "
                        "2^62 ns: %d" % c["slack_cut"])
    if evs:
        comments.append("time = perf timestamp - %d.%09d s (first selected "
                        "event), unit %s" % (evs[0].ts // 10 ** 9,
                                             evs[0].ts % 10 ** 9, unit))
    comments.append("input lines %d: selected events %d, other events %d "
                    "(skipped), lines that are not perf samples %d (skipped)"
                    % (cnt["lines"], len(evs), cnt["other_events"],
                       cnt["not_samples"]))
    comments.append(
        "folded cancel+start into reschedule %d; starts of live timers as "
        "reschedule %d; expiry detaches (cancel before expire_entry) dropped "
        "%d; cancels %d and expiries %d of timers armed before the trace "
        "dropped; negative delays clamped to 0 %d; starts on an unmeasured "
        "clock skipped %d; live at the end %d"
        % (c["folded"], c["start_live"], c["expiry_detach"],
           c["cancel_before"], c["expire_before"], c["clamped"],
           c["other_clock"], c["live_end"]))
    if c["out_of_range"]:
        line, d = c["first_out_of_range"]
        why = ("starts whose delay or deadline is 2^62 ns or more (out of "
               "the format's range) dropped %d, the first on line %d (delay "
               "%d %s); their timers' later cancels and expiries skipped %d"
               % (c["out_of_range"], line, d, unit, c["after_dropped"]))
        comments.append(why)
        sys.stderr.write("perf2trace: warning: %s: %s\n" % (path, why))
    if not events:
        # nothing to replay: the replay refuses such a trace, so it is not
        # written at all
        raise InputError(path, max(1, cnt["lines"]), "no timer armed in the "
                         "trace: of %d selected events, %d are cancels and "
                         "expiries of timers armed before recording began, "
                         "%d starts dropped (out of range %d, unmeasured "
                         "clock %d)"
                         % (len(evs), c["cancel_before"] + c["expire_before"],
                            c["out_of_range"] + c["other_clock"],
                            c["out_of_range"], c["other_clock"]))
    tb_trace.write(out, unit, comments, events)
    return events


def _fail(message):
    sys.stderr.write("perf2trace: %s\n" % message)
    return 2


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="perf script output of the kernel's timer tracepoints "
        "-> timerbench trace (D4)")
    ap.add_argument("input", nargs="?", default="-",
                    help="perf script text, a regular file (default, or -: "
                    "stdin, a pipe works)")
    ap.add_argument("--stream", choices=sorted(STREAMS), default="timer")
    ap.add_argument("--hz", type=int, default=None,
                    help="kernel HZ (default: measured, else %d)" % DEFAULT_HZ)
    ap.add_argument("--no-slack", dest="slack", action="store_false",
                    help="write format v1, without the slack column")
    ap.add_argument("--comment", action="append", default=[],
                    help="a comment line to put first (how the trace was "
                    "recorded); repeatable")
    ap.add_argument("-o", "--out", default="-", help="trace file, replaced "
                    "only once the import succeeded (default: stdout)")
    a = ap.parse_args(argv)
    if a.hz is not None and a.hz <= 0:
        ap.error("--hz must be > 0")
    # everything that can be checked before reading is, and nothing is
    # written before the whole trace is built and encoded
    for c in a.comment:
        try:
            tb_trace.check_comment(c)
        except ValueError as e:
            return _fail("--comment: %s" % e)
    if a.out != "-":
        why = tb_trace.check_output(a.out)
        if why:
            return _fail(why)
    if a.input == "-":
        path, f = "<stdin>", sys.stdin.buffer
    else:
        path = os.fsencode(a.input).decode("utf-8", "backslashreplace")
        try:
            f = tb_trace.open_regular(a.input)
        except tb_trace.TraceError as e:
            return _fail("%s%s" % (e, "" if e.message.startswith("cannot")
                                   else "; pipe it into stdin instead"))
    buf = io.StringIO()
    try:
        run(input_lines(f, path), path, a.stream, a.hz, buf, a.comment,
            a.slack)
        data = buf.getvalue().encode("utf-8")
    except InputError as e:
        sys.stderr.write("perf2trace: %s\n" % e)
        return 1
    except OSError as e:
        return _fail("%s: cannot read: %s" % (path, e.strerror or e))
    except ValueError as e:
        # tb_trace.write refused a line outside the format (a comment made
        # of a path longer than a line may be)
        return _fail("cannot write a valid trace: %s" % e)
    finally:
        if f is not sys.stdin.buffer:
            f.close()
    why = tb_trace.emit(a.out, data)
    return _fail(why) if why else 0
