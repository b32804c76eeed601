"""tbkit.libs — the event-loop libraries C programs link beside the
renderings (analysis layer, issue 40): plain data from libs.json (the
`libs` harness, bench/libs.c, read by tbkit.results into `Results.libs`)
and the micro's results of the same run, nothing rendered.

    libs = libraries(res)           # name -> {version, family, structure, package}
    rows = family_rows(res)         # op, N, family: renderings and libraries
    pairs = rendering_pairs(res)    # the claim's comparisons, decided

A rendering is set beside the libraries of its structure's family
(FAMILY_OF: heapqueue and timerthread are binary heaps like libuv's,
libevent's and sd-event's; quadheap a 4-ary heap like libev's; the wheels
and the tree have no library).  The claim is tbkit.claims.rendering_vs_library;
the section is tbkit.sec_libs.
"""

import math
import statistics

from tbkit import stats as S

# The operations both sides run, in the section's order, and the C micro's
# workload and series each is set beside.  insert and cancel run the same
# workload on both sides (uniform 1 ms - 1000 s, batches of N/8 up to 1024,
# the clock standing: a library's loop not running, the micro's virtual
# clock not moved), so they are the claim's; expire, timeouts and
# reschedule are shown beside the renderings' but the two sides' clocks
# differ (the libraries' real timeouts of 20 ms against the micro's 30 s
# on a virtual clock, expire's due timers against the micro's stepped
# clock), so no verdict is drawn from them.
OPS = ("insert", "cancel", "expire", "timeouts", "reschedule")
JUDGED = ("insert", "cancel")
C_WORKLOAD = {"insert": "uniform", "cancel": "uniform", "expire": "short",
              "timeouts": "timeouts", "reschedule": "idle"}
C_SERIES = "h2h"

# The structure each rendering is a rendering of: the family a library
# declares (libs/tblib.h, `family`) is matched against it.
FAMILY_OF = {"heapqueue": "binary heap", "timerthread": "binary heap",
             "quadheap": "4-ary heap", "timerwheel": "hashed wheel",
             "hierwheel": "hierarchical wheel", "kernelwheel": "non-cascading wheel",
             "hrtree": "red-black tree"}

def _clean(values):
    return [float(v) for v in values or () if isinstance(v, (int, float))
            and math.isfinite(v)]


def summary(values):
    """{"median", "lo", "hi", "n"} of per-repetition values, or None."""
    v = _clean(values)
    if not v:
        return None
    return {"median": statistics.median(v), "lo": min(v), "hi": max(v), "n": len(v)}


def _contexts(res):
    return [c for _, c in res.contexts if c.get("harness") == "libs"]


def libraries(res):
    """{library: {"version", "family", "structure", "package"}} from the
    libs harness's context, in the order it registered them."""
    out = {}
    for c in _contexts(res):
        for k, v in c.items():
            if k.startswith("lib_family."):
                name = k[len("lib_family."):]
                out.setdefault(name, {
                    "family": v, "version": c.get("lib_version." + name, "?"),
                    "structure": c.get("lib_structure." + name, "?"),
                    "package": c.get("lib_package." + name, "?")})
    return out


def missing(res):
    """The libraries looked for at build time and not found, each
    "name: why" (the harness's context `libs_missing`)."""
    out = []
    for c in _contexts(res):
        for part in (c.get("libs_missing") or "").split("; "):
            if part and part not in out:
                out.append(part)
    return out


def failed(res):
    """{library: why} for the libraries that could not initialise in the
    harness's probe (context `lib_failed.<name>`): every result of theirs
    is an error with that reason."""
    out = {}
    for c in _contexts(res):
        for k, v in c.items():
            if k.startswith("lib_failed."):
                out.setdefault(k[len("lib_failed."):], v)
    return out


def ran(res):
    """True when the run has the libs harness's results."""
    return bool(res.libs) or bool(_contexts(res))


def _reps(m):
    return list(m.times) if m.times else ([m.median] if m.median else [])


def lib_cells(res, op):
    """{(library, strategy or ""): {N: Measurement}} of one operation."""
    out = {}
    for m in res.libs.values():
        if m.op == op:
            out.setdefault((m.backend, m.cfg.get("strategy", "")), {})[m.n] = m
    return out


