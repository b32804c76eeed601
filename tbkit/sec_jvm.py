"""tbkit.sec_jvm — the report's section on the originals (sections layer,
issue 32): the JDK's and Netty's timers measured on the JVM
(jvm/TimerBench.java, jvm.json) beside their C renderings (micro.json of
the same run, series h2h), each operation at each N with bytes allocated
per operation and GC time, the ranking claim's verdict, and which N the
run's size left to the full profile.  Without jvm.json it says why.

The data is tbkit.jvm's; the verdict is tbkit.claims.jvm_ranking's.
"""

from tbkit import claimtext as T
from tbkit.claimtable import CLAIMS
from tbkit import jvm as J
from tbkit import numbers as A
from tbkit import texts as TX
from tbkit.doc import Bold, Code

TITLE = "The originals: the JDK's and Netty's timers beside their C renderings"


def _ns(s):
    """A median with its spread: "12.3 ns (11.0-14.1 ns, 5 reps)"."""
    if not s:
        return "not measured"
    return "%s (%s-%s, %d reps)" % (A.fmt_ns(s["median"]), A.fmt_ns(s["lo"]),
                                    A.fmt_ns(s["hi"]), s["n"])


def _ratio(r):
    if not r["c"] or not r["jvm"] or not r["c"]["median"]:
        return "n/a"
    return A.fmt_ratio(r["jvm"]["median"] / r["c"]["median"])


def _ns_list(ns):
    return ", ".join(A.fmt_n(n) for n in ns) if ns else "none"


def _claim_of(claims):
    for c in claims or ():
        if c.id == "jvm_ranking":
            return c
    return None


