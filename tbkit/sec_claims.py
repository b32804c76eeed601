"""tbkit.sec_claims — the closing sections (sections layer): the classic
claims with their verdicts and measured figures, "Which one to use", the
limitations, and the appendix with the full machine.json.
"""

import os
import re
import statistics

from tbkit import analysis as AN
from tbkit import front as F
from tbkit import libs as L
from tbkit import results as tb_results
from tbkit import numbers as A
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.doc import Bold, Code, join as _join
from tbkit.figures import add_figure, draw_front
from tbkit.page import HEADINGS, link

# Files with problems the Limitations section names one by one; the rest
# are counted (a directory of 10^5 damaged files makes no 10^5-line report).
PROBLEMS_LISTED = 20


def measured_items(spans):
    """A claim's measured figures as list items: its spans split where the
    claim joined its parts ("; " between them)."""
    items, cur = [], []
    for sp in spans:
        if isinstance(sp, str) and not isinstance(sp, (Bold, Code)) and sp == "; ":
            if cur:
                items.append(tuple(cur))
            cur = []
        else:
            cur.append(sp)
    if cur:
        items.append(tuple(cur))
    return items or [("",)]


# The claims section's heading (the summary links to it).
CLAIMS_HEADING = "What the classic write-ups claim, checked"


def claims_section(ctx, doc, claims):
    """The claims: a table of claim, source, experiment and verdict, the
    measured figures per claim, and the rules."""
    doc.h(2, CLAIMS_HEADING, "claims")
    doc.p(TX.CLAIMS_INTRO)
    rows = []
    for c in claims:
        rows.append([c.title, c.source, c.experiment, (Bold(c.text),)])
    doc.table(["claim", "source", "experiment", "verdict"], rows)
    doc.p("Measured, per claim:")
    for c in claims:
        items = measured_items(c.measured)
        if len(items) == 1:
            doc.p(Bold(c.title), ": ", *items[0])
        else:
            doc.p(Bold(c.title), ":")
            doc.ul(items)
    doc.p("Rules:")
    doc.ul([(Bold(c.title), ": ", c.rule) for c in claims])



def _row_library(ctx, rec):
    """For each recommended backend of a row, the installed libraries of
    its structure (tbkit.libs.FAMILY_OF against each library's declared
    family), "none of the installed libraries", or that the libraries were
    not measured."""
    names = [x.split(" ")[0] for x in (rec if isinstance(rec, tuple) else (rec,))
             if isinstance(x, Code)]
    if not L.ran(ctx.res):
        return "libraries not measured"
    libs = L.libraries(ctx.res)
    out = []
    for b in dict.fromkeys(names):
        fam = L.family_of_backend(b)
        have = ["%s %s" % (n, v["version"]) for n, v in libs.items() if v["family"] == fam]
        what = ", ".join(have) if have else "none of the installed libraries"
        out.append("%s: %s" % (b, what) if len(names) > 1 else what)
    return "; ".join(out) if out else "n/a"


def _row_precision(ctx, rec):
    """The precision a recommendation of tbkit.claims.recommend holds at, from
    the recommended backends' capabilities and the tick they were measured
    at (a label's tick=, else the head-to-head series' tick of that backend
    in this run): exact for a structure without ticks, one tick for a
    wheel, a tick plus 8/63 of the delay for a wheel with levels
    (TB_CAP_GRANULAR)."""
    names = [x for x in rec if isinstance(x, Code)]
    out = []
    for label in names:
        b = label.split(" ")[0]
        caps = ctx.caps.get(b)
        if caps is None:  # a run from before the capabilities were recorded
            caps = {"ticked"} if ctx.is_wheel(b) else set() if ctx.is_heap(b) else None
        if caps is None:
            out.append("%s: unknown (the run did not record its capabilities)" % b)
            continue
        if "ticked" not in caps:
            out.append("exact (%s)" % b if len(names) > 1 else "exact")
            continue
        m = re.search(r"tick=([0-9]+[a-z]+)", label)
        tick = m.group(1) if m else next(
            (x.cfg.get("tick") for x in ctx.res.select(backend=b)
             if x.cfg.get("series") == "h2h" and x.cfg.get("tick")), None)
        what = ("<= 1 tick + 8/63 of the delay (its levels), tick %s" if "granular" in caps
                else "<= one tick (%s)") % (tick or "?")
        out.append("%s (%s)" % (what, b) if len(names) > 1 else what)
    return "; ".join(out) if out else "n/a"



