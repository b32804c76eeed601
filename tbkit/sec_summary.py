"""tbkit.sec_summary — the report's first sections (sections layer): the
summary (headline, recommendations, findings, the verdicts' count), how to
read the report, the machine in one compact table, and the method.  The
full machine.json is in the appendix (tbkit.sec_claims).

Prose here never holds a measured number as a literal: numbers enter
sentences only through the formatting helpers of tbkit.numbers.
"""

import os
import shlex
import statistics

from tbkit import analysis as AN
from tbkit import claimtext as T
from tbkit import results as tb_results
from tbkit import numbers as A
from tbkit import stats as S
from tbkit import texts as TX
from tbkit.doc import Bold, Code, Doc, inline_markdown, join as _join
from tbkit.figures import add_figure
from tbkit.page import HEADINGS, link


def run_state_text(res):
    """What happened to the run, for the summary, as paragraphs of spans:
    none for a run that went through in one go (or a results format that
    does not say)."""
    run, status = res.run, res.status
    sessions = [s for s in run.get("sessions", []) if isinstance(s, dict)]
    out = []
    if status == "running" and not res.missing:
        # machine.json was left "running" (the run was killed before it
        # could say more) but every instance is in the files
        out.append((Bold("Unfinished record:"),
                    " machine.json still says the run is running, yet every "
                    "instance it expected is in the results files; the "
                    "report is complete.",))
    elif status in ("interrupted", "incomplete", "running"):
        intr = run.get("interrupted") if isinstance(run.get("interrupted"), dict) else {}
        why = ("was stopped by %s at %s after %s s, %s" % (
            intr.get("signal"), intr.get("at_utc"), A.fmt_num(intr.get("after_seconds")),
            intr.get("where")) if intr.get("signal") else
               "did not finish" + (" (%s)" % intr["where"] if intr.get("where") else ""))
        out.append((Bold("Partial results:"),
                    " the run %s; %s were not measured, and every finding and claim "
                    "that needs them says so instead of deciding on the rest "
                    "(Limitations lists them). " % (
                        why, AN.missing_text(res.missing) if res.missing
                        else "some instances"),
                    Code("./timerbench report --resume " + shlex.quote(res.root)),
                    " measures the missing ones."))
    resumed = [s for s in sessions[1:] if s.get("started_utc")]
    if resumed:
        def one(s):
            intr = s.get("interrupted") if isinstance(s.get("interrupted"), dict) else {}
            return "session %s started %s, %s%s" % (
                s.get("session"), s.get("started_utc"), s.get("status", "status unknown"),
                " by %s at %s" % (intr["signal"], intr.get("at_utc")) if intr.get("signal") else "")
        out.append((Bold("The run was resumed:"),
                    " %s." % "; ".join(one(s) for s in sessions)))
    return out



# A summary bullet is a sentence or two: at most this many characters of
# Markdown (issue 36; the growth claim's bullet had been 2,400).  A finding
# longer than this keeps its whole clauses that fit and links to the section
# holding the rest.
SUMMARY_BULLET_MAX = 400


def _flat(spans):
    out = []
    for s in spans:
        out.extend(_flat(s) if isinstance(s, tuple) else (s,))
    return out


def bullet(spans, more=None, limit=SUMMARY_BULLET_MAX):
    """The spans of a summary bullet for a finding: `spans` whole when
    their Markdown is at most `limit` characters; else cut after the last
    clause (text up to a "; ", in plain or bold text) that leaves room for
    "; the rest in <more>." (`more`: a Link to the section with the
    details; without one, "; the rest below."), so no bullet is longer
    (`limit` must leave room for that ending: about 100 characters)."""
    spans = _flat(spans)
    if len(inline_markdown(spans)) <= limit:
        return tuple(spans)
    tail = ("; the rest in ", more, ".") if more is not None else ("; the rest below.",)
    room = limit - len(inline_markdown(tail))
    best = None
    for i, sp in enumerate(spans):
        if type(sp) not in (str, Bold):
            continue
        at = sp.find("; ")
        while at >= 0:
            head = spans[:i] + ([type(sp)(sp[:at])] if at else [])
            if len(inline_markdown(head)) <= room:
                best = head
            at = sp.find("; ", at + 1)
    if best is None:
        # no clause fits: the first words of the first text that do
        words, best = [], []
        first = next((sp for sp in spans if type(sp) in (str, Bold)), "")
        for w in first.split(" "):
            cand = [type(first)(" ".join(words + [w]))]
            if len(inline_markdown(cand)) > room - 1:
                break
            words.append(w)
        best = [type(first)(" ".join(words) + "…")] if words else []
    return tuple(best) + tail


