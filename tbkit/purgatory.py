"""tbkit.purgatory — the purgatory experiment (analysis layer, issue 41):
Kafka's purgatory benchmark played on real threads by the C player
(timerbench-play: backends, the `floor`, the libraries; purgatory.json)
and the JVM player (jvm/Purgatory.java: purgatory-jvm.json), checked
against their schema (docs: bench/README.md, "Reading the purgatory
section"), the saturation rule re-applied to every row, and per subject and
shape the saturation rate as an interval, nothing rendered.

    play = load(res)                       # Play: the files, why one is absent
    iv = play.interval(FILE_C, "hierwheel", "few")   # Interval
    pts = play.points(FILE_C, "hierwheel", "few")    # per target rate
    cases = claim_cases(play)              # the claim's comparisons, decided

tbkit.results reads the two files as JSON (Results.purgatory); this module
refuses a document of another format (FormatError) and skips rows that
are not in the schema, counting them.  The claim is
tbkit.claims.purgatory_saturation; the section tbkit.sec_purgatory.
"""

import dataclasses
import math
import statistics

from tbkit import analysis as AN
from tbkit import results as tb_results
from tbkit import stats as S
from tbkit import tracegen

FORMAT = 1
FILE_C, FILE_JVM = tb_results.PURGATORY_FILES
# machine.json's run facts that say why a file is absent (the sweep's step
# skipped or failed: {"why": ...}, as run.jvm is).
RUN_NOTE = {FILE_C: "purgatory", FILE_JVM: "purgatory_jvm"}
PLAYER = {FILE_C: "the C player (timerbench-play)",
          FILE_JVM: "the JVM player (jvm/Purgatory.java)"}
SHAPES = ("few", "many")
# The two shapes are tracegen's two mixes (tbkit/tracegen.py purgatory):
# completion log-normal with this p50 and p75 in ms; 200 ms timeout.
SHAPE_MIX = {"few": "low", "many": "high"}
SHAPE_P50_P75_MS = {s: tracegen.MIXES[m] for s, m in SHAPE_MIX.items()}
TIMEOUT_MS = 200.0
SIDES = ("backend", "library", "jvm", "floor")
FLOOR = "floor"

# The saturation rule (issue 41): a play is saturated when the achieved
# rate falls more than SAT_RATE_SHORTFALL below the offered one, or the
# player's lag grows by more than SAT_LAG_GROWTH_NS from the first tenth
# of the operations to the last.  The players apply the same rule with the
# same constants: bench/player.h (the C player) and jvm/Purgatory.java
# (the JVM player); a change here is a change there.
SAT_RATE_SHORTFALL = 0.05
SAT_LAG_GROWTH_NS = 2_000_000
# The expiry side (D40): a subject whose own threads fall behind while the
# player keeps up (DelayQueue's reaper, seen at 160k/s) is saturated too:
# more than SAT_EXPIRY_SHORTFALL of the timeouts the workload lets fire
# have not fired when the drain ends, or the median lateness of the last
# tenth of the fired timeouts (in deadline order) is more than
# SAT_LATENESS_GROWTH_NS above the first tenth's, when each tenth holds at
# least SAT_MIN_WINDOW (a quarter of the 200 ms timeout: far above a tick's
# spread of 20 samples, far below a backlog's growth).
SAT_EXPIRY_SHORTFALL = 0.05
# The drain: how long after the last deadline a player waits for the
# timeouts still due (the purgatory's own timeout; bench/player.h
# PL_DRAIN_GRACE_NS, jvm/Purgatory.java DRAIN_NS); a fire after it is not
# counted.
DRAIN_NS = 200_000_000
SAT_LATENESS_GROWTH_NS = 50_000_000
SAT_MIN_WINDOW = 20

