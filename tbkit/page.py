"""tbkit.page — the context the sections render with (figures layer): the
analysis read through, the figure drawer, the colours, the findings the
summary picks and the parts Limitations lists as missing; and the one
table every section may fall back to (the measurements as recorded).
"""

import re

from tbkit import numbers as A
from tbkit.analysis import is_floor
from tbkit.doc import Code, Link
from tbkit.figures import FLOOR_COLOUR, assign_colours


# The headings a section links to, by anchor: one place, so that a link
# from one section to another needs no import of the other.
HEADINGS = {
    "micro": "Micro-benchmarks: cost per operation against N",
    "choose": "Which one to use",
    "machine": "Machine and build",
    "appendix-machine": "Appendix: machine.json in full",
    "replay": "Replayed traces: which one for this workload",
}


def link(text, anchor):
    """A Link to the section `anchor` (one of HEADINGS)."""
    return Link(text, anchor, HEADINGS[anchor])


class Page:
    """What the sections share while they render: the analysis (its
    attributes read through: ctx.res, ctx.backends, ctx.series, ...), the
    figure drawer, a colour per backend, and what the sections found (the
    summary's findings, Limitations' missing parts)."""

    def __init__(self, an, figs):
        self.an = an
        self.figs = figs
        all_b = an.res.backends()
        # Colours follow the registry position, so a backend keeps its
        # colour whether or not the others ran.
        self.colours = assign_colours([b for b in all_b if not is_floor(b)])
        for b in an.floor:
            self.colours[b] = FLOOR_COLOUR
        self.findings = []       # (priority, spans, more) for the summary
        self.missing = []        # (section, what is missing)
        self.headline = None     # (figure name, series): the summary's figure
        self.fig_count = 0

    def __getattr__(self, name):
        if name == "an":         # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.an, name)

    def colour(self, backend):
        return self.colours.get(backend, "#777777")

    def finding(self, priority, *spans, more=None):
        """A finding the summary may quote (the lowest `priority` first):
        `spans` its text, `more` a Link to the section that holds its
        details, where the summary sends a reader of a finding it had to
        cut to its bound (tbkit.sec_summary.bullet)."""
        self.findings.append((priority, spans, more))

    def fig_name(self, stem):
        """A file name for the next figure; results name parts may hold
        any character, so only a safe subset of the stem is kept."""
        self.fig_count += 1
        return "%02d-%s" % (self.fig_count, re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:60])


def generic_table(ctx, doc, ms, counters=None, limit=10):
    """A table of the measurements as recorded: one row each, the median
    time and the chosen counters (median over repetitions)."""
    if not ms:
        return
    if counters is None:
        seen = {}
        for m in ms:
            for c in m.counter_names():
                seen[c] = seen.get(c, 0) + 1
        counters = sorted(seen, key=lambda c: (-seen[c], c))[:limit]
    rows = []
    for m in ms:
        extra = " ".join("%s:%s" % kv for kv in sorted(m.params.items()))
        row = [Code(m.backend), Code(m.workload), Code(m.config), extra]
        if m.error:
            row.append(("error: " + m.error[:100],))
            row += [""] * len(counters)
        else:
            row.append(A.fmt_ns(m.median) + (" (%s)" % A.fmt_pct(m.cv) if m.cv is not None else ""))
            row += [A.fmt_num(m.counter(c)) for c in counters]
        rows.append(row)
    doc.table(["backend", "workload", "configuration", "parameters", "time (cv)"] + counters,
              rows, numeric=set(range(4, 5 + len(counters))))