def _short(spans):
    """A recommendation's spans with the granular wheels' caveat cut to a
    few words (the full table has it whole)."""
    spans = spans if isinstance(spans, tuple) else (spans,)
    return tuple(T.GRANULAR_SHORT if sp == T.GRANULAR_CAVEAT else sp for sp in spans)


def summary_section(ctx, doc, claims, choice):
    """The first screen: what happened to the run (when it did not go
    through), the headline figure, the recommendations in short (`choice`:
    the rows "Which one to use" gives in full, tbkit.sec_claims), then the
    findings and the verdicts."""
    doc.h(2, "Summary", "summary")
    for spans in run_state_text(ctx.res):
        doc.p(*spans)
    left, right = Doc(""), Doc("")
    if ctx.headline:
        name, series = ctx.headline
        add_figure(ctx, left, name, (
            "Time per operation against N, series ", Code(series), " (%s), the main "
            "workload of each operation; the section " % ctx.config_text(series),
            link("Micro-benchmarks", "micro"), " has every series "
            "and workload."), "ns per operation against N, series " + series)
    recs, _, by_trace = choice   # the rows "Which one to use" gives in full
    rows = [[r[0], _short(r[1])] for r in recs] + \
        [[main[0], _short(main[1])] for main, _ in by_trace]
    if rows:
        right.p(Bold("Which one to use"), ", in short: the backend with the best measured "
                "number for each workload (ties named together). ",
                link("The full table", "choose"), " gives the evidence, "
                "the precision of each and the cheapest structure per precision class.")
        right.table(["workload", "recommended"], rows)
    # the figure across the page, at its own size (it is drawn for that),
    # then the recommendations in short
    doc.blocks += left.blocks + right.blocks
    picked = sorted(ctx.findings, key=lambda f: f[0])[:4]
    if not picked:
        doc.p("This results directory holds no measurement from which a finding "
              "could be computed; the sections below say what is missing.")
    else:
        doc.ul([bullet(spans, more, SUMMARY_BULLET_MAX) for _, spans, more in picked])
    verdicts = {}
    for c in claims:
        verdicts[c.kind] = verdicts.get(c.kind, 0) + 1
    if claims:
        doc.p("Verdicts on the %d classic claims checked below: " % len(claims),
              "; ".join("%s: %d" % (k, n) for k, n in sorted(verdicts.items())), ".")



def how_to_read_section(ctx, doc):
    doc.h(2, "How to read this report", "how-to-read")
    doc.p(TX.HOW_TO_READ_NUMBERS)
    doc.p(TX.HOW_TO_READ_CLOCKS)
    doc.p(*TX.spans(TX.HOW_TO_READ_WORDS, flat=A.fmt_ratio(A.FLAT_RATIO),
                    grow=A.fmt_ratio(A.GROW_RATIO), slope=A.fmt_num(A.LOG_SLOPE_MAX),
                    clear=A.fmt_ratio(A.CLEAR_FACTOR)))
    # the most repetitions per side that still cannot reach significance
    few = max(k for k in range(1, 10) if not S.testable(k, k))
    doc.p(*TX.spans(TX.HOW_TO_READ_SIGNIFICANCE, alpha=A.fmt_num(S.ALPHA), few="%d" % few,
                    min_p=A.fmt_num(S.min_p(few, few)),
                    confidence="%d" % round(100 * (1 - S.ALPHA)),
                    grow=A.fmt_ratio(A.GROW_RATIO), flat=A.fmt_ratio(A.FLAT_RATIO)))
    doc.p(*TX.spans(TX.HOW_TO_READ_PERCENTILES, tail=A.fmt_num(S.PCT_TAIL_SAMPLES),
                    p50=A.fmt_num(S.pct_min_samples(0.5)), p90=A.fmt_num(S.pct_min_samples(0.9)),
                    p99=A.fmt_num(S.pct_min_samples(0.99)),
                    p999=A.fmt_num(S.pct_min_samples(0.999)), rms=A.fmt_pct(S.FIT_MAX_RMS)))
    if ctx.backends:
        doc.p("Each backend keeps one colour in every figure: ",
              *_join([(Code(b), " (%s)" % _colour_name(ctx.colour(b))) for b in ctx.backends]),
              "." + (" The floors (one per wait primitive) are drawn in black." if ctx.floor else ""))



def _colour_name(hexcol):
    names = {"#0072B2": "blue", "#D55E00": "vermilion", "#009E73": "green",
             "#CC79A7": "pink", "#E69F00": "orange", "#56B4E9": "sky blue",
             "#8C564B": "brown", "#F0E442": "yellow", "#7F7F7F": "grey",
             "#17BECF": "cyan"}
    return names.get(hexcol, hexcol)