# "Worse when timeouts are frequent", when the saturation intervals of the
# two shapes do not settle it: the delay queue's CPU per request in `many`
# over `few`, at the highest rate both shapes ran unsaturated.  Worse at
# FREQUENT_CPU_WORSE or more; not worse below 1 + the suite's minimum
# effect (tbkit.stats.MIN_EFFECT); undecided between.
FREQUENT_CPU_WORSE = 1.25
FREQUENT_CPU_SAME = 1 + S.MIN_EFFECT

# The claim's pairs: (side, file, delay queue, wheel).  C: heapqueue
# renders the JDK's DelayQueue (the old purgatory's structure), hierwheel
# Kafka's wheel over a delay queue of buckets; JVM: DelayQueue itself
# against Netty's HashedWheelTimer (a wheel, not Kafka's own: no Debian
# package ships Kafka).
PAIRS = (("C", FILE_C, "heapqueue", "hierwheel"),
         ("JVM", FILE_JVM, "DelayQueue", "Netty"))

# Case decisions (tbkit.verdict.Case.decision) of the claim.
BELOW = "below"                    # the first's interval wholly below the second's
ABOVE = "above"                    # wholly above: the second saturates first
OVERLAP = "overlap"
NEITHER = "neither saturated"
PLAYER_LIMITED = "limited by the player"
NOT_TESTED = "not tested"
WORSE = "worse"                    # the frequent-timeouts part
NOT_WORSE = "not worse"
UNDECIDED = "undecided"


class FormatError(ValueError):
    """A purgatory file that is not in the schema, and why."""


# ---- the schema ----------------------------------------------------------------

def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


_CHECKS = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "line": (lambda v: isinstance(v, str) and "\n" not in v, "a string of one line"),
    "side": (lambda v: v in SIDES, "one of " + ", ".join(SIDES)),
    "shape": (lambda v: v in SHAPES, "one of " + ", ".join(SHAPES)),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "count": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "count?": (lambda v: v is None or (_is_int(v) and v >= 0), "an integer >= 0 or null"),
    "num": (_is_num, "a number"),
    "num>=0": (lambda v: _is_num(v) and v >= 0, "a number >= 0"),
    "num>0": (lambda v: _is_num(v) and v > 0, "a number > 0"),
    "num?": (lambda v: v is None or _is_num(v), "a number or null"),
    "share": (lambda v: _is_num(v) and 0 <= v <= 1, "a number from 0 to 1"),
}

# Every key a row has (issue 41's row schema), and what it must be.
ROW_SCHEMA = (
    ("subject", "str"), ("side", "side"), ("structure", "line"), ("shape", "shape"),
    ("repetition", "count"), ("target_rate", "num>0"), ("offered_rate", "num>0"),
    ("achieved_rate", "num>=0"), ("requests", "count"), ("seconds", "num>0"),
    ("lag_p50_ns", "num"), ("lag_p99_ns", "num"), ("lag_max_ns", "num"),
    ("lag_growth_ns", "num"), ("saturated", "bool"), ("why", "str"),
    ("cpu_ns_per_request", "num>=0"), ("player_cpu_ns_per_request", "num>=0"),
    ("subject_cpu_ns_per_request", "num>=0"),
    ("fired", "count"), ("fired_share", "share"), ("timeouts_due", "count"),
    ("lateness_growth_ns", "num?"),
    ("lateness_p50_ns", "num?"), ("lateness_p99_ns", "num?"),
    ("peak_pending", "count?"), ("peak_zombies", "count?"),
)
ROW_KEYS = tuple(k for k, _ in ROW_SCHEMA)


def row_problem(row):
    """Why a row is not in the schema (the first thing wrong), or None."""
    if not isinstance(row, dict):
        return "is not an object"
    for key, kind in ROW_SCHEMA:
        if key not in row:
            return "has no %s" % key
        ok, what = _CHECKS[kind]
        if not ok(row[key]):
            return "%s is %r, where %s is expected" % (key, row[key], what)
    return None