def jvm_section(ctx, doc, claims=None):
    """The section; `claims` are the evaluated claims (the verdict is
    jvm_ranking's).  Says why it is empty when the run has no JVM
    results."""
    res = ctx.res
    doc.h(2, TITLE, "jvm")
    absent = J.absent_facts(res)
    if absent:
        why = T.jvm_absent_why(absent)
        doc.p(TX.JVM_ABSENT.format(why=why or TX.JVM_ABSENT_WHY,
                                   claim=CLAIMS["jvm_ranking"].title))
        if not res.jvm_problem:      # a bad jvm.json is listed with the files
            ctx.missing.append(("The originals", why))
        return
    jvm = res.jvm
    c = J.c_from_results(res)
    rows = J.side_by_side(jvm, c)
    java = jvm.get("java") if isinstance(jvm.get("java"), dict) else {}
    dropped = ""
    if "forks" in jvm:
        d, n = _dropped(rows)
        dropped = TX.JVM_DROPPED.format(dropped="%d" % d, all="%d" % n)
    doc.p(*TX.spans(
        TX.JVM_INTRO,
        jvms=(TX.JVM_FORKS.format(forks="%d" % jvm["forks"])
              if isinstance(jvm.get("forks"), int) else TX.JVM_ONE),
        size=Code(str(jvm.get("size", "?"))), vm="%s" % (java.get("vm", "?"),),
        version="%s" % (java.get("version", "?"),), netty="%s" % (jvm.get("netty", "?"),),
        max_batch="%s" % (jvm.get("max_batch", "?"),),
        dropped=dropped,
        elapsed=(TX.JVM_ELAPSED.format(seconds="%.0f" % jvm["elapsed_s"])
                 if isinstance(jvm.get("elapsed_s"), (int, float)) else "")))
    for op in J.OPS:
        part = [r for r in rows if r["op"] == op]
        if not part:
            continue
        doc.h(3, "%s: originals and renderings" % op, "jvm-" + op)
        if isinstance(jvm.get("workload"), dict) and isinstance(jvm["workload"].get(op), str):
            doc.p("JVM workload: ", jvm["workload"][op], ".")
        table = []
        for r in part:
            f = r["facts"]
            table.append([A.fmt_n(r["n"]), Code(r["subject"]),
                          Code(r["c_backend"]) if r["c_backend"] else "none",
                          _ns(r["c"]) if r["c_backend"] else "no rendering",
                          _ns(r["jvm"]), _ratio(r),
                          "%d / %d" % (f["forks"], f["dropped"]),
                          "%.1f" % r["bytes_per_op"] if r["bytes_per_op"] is not None else "n/a",
                          ("%s (%d collections)" % (A.fmt_num(r["gc_ms"]), r["gc_count"]))
                          if r["gc_ms"] is not None else "n/a"]
                         + (["%.1f %%" % (100 * f["fired_share"])
                             if f["fired_share"] is not None else "n/a"]
                            if op == "timeouts" else []))
        doc.table(["N", "original", "C rendering", "C ns/op median (min-max)",
                   "JVM ns/op median (min-max)", "JVM / C", "JVMs / dropped",
                   "JVM bytes / op", "GC ms per rep (median)"]
                  + (["fired"] if op == "timeouts" else []), table, numeric={0, 5, 7})
        if op == "timeouts" and any(r["jvm_cpu"] for r in part):
            doc.p(*TX.spans(TX.JVM_TIMEOUTS_WHOLE))
            doc.table(["N", "original", "C whole ns/op", "JVM caller + worker CPU ns/op",
                       "JVM / C"],
                      [[A.fmt_n(r["n"]), Code(r["subject"]),
                        _ns(r["c_whole"]) if r["c_backend"] else "no rendering",
                        _ns(r["jvm_cpu"]),
                        A.fmt_ratio(r["jvm_cpu"]["median"] / r["c_whole"]["median"])
                        if r["c_whole"] and r["jvm_cpu"] and r["c_whole"]["median"] else "n/a"]
                       for r in part], numeric={0, 4})
        if op == "timeouts" and any(r["facts"]["unpaced"] for r in part):
            doc.p(TX.JVM_UNPACED.format(which=", ".join(
                "%s at %s (%d)" % (r["subject"], A.fmt_n(r["n"]), r["facts"]["unpaced"])
                for r in part if r["facts"]["unpaced"])))
    gcs = sum(r["facts"]["gc_count"] for r in rows)
    doc.p(TX.JVM_NO_GC if gcs == 0 else TX.JVM_GC.format(n="%d" % gcs))
    # which N each side has, and what full adds
    items = []
    for cv in J.coverage(jvm, c):
        bits = ["JVM at %s" % _ns_list(cv["jvm"]), "C at %s" % _ns_list(cv["c"])]
        if cv["only_c"]:
            bits.append("the JVM side lacks %s" % _ns_list(cv["only_c"]))
        if cv["only_jvm"]:
            bits.append("the C side lacks %s" % _ns_list(cv["only_jvm"]))
        none = [r["subject"] for r in rows if r["op"] == cv["op"] and r["c_backend"]
                and not any(x["c"] for x in rows if x["op"] == cv["op"]
                            and x["subject"] == r["subject"])]
        if none:
            bits.append("no C result at any N for %s (the C micro runs this operation "
                        "without %s)" % (", ".join(sorted(set(none))), ", ".join(sorted(
                            {r["c_backend"] for r in rows if r["subject"] in none}))))
        if cv["full"]:
            bits.append("left to the full profile: %s" % _ns_list(cv["full"]))
        items.append((Code(cv["op"]), ": " + "; ".join(bits) + "."))
    if items:
        doc.p(TX.JVM_COVERAGE)
        doc.ul(items)
    cl = _claim_of(claims)
    if cl is not None:
        doc.p(Bold(cl.title), ": ", Bold(cl.text), ".")
        per_op = J.ranking(jvm, c)
        doc.ul([(Code(e["op"]), " at N = %s: %s (%s)." % (
            A.fmt_n(e["n"]) if e["n"] else "-", e["verdict"], T.jvm_op_why(J.op_facts(e))))
            for e in per_op])
        table = []
        for e in per_op:
            for p in e["pairs"]:
                table.append([Code(e["op"]), A.fmt_n(e["n"]),
                              (Code(p["a"]), " against ", Code(p["b"])),
                              _side(p["jvm"]), _side(p["c"]), p["agree"]])
        if table:
            doc.table(["operation", "N", "pair",
                       "JVM: order (ratio of medians, 95 % interval, Holm-corrected p)",
                       "C: order (ratio, interval, p)", "the two sides"], table)
        ctl = J.control(jvm)
        if ctl:
            doc.p(*TX.spans(TX.JVM_CONTROL, cases="; ".join("at N = %s %s (%s)" % (
                A.fmt_n(r["n"]), T.jvm_control_said(r["order"]), _side(r)) for r in ctl)))
        doc.p("Rule: ", cl.rule, ".")


def _dropped(rows):
    """(dropped, all) repetitions over the section's cells."""
    d = sum(r["facts"]["dropped"] for r in rows)
    return d, d + sum(r["jvm"]["n"] for r in rows if r["jvm"])


def _side(x):
    """One side's comparison: "faster (0.52, 0.48-0.57, p 0.008)"."""
    ci = x.get("ci")
    return "%s (%s%s%s)" % (x.get("order", "?"), _f(x.get("ratio")),
                            ", %s-%s" % (_f(ci[0]), _f(ci[1])) if ci else "",
                            _p(x.get("p_adj")))


def _f(v):
    return "n/a" if v is None else "%.2f" % v


def _p(v):
    return "" if v is None else ", p %s" % A.fmt_num(v)
