"""tbkit.sec_libs — the report's section on the event-loop libraries
(sections layer, issue 40): libuv, libevent, libev, GLib and sd-event
through their public APIs (bench/libs.c, libs.json) beside the renderings
of the same structure (micro.json of the same run, series h2h), every
operation at every N, memory per timer, the idle timeout's strategies, the
libraries' lateness and idle wake-ups, and the claim's verdict.  Without
libs.json it says why.

The data is tbkit.libs's; the verdict is tbkit.claims.rendering_vs_library's.
"""

from tbkit import analysis as AN
from tbkit import libs as L
from tbkit import numbers as A
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.doc import Bold, Code

TITLE = "The libraries C programs link, beside the renderings"


def _ns(s):
    if not s:
        return "not measured"
    return "%s (%s-%s, %d reps)" % (A.fmt_ns(s["median"]), A.fmt_ns(s["lo"]),
                                    A.fmt_ns(s["hi"]), s["n"])


def _claim_of(claims):
    for c in claims or ():
        if c.id == "rendering_vs_library":
            return c
    return None


def _extra(op, m):
    """The counters that say what a row's time holds."""
    def cnt(name, fmt):
        v = m.counter(name)
        return fmt(v) if v is not None else "n/a"
    if op in ("insert", "cancel"):
        if m.counter("lib_bytes_per_timer") is None:
            return AN.bytes_per_task(m) and "%.0f B per task" % AN.bytes_per_task(m) or ""
        return "%s B handle + %s B library per timer" % (
            cnt("handle_bytes", lambda v: "%.0f" % v),
            cnt("lib_bytes_per_timer", lambda v: "%.1f" % v))
    if op == "expire" and m.counter("passes") is not None:
        return "%s loop runs per batch of N" % cnt("passes", lambda v: "%.0f" % v)
    if op == "timeouts" and m.counter("fired_share") is not None:
        return "fired %s; caller %s + loop %s" % (
            cnt("fired_share", A.fmt_pct), cnt("caller_ns", A.fmt_ns), cnt("loop_ns", A.fmt_ns))
    if op == "reschedule" and m.counter("timeouts_per_kop") is not None:
        return "%s timeouts, %s re-arms per 1000 requests" % (
            cnt("timeouts_per_kop", lambda v: "%.0f" % v),
            cnt("rearms_per_kop", lambda v: "%.0f" % v))
    return ""


def libs_section(ctx, doc, claims=None):
    """The section; `claims` are the evaluated claims (the verdict is
    rendering_vs_library's)."""
    res = ctx.res
    doc.h(2, TITLE, "libs")
    if not L.ran(res):
        why = "the run has no libs.json (a run before issue 40, or the libs harness left out)"
        doc.p("Not measured: ", why, ".")
        ctx.missing.append(("The libraries", why))
        return
    libs = L.libraries(res)
    gone = L.missing(res)
    doc.p(*TX.spans(TX.LIBS_INTRO))
    doc.table(["library", "version", "Debian package", "structure", "family"],
              [[Code(n), v["version"], Code(v["package"]), v["structure"], v["family"]]
               for n, v in libs.items()])
    if gone:
        doc.p("Left out (not installed when the suite was built): ", "; ".join(gone), ".")
    broken = L.failed(res)
    if broken:
        doc.p("Installed but not measured, every result failed: ",
              "; ".join(broken[n] for n in sorted(broken)), ".")
        ctx.missing.append(("The libraries", "; ".join(broken[n] for n in sorted(broken))))
    nolib = L.without_library(res)
    if nolib:
        doc.p("No installed library implements the structure of ",
              ", ".join("%s (%s)" % (b, L.family_of_backend(b) or "its own") for b in nolib),
              ": they are not in this section's tables.")
    mx = L.slow_max_n(res)
    if mx:
        doc.p(*TX.spans(TX.LIBS_SLOW, n=A.fmt_n(mx)))
    for op in L.OPS:
        rows = L.family_rows(res, op)
        if not rows:
            continue
        doc.h(3, "%s: libraries and renderings" % op, "libs-" + op)
        doc.p(TX.LIBS_OP_TEXT[op] + ".")
        best = {}
        for r in rows:
            if r["summary"]:
                k = (r["n"], r["family"])
                best[k] = min(best.get(k, r["summary"]["median"]), r["summary"]["median"])
        table = []
        for r in rows:
            s = r["summary"]
            b = best.get((r["n"], r["family"]))
            table.append([A.fmt_n(r["n"]), r["family"], Code(r["subject"]), r["kind"],
                          r["strategy"] or "-",
                          _ns(s) if s else ("failed: %s" % r["error"] if r["error"]
                                            else "not measured"),
                          A.fmt_ratio(s["median"] / b) if s and b else "n/a",
                          _extra(op, r["m"])])
        doc.table(["N", "family", "subject", "kind", "strategy",
                   "ns/op median (min-max)", "/ best of family", "what it holds"],
                  table, numeric={0, 6})
        if op == "reschedule":
            ns = sorted({r["n"] for r in rows})
            items = []
            for n in ns:
                ch = L.cheapest_strategy([r for r in rows if r["n"] == n])
                if ch:
                    items.append(("N = %s: " % A.fmt_n(n), "; ".join(
                        "%s: %s, %s cheaper than %s" % (
                            s, v[0], A.fmt_ratio(v[3] / v[1]) if v[1] else "n/a", v[2])
                        for s, v in sorted(ch.items()))))
            if items:
                doc.p(TX.LIBS_CHEAPEST)
                doc.ul(items)
    _runtime(ctx, doc)
    cl = _claim_of(claims)
    if cl is not None:
        doc.p(Bold(cl.title), ": ", Bold(cl.text), ".")
        pairs = L.rendering_pairs(res)
        if pairs:
            doc.table(["operation", "N", "rendering", "library", "family",
                       "rendering ns/op", "library ns/op", "ratio", "p", "pair"],
                      [[Code(p["op"]), A.fmt_n(p["n"]), Code(p["rendering"]),
                        Code(p["library"]), p["family"], _ns(p["r"]), _ns(p["l"]),
                        A.fmt_ratio(p["decision"].ratio) if p["decision"].ratio else "n/a",
                        A.fmt_num(p["decision"].p) if p["decision"].p is not None else "n/a",
                        {"yes": "costs more", "no": "no more",
                         "undecided": "undecided"}[p["way"]]] for p in pairs],
                      numeric={1, 7})
        doc.p("Rule: ", cl.rule, ".")