def parse(doc, name):
    """The document of file `name` checked against the schema: a dict
    {name, profile, pinning, grid, rows, skipped, bad_rows, extra_keys}
    with the rows in the schema only (bad_rows: [(index, why)] of the
    others; extra_keys: keys rows carry that the schema does not name).
    Raises FormatError, naming the file, for a document of another format
    or whose frame (pinning, grid, rows, skipped) is not the schema's."""
    def refuse(what):
        raise FormatError("%s %s" % (name, what))
    if not isinstance(doc, dict):
        refuse("is not a JSON object")
    if doc.get("format") != FORMAT:
        refuse("is format %r, not the purgatory players' format %d (issue 41): "
               "written by another version of the players" % (doc.get("format"), FORMAT))
    if not isinstance(doc.get("profile"), str):
        refuse("has no profile (a string)")
    pin = doc.get("pinning")
    if not (isinstance(pin, dict) and all(k in pin for k in ("player_cpu", "subject_cpu", "note"))
            and all(pin[k] is None or _is_int(pin[k]) for k in ("player_cpu", "subject_cpu"))
            and isinstance(pin["note"], str)):
        refuse("has no pinning {player_cpu, subject_cpu: integer or null, note: string}")
    grid = doc.get("grid")
    if not (isinstance(grid, dict) and isinstance(grid.get("rates"), list) and grid["rates"]
            and all(_is_num(r) and r > 0 for r in grid["rates"])
            and _is_num(grid.get("seconds")) and grid["seconds"] > 0
            and _is_int(grid.get("repetitions")) and grid["repetitions"] >= 1):
        refuse("has no grid {rates: [numbers > 0], seconds: number > 0, repetitions: "
               "integer >= 1}")
    if not isinstance(doc.get("rows"), list):
        refuse("has no rows (a list)")
    skipped = doc.get("skipped")
    if not (isinstance(skipped, list) and all(
            isinstance(s, dict) and isinstance(s.get("subject"), str)
            and isinstance(s.get("why"), str) for s in skipped)):
        refuse("has no skipped list [{subject, why}]")
    rows, bad, extra, seen = [], [], set(), set()
    for i, r in enumerate(doc["rows"]):
        why = row_problem(r)
        if why is None:
            k = (r["subject"], r["shape"], r["target_rate"], r["repetition"])
            if k in seen:
                why = "repeats subject %s, shape %s, rate %g, repetition %d" % k
            seen.add(k)
        if why is not None:
            bad.append((i, why))
            continue
        extra.update(set(r) - set(ROW_KEYS))
        rows.append({k: r[k] for k in ROW_KEYS})
    return {"name": name, "profile": doc["profile"], "pinning": dict(pin),
            "grid": {"rates": sorted(float(r) for r in grid["rates"]),
                     "seconds": float(grid["seconds"]), "repetitions": grid["repetitions"]},
            "rows": rows, "skipped": [dict(s) for s in skipped],
            "bad_rows": bad, "extra_keys": sorted(extra)}


# ---- the rule ----------------------------------------------------------------

def saturation(achieved_rate, offered_rate, lag_growth_ns, fired=0, timeouts_due=0,
               lateness_growth_ns=None):
    """(saturated, why) of one play by the rule: achieved more than
    SAT_RATE_SHORTFALL below offered, the lag grown by more than
    SAT_LAG_GROWTH_NS, more than SAT_EXPIRY_SHORTFALL of the due timeouts
    unfired, or the lateness grown by more than SAT_LATENESS_GROWTH_NS
    (None: too few fired to tell); why says which, in the players' words
    ("achieved 12.3% below offered", "lag grew 41.2 ms", "60.0% of the due
    timeouts unfired", "lateness grew 81.0 ms"), "" when none."""
    why = []
    if achieved_rate < (1 - SAT_RATE_SHORTFALL) * offered_rate:
        why.append("achieved %.1f%% below offered" % (100.0 * (1 - achieved_rate / offered_rate)))
    if lag_growth_ns > SAT_LAG_GROWTH_NS:
        why.append("lag grew %.1f ms" % (lag_growth_ns / 1e6))
    if fired < (1 - SAT_EXPIRY_SHORTFALL) * timeouts_due:
        why.append("%.1f%% of the due timeouts unfired" % (100.0 * (1 - fired / timeouts_due)))
    if lateness_growth_ns is not None and lateness_growth_ns > SAT_LATENESS_GROWTH_NS:
        why.append("lateness grew %.1f ms" % (lateness_growth_ns / 1e6))
    return bool(why), "; ".join(why)


