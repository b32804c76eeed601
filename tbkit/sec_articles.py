"""tbkit.sec_articles — the report's section "What the source articles say"
(sections layer; issue 29, section 2): one row per testable statement of
the five source articles (tbkit.articles), with its article, a short quote
in the article's language and its English rendering, the statement, and
where the suite answers it: a claim of this report with this run's
verdict, a named test, a deliberate difference with its reason, a claim
still planned, or nothing.  The count per status comes first.
"""

from tbkit import articles as ART
from tbkit import claims as C
from tbkit import texts as TX
from tbkit.doc import Bold, Code, join as _join

HEADING = "What the source articles say"

# How the count names each status.
STATUS_TEXT = {"claim": "answered by a claim of this report",
               "test": "by a named test",
               "difference": "deliberate differences",
               "planned": "claims still planned",
               "uncovered": "not covered"}


def _ref(answer, verdicts):
    """One answer string as spans: a claim with this run's verdict, a test
    by file and name, a difference by backend, a planned claim, or none."""
    status = ART.status(answer)
    rest = answer.split(":", 1)[1] if ":" in answer else ""
    if status == "claim":
        c = verdicts.get(rest)
        if c is None:
            return ("claim ", Code(rest), " (not in this report's registry)")
        return ("claim ", Code(rest), ", this run: ", Bold(c.text))
    if status == "test":
        path, _, name = rest.partition(":")
        return ("test ", Code(name), " (", Code(path), ")")
    if status == "difference":
        return ("a deliberate difference of ", Code(rest), " (its README)")
    if status == "planned":
        return ("planned claim ", Code(rest))
    return ("not covered",)


def _answer_cell(s, verdicts):
    spans = list(_ref(s.answer, verdicts)) + [" — ", s.why]
    if s.see:
        spans.append("; see also ")
        spans.extend(_join([_ref(a, verdicts) for a in s.see], ", "))
    return tuple(spans)


def count_text(counts):
    """"64 statements: 18 answered by a claim of this report, ..."."""
    total = sum(counts.values())
    return "%d statements: %s." % (total, ", ".join(
        "%d %s" % (counts[k], STATUS_TEXT[k]) for k in ART.STATUSES))


def verdict_counts(claims):
    """{verdict kind: number} of the statements answered by a claim, by
    this run's verdict of that claim."""
    verdicts = {c.id: c for c in claims}
    out = {}
    for s in ART.STATEMENTS:
        if ART.status(s.answer) == "claim":
            c = verdicts.get(s.answer.split(":", 1)[1])
            kind = c.kind if c else C.UNTESTED
            out[kind] = out.get(kind, 0) + 1
    return out


def articles_section(ctx, doc, claims):
    """The section: the count per status, the articles, then one row per
    statement."""
    doc.h(2, HEADING, "articles")
    counts = ART.count_by_status()
    doc.p(*TX.spans(TX.ARTICLES_INTRO, count=Bold(count_text(counts))))
    vc = verdict_counts(claims)
    if vc:
        order = (C.HOLDS, C.PARTLY, C.FAILS, C.UNDECIDED, C.UNTESTED)
        doc.p("This run's verdicts on the statements answered by a claim: ",
              ", ".join("%d %s" % (vc[k], k) for k in order if vc.get(k)), ".")
    doc.ul([(Code(a.file[:3]), " ", Code(a.file), (" (%s)" % a.title) if a.title else "",
             ": ", a.covers) for a in ART.ARTICLES])
    verdicts = {c.id: c for c in claims}
    rows = []
    for s in ART.STATEMENTS:
        art = (Code(s.article[:3]),)
        if s.also_in:
            art += (" (also ",) + tuple(_join([Code(f[:3]) for f in s.also_in], ", ")) + (")",)
        rows.append([art, (s.quote, " — “", s.english, "”"), s.statement,
                     _answer_cell(s, verdicts)])
    doc.table(["article", "what it says (and in English)", "the statement tested",
               "the answer"], rows)