def _micro_front(ctx, doc):
    """The timeouts workload's cost-precision front (bench/micro.c,
    series=precision): the figure and its rows for the table, or [] when
    the run has no sweep (then the report says which profile has it)."""
    got = F.micro_candidates(ctx.res)
    if got is None:
        if ctx.res.select(op="timeouts"):
            pm = AN.profile_micro(ctx.res)
            doc.p("The cost-precision front of the ", Code("timeouts"), " workload "
                  "(series=precision) was not measured in this run",
                  (": its profile (%s) has no precision sweep; " % ctx.res.run.get("profile")
                   if pm.get("precision_n") == 0 else "; "),
                  "the standard and full profiles sweep it.")
        return []
    n, step, cands = got
    doc.p(Bold("Cost against precision, server timeouts."), " The ", Code("timeouts"),
          " workload at N = %s with each ticked backend at each tick it accepts and each "
          "exact structure once; lateness is each fire's time on the virtual clock minus "
          "its deadline, seen by the task's callback; the clock moves in steps of %s "
          "(one per operation), so lateness below that step cannot show. "
          % (A.fmt_n(n), A.fmt_ns(step)),
          "Cheapest at each precision: ", F.class_sentence(cands), ".")
    add_figure(ctx, doc, draw_front(
        ctx, ctx.fig_name("timeouts-front"),
        "Server timeouts (N = %d): time per operation against lateness" % n,
        cands, "time per operation (ns)"),
        ("The ", Code("timeouts"), " workload: time per operation against the lateness "
         "it gave (left: max, right: p99), one line per ticked backend through its ticks, "
         "the exact structures at \"exact\"."), "cost-precision front, timeouts")
    rows = []
    for label, names, best in F.cheapest_by_class(cands):
        if best is None or label == "any":
            continue
        rows.append(["Server timeouts (N = %s), precision %s" % (A.fmt_n(n), label),
                     tuple(_join([Code(x) for x in names], ", ")),
                     # the clock moves in steps: finer lateness cannot show
                     "%s (max lateness %s%s)" % (
                         label, A.fmt_ns(best["max_ns"]),
                         ", seen on a clock moving in steps of %s" % A.fmt_ns(step)
                         if step else ""),
                     "cheapest median time per operation of timeouts (series precision) "
                     "whose lateness fits the class",
                     "%s %s" % (best["name"], A.fmt_ns(best["cost"]))])
    if rows:
        ctx.finding(16, "Server timeouts by precision: ", *_join(
            [(r[0].split("precision ", 1)[1], " → ", Bold(", ".join(
                x for x in r[1] if isinstance(x, Code)))) for r in rows], "; "), ".",
            more=link("Which one to use", "choose"))
    return rows