def rule_of(row):
    """The rule applied to a row's own fields: (saturated, why)."""
    return saturation(row["achieved_rate"], row["offered_rate"], row["lag_growth_ns"],
                      row["fired"], row["timeouts_due"], row["lateness_growth_ns"])


# ---- intervals -----------------------------------------------------------------

@dataclasses.dataclass
class Interval:
    """Where a subject saturates in one shape, on the rates it ran.  A rate
    is saturated when more than half of its plays are (the players' own
    rule for a rate: tbkit/purgrun.py, and its confirming play in the quick
    and standard profiles).  The saturation rate lies above `lo` (the
    highest rate run below `hi`; None: it saturated at the lowest rate it
    ran) and at most `hi` (the first saturated rate; None: not reached up
    to `top`, the highest rate run).  The repetitions' spread widens the
    lower end: `lo_wide` is the highest rate run below the first at which
    any play saturated, and the claim compares (lo_wide, hi].  `mixed`:
    [(rate, plays saturated, plays)] of the rates whose plays disagreed.
    `limited`: it saturated where the floor (the player doing nothing)
    did, or never while the floor did: the player's own limit, so it is
    only known to take at least its lower end."""

    lo: float
    hi: float
    top: float
    lo_wide: float = None
    mixed: list = dataclasses.field(default_factory=list)
    limited: bool = False

    @property
    def reached(self):
        return self.hi is not None


def rate_saturated(k, n):
    """A rate with k of its n plays saturated is saturated (the majority)."""
    return k > n / 2


def _interval(rows):
    """The Interval of one subject's rows in one shape (no floor applied)."""
    by = {}
    for r in rows:
        by.setdefault(r["target_rate"], []).append(rule_of(r)[0])
    rates = sorted(by)
    sat = [r for r in rates if rate_saturated(sum(by[r]), len(by[r]))]
    hi = sat[0] if sat else None
    below = [r for r in rates if hi is not None and r < hi]
    lo = max(below) if below else (None if hi is not None else rates[-1])
    anyr = [r for r in rates if any(by[r])]
    under = [r for r in rates if anyr and r < anyr[0]]
    lo_wide = max(under) if under else (None if anyr else lo)
    mixed = [(r, sum(by[r]), len(by[r])) for r in rates if 0 < sum(by[r]) < len(by[r])]
    return Interval(lo, hi, rates[-1], lo_wide, mixed)


def _below(a, b):
    """a saturated at a rate at which every play of b ran unsaturated (a
    wholly below b): a's own saturation, not the player's, is what is
    compared."""
    return a.hi is not None and b.lo_wide is not None and a.hi <= b.lo_wide and not a.limited


def compare(a, b):
    """BELOW, ABOVE, OVERLAP, NEITHER or PLAYER_LIMITED: where interval a
    lies against b.  A subject limited by the player ran unsaturated up to
    its `lo`, so it can still be above another; it is never below one, and
    two that overlap with either at the player's limit are
    PLAYER_LIMITED."""
    if _below(a, b):
        return BELOW
    if _below(b, a):
        return ABOVE
    if a.limited or b.limited:
        return PLAYER_LIMITED
    if a.hi is None and b.hi is None:
        return NEITHER
    return OVERLAP


# ---- the files -----------------------------------------------------------------

def _note_why(note):
    if isinstance(note, dict) and isinstance(note.get("why"), str) and note["why"]:
        return note["why"]
    if isinstance(note, str) and note:
        return note
    return None


