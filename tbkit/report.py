"""tbkit.report — report/generate.py (report layer): turns one timerbench results directory into report.md and a
self-contained report.html (figures inlined), drawing the figures with the
gnuplot scripts in plots/.

    python3 report/generate.py RESULTS_DIR [--out DIR] [--no-figures]

Every number in the report is read or computed from the results; every
verdict is decided by code in tbkit/claims.py from those numbers.  A part whose
data is missing or unreadable is reported as missing, with the file and the
reason, instead of stopping the report.

The report is written whole or not at all: both documents are rendered in
memory (the figures into a hidden directory beside them), then each file
goes to a temporary name in the same directory and is renamed over the old
one, report.html first and report.md last, the old report.html put back
when report.md cannot be.  A full disk or an unwritable file leaves the
previous report.md and report.html as they were.

Exit status: 0 report written; 1 it could not be written (the previous
one is kept; the message says why); 2 not a results directory, a results
format this checkout does not read, or nothing usable (the message names
the directory or file); 3 an internal error.
"""

import errno
import os
import shutil
import signal
import sys
import tempfile

from tbkit import analysis as AN
from tbkit import claims as C
from tbkit import claimtext as T
from tbkit import doc as tb_doc
from tbkit import figures as tb_figures
from tbkit import results as tb_results
from tbkit import verdict as V
from tbkit import (sec_articles, sec_claims, sec_counts, sec_jvm, sec_libs, sec_micro, sec_purgatory,
                   sec_replay, sec_runtime, sec_summary)