def c_cells(res, op):
    """{(backend, strategy or ""): {N: Measurement}}: the renderings' micro
    results of one operation on its workload, series h2h; where a backend
    has more than one configuration there (heapqueue's cancel with
    removeOnCancel off and on), the one that removes at once (roc=on), as
    every library's stop does."""
    out = {}
    wl = C_WORKLOAD[op]
    for m in res.measurements.values():
        if m.op != op or m.workload != wl or m.series != C_SERIES:
            continue
        if m.cfg.get("roc") == "off":
            continue
        out.setdefault((m.backend, m.cfg.get("strategy", "")), {})[m.n] = m
    return out


def family_of_backend(backend):
    return FAMILY_OF.get(backend)


def family_rows(res, op):
    """One row per N and subject of `op`, grouped by family: {"n",
    "family", "subject", "kind" ("rendering" or "library"), "strategy",
    "summary", "m"} (m: the Measurement, its counters for the section)."""
    libs = libraries(res)
    rows = []
    for (name, strat), by_n in lib_cells(res, op).items():
        fam = libs.get(name, {}).get("family", "?")
        for n, m in by_n.items():
            rows.append({"n": n, "family": fam, "subject": name, "kind": "library",
                         "strategy": strat, "summary": summary(_reps(m)) if not m.error
                         else None, "error": m.error, "m": m})
    lib_fams = {v["family"] for v in libs.values()}
    for (b, strat), by_n in c_cells(res, op).items():
        fam = family_of_backend(b)
        if fam not in lib_fams:
            continue   # no library of its structure: said once in the section
        for n, m in by_n.items():
            rows.append({"n": n, "family": fam, "subject": b, "kind": "rendering",
                         "strategy": strat, "summary": summary(_reps(m)) if not m.error
                         else None, "error": m.error, "m": m})
    order = {f: i for i, f in enumerate(sorted(lib_fams))}
    rows.sort(key=lambda r: (r["n"] or 0, order.get(r["family"], 99), r["kind"] != "rendering",
                             r["subject"], r["strategy"]))
    return rows


def without_library(res):
    """The renderings whose structure no installed library has."""
    fams = {v["family"] for v in libraries(res).values()}
    bs = sorted({m.backend for m in res.measurements.values() if m.series == C_SERIES
                 and m.op in JUDGED})
    return [b for b in bs if family_of_backend(b) not in fams]


def rendering_pairs(res):
    """The claim's comparisons: per judged operation, each rendering with
    a library of its family at the largest N both measured, decided as
    the suite decides (tbkit.stats: Mann-Whitney U over the repetitions
    at ALPHA, an effect of at least MIN_EFFECT): {"op", "n", "rendering",
    "library", "family", "decision" (S.Decision), "way" ("yes": the
    rendering costs more; "no": not more; "undecided"), "r", "l"
    (summaries)}."""
    libs = libraries(res)
    out = []
    for op in JUDGED:
        lc = lib_cells(res, op)
        cc = c_cells(res, op)
        for (b, _), cby in sorted(cc.items()):
            fam = family_of_backend(b)
            for (name, _), lby in sorted(lc.items()):
                if libs.get(name, {}).get("family") != fam:
                    continue
                ns = sorted(n for n in set(cby) & set(lby)
                            if not cby[n].error and not lby[n].error)
                if not ns:
                    continue
                n = ns[-1]
                a, bb = _reps(cby[n]), _reps(lby[n])
                d = S.decide(a, bb)
                out.append({"op": op, "n": n, "rendering": b, "library": name,
                            "family": fam, "decision": d,
                            "way": S.direction(d, "greater"),
                            "r": summary(a), "l": summary(bb)})
    return out


def cheapest_strategy(rows):
    """From reschedule's family rows at one N: {subject: (strategy, median,
    next strategy, its median)} — each subject's cheapest strategy and the
    runner-up, where it has two or more."""
    per = {}
    for r in rows:
        if r["summary"]:
            per.setdefault(r["subject"], []).append((r["summary"]["median"], r["strategy"]))
    out = {}
    for s, v in per.items():
        v.sort()
        if len(v) >= 2:
            out[s] = (v[0][1], v[0][0], v[1][1], v[1][0])
    return out


def slow_max_n(res):
    """The largest N of the libraries' paced operations in the run's
    profile (machine.json's build facts), or None."""
    prof = ((res.machine or {}).get("build") or {}).get("profiles") or {}
    p = prof.get(res.run.get("profile") or "", {})
    v = p.get("libs_slow_max_n") if isinstance(p, dict) else None
    return v if isinstance(v, int) else None