class Play:
    """The purgatory experiment of one results directory: `files` {name:
    parsed document} of the files accepted, `absent` {name: why} of the
    others (not run, unreadable, refused: why), `problems` [text] for
    Limitations (rows skipped, keys not read, flags the rule contradicts)."""

    def __init__(self, res):
        self.files, self.absent, self.problems = {}, {}, []
        self.mismatches = []     # (file, row, the rule's saturated, its why)
        for name in tb_results.PURGATORY_FILES:
            if name not in res.purgatory:
                why = _note_why(res.run.get(RUN_NOTE[name]))
                self.absent[name] = why or (
                    "this results directory has no %s (a run from before issue 41, a "
                    "profile without the purgatory step, or a run that stopped before "
                    "it)" % name)
                continue
            doc = res.purgatory[name]
            if doc is None:
                self.absent[name] = "%s cannot be read (its problem is listed in " \
                                    "Limitations)" % name
                continue
            try:
                f = parse(doc, name)
            except FormatError as e:
                self.absent[name] = "refused: %s" % e
                continue
            if f["bad_rows"]:
                self.problems.append("%s: %d of %d rows are not in the schema and were "
                                     "skipped (row %d %s)" % (
                                         name, len(f["bad_rows"]), len(doc["rows"]),
                                         f["bad_rows"][0][0], f["bad_rows"][0][1]))
            if f["extra_keys"]:
                self.problems.append("%s: rows carry keys the schema does not name "
                                     "(not read): %s" % (name, ", ".join(f["extra_keys"])))
            if not f["rows"]:
                self.absent[name] = "%s has no row in the schema" % name
                continue
            for r in f["rows"]:
                sat, why = rule_of(r)
                if sat != r["saturated"]:
                    self.mismatches.append((name, r, sat, why))
            if self.mismatches:
                mine = [m for m in self.mismatches if m[0] == name]
                if mine:
                    _, r, sat, why = mine[0]
                    self.problems.append(
                        "%s: %d rows' saturated flag is not what the rule gives from "
                        "their own fields; the report goes by the rule (e.g. %s, %s, "
                        "%g/s, repetition %d: flagged %s, the rule says %s%s)" % (
                            name, len(mine), r["subject"], r["shape"], r["target_rate"],
                            r["repetition"], "saturated" if r["saturated"] else "not",
                            "saturated" if sat else "not", ": " + why if why else ""))
            self.files[name] = f

    # --- what the files hold -----------------------------------------------------
    def ran(self):
        return bool(self.files)

    def subjects(self, name):
        """[(subject, side, structure)] of file `name`, in its rows' order,
        the floor last."""
        out = {}
        for r in self.files.get(name, {}).get("rows", ()):
            out.setdefault(r["subject"], (r["subject"], r["side"], r["structure"]))
        return sorted(out.values(), key=lambda s: s[1] == FLOOR)

    def rows(self, name, subject, shape):
        return [r for r in self.files.get(name, {}).get("rows", ())
                if r["subject"] == subject and r["shape"] == shape]

    def floor_of(self, name):
        """The floor subject of a file (side "floor"), or None."""
        for s, side, _ in self.subjects(name):
            if side == FLOOR:
                return s
        return None

    def interval(self, name, subject, shape):
        """The subject's Interval in this shape, or None when it has no row."""
        rows = self.rows(name, subject, shape)
        if not rows:
            return None
        iv = _interval(rows)
        fl = self.floor_of(name)
        if fl is not None and fl != subject:
            f = self.interval(name, fl, shape)
            # saturating where the player does (or never, while the player did)
            if f is not None and f.hi is not None and (iv.hi is None or iv.hi >= f.hi):
                iv.limited = True
        return iv

    def points(self, name, subject, shape):
        """Per target rate (ascending): {rate, reps, offered, achieved,
        cpu (the subject's: its threads and the player's time in its calls),
        process_cpu, player_cpu: (median, min, max) over repetitions; lateness_p99:
        median or None; peak_pending, peak_zombies: the largest or None;
        saturated: the repetitions the rule calls saturated; why: theirs}."""
        by = {}
        for r in self.rows(name, subject, shape):
            by.setdefault(r["target_rate"], []).append(r)

        def spread(rs, k):
            v = [r[k] for r in rs if r[k] is not None]
            return (statistics.median(v), min(v), max(v)) if v else None

        out = []
        for rate in sorted(by):
            rs = by[rate]
            lat = [r["lateness_p99_ns"] for r in rs if r["lateness_p99_ns"] is not None]
            pend = [r["peak_pending"] for r in rs if r["peak_pending"] is not None]
            zomb = [r["peak_zombies"] for r in rs if r["peak_zombies"] is not None]
            rules = [rule_of(r) for r in rs]
            out.append({"rate": rate, "reps": len(rs),
                        "offered": spread(rs, "offered_rate"),
                        "achieved": spread(rs, "achieved_rate"),
                        "cpu": spread(rs, "subject_cpu_ns_per_request"),
                        "process_cpu": spread(rs, "cpu_ns_per_request"),
                        "player_cpu": spread(rs, "player_cpu_ns_per_request"),
                        "fired_share": spread(rs, "fired_share"),
                        "lateness_p99": statistics.median(lat) if lat else None,
                        "peak_pending": max(pend) if pend else None,
                        "peak_zombies": max(zomb) if zomb else None,
                        "saturated": sum(1 for s, _ in rules if s),
                        "why": [w for s, w in rules if s]})
        return out