def choose_section(ctx, doc, choice):
    """"Which one to use": a row per workload with its recommendation, the
    precision it holds at, what was compared and the measured evidence;
    `choice` is (the rows of tbkit.claims.recommend's picks, the notes of the
    rows left out, each replayed trace's rows), as tbkit.claimtext says them:
    the rows the summary shows in short.  Returns the rows (the report
    writes them into verdicts.json)."""
    doc.h(2, HEADINGS["choose"], "choose")
    recs, notes, by_trace = choice
    ctx.missing.extend(notes)
    rows = [r[:2] + [_row_precision(ctx, r[1])] + r[2:] for r in recs]
    front = _micro_front(ctx, doc)
    rows += front + [r for main, by_class in by_trace for r in [main] + by_class]
    rows = [r[:3] + [_row_library(ctx, r[1])] + r[3:] for r in rows]
    if not rows:
        doc.p("The results hold too little to recommend a backend for any workload.")
        return rows
    doc.p("The recommendation for each workload is the backend with the best "
          "measured number in the experiment named as evidence. Backends within "
          "%s of the best are named together as tied: two runs of one commit "
          "differ by that much (Method), so an order among them would not come "
          "back when the run is repeated. Every row says the precision its "
          "recommendation holds at: exact (never late), within one tick of a wheel, "
          "or within a tick plus 8/63 of the delay for a wheel with levels (Linux's "
          "arithmetic); the rows per precision "
          "class (exact, <= 50 us, <= 1 ms, <= 1 tick + 8/63 of the delay) name the cheapest "
          "structure, at any tick, whose measured lateness fits the class, and a "
          "replayed trace with budgets recommends only what kept every timer within "
          "its budget." % A.fmt_pct(S.MIN_EFFECT))
    doc.p("Beside each, the installed library that implements the recommended "
          "structure (the section on the libraries measures them), or none.")
    doc.table(["workload", "recommended", "precision", "installed library of its structure",
               "compared", "measured (best first)"], rows)
    return rows



def limitations_section(ctx, doc):
    doc.h(2, "Limitations and noise", "limitations")
    res = ctx.res
    items = []
    cvs = [(m.cv, m) for m in res.measurements.values() if m.cv is not None]
    if cvs:
        cvs.sort(key=lambda x: x[0])
        med = statistics.median(c for c, _ in cvs)
        worst_cv, worst = cvs[-1]
        noisy = [m for c, m in cvs if c > 0.05]
        items.append("Spread of repetitions: median coefficient of variation %s; "
                     "%d of %d instances vary by more than 5 %%; the noisiest is %s at %s."
                     % (A.fmt_pct(med), len(noisy), len(cvs), worst.key[0] + "/" + worst.backend +
                        ("/N:%d" % worst.n if worst.n is not None else ""), A.fmt_pct(worst_cv)))
    reps = [m.repetitions for m in res.measurements.values() if m.repetitions
            and not m.error and m.op not in tb_results.SELF_OPS + ("failure", "wallstep")]
    if reps and min(reps) < 3:
        items.append("Some instances ran fewer than three repetitions (minimum %d): "
                     "their spread says little." % min(reps))
    for path, c in res.contexts[:1]:
        if c.get("library_build_type") == "debug":
            items.append("Google Benchmark reports that its library was built as "
                         "\"debug\" (Debian's package): this affects only its own "
                         "bookkeeping outside the timed loop.")
        if c.get("cpu_scaling_enabled") is True:
            items.append("CPU frequency scaling was enabled: times may vary with the governor.")
        la = c.get("load_avg")
        cpus = c.get("num_cpus")
        if isinstance(la, list) and la and isinstance(cpus, int) and cpus > 0:
            if isinstance(la[0], (int, float)) and la[0] > 0.5 * cpus:
                items.append("The load average when the run started was %.2f on %d CPUs: "
                             "other work competed for the machine." % (la[0], cpus))
    shim = sorted((m for m in res.select(op="shim") if m.median is not None and m.n),
                  key=lambda m: m.n)
    if shim:
        items.append(("Harness overhead: an empty operation costs ",
                      *_join([("%s per iteration in batches of %s (%s)" % (
                          A.fmt_ns(m.median), A.fmt_num(m.n), m.cfg.get("timing", m.config)),)
                          for m in shim]), "; every time per operation includes it."))
    floor = [(op, AN.interface_floor(res, op)) for op in ("insert", "cancel")]
    floor = [(op, ms) for op, ms in floor if ms]
    if floor:
        items.append(("Interface overhead: the interface alone (", Code(floor[0][1][0].backend),
                      ", a structure that does nothing behind the same calls; not a timer, "
                      "never ranked) costs ",
                      *_join([(Code(op), " %s at N = %s" % (A.fmt_ns(ms[0].median), A.fmt_n(ms[0].n)))
                              for op, ms in floor], "; "),
                      ": every backend's time for these operations includes it."))
    selftest_errs = [m for m in res.select(op="selftest") if m.error and "error" not in m.workload + m.backend]
    if selftest_errs:
        items.append(("The harness self-tests reported errors: ",
                      *_join([Code(m.key[1] + "/" + m.key[2]) for m in selftest_errs]), "."))
    errs = [m for m in res.measurements.values() if m.error and m.op not in tb_results.SELF_OPS]
    if errs:
        items.append(("%d benchmark instance%s reported errors instead of times, e.g. "
                      % (len(errs), "" if len(errs) == 1 else "s"),
                      Code(errs[0].key[0] + "/" + errs[0].backend), ": " + errs[0].error[:150] + "."))
    flt = res.fact("filter")
    if isinstance(flt, str) and flt:
        items.append(("The run was limited by the benchmark filter ", Code(flt),
                      ": what it excludes is missing from every section."))
    backends_run = res.fact("backends")
    if isinstance(backends_run, list) and backends_run:
        build = (res.machine or {}).get("build")
        built = build.get("backends") if isinstance(build, dict) else None
        built = [b for b in built if isinstance(b, str)] if isinstance(built, list) else []
        left_out = [b for b in built if b not in backends_run]
        if left_out:
            items.append(("Registered backends not run: ", *_join([Code(str(b)) for b in left_out]), "."))
    run_errors = res.fact("errors")
    if isinstance(run_errors, list) and run_errors:
        items.append(("The benchmark run recorded %d error%s, e.g. " % (
            len(run_errors), "" if len(run_errors) == 1 else "s"),
                      Code(str(run_errors[0])[:200]), "."))
    status = res.fact("exit_status")
    if isinstance(status, dict):
        bad = sorted(k for k, v in status.items() if v)
        if bad:
            items.append(("These harnesses exited with a failure status: ",
                          *_join([Code(str(b)) for b in bad]), "."))
    items += run_state_limitations(res)
    for p in res.problems[:PROBLEMS_LISTED]:
        items.append((Code(os.path.relpath(p.path, res.root)), " " + p.what + "; what it held is missing from this report."))
    if len(res.problems) > PROBLEMS_LISTED:
        items.append("... and %d more files with problems, not listed." % (
            len(res.problems) - PROBLEMS_LISTED))
    for sec, what in ctx.missing:
        items.append(("Missing data: ", Bold(sec), " — " + what + "."))
    for name, why in ctx.figs.failures:
        items.append(("Figure ", Code(name), " was not drawn: " + why + "."))
    items.append(TX.LIMITATIONS_CLOCKS)
    doc.ul(items)