def strategies_section(ctx, doc):
    """The idle timeout's strategies side by side on every structure (the
    micro's reschedule, virtual clock) and every library (libs.json, real
    clock): per subject and N the cheapest strategy and by how much."""
    res = ctx.res
    rend = {}
    for (b, strat), by_n in L.c_cells(res, "reschedule").items():
        for n, m in by_n.items():
            if not m.error and m.median:
                rend.setdefault(n, []).append({"subject": b, "strategy": strat,
                                               "summary": L.summary(m.times or [m.median]),
                                               "m": m})
    libs = {}
    for (name, strat), by_n in L.lib_cells(res, "reschedule").items():
        for n, m in by_n.items():
            if not m.error and m.median:
                libs.setdefault(n, []).append({"subject": name, "strategy": strat,
                                               "summary": L.summary(m.times or [m.median]),
                                               "m": m})
    if not rend and not libs:
        return
    doc.h(2, "The idle timeout: which strategy is cheapest on each structure", "strategies")
    doc.p(*TX.spans(TX.STRATEGIES_INTRO))
    for title, groups in (("Renderings (virtual clock)", rend), ("Libraries (real clock)", libs)):
        if not groups:
            continue
        rows = []
        for n in sorted(groups):
            ch = L.cheapest_strategy(groups[n])
            per = {}
            for r in groups[n]:
                per.setdefault(r["subject"], {})[r["strategy"]] = r["summary"]["median"]
            for subj in sorted(per):
                c = ch.get(subj)
                tied = c and c[1] and c[3] / c[1] < 1 + S.MIN_EFFECT
                rows.append([A.fmt_n(n), Code(subj),
                             ", ".join("%s %s" % (k, A.fmt_ns(v)) for k, v in sorted(per[subj].items())),
                             ("%s and %s (tied: within %s)" % (c[0], c[2], A.fmt_pct(S.MIN_EFFECT))
                              if tied else c[0]) if c else (next(iter(per[subj])) + " (only)"),
                             A.fmt_ratio(c[3] / c[1]) + " (over " + c[2] + ")" if c and c[1] else "n/a"])
        doc.p(Bold(title), ":")
        doc.table(["N", "subject", "time per request by strategy", "cheapest",
                   "next / cheapest"], rows, numeric={0})


def _runtime(ctx, doc):
    """Lateness at light load beside the floor, and an idle loop's wake-ups."""
    res = ctx.res
    lat = [m for m in res.libs.values() if m.op == "lateness" and not m.error]
    idle = [m for m in res.libs.values() if m.op == "idle" and not m.error]
    if not lat and not idle:
        return
    doc.h(3, "Real time: lateness at light load and an idle loop", "libs-runtime")
    if lat:
        floor = [m for m in res.measurements.values() if m.op == "lateness"
                 and m.backend == "floor" and m.workload == "light"
                 and m.cfg.get("slack", "default") == "default"]
        doc.p(TX.LIBS_LATENESS)
        rows = [[Code(m.backend), A.fmt_ns(m.counter("p50")), A.fmt_ns(m.counter("p99")),
                 A.fmt_ns(m.counter("max")), "%.0f" % (m.counter("early") or 0),
                 "%.0f" % (m.counter("count") or 0)] for m in sorted(lat, key=lambda m: m.backend)]
        for m in floor:
            rows.append([(Code("floor"), " (pthread_cond_timedwait, runtime harness)"),
                         A.fmt_ns(m.counter("p50")), A.fmt_ns(m.counter("p99")),
                         A.fmt_ns(m.counter("max")), "%.0f" % (m.counter("early") or 0),
                         "%.0f" % (m.counter("count") or 0)])
        doc.table(["subject", "p50", "p99", "max", "early", "samples"], rows,
                  numeric={1, 2, 3, 4, 5})
    if idle:
        doc.p(TX.LIBS_IDLE)
        doc.table(["library", "wake-ups per s", "CPU ns per s"],
                  [[Code(m.backend), A.fmt_num(m.counter("wakeups_per_s")),
                    A.fmt_num(m.counter("cpu_ns_per_s"))]
                   for m in sorted(idle, key=lambda m: m.backend)], numeric={1, 2})