def load(res):
    """The purgatory experiment of results `res` (a tbkit.results.Results)."""
    return Play(res)


# ---- the claim's comparisons ----------------------------------------------------

def _top_common_unsaturated(play, name, *subjects):
    """(rate, (cpu few, cpu many) per subject...) at the highest target
    rate every subject ran unsaturated in both shapes with a CPU time per
    request (medians over each shape's repetitions), or None."""
    by = [{s: {p["rate"]: p for p in play.points(name, subj, s)} for s in SHAPES}
          for subj in subjects]
    common = [r for r in by[0]["few"]
              if all(r in b[s] and not b[s][r]["saturated"] and b[s][r]["cpu"]
                     and b[s][r]["cpu"][0] > 0 for b in by for s in SHAPES)]
    if not common:
        return None
    r = max(common)
    return (r,) + tuple((b["few"][r]["cpu"][0], b["many"][r]["cpu"][0]) for b in by)


def pair_case(play, side, name, dq, wheel, shape):
    """One comparison of the claim's first part: {name, decision (BELOW
    holds, ABOVE does not, the rest undecided or NOT_TESTED), why (a code
    of WHY), why_facts (the plain values its words need besides the
    case's subjects, file and shape: tbkit.claimtext.purgatory_why), dq,
    wheel: Interval or None}."""
    case = {"name": "%s %s against %s, %s" % (side, dq, wheel, shape), "side": side,
            "file": name, "shape": shape, "dq_subject": dq, "wheel_subject": wheel,
            "dq": None, "wheel": None, "why": "", "why_facts": {}}
    if name not in play.files:
        return dict(case, decision=NOT_TESTED, why=WHY_FILE_ABSENT,
                    why_facts={"absent": play.absent.get(name)})
    a, b = play.interval(name, dq, shape), play.interval(name, wheel, shape)
    case.update(dq=a, wheel=b)
    gone = [s for s, iv in ((dq, a), (wheel, b)) if iv is None]
    if gone:
        skipped = {s["subject"]: s["why"] for s in play.files[name]["skipped"]}
        return dict(case, decision=NOT_TESTED, why=WHY_NO_ROWS, why_facts={
            "missing": [{"subject": s, "skipped": skipped.get(s)} for s in gone]})
    d = compare(a, b)
    facts = {"no_floor": play.floor_of(name) is None and d in (BELOW, ABOVE, OVERLAP)}
    if d == PLAYER_LIMITED:
        facts["limited"] = [s for s, iv in ((dq, a), (wheel, b)) if iv.limited]
    return dict(case, decision=d, why=d, why_facts=facts)


