"""tbkit.verdict — a claim's verdict as a value (base layer): its kind, the
cases it was decided on (each with its basis, the decision, the p-value,
the effect and the thresholds it was held to), written to and read from
verdicts.json, and two runs' verdicts set side by side.

tbkit.claims decides into these structures; the report's sections render
them; `compare` reads them.  Nothing here decides or measures.
"""

import dataclasses
import json
import math

from tbkit.doc import Code

# verdicts.json's own format; a reader refuses another.
FORMAT = 1

HOLDS = "holds"
FAILS = "does not hold"
PARTLY = "holds only in part"
UNTESTED = "not tested"
# A decisive comparison that the test over the repetitions does not call
# significant (or that has too few repetitions to test) picks no side.
UNDECIDED = "undecided at this noise"
KINDS = (HOLDS, FAILS, PARTLY, UNDECIDED, UNTESTED)


@dataclasses.dataclass
class Case:
    """One comparison or check a verdict rests on.  name: what was
    compared (A against B); basis: the measure; decision: the test's
    outcome ("greater", "less", "undecided", "too few") or the check's
    ("grows", "flat", "yes", "no", ...); p: the Mann-Whitney U p-value,
    None when no test ran; effect: the ratio of the medians (A over
    factor x B + shift), None when there is none; n: the repetitions of
    each side; thresholds: every constant the decision was held to, by
    name; values: the measured numbers the decision read, by name."""

    name: str
    basis: str
    decision: str
    p: float = None
    effect: float = None
    n: tuple = ()
    thresholds: dict = dataclasses.field(default_factory=dict)
    values: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Verdict:
    """A claim decided: id, the claim (title), where it is made (source),
    the experiment that tests it, its rule (thresholds substituted), the
    verdict's kind (one of KINDS), the cases, and facts: the other plain
    values (numbers, names, reason codes; JSON's types only) the decision
    read or reached.  The claim decides kind, cases and facts and says
    nothing; tbkit.claimtext says the verdict (text) and the measured
    figures (spans for the report) from them."""

    id: str
    title: str
    source: str
    experiment: str
    rule: str
    kind: str = UNTESTED
    text: str = UNTESTED
    measured: tuple = ("",)
    cases: list = dataclasses.field(default_factory=list)
    facts: dict = dataclasses.field(default_factory=dict)

    def case(self, name):
        """The case called `name` (KeyError names the ones there are)."""
        for c in self.cases:
            if c.name == name:
                return c
        raise KeyError("claim %s has no case %r; cases: %s"
                       % (self.id, name, ", ".join(c.name for c in self.cases)))


@dataclasses.dataclass
class Pick:
    """A row of "Which one to use" decided, not said: the workload's key
    (one of tbkit.claims.PICKS), the N it was decided at (None where the
    row has none), the candidates [(value, label)] best first (lower is
    better), the labels tied with the best (within tbkit.stats.MIN_EFFECT:
    one label when none is), the unit of the values ("ns", "count",
    "bytes"), whether the row says a granular wheel's lateness and whether
    a recommended label is one, and params: what else the row's words
    need (the operations compared, the percentile, the workload)."""

    key: str
    n: object
    cands: list
    tied: list
    unit: str
    caveat: bool = False
    granular: bool = False
    params: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ReplayPick:
    """A replayed trace's row of "Which one to use", decided: the trace
    (label, events, cancel ratio), the recommended names, the budget
    verdict's kind (None without one), whether several are named as
    tied, whether one is a granular wheel, the precision the recommended
    held at ({class, max_ns, held}: the strictest class all are in, their
    largest lateness, every timer within its budget; None when unknown),
    whether the trace has budgets, every backend's median CPU time per
    event [(name, ns)] cheapest first, and the cheapest per precision
    class [(class, names, max_ns, cheapest's name, its cost)]."""

    trace: str
    events: int
    cancel_ratio: float
    names: list
    kind: object
    tied: bool
    granular: bool
    precision: object
    budgeted: bool
    cands: list
    classes: list


def pick_json(p):
    """A decided row's numbers for verdicts.json: its key, N, unit, the
    candidates' values best first and the tied labels."""
    if isinstance(p, ReplayPick):
        return {"key": "replay", "trace": p.trace, "unit": "ns",
                "values": [{"label": n, "value": _num(v)} for n, v in p.cands],
                "tied": list(p.names) if p.tied else [], "kind": p.kind,
                "precision": _num(p.precision)}
    return {"key": p.key, "n": p.n, "unit": p.unit,
            "values": [{"label": l, "value": _num(v)} for v, l in p.cands],
            "tied": list(p.tied) if len(p.tied) > 1 else []}


def plain(spans):
    """Spans (strings, Code, Bold, Link, nested tuples) as plain text."""
    if isinstance(spans, str):
        return str(spans)
    return "".join(plain(s) for s in spans)