from tbkit.doc import Bold, Doc, Link
from tbkit.formats import write_synced as write_file
from tbkit.page import Page
from tbkit.sec_claims import CLAIMS_HEADING

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Problems printed on stderr at most; the rest are counted (a directory of
# 10^5 damaged files would otherwise print 10^5 lines).
MAX_PROBLEM_LINES = 10


def _usage():
    sys.stderr.write("usage: generate.py RESULTS_DIR [--out DIR] [--no-figures]\n")
    return 2


def print_capped(lines, prefix):
    """Writes the first MAX_PROBLEM_LINES lines, then how many more."""
    lines = list(lines)
    for line in lines[:MAX_PROBLEM_LINES]:
        sys.stderr.write("%s%s\n" % (prefix, line))
    if len(lines) > MAX_PROBLEM_LINES:
        sys.stderr.write("%s... and %d more\n" % (prefix, len(lines) - MAX_PROBLEM_LINES))


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def install(out_dir, staging, md, html, verdicts=None):
    """Puts the rendered report in place: report.md and report.html through
    temporary files renamed over the old ones, the figures drawn into
    `staging`/figures moved into `out_dir`/figures, and (given its text)
    verdicts.json, written beside them and renamed into place last.  Raises OSError with
    the old report.md and report.html as they were."""
    md_path = os.path.join(out_dir, "report.md")
    html_path = os.path.join(out_dir, "report.html")
    v_path = os.path.join(out_dir, "verdicts.json")
    outputs = [(md_path, md), (html_path, html)]
    if verdicts is not None:
        outputs.append((v_path, verdicts))
    for p, _ in outputs:
        if os.path.lexists(p) and not os.path.isfile(p):
            raise OSError(errno.EISDIR, "exists and is not a regular file", p)
    tmp = {}
    try:
        for p, text in outputs:
            tmp[p] = "%s.tmp-%d" % (p, os.getpid())
            write_file(tmp[p], text)
        # The figures first: the old report's names stay valid, and the new
        # one's files are there before it is.
        src = os.path.join(staging, "figures")
        dst = os.path.join(out_dir, "figures")
        if os.path.isdir(src):
            if not os.path.lexists(dst):
                os.rename(src, dst)
            else:
                for name in sorted(os.listdir(src)):
                    os.replace(os.path.join(src, name), os.path.join(dst, name))
        backup = "%s.old-%d" % (html_path, os.getpid())
        had_html = os.path.exists(html_path)
        if had_html:
            try:
                os.link(html_path, backup)
            except OSError:      # a filesystem without hard links
                shutil.copy2(html_path, backup)
        try:
            os.replace(tmp[html_path], html_path)
            try:
                os.replace(tmp[md_path], md_path)
                if v_path in tmp:
                    # last: verdicts.json is the report's, never ahead of it
                    os.replace(tmp[v_path], v_path)
            except OSError:
                # the pair stays the old one
                if had_html:
                    os.replace(backup, html_path)
                else:
                    _remove(html_path)
                raise
        finally:
            _remove(backup)
    finally:
        for t in tmp.values():
            _remove(t)
    return md_path, html_path


def build(res, figs):
    """(The report document, the verdicts.json document) of results `res`:
    analysed first (plain data, tbkit.analysis), the claims decided on the
    analysis, then every section rendered; the verdicts document holds the
    same verdicts and "Which one to use" rows the sections rendered."""
    an = AN.Analysis(res)
    claims = C.evaluate(an)
    ctx = Page(an, figs)
    body = Doc("")
    micro_ops = sec_micro.micro_section(ctx, body)
    sec_micro.memory_section(ctx, body)
    sec_counts.counts_section(ctx, body)
    sec_runtime.runtime_sections(ctx, body)
    sec_micro.other_section(ctx, body, micro_ops)
    sec_replay.replay_section(ctx, body)
    sec_jvm.jvm_section(ctx, body, claims)
    sec_libs.libs_section(ctx, body, claims)
    sec_libs.strategies_section(ctx, body)
    sec_purgatory.purgatory_section(ctx, body, claims)
    for cid, prio in C.summary_ids():
        c = C.by_id(claims, cid)
        if c.kind != C.UNTESTED:
            # the verdict only; its figures are behind the link (a summary
            # bullet is a sentence or two, issue 36)
            ctx.finding(prio, c.title, ": ", Bold(c.text), " (",
                        Link("measured figures", "claims", CLAIMS_HEADING), ").",
                        more=Link("the claims checked", "claims", CLAIMS_HEADING))
    after = Doc("")
    sec_claims.claims_section(ctx, after, claims)
    sec_articles.articles_section(ctx, after, claims)
    # one set of recommendations, shown in full and in the summary
    picks, gaps = C.recommend(ctx)
    replays = C.recommend_replay(ctx)
    recs = [T.pick_row(p) for p in picks]
    by_trace = [T.replay_rows(p) for p in replays]
    choice = (recs, [T.gap_note(k, AN.missing_text(gone)) for k, gone in gaps], by_trace)
    rows = sec_claims.choose_section(ctx, after, choice)
    # each row said, with the numbers it was decided on
    decided = {V.plain(r[0]): p for r, p in zip(recs, picks)}
    decided.update((V.plain(main[0]), p) for (main, _), p in zip(by_trace, replays))
    sec_claims.limitations_section(ctx, after)

    sec_summary.appendix_section(ctx, after)

    # first screen first: the summary, then the method
    doc = Doc("timerbench report")
    sec_summary.summary_section(ctx, doc, claims, choice)
    sec_summary.method_section(ctx, doc, micro_ops)
    sec_summary.how_to_read_section(ctx, doc)
    sec_summary.machine_section(ctx, doc)
    doc.blocks += body.blocks + after.blocks
    run = {k: res.run.get(k) for k in ("profile", "status") if res.run.get(k) is not None}
    run["written_by"] = res.written_by()
    return doc, V.document(claims, rows, run, decided)


def main(argv):
    args = list(argv[1:])
    out_dir = None
    figures = True
    root = None
    while args:
        a = args.pop(0)
        if a == "--out" and args:
            out_dir = args.pop(0)
        elif a.startswith("--out="):
            out_dir = a[len("--out="):]
        elif a == "--no-figures":
            figures = False
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-") or root is not None:
            return _usage()
        else:
            root = a
    if root is None:
        return _usage()
    root = os.path.abspath(root)
    # Before anything is read, walked or written: `report --from /` once
    # walked the whole filesystem and wrote its report into /.
    why = tb_results.results_dir_problem(root)
    if why is not None:
        sys.stderr.write("report: %s\n" % why)
        return 2
    try:
        res = tb_results.load(root)
    except OSError as e:
        sys.stderr.write("report: %s: cannot be read (%s)\n" % (root, e.strerror or e))
        return 2
    why = tb_results.format_problem(res)
    if why is not None:
        sys.stderr.write("report: %s\n" % why)
        return 2
    if not res.measurements and not res.counts and not res.replay:
        sys.stderr.write("report: %s: no usable benchmark results\n" % root)
        print_capped(res.problems, "  ")
        return 2
    out_dir = os.path.abspath(out_dir or root)
    staging = None
    try:
        os.makedirs(out_dir, exist_ok=True)
        # The figures are drawn beside the report, in a hidden directory
        # that install() empties into figures/.
        # (signals wait while it is made: one between mkdtemp and the
        # assignment would leave a directory that `finally` does not know)
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            staging = tempfile.mkdtemp(prefix=".report-", dir=out_dir)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        figs = tb_figures.Figures(staging, os.path.join(ROOT, "plots"))
        if not figures:
            figs.gnuplot = None
            figs.why_none = "figures were turned off (--no-figures)"
        doc, verdicts = build(res, figs)
        md = tb_doc.to_markdown(doc, staging)
        html = tb_doc.to_html(doc)
        # the renames of install() are not cut in two by a signal: it
        # waits for them, and once they are done there is nothing to undo
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            md_path, html_path = install(out_dir, staging, md, html, V.dumps(verdicts))
            if signal.getsignal(signal.SIGTERM) is _stop:
                for s in STOP_SIGNALS:
                    signal.signal(s, signal.SIG_IGN)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    except OSError as e:
        where = e.filename or out_dir
        if staging and isinstance(where, str) and where.startswith(staging + os.sep):
            where = os.path.join(out_dir, os.path.relpath(where, staging))
        sys.stderr.write("report: cannot write the report into %s (%s: %s); "
                         "report.md and report.html there are as they were\n"
                         % (out_dir, where, e.strerror or e))
        return 1
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    print_capped(res.problems, "report: warning: ")
    print_capped(["figure %s not drawn: %s" % f for f in figs.failures], "report: warning: ")
    # the paths as the bytes they are (stdout may not take every byte as
    # text: a directory name that is not UTF-8)
    out = getattr(sys.stdout, "buffer", None)
    if out is None:     # a text stream only (main called in a test)
        print(tb_doc.shown(md_path))
        print(tb_doc.shown(html_path))
        return 0
    sys.stdout.flush()
    out.write(os.fsencode(md_path) + b"\n" + os.fsencode(html_path) + b"\n")
    out.flush()
    return 0


# The signals that would end the command without running its clean-up
# (the staging directory, the temporary report files): each is turned into
# Stopped, which unwinds through main's `finally` (issue 42, item 9).
STOP_SIGNALS = tuple(getattr(signal, n) for n in (
    "SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2",
    "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGXCPU", "SIGXFSZ")
    if hasattr(signal, n))


class Stopped(BaseException):
    """A signal arrived while the report was being written."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame):
    # once: a second signal must not cut the clean-up short
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


def run(argv):
    """main(argv) as the command runs it: an internal error is exit 3 with
    one line (TB_REPORT_DEBUG=1 raises it); a signal (STOP_SIGNALS: Ctrl-C,
    SIGTERM, SIGHUP, ...) is exit 128 + its number, after what was staged
    is removed and with report.md and report.html as they were."""
    for s in STOP_SIGNALS:
        signal.signal(s, _stop)
    try:
        return main(argv)
    except Stopped as e:
        sys.stderr.write("report: stopped by %s; report.md and report.html "
                         "are as they were\n" % signal.Signals(e.signum).name)
        return 128 + e.signum
    except Exception as e:  # a bug here must not look like bad results
        if os.environ.get("TB_REPORT_DEBUG"):
            raise
        sys.stderr.write("report: internal error while writing the report "
                         "(%s: %s); rerun with TB_REPORT_DEBUG=1 for the "
                         "traceback\n" % (type(e).__name__, e))
        return 3
