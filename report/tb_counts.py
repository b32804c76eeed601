"""tb_counts — the instructions and simulated cache misses per operation
that `bench/run.py --profile counts` (and `./timerbench counts`) measure
under Valgrind: the table for the terminal and the report's section.

The figures are deterministic: the same binary, seed and cache model give
the same counts on any machine, so they show what an operation costs
without the noise of the timings.
"""

import tb_analysis as A
from tb_doc import Code
from tb_experiments import _join

# The structure's work counters bench/counts.c reports (per operation), in
# the order tables show them; a backend keeps only some of them.
WORK = ("sift_levels", "visits", "rounds", "cascades", "bucket_offers",
        "ticks", "transfers")
OPS = ("insert", "cancel", "expire")


def _variant(r):
    """What distinguishes rows of one backend besides N: the roc= part."""
    for part in r["config"].split(","):
        if part.startswith("roc="):
            return part
    return ""


def _order(results, backends=None):
    order = {b: i for i, b in enumerate(backends or [])}
    return sorted(results, key=lambda r: (OPS.index(r["op"]) if r["op"] in OPS else 9,
                                          r["n"], order.get(r["backend"], 99),
                                          r["backend"], _variant(r)))


def _work_text(r):
    w = r.get("work") or r.get("work_per_op") or {}
    parts = ["%s %s" % (k, A.fmt_num(w[k])) for k in WORK if w.get(k)]
    return ", ".join(parts) if parts else "none counted"


def format_table(results, backends=None):
    """Plain text table, one line per result (errors included)."""
    head = "%-8s %-12s %-8s %9s %14s %12s %12s  %s" % (
        "op", "backend", "variant", "N", "instructions", "D1 misses", "LL misses",
        "work per op")
    lines = [head]
    good = [r for r in results if not r.get("error")]
    for r in _order(good, backends):
        lines.append("%-8s %-12s %-8s %9s %14.1f %12.2f %12.3f  %s" % (
            r["op"], r["backend"], _variant(r), A.fmt_n(r["n"]),
            r["instructions_per_op"], r["d1_misses_per_op"], r["ll_misses_per_op"],
            _work_text(r)))
    for r in results:
        if r.get("error"):
            lines.append("error: %s: %s" % (r.get("name"), r["error"]))
    return "\n".join(lines)


def cache_model_text(meta):
    caches = (meta or {}).get("caches")
    if not isinstance(caches, dict):
        return None
    out = []
    for k in ("I1", "D1", "LL"):
        c = caches.get(k)
        if isinstance(c, dict) and all(isinstance(c.get(x), int) for x in ("size", "assoc", "line")):
            out.append("%s %s KiB %d-way, %d-byte lines" % (k, A.fmt_num(c["size"] / 1024.0),
                                                           c["assoc"], c["line"]))
    return "; ".join(out) if out else None


def counts_section(ctx, doc):
    """The report's section; says so when the run has no counts.json."""
    res = ctx.res
    doc.h(2, "Instructions and cache misses per operation (Valgrind)", "counts")
    if not res.counts:
        doc.p("This run has no ", Code("counts.json"), ": run ",
              Code("bench/run.py --profile counts --out <this directory>"),
              " (needs valgrind) and re-render with ", Code("./timerbench report --from"),
              " to add instructions and simulated cache misses per operation.")
        return
    good = [r for r in res.counts if not r.get("error")]
    meta = res.counts_meta or {}
    model = cache_model_text(meta)
    doc.p("Each figure is one batch of the micro-benchmark's operation, on the "
          "head-to-head configuration with the same seeded delays, run by ",
          Code("bench/counts.c"), " under ", Code("valgrind --tool=callgrind --cache-sim=yes"),
          " with collection switched on around the timed part only, divided by the "
          "operations in it. These counts are deterministic: they do not move "
          "between runs or machines." + (" Simulated caches: %s." % model if model else ""),
          (" %s." % meta["valgrind"]) if isinstance(meta.get("valgrind"), str) else "")
    for op in OPS:
        rows = [r for r in good if r["op"] == op]
        if not rows:
            continue
        doc.h(3, "%s (counts)" % op, "counts-" + op)
        table = []
        for r in _order(rows, ctx.backends):
            label = " ".join(x for x in (r["backend"], _variant(r)) if x)
            table.append([Code(label), Code(r["workload"]), A.fmt_n(r["n"]),
                          "%.1f" % r["instructions_per_op"], "%.2f" % r["d1_misses_per_op"],
                          "%.3f" % r["ll_misses_per_op"], _work_text(r)])
        doc.table(["backend", "workload", "N", "instructions / op", "D1 misses / op",
                   "LL misses / op", "structure's work / op"], table, numeric={2, 3, 4, 5})
        items = []
        ns = sorted({r["n"] for r in rows})
        if len(ns) >= 2:
            lo, hi = ns[0], ns[-1]
            for r in _order([r for r in rows if r["n"] == hi], ctx.backends):
                base = [x for x in rows if x["n"] == lo and x["backend"] == r["backend"]
                        and _variant(x) == _variant(r)]
                if base and base[0]["instructions_per_op"] > 0:
                    b = base[0]
                    items.append((Code(" ".join(x for x in (r["backend"], _variant(r)) if x)),
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
