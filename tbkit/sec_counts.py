"""tbkit.sec_counts — the report's section on the instructions and
simulated cache misses per operation that `bench/run.py --profile counts`
measures under Valgrind (the data and the terminal table: tbkit.countsdata).

The figures are deterministic: the same binary, seed and cache model give
the same counts on any machine, so they show what an operation costs
without the noise of the timings.
"""

from tbkit import numbers as A
from tbkit import texts as TX
from tbkit.countsdata import FLOOR, OPS, cache_model_text, order_results, variant, work_text
from tbkit.doc import Code, join as _join

def counts_section(ctx, doc):
    """The report's section; says so when the run has no counts.json."""
    res = ctx.res
    doc.h(2, "Instructions and cache misses per operation (Valgrind)", "counts")
    if not res.counts:
        doc.p(*TX.spans(TX.COUNTS_NONE))
        return
    good = [r for r in res.counts if not r.get("error")]
    meta = res.counts_meta or {}
    model = cache_model_text(meta)
    doc.p(*TX.spans(TX.METHOD_COUNTS),
          TX.METHOD_COUNTS_CACHES.format(model=model) if model else "",
          (" %s." % meta["valgrind"]) if isinstance(meta.get("valgrind"), str) else "")
    for op in OPS:
        rows = [r for r in good if r["op"] == op]
        if not rows:
            continue
        doc.h(3, "%s (counts)" % op, "counts-" + op)
        table = []
        for r in order_results(rows, [FLOOR] + list(ctx.backends)):
            label = " ".join(x for x in (r["backend"], variant(r)) if x)
            table.append([Code(label), Code(r["workload"]), A.fmt_n(r["n"]),
                          "%.1f" % r["instructions_per_op"], "%.2f" % r["d1_misses_per_op"],
                          "%.3f" % r["ll_misses_per_op"], work_text(r)])
        doc.table(["backend", "workload", "N", "instructions / op", "D1 misses / op",
                   "LL misses / op", "structure's work / op"], table, numeric={2, 3, 4, 5})
        if any(r["backend"] == FLOOR for r in rows):
            doc.p(*TX.spans(TX.COUNTS_FLOOR, floor=Code(FLOOR)))
        items = []
        ns = sorted({r["n"] for r in rows})
        if len(ns) >= 2:
            lo, hi = ns[0], ns[-1]
            for r in order_results([r for r in rows if r["n"] == hi], ctx.backends):
                # a row is compared with the same backend, variant and
                # workload only: a uniform row never with a worst one
                base = [x for x in rows if x["n"] == lo and x["backend"] == r["backend"]
                        and variant(x) == variant(r) and x["workload"] == r["workload"]]
                if base and base[0]["instructions_per_op"] > 0:
                    b = base[0]
                    items.append((Code(" ".join(x for x in (r["backend"], variant(r),
                                                            r["workload"]) if x)),
                                  ": N %s to %s, instructions %s, D1 misses %s → %s." % (
                                      A.fmt_n(lo), A.fmt_n(hi),
                                      A.fmt_ratio(r["instructions_per_op"] / b["instructions_per_op"]),
                                      "%.2f" % b["d1_misses_per_op"], "%.2f" % r["d1_misses_per_op"])))
        if items:
            doc.ul(items)
    bad = [r for r in res.counts if r.get("error")]
    if bad:
        doc.p("Counts that could not be taken: ",
              *_join([(Code(r["name"]), ": " + r["error"][:120]) for r in bad]), ".")