def run_state_limitations(res):
    """Limitations items for an interrupted, resumed or old-format run."""
    items = []
    if res.format_version == 1:
        items.append("This directory was written by %s in results format 1, which "
                     "records no run status: an interrupted run cannot be told from a "
                     "complete one here." % res.written_by())
    if res.missing:
        groups = {}
        for k in res.missing:
            n = dict(k[4]).get("N")
            groups.setdefault(k[:4], []).append(n)
        items.append(("The run did not measure %s (status %s): " % (
            AN.missing_text(res.missing), res.status or "unknown"),
                      *_join([(Code("/".join(g)), " N = %s" % ", ".join(
                          A.fmt_n(int(n)) if n and n.isdigit() else str(n) for n in ns))
                              for g, ns in sorted(groups.items())], "; "), "."))
    inst = (res.machine or {}).get("instances")
    split = inst.get("families_split") if isinstance(inst, dict) else None
    if isinstance(split, list) and split:
        items.append(("Measured in two sessions of a resumed run, so without Google "
                      "Benchmark's complexity fit (it needs one process): ",
                      *_join([Code(str(f)) for f in split]), "."))
    extra = inst.get("unexpected") if isinstance(inst, dict) else None
    if isinstance(extra, dict) and any(extra.values()):
        items.append(("Instances the harness ran that it had not listed when the run "
                      "started (a probe that decides which exist came out otherwise): ",
                      *_join([Code(str(n)) for v in extra.values() for n in v]), "."))
    return items
