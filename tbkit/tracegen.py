"""tracegen.py — workload models from the literature written as timerbench
traces (DECISIONS.md D4, unit=us), so that they and a recorded kernel trace
go through the same replay.

    tools/tracegen.py MODEL [--seed S] [--events N] [--slack SPEC]
                      [--out FILE] [model options]

The same seed and options give the same file, byte for byte (Python's
random.Random, Mersenne Twister, seeded with S).  --events N: the model
stops starting new work once it has written N events and then lets the
work in flight finish, so the trace ends with nothing cut in half and
holds N events or a few more (hold: exactly N; purgatory: N or N+1;
clientserver: at most three more per open connection, each finishing its
request and closing).
Ids are never reused.

--slack SPEC gives every timer a lateness budget, written in the slack
column of trace format v2 (issue 27; the replay holds every backend to
it, DECISIONS.md D9): SPEC is the grammar of `--lateness`
(tbkit/precision.py parse_spec, the one function both use): an
absolute `<int><ns|us|ms|s>` (`50us`, `1ms`, `0ns`), which must be a
whole number of us (the trace's unit), or a share `<number>%` of each
timer's delay (`1%`, `12.5%`; 0 < pct <= 100), floored to whole ns as
the replay floors it, then to whole us.  Without --slack the trace is
format v1, as before.

Every trace written is inside the format's rules and limits (tb_trace.py):
bad option values (not finite, out of their range) and options whose trace
would reach 2^62 ns stop it with a message and exit status 2, and --out is
replaced only once the whole trace is built (an existing file is left as
it was on any error).  Ranges: --events 1..10^8 (the trace is built in
memory), --seed 0..2^63-1, --connections and --pending 1..10^7, each time
in ms below 2^62 ns, --rate from 10^-6/s, --requests-per-conn 1..10^9.

Models
------
purgatory — Kafka's request purgatory, as its redesign proposal and
  benchmark describe it (Apache Kafka wiki "Purgatory Redesign Proposal";
  Y. Matsuda, "Apache Kafka, Purgatory, and Hierarchical Timing Wheels",
  Confluent blog, 2015; the generator of Kafka's TestPurgatoryPerformance):
  requests arrive as a Poisson process (--rate, default 10000/s); each
  arms a timeout timer of --timeout-ms (default 200); its completion time
  is log-normal with the given median and 75th percentile (mu = ln p50,
  sigma = (ln p75 - ln p50) / 0.674490); a request that completes before
  its timeout cancels the timer at completion, the others let it fire.
  --mix low: p50 20 ms, p75 60 ms (about 92 % cancelled); --mix high:
  p50 200 ms, p75 400 ms (about half cancelled) — the proposal's two mixes.
  Events: schedule (delay = timeout), cancel.

clientserver — the request/response server of the Ratas write-up
  (J. Snellman, "Ratas - A hierarchical timer wheel", 2016): each
  connection holds an idle timer that is pushed forward on every request,
  each request a deadline that is almost always cancelled, and each
  response a pacing timer that always fires.  Parameters (ours, the
  write-up gives none): --connections (default 1000) open at all times;
  each connection makes a geometric number of requests (mean
  --requests-per-conn, default 20), thinking an exponential time (mean
  --think-ms, default 50) before each; the idle timer (--idle-ms, default
  10000) is armed at open and rescheduled at every request; the request
  deadline (--deadline-ms, default 1000) is cancelled at the response,
  which comes after a log-normal time (p50 5 ms, p75 15 ms: about 0.06 %
  of requests miss it and their deadline fires); the pacing timer, armed
  at each response, waits uniform 0.5 to 1.5 ms and fires.  A connection
  closes after its last request's response (its idle timer cancelled),
  except a share --silent (default 0.1) that goes quiet instead and is
  closed by its idle timer firing; either way a new connection opens at
  that moment.  Events: schedule, reschedule (idle), cancel.

hold — the classic hold model of event-set benchmarks (J. H. Vaucher and
  P. Duval, CACM 1975; D. W. Jones, "An empirical comparison of
  priority-queue and event-set implementations", CACM 29(4), 1986):
  --pending timers (default 1000) are armed at time 0; whenever one
  fires, one more is armed with a fresh delay, so the number pending stays
  constant.  Expiry is not a trace input, so the successor is written at
  its predecessor's deadline: the event times are exactly the hold
  model's.  --dist (all with mean --mean-ms, default 10): exponential;
  uniform on [0, 2 mean]; bimodal: with probability 0.9 uniform on
  [0, 0.2 mean], else uniform on [8.2 mean, 10 mean] (a mode of short
  and one of long delays, as in Jones' bimodal; the exact shape is ours).
  Events: schedule only.
"""
import argparse
import heapq
import io
import math
import random
import sys