def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten("%s.%s" % (prefix, k) if prefix else str(k), value[k], out)
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            out.append((prefix, ", ".join("%.6g" % v if isinstance(v, float) else str(v)
                                          for v in value)))
        else:
            for i, v in enumerate(value):
                _flatten("%s[%d]" % (prefix, i), v, out)
    elif isinstance(value, float):
        out.append((prefix, "%.6g" % value))
    else:
        out.append((prefix, "" if value is None else str(value)))



def _caches(res):
    """The CPU caches as Google Benchmark's context lists them, or None."""
    for _, c in res.contexts:
        v = c.get("caches")
        if isinstance(v, list) and v:
            return ", ".join("L%s %s %s KiB" % (x.get("level"), x.get("type"),
                                              (x.get("size") or 0) // 1024)
                             for x in v if isinstance(x, dict))
    return None


def _loads(v):
    return ", ".join("%.2f" % x for x in v) if isinstance(v, list) and v else None


def machine_rows(res):
    """[fact, value] rows of what readers compare machines by; a fact the
    run did not record says so."""
    m = res.machine if isinstance(res.machine, dict) else {}
    mach = m.get("machine") if isinstance(m.get("machine"), dict) else {}
    build = m.get("build") if isinstance(m.get("build"), dict) else {}
    git = m.get("git") if isinstance(m.get("git"), dict) else {}
    run = res.run if isinstance(res.run, dict) else {}
    none = "not recorded"
    rows = []
    cpu = mach.get("cpu_model")
    rows.append(["CPU", "%s%s" % (cpu, " (%s)" % mach["arch"] if mach.get("arch") else "")
                 if cpu else none])
    cores = mach.get("cores")
    rows.append(["cores", "%s%s" % (cores, ", %s usable" % mach["cores_usable"]
                                    if mach.get("cores_usable") is not None else "")
                 if cores is not None else none])
    rows.append(["caches", _caches(res) or "not recorded (Google Benchmark's context lists none)"])
    st = res.machine_state()
    if st:
        lat = st["latency"]
        rows.append(["memory latency (measured)", "%s median over %d repetitions, %s at most "
                     "(a dependent load over 16 MiB; Method)" % (
                         A.fmt_ns(statistics.median(lat)), st["reps"], A.fmt_ns(lat[-1]))])
    else:
        rows.append(["memory latency (measured)", none])
    kern = mach.get("kernel")
    rows.append(["kernel", "%s%s" % (kern, " (%s)" % mach["os"] if mach.get("os") else "")
                 if kern else none])
    cc = build.get("c_compiler")
    rows.append(["compiler", "%s%s" % (cc, ", %s build" % build["build_type"]
                                       if build.get("build_type") else "") if cc else none])
    commit = build.get("git_commit") or (git.get("commit") or "")[:12]
    rows.append(["commit", (Code(commit), " with uncommitted changes" if git.get("dirty") else "")
                 if commit else none])
    prof = run.get("profile")
    rows.append(["profile", Code(prof) if isinstance(prof, str) else none])
    secs = run.get("total_seconds")
    rows.append(["wall time", "%s s, started %s" % (A.fmt_num(secs), run.get("started_utc", "?"))
                 if isinstance(secs, (int, float)) else none])
    start, end = _loads(mach.get("load_average_at_start")), _loads(mach.get("load_average_at_end"))
    rows.append(["load (1, 5, 15 min)", "%s at the start%s" % (start, "; %s at the end" % end
                                                                if end else "")
                 if start else none])
    return rows


def machine_section(ctx, doc):
    """What a reader compares machines by, in one short table; everything
    the run recorded is in the appendix (appendix_section)."""
    doc.h(2, HEADINGS["machine"], "machine")
    res = ctx.res
    if res.machine is None:
        ctx.missing.append(("Machine and build", "no machine.json in the results directory"))
        doc.p("No machine.json in this results directory: only the facts Google "
              "Benchmark and the harnesses put in the JSON context are known (",
              link("appendix", "appendix-machine"), ").")
        return
    doc.table(["fact", "value"], machine_rows(res))
    doc.p("Every fact the run recorded (machine.json, Google Benchmark's context): ",
          link("the appendix", "appendix-machine"), ".")


def appendix_section(ctx, doc):
    """machine.json in full, and the JSON context's facts."""
    doc.h(2, HEADINGS["appendix-machine"], "appendix-machine")
    res = ctx.res
    rows = []
    if res.machine is not None:
        flat = []
        # the instance lists are Limitations' business, not a fact table's
        _flatten("", {k: v for k, v in res.machine.items() if k != "instances"}, flat)
        rows += [(Code(k), v[:300]) for k, v in flat]
    seen = set()
    for path, c in res.contexts:
        for key in sorted(c):
            if key in seen or not isinstance(key, str) or key.startswith(("workload.", "backend.")):
                continue
            seen.add(key)
            v = c[key]
            if key == "caches" and isinstance(v, list):
                v = ", ".join("L%s %s %s KiB" % (x.get("level"), x.get("type"),
                                                (x.get("size") or 0) // 1024)
                              for x in v if isinstance(x, dict))
            elif isinstance(v, list):
                v = ", ".join(str(x) for x in v)
            elif isinstance(v, dict):
                v = ", ".join("%s=%s" % kv for kv in sorted(v.items()))
            rows.append((Code(key), str(v)[:300]))
    if rows:
        doc.table(["fact", "value"], rows)
    else:
        doc.p("No machine or build facts were recorded.")


def method_section(ctx, doc, micro_ops):
    doc.h(2, "Method", "method")
    res = ctx.res
    ms = [m for m in res.measurements.values() if m.op not in tb_results.SELF_OPS]
    reps = [m.repetitions for m in ms if m.repetitions]
    files = sorted({os.path.relpath(p, res.root) for p in res.files})
    doc.p("This report was generated from ", Code(os.path.basename(res.root.rstrip(os.sep))),
          ": %d benchmark instances in %d files." % (len(ms), len(files)))
    descr = res.context_prefixed("backend.")
    if ctx.backends:
        doc.table(["backend", "models", "colour"],
                  [[Code(b), str(descr.get(b, "(no description recorded)")), _colour_name(ctx.colour(b))]
                   for b in ctx.backends] +
                  [[Code(b), AN.floor_text(b), "black"] for b in ctx.floor])
    prof = res.fact("profile")
    if isinstance(prof, str):
        doc.p("Profile: ", Code(prof), ".")
    if reps:
        doc.p("Repetitions per instance: %d to %d (median %s); every time is the "
              "median of its repetitions." % (min(reps), max(reps), A.fmt_num(statistics.median(reps))))
    wdesc = res.context_prefixed("workload.")
    used = sorted({m.workload for m in ms if m.workload != "-"})
    if wdesc:
        doc.p("Workloads (delays are defined in time, never in ticks):")
        doc.table(["workload", "definition"],
                  [[Code(w), str(d)] for w, d in sorted(wdesc.items()) if w in used] or
                  [[Code(w), str(d)] for w, d in sorted(wdesc.items())])
    rest = [w for w in used if w not in wdesc]
    if rest:
        doc.p("Runtime experiments name their set-ups: ", *_join([Code(w) for w in rest]),
              " (each is described in its section).")
    seed = res.context_value("seed")
    if seed is None:
        seed = res.fact("seed")
    rule = res.context_value("seed_rule")
    if seed is not None:
        doc.p("Base seed ", Code(str(seed)), (("; each instance's seed: " + str(rule)) if rule else ""), ".")
    else:
        doc.p("The results do not record the workload seed.")
    st = res.machine_state()
    if st:
        lat = st["latency"]
        doc.p(*TX.spans(TX.METHOD_MACHINE_STATE, reps="%d" % st["reps"],
                        p50=A.fmt_ns(statistics.median(lat)),
                        p90=A.fmt_ns(lat[min(len(lat) - 1, int(0.9 * len(lat)))]),
                        max=A.fmt_ns(lat[-1]), over="%.1f" % 1.6, waits="%d" % st["waits"],
                        redone="%d" % st["redone"]))
    if any(m.op in ("insert", "cancel", "expire") for m in ms):
        doc.p(*TX.spans(TX.METHOD_PEERS_DRIVER))
    keys = {}
    for m in ms:
        for k, v in m.cfg.items():
            keys.setdefault(k, set()).add(v)
    if keys:
        items = []
        for k in sorted(keys, key=lambda k: (k != "series", k)):
            vals = sorted(keys[k])
            if k == "series":
                items.append((Code("series"), ": ", *_join([(Code(v), "" if ctx.config_text(v) == v else
                                                            " (%s)" % ctx.config_text(v)) for v in vals])))
            else:
                items.append((Code(k), ": ", *_join([Code(v) for v in vals])))
        doc.p("Configurations are named ", Code("key=value,..."), " in each result; the keys and values in this run:")
        doc.ul(items)
    if micro_ops:
        doc.p("What each micro-benchmark operation includes:")
        doc.ul([(Code(op), ": " + AN.MICRO_WHAT[op] + ".") for op in micro_ops if op in AN.MICRO_WHAT])
    doc.p("Files read: ", *_join([Code(f) for f in files]), ".")
