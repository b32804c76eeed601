"""tbkit.countsdata — the instructions and simulated cache misses per
operation that `bench/run.py --profile counts` (and `./timerbench counts`)
measure under Valgrind, as rows (analysis layer): their order, the
structure's work per operation, the table for the terminal, and the cache
model in words.

The figures are deterministic: the same binary, seed and cache model give
the same counts on any machine, so they show what an operation costs
without the noise of the timings.
"""

from tbkit import numbers as A

# The structure's work counters bench/counts.c reports (per operation), in
# the order tables show them; a backend keeps only some of them.
WORK = ("sift_levels", "visits", "rounds", "cascades", "bucket_offers",
        "ticks", "transfers")
OPS = ("insert", "cancel", "expire")
# The interface's floor (issue 39, tb_backend_floor; bench/counts.c
# --backend floor): its rows come first, and it is not a timer.
FLOOR = "floor"


def variant(r):
    """What distinguishes rows of one backend besides N: the roc= part."""
    for part in r["config"].split(","):
        if part.startswith("roc="):
            return part
    return ""


def order_results(results, backends=None):
    order = {b: i for i, b in enumerate(backends or [])}
    return sorted(results, key=lambda r: (OPS.index(r["op"]) if r["op"] in OPS else 9,
                                          r["n"], order.get(r["backend"], 99),
                                          r["backend"], variant(r)))


def work_text(r):
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
    for r in order_results(good, backends):
        lines.append("%-8s %-12s %-8s %9s %14.1f %12.2f %12.3f  %s" % (
            r["op"], r["backend"], variant(r), A.fmt_n(r["n"]),
            r["instructions_per_op"], r["d1_misses_per_op"], r["ll_misses_per_op"],
            work_text(r)))
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