from tbkit import precision as tb_precision  # the SPEC grammar, shared with --lateness
from tbkit import trace as tb_trace

Z75 = 0.674490   # the 75th percentile of N(0, 1)
MIXES = {"low": (20.0, 60.0), "high": (200.0, 400.0)}


def _us(ms):
    return int(round(ms * 1000.0))


def _lognormal(p50, p75):
    mu = math.log(p50)
    return mu, (math.log(p75) - mu) / Z75


class _Out:
    """Collects events, checking the time order as they come."""

    def __init__(self):
        self.events = []
        self.next_id = 0

    def new_id(self):
        self.next_id += 1
        return self.next_id - 1

    def add(self, t, op, tid, delay=None, period=None):
        assert not self.events or t >= self.events[-1][0]
        self.events.append((t, op, tid, delay, period))


def purgatory(rng, n, a):
    p50, p75 = MIXES[a.mix]
    mu, sigma = _lognormal(p50, p75)
    timeout = _us(a.timeout_ms)
    out = _Out()
    cancels = []          # (time, id) of completions that beat the timeout
    planned = 0
    t = 0.0
    while planned < n:
        t += rng.expovariate(a.rate / 1e6)
        now = int(t)
        while cancels and cancels[0][0] <= now:
            ct, cid = heapq.heappop(cancels)
            out.add(ct, "cancel", cid)
        tid = out.new_id()
        out.add(now, "schedule", tid, timeout)
        planned += 1
        latency = int(rng.lognormvariate(mu, sigma) * 1000.0)
        if latency < timeout:
            heapq.heappush(cancels, (now + latency, tid))
            planned += 1
    while cancels:
        ct, cid = heapq.heappop(cancels)
        out.add(ct, "cancel", cid)
    params = ("mix=%s (completion p50 %g ms, p75 %g ms: log-normal mu=%.4f "
              "sigma=%.4f) rate=%g/s timeout=%g ms"
              % (a.mix, p50, p75, mu, sigma, a.rate, a.timeout_ms))
    return out.events, params


def clientserver(rng, n, a):
    mu, sigma = _lognormal(5.0, 15.0)
    idle, deadline = _us(a.idle_ms), _us(a.deadline_ms)
    out = _Out()
    ev = []               # (time, seq, kind, conn): the simulation's agenda
    seq = [0]

    def push(t, kind, conn):
        seq[0] += 1
        heapq.heappush(ev, (t, seq[0], kind, conn))

    def think():
        return int(rng.expovariate(1.0 / (a.think_ms * 1000.0)))

    def open_conn(t):
        q = 1.0 / a.requests_per_conn      # geometric number of requests >= 1
        left = 1 if q >= 1.0 else \
            1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - q))
        conn = {"idle": out.new_id(), "idle_dl": t + idle, "left": left,
                "silent": rng.random() < a.silent, "req": None}
        out.add(t, "schedule", conn["idle"], idle)
        push(t + think(), "request", conn)

    for _ in range(a.connections):
        open_conn(0)
    while ev:
        t, _, kind, conn = heapq.heappop(ev)
        stopping = len(out.events) >= n
        if kind == "reopen":
            if not stopping:
                open_conn(t)
            continue
        if kind == "request":
            if stopping:
                # no new work: the client closes instead of asking again
                if not conn["silent"]:
                    out.add(t, "cancel", conn["idle"])
                continue
            if t >= conn["idle_dl"]:
                # the client thought longer than the idle timeout: the idle
                # timer fired and closed the connection; a new one opens
                if not stopping:
                    open_conn(t)
                continue
            out.add(t, "reschedule", conn["idle"], idle)
            conn["idle_dl"] = t + idle
            rid = out.new_id()
            out.add(t, "schedule", rid, deadline)
            lat = int(rng.lognormvariate(mu, sigma) * 1000.0)
            conn["left"] -= 1
            if lat < deadline:
                conn["req"] = rid
                push(t + lat, "response", conn)
            else:
                push(t + deadline, "failed", conn)   # its deadline fires
            continue
        if kind == "response":
            out.add(t, "cancel", conn["req"])
            out.add(t, "schedule", out.new_id(),
                    int(rng.uniform(500.0, 1500.0)))
        if conn["left"] > 0 and not stopping:
            push(t + think(), "request", conn)
        elif conn["silent"]:
            # goes quiet: its idle timer fires and the server closes it
            push(conn["idle_dl"], "reopen", conn)
        else:
            out.add(t, "cancel", conn["idle"])
            if not stopping:
                open_conn(t)
    params = ("connections=%d requests-per-conn=%g (geometric) think=%g ms "
              "(exponential) idle=%g ms deadline=%g ms response p50 5 ms p75 "
              "15 ms (log-normal) pacing uniform 0.5-1.5 ms silent=%g"
              % (a.connections, a.requests_per_conn, a.think_ms, a.idle_ms,
                 a.deadline_ms, a.silent))
    return out.events, params