def frequent_case(play, side, name, dq, wheel):
    """The claim's second part for one delay queue: worse when timeouts
    are frequent, against the wheel of its pair, since `many` fires six
    times the timeouts of `few` and every fire costs every timer.  {name,
    decision (WORSE, NOT_WORSE, UNDECIDED, NOT_TESTED), basis
    ("saturation" or "cpu"), why (a code of WHY), why_facts (as
    pair_case's), dq_subject, wheel_subject, few, many: Interval,
    wheel_few, wheel_many: the wheel's, rate, cpu_few, cpu_many (the
    delay queue's), wheel_cpu_few, wheel_cpu_many, ratio: the delay
    queue's many/few over the wheel's at that rate}."""
    case = {"name": "%s %s, many against few" % (side, dq), "side": side, "file": name,
            "dq_subject": dq, "wheel_subject": wheel,
            "few": None, "many": None, "wheel_few": None, "wheel_many": None,
            "rate": None, "cpu_few": None, "cpu_many": None, "wheel_cpu_few": None,
            "wheel_cpu_many": None, "ratio": None, "basis": "saturation", "why": "",
            "why_facts": {}}
    if name not in play.files:
        return dict(case, decision=NOT_TESTED, why=WHY_FILE_ABSENT,
                    why_facts={"absent": play.absent.get(name)})
    few, many = play.interval(name, dq, "few"), play.interval(name, dq, "many")
    wf, wm = play.interval(name, wheel, "few"), play.interval(name, wheel, "many")
    case.update(few=few, many=many, wheel_few=wf, wheel_many=wm)
    if few is None or many is None:
        return dict(case, decision=NOT_TESTED, why=WHY_NO_SHAPE_ROWS,
                    why_facts={"missing_shape": "few" if few is None else "many"})
    d = compare(many, few)
    wheel_worse = wf is not None and wm is not None and compare(wm, wf) == BELOW
    if d == BELOW and not wheel_worse:
        return dict(case, decision=WORSE, why=WHY_MANY_BELOW_FEW)
    if d == BELOW:
        return dict(case, decision=UNDECIDED, why=WHY_WHEEL_TOO)
    if d == ABOVE:
        return dict(case, decision=NOT_WORSE, why=WHY_FEW_BELOW_MANY)
    top = _top_common_unsaturated(play, name, dq, wheel)
    case["basis"] = "cpu"
    if top is None:
        return dict(case, decision=UNDECIDED, why=WHY_NO_COMMON_RATE,
                    why_facts={"intervals": d})
    rate, (cf, cm), (wcf, wcm) = top
    ratio = (cm / cf) / (wcm / wcf) if cf else None
    case.update(rate=rate, cpu_few=cf, cpu_many=cm, wheel_cpu_few=wcf, wheel_cpu_many=wcm,
                ratio=ratio)
    if ratio is None:
        return dict(case, decision=UNDECIDED, why=WHY_NO_CPU_FEW)
    if ratio >= FREQUENT_CPU_WORSE:
        dec = WORSE
    elif ratio < FREQUENT_CPU_SAME:
        dec = NOT_WORSE
    else:
        dec = UNDECIDED
    return dict(case, decision=dec, why=WHY_CPU, why_facts={"intervals": d})


