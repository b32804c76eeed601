#!/usr/bin/env python3
"""generate.py — turns one timerbench results directory into report.md and a
self-contained report.html (figures inlined), drawing the figures with the
gnuplot scripts in plots/.

    python3 report/generate.py RESULTS_DIR [--out DIR] [--no-figures]

Every number in the report is read or computed from the results; every
verdict is decided by code in tb_claims.py from those numbers.  A part whose
data is missing or unreadable is reported as missing, with the file and the
reason, instead of stopping the report.  Exit status: 0 report written,
2 nothing usable (the message names the directory or file).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

import tb_results  # noqa: E402
import tb_figures  # noqa: E402
import tb_doc  # noqa: E402
import tb_sections  # noqa: E402


def _usage():
    sys.stderr.write("usage: generate.py RESULTS_DIR [--out DIR] [--no-figures]\n")
    return 2


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
    if not os.path.isdir(root):
        sys.stderr.write("report: %s: no such results directory\n" % root)
        return 2
    try:
        res = tb_results.load(root)
    except OSError as e:
        sys.stderr.write("report: %s: cannot be read (%s)\n" % (root, e.strerror or e))
        return 2
    if res.machine is not None and (res.format_version is None or
                                    res.format_version > tb_results.FORMAT_VERSION):
        sys.stderr.write("report: %s was written by %s in results format %s; "
                         "this checkout reads formats up to %d: render it with "
                         "a newer checkout\n" % (root, res.written_by(),
                                                 res.machine.get("format_version"),
                                                 tb_results.FORMAT_VERSION))
        return 2
    if not res.measurements and not res.counts and not res.replay:
        sys.stderr.write("report: %s: no usable benchmark results%s\n" % (
            root, "" if res.machine is not None else
            ", and no machine.json: this is not a results directory"))
        for p in res.problems:
            sys.stderr.write("  %s\n" % p)
        return 2
    out_dir = os.path.abspath(out_dir or root)
    os.makedirs(out_dir, exist_ok=True)
    figs = tb_figures.Figures(out_dir, os.path.join(os.path.dirname(_HERE), "plots"))
    if not figures:
        figs.gnuplot = None
        figs.why_none = "figures were turned off (--no-figures)"
    doc = tb_sections.build(res, figs)
    md_path = os.path.join(out_dir, "report.md")
    html_path = os.path.join(out_dir, "report.html")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(tb_doc.to_markdown(doc, out_dir))
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(tb_doc.to_html(doc))
    for p in res.problems:
        sys.stderr.write("report: warning: %s\n" % p)
    for name, why in figs.failures:
        sys.stderr.write("report: warning: figure %s not drawn: %s\n" % (name, why))
    print(md_path)
    print(html_path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # a bug here must not look like bad results
        if os.environ.get("TB_REPORT_DEBUG"):
            raise
        sys.stderr.write("report: internal error while writing the report "
                         "(%s: %s); rerun with TB_REPORT_DEBUG=1 for the "
                         "traceback\n" % (type(e).__name__, e))
        sys.exit(3)