def hold(rng, n, a):
    m = a.mean_ms * 1000.0

    def draw():
        if a.dist == "exponential":
            return int(rng.expovariate(1.0 / m))
        if a.dist == "uniform":
            return int(rng.uniform(0.0, 2.0 * m))
        if rng.random() < 0.9:
            return int(rng.uniform(0.0, 0.2 * m))
        return int(rng.uniform(8.2 * m, 10.0 * m))

    out = _Out()
    pending = []
    for _ in range(min(a.pending, n)):
        tid, d = out.new_id(), draw()
        out.add(0, "schedule", tid, d)
        heapq.heappush(pending, (d, tid))
    while len(out.events) < n:
        t, _ = heapq.heappop(pending)
        tid, d = out.new_id(), draw()
        out.add(t, "schedule", tid, d)
        heapq.heappush(pending, (t + d, tid))
    params = "pending=%d dist=%s mean=%g ms" % (a.pending, a.dist, a.mean_ms)
    return out.events, params


MODELS = {"purgatory": purgatory, "clientserver": clientserver, "hold": hold}
SOURCES = {
    "purgatory": "Kafka purgatory redesign proposal / TestPurgatoryPerformance "
                 "(Poisson arrivals, log-normal completions, fixed timeout)",
    "clientserver": "Ratas write-up (Snellman 2016): idle timer rescheduled "
                    "per request, request deadline almost always cancelled, "
                    "pacing timer always fires",
    "hold": "hold model (Vaucher & Duval 1975, Jones 1986): each firing "
            "arms one more; successor written at its predecessor's deadline",
}


def parser():
    ap = argparse.ArgumentParser(
        description="write a workload model as a timerbench trace (D4, "
        "unit=us)", epilog="details: the module docstring "
        "(python3 -m pydoc tools/tracegen.py)")
    sub = ap.add_subparsers(dest="model", metavar="MODEL", required=True)

    def common(p):
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--events", type=int, default=100000)
        p.add_argument("--out", "-o", default="-")
        p.add_argument("--slack", metavar="SPEC",
                       help="every timer's lateness budget (format v2): "
                       "50us, 1ms, 0ns, or a share of its delay, 1%%, "
                       "12.5%%")

    p = sub.add_parser("purgatory", help="Kafka request purgatory")
    common(p)
    p.add_argument("--mix", choices=sorted(MIXES), default="low")
    p.add_argument("--rate", type=float, default=10000.0,
                   help="requests per second")
    p.add_argument("--timeout-ms", type=float, default=200.0)
    p = sub.add_parser("clientserver", help="Ratas client/server")
    common(p)
    p.add_argument("--connections", type=int, default=1000)
    p.add_argument("--requests-per-conn", type=float, default=20.0)
    p.add_argument("--think-ms", type=float, default=50.0)
    p.add_argument("--idle-ms", type=float, default=10000.0)
    p.add_argument("--deadline-ms", type=float, default=1000.0)
    p.add_argument("--silent", type=float, default=0.1)
    p = sub.add_parser("hold", help="hold model")
    common(p)
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--dist", choices=("exponential", "uniform", "bimodal"),
                   default="exponential")
    p.add_argument("--mean-ms", type=float, default=10.0)
    return ap