# Why a case of the claim was decided so (its `why`): for a pair case
# BELOW, ABOVE, OVERLAP, NEITHER or PLAYER_LIMITED (compare()'s answer)
# or one of these; tbkit.claimtext.purgatory_why says each.
WHY_FILE_ABSENT = "file_absent"          # the file is not there (why_facts: absent)
WHY_NO_ROWS = "no_rows"                  # a subject has no row of the shape (missing)
WHY_NO_SHAPE_ROWS = "no_shape_rows"      # the delay queue lacks a shape (missing_shape)
WHY_MANY_BELOW_FEW = "many_below_few"    # saturated in many below few, the wheel not
WHY_WHEEL_TOO = "wheel_too"              # ... and so did the wheel
WHY_FEW_BELOW_MANY = "few_below_many"    # saturated in few below many
WHY_NO_COMMON_RATE = "no_common_rate"    # intervals unsettled, no rate to compare CPU at
WHY_NO_CPU_FEW = "no_cpu_few"            # no CPU time per request in few
WHY_CPU = "cpu"                          # decided on the CPU per request (intervals)


def why_facts(case):
    """A case's why_facts with the file, the subjects and (a pair case's)
    shape it names: the plain values tbkit.claimtext.purgatory_why says
    its `why` from, with the case's rate and CPU times."""
    out = {"file": case["file"], "dq_subject": case["dq_subject"],
           "wheel_subject": case["wheel_subject"]}
    if "shape" in case:
        out["shape"] = case["shape"]
    out.update(case["why_facts"])
    return out


def claim_cases(play):
    """Every comparison of the claim: (pair cases per PAIRS and shape,
    frequent cases per PAIRS' delay queue)."""
    pairs = [pair_case(play, side, name, dq, wh, shape)
             for side, name, dq, wh in PAIRS for shape in SHAPES]
    freq = [frequent_case(play, side, name, dq, wh) for side, name, dq, wh in PAIRS]
    return pairs, freq


# ---- what the micro-benchmarks predicted ---------------------------------------

def micro_prediction(res, play):
    """For the C pair (heapqueue, hierwheel) and each shape: what this
    run's micro-benchmarks (series h2h, workload uniform) predict a request
    costs, at the micro's N nearest (on a log scale) to the most requests
    the delay queue held pending at the highest rate it ran unsaturated:
    insert plus the share the play cancelled (1 - fired_share) times
    cancel.  Expire is left out (the micro's expire workload is not this
    one's).  [{shape, pending, n, cancelled_share, lines: [{label,
    insert_ns, cancel_ns, per_request_ns}]}], [] without the micro or
    the play."""
    side, name, dq, wheel = PAIRS[0]
    if name not in play.files:
        return []
    ms = [m for m in res.measurements.values()
          if m.op in ("insert", "cancel") and m.backend in (dq, wheel)
          and m.series == "h2h" and m.workload == "uniform" and not m.error
          and m.median and m.n]
    if not ms:
        return []
    out = []
    for shape in SHAPES:
        pts = [p for p in play.points(name, dq, shape) if not p["saturated"]]
        if not pts or not pts[-1]["peak_pending"]:
            continue
        pend = pts[-1]["peak_pending"]
        cancelled = 1.0 - pts[-1]["fired_share"][0]
        ns = sorted({m.n for m in ms})
        n = min(ns, key=lambda x: abs(math.log(x) - math.log(pend)))
        at = [m for m in ms if m.n == n]
        ins = [m for m in at if m.op == "insert"]
        can = [m for m in at if m.op == "cancel"]
        li, lc = AN.labels_for(ins), AN.labels_for(can)
        lines = []
        for c in sorted(can, key=lambda m: lc[id(m)]):
            # the insert of the same configuration; a backend measured
            # with one insert (heapqueue: removeOnCancel is the cancel's)
            # pairs it with each of its cancels
            mine = [m for m in ins if m.backend == c.backend]
            same = [m for m in mine if li[id(m)] == lc[id(c)]]
            i = same[0] if same else (mine[0] if len(mine) == 1 else None)
            if i is None:
                continue
            lines.append({"label": lc[id(c)], "insert_ns": i.median, "cancel_ns": c.median,
                          "per_request_ns": i.median + cancelled * c.median})
        if lines:
            out.append({"shape": shape, "pending": pend, "n": n,
                        "cancelled_share": cancelled, "lines": lines})
    return out