def _num(v):
    """A number for JSON: finite floats as they are, infinities and NaN as
    strings (JSON has none), tuples as lists."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, (tuple, list)):
        return [_num(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _num(x) for k, x in v.items()}
    return v


def case_json(c):
    """One case as a JSON object."""
    return {"name": c.name, "basis": c.basis, "decision": c.decision,
            "p": _num(c.p), "effect": _num(c.effect), "n": _num(list(c.n)),
            "thresholds": _num(c.thresholds), "values": _num(c.values)}


def verdict_json(v):
    """One verdict as a JSON object."""
    return {"id": v.id, "claim": v.title, "source": v.source,
            "experiment": v.experiment, "rule": v.rule, "kind": v.kind,
            "verdict": v.text, "measured": plain(v.measured),
            "cases": [case_json(c) for c in v.cases], "facts": _num(v.facts)}


def recommendation_json(row, pick=None):
    """A row of "Which one to use" ([workload, recommended, ..., compared,
    measured]) as a JSON object: the workload, the recommended names (the
    code spans of the recommendation), the recommendation as said, what was
    compared and the evidence; with the row's `pick` (Pick or ReplayPick),
    its numbers too (pick_json, under "decided")."""
    rec = row[1] if isinstance(row[1], tuple) else (row[1],)
    out = {"workload": plain(row[0]),
           "recommended": [str(s) for s in rec if isinstance(s, Code)],
           "recommendation": plain(rec),
           "compared": plain(row[-2]),
           "evidence": plain(row[-1])}
    if len(row) >= 5:
        out["precision"] = plain(row[2])
    if len(row) == 6:
        out["library"] = plain(row[3])
    if pick is not None:
        out["decided"] = pick_json(pick)
    return out


def document(verdicts, recommendations=None, run=None, picks=None):
    """The verdicts.json document: format, the run it was decided on
    (profile, commit, as machine.json says), every claim, and every
    recommendation (the key left out when `recommendations` is None:
    they were not decided), each with its decision's numbers where
    `picks` ({workload as said: Pick or ReplayPick}) has the row."""
    doc = {"format": FORMAT, "run": dict(run or {}),
           "claims": [verdict_json(v) for v in verdicts]}
    if recommendations is not None:
        picks = picks or {}
        doc["recommendations"] = [recommendation_json(r, picks.get(plain(r[0])))
                                  for r in recommendations]
    return doc


def dumps(doc):
    """The document as the text written to verdicts.json."""
    return json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n"


def changed_cases(claim_a, claim_b):
    """The cases of one claim whose decision differs between two runs'
    verdicts.json claims: [(case name, decision in A, decision in B)], in
    A's order then B's new cases, None for a case a run lacks."""
    da = {c["name"]: c.get("decision") for c in claim_a.get("cases", [])}
    db = {c["name"]: c.get("decision") for c in claim_b.get("cases", [])}
    names = list(da) + [n for n in db if n not in da]
    return [(n, da.get(n), db.get(n)) for n in names if da.get(n) != db.get(n)]


class Unreadable(Exception):
    """A verdicts.json this checkout cannot read, and why."""


def load(path):
    """A verdicts.json document read back; Unreadable names what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise Unreadable("%s: cannot be read (%s)" % (path, e.strerror or e))
    except ValueError as e:
        raise Unreadable("%s: not JSON (%s)" % (path, e))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise Unreadable("%s: not verdicts.json format %d" % (path, FORMAT))
    claims = doc.get("claims")
    if not isinstance(claims, list) or not all(
            isinstance(c, dict) and isinstance(c.get("id"), str) for c in claims):
        raise Unreadable("%s: its claims are not a list of objects with an id" % path)
    return doc


def side_by_side(doc_a, doc_b):
    """Two verdicts.json documents' claims side by side: rows (id, kind in
    A, kind in B, changed) in A's order then B's new ids, a kind None
    where a run lacks the claim, and the recommendations that changed
    as (workload, recommended in A, recommended in B); no recommendation
    is compared unless both documents have theirs."""
    a = {c["id"]: c for c in doc_a.get("claims", [])}
    b = {c["id"]: c for c in doc_b.get("claims", [])}
    order = list(a) + [i for i in b if i not in a]
    rows = []
    for cid in order:
        ka = a[cid]["kind"] if cid in a else None
        kb = b[cid]["kind"] if cid in b else None
        rows.append((cid, ka, kb, ka != kb))
    if "recommendations" not in doc_a or "recommendations" not in doc_b:
        return rows, []
    ra = {r["workload"]: r["recommended"] for r in doc_a["recommendations"]}
    rb = {r["workload"]: r["recommended"] for r in doc_b["recommendations"]}
    recs = [(w, ra.get(w), rb.get(w)) for w in list(ra) + [w for w in rb if w not in ra]
            if ra.get(w) != rb.get(w)]
    return rows, recs