EVENTS_MAX = 10 ** 8
COUNT_MAX = 10 ** 7
MS_MAX = tb_trace.LIMIT_NS / 10 ** 6      # 2^62 ns in ms


def _ms_ok(v):
    return math.isfinite(v) and 0 < v < MS_MAX


def generate(argv):
    """Parse argv (without the program name); return (comments, events).
    Bad options: SystemExit(2) with the message on stderr."""
    ap = parser()
    a = ap.parse_args(argv)
    ms = "must be > 0 and below 2^62 ns (%.0f ms)" % MS_MAX
    checks = [(0 < a.events <= EVENTS_MAX,
               "--events must be in 1..%d" % EVENTS_MAX),
              (0 <= a.seed <= tb_trace.ID_MAX, "--seed must be in 0..2^63-1")]
    if a.model == "purgatory":
        checks += [(math.isfinite(a.rate) and a.rate >= 1e-6,
                    "--rate must be a finite number >= 1e-6 (per second)"),
                   (_ms_ok(a.timeout_ms), "--timeout-ms " + ms)]
    elif a.model == "clientserver":
        checks += [(0 < a.connections <= COUNT_MAX,
                    "--connections must be in 1..%d" % COUNT_MAX),
                   (1 <= a.requests_per_conn <= 1e9,
                    "--requests-per-conn must be in 1..1e9"),
                   (_ms_ok(a.think_ms), "--think-ms " + ms),
                   (_ms_ok(a.idle_ms), "--idle-ms " + ms),
                   (_ms_ok(a.deadline_ms), "--deadline-ms " + ms),
                   # a response or failure then always comes before the
                   # idle deadline the request pushed forward
                   (a.idle_ms > a.deadline_ms,
                    "--idle-ms must be longer than --deadline-ms"),
                   (0 <= a.silent <= 1, "--silent is a share in [0, 1]")]
    else:
        checks += [(0 < a.pending <= COUNT_MAX,
                    "--pending must be in 1..%d" % COUNT_MAX),
                   (_ms_ok(a.mean_ms), "--mean-ms " + ms)]
    for ok, msg in checks:
        if not ok:
            ap.error(msg)
    spec = None
    if a.slack is not None:
        try:
            spec = tb_precision.parse_spec(a.slack)
        except ValueError as e:
            ap.error("--slack: %s" % e)
        if spec["kind"] == "abs" and spec["value"] % 1000:
            ap.error("--slack %r is not a whole number of us, the trace's "
                     "unit" % a.slack)
    rng = random.Random(a.seed)
    events, params = MODELS[a.model](rng, a.events, a)
    comments = ["generator: tools/tracegen.py %s seed=%d events=%d"
                % (a.model, a.seed, a.events),
                "model: %s" % SOURCES[a.model],
                "parameters: %s" % params]
    if spec is not None:
        events = with_slack(events, spec)
        comments.append(
            "slack: %s for every timer (%s)" % (a.slack,
            "absolute" if spec["kind"] == "abs" else
            "a share of its delay, floored to whole ns, then us"))
    return a, comments, events


def with_slack(events, spec):
    """The events (time, op, id, delay, period) with their slack in us:
    the budget `spec` (tb_precision.parse_spec) gives each timer's delay
    (a periodic timer's: its period, the delay each run is armed with, as
    the replay takes a share), None on a cancel."""
    out = []
    for t, op, tid, delay, period in events:
        if op == "cancel":
            out.append((t, op, tid, delay, period, None))
            continue
        base = period if op == "periodic" else delay
        out.append((t, op, tid, delay, period,
                    tb_precision.budget_ns(spec, base * 1000) // 1000))
    return out


def _fail(message):
    sys.stderr.write("tracegen: %s\n" % message)
    return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(argv)
    if a.out != "-":
        why = tb_trace.check_output(a.out)
        if why:
            return _fail(why)
    a, comments, events = generate(argv)
    buf = io.StringIO()
    try:
        # checks every event against the format's limits before writing
        tb_trace.write(buf, "us", comments, events)
    except ValueError as e:
        return _fail("%s: these options make a trace outside the format, "
                     "whose times stay below 2^62 ns (fewer --events or "
                     "shorter times): %s" % (a.model, e))
    data = buf.getvalue().encode("utf-8")
    why = tb_trace.emit(a.out, data)
    return _fail(why) if why else 0
