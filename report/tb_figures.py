"""tb_figures — writes the data files the gnuplot scripts read and runs them.

Each figure is one script in plots/ (see plots/README.md), run once with
variables passed on gnuplot's command line; the script writes
<out>.svg and <out>.png.  Every value handed to gnuplot as program text is
either a number, a colour of the form #rrggbb made here, or a string
reduced to a safe character set (results may carry any name, and gnuplot
strings can call the shell); series titles travel in the data files
(`columnheader`), which gnuplot reads as data, never as commands.
"""

import colorsys
import os
import re
import shutil
import subprocess

# Okabe-Ito colour-blind-safe palette, then more distinct hues; past the
# list, colours are made by the golden-ratio hue walk so that any number of
# backends gets distinct colours with no edit.
_PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
            "#56B4E9", "#8C564B", "#F0E442", "#7F7F7F", "#17BECF"]
FLOOR_COLOUR = "#000000"

_SAFE = re.compile(r"[^A-Za-z0-9 _.,:;()/+=%*#-]")


def colour_for(index):
    """Colour of the index-th backend in registry order."""
    if index < len(_PALETTE):
        return _PALETTE[index]
    h = (0.13 + 0.618033988749895 * index) % 1.0
    r, g, b = colorsys.hsv_to_rgb(h, 0.75, 0.80)
    return "#%02X%02X%02X" % (int(r * 255), int(g * 255), int(b * 255))


def assign_colours(backends):
    """One colour per backend, by registry position (stable across runs)."""
    return {b: colour_for(i) for i, b in enumerate(backends)}


def gp_string(text, limit=120):
    """A gnuplot single-quoted string literal that cannot escape its quotes,
    expand macros or run commands: unsafe characters become '?'."""
    t = _SAFE.sub("?", str(text))[:limit]
    return "'%s'" % t


def safe_label(text, limit=60):
    """A series title for a data file's header: one line, no tabs or quotes."""
    t = re.sub(r"[\t\r\n\"']", "?", str(text))
    return t[:limit] if t else "?"


class Figures:
    """Draws figures into <results>/figures; remembers what failed."""

    def __init__(self, results_dir, plots_dir):
        self.out_dir = os.path.join(results_dir, "figures")
        self.plots_dir = plots_dir
        self.gnuplot = shutil.which("gnuplot")
        self.why_none = "gnuplot is not installed"
        self.failures = []   # (figure name, reason)
        self.drawn = []

    def available(self):
        return self.gnuplot is not None

    def path(self, name, ext):
        return os.path.join(self.out_dir, "%s.%s" % (name, ext))

    def write_blocks(self, name, blocks, columns):
        """Writes a TSV of blocks (separated by two blank lines), each
        starting with a header line whose first field is the series title.
        blocks: list of (title, rows); rows: lists of numbers or strings."""
        os.makedirs(self.out_dir, exist_ok=True)
        path = os.path.join(self.out_dir, name + ".tsv")
        with open(path, "w", encoding="utf-8") as f:
            for i, (title, rows) in enumerate(blocks):
                if i:
                    f.write("\n\n")
                f.write("\t".join(['"%s"' % safe_label(title)] + columns[1:]) + "\n")
                for r in rows:
                    f.write("\t".join(_fmt(v) for v in r) + "\n")
        return path

    def draw(self, script, name, variables):
        """Runs plots/<script>.gp with the given variables; True when both
        the SVG and the PNG exist and are non-empty."""
        if not self.available():
            self.failures.append((name, self.why_none))
            return False
        os.makedirs(self.out_dir, exist_ok=True)
        args = [self.gnuplot]
        variables = dict(variables)
        variables["out"] = os.path.join(self.out_dir, name)
        variables["plotdir"] = self.plots_dir + os.sep
        for k, v in variables.items():
            if isinstance(v, bool):
                v = int(v)
            if isinstance(v, (int, float)):
                lit = repr(v) if isinstance(v, int) else "%.10g" % v
            elif isinstance(v, RawPath):
                # Paths are ours (results dir + fixed names); keep them
                # verbatim but refuse a quote, the only character that could
                # end the literal.
                if "'" in v:
                    self.failures.append((name, "path contains a quote: %r" % str(v)))
                    return False
                lit = "'%s'" % v
            else:
                lit = gp_string(v)
            args += ["-e", "%s=%s" % (k, lit)]
        args.append(os.path.join(self.plots_dir, script + ".gp"))
        for ext in ("svg", "png"):
            try:
                os.remove(self.path(name, ext))
            except OSError:
                pass
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.failures.append((name, "gnuplot failed to run: %s" % e))
            return False
        ok = all(os.path.isfile(self.path(name, e)) and
                 os.path.getsize(self.path(name, e)) > 0 for e in ("svg", "png"))
        if r.returncode != 0 or not ok:
            msg = (r.stderr or "").strip().splitlines()
            self.failures.append((name, "gnuplot: %s" % (msg[-1] if msg else "no output")))
            return False
        self.drawn.append(name)
        return True


class RawPath(str):
    """A file path produced by this package, passed to gnuplot verbatim."""


def _fmt(v):
    if isinstance(v, float):
        return "%.6g" % v
    if isinstance(v, int):
        return str(v)
    if v is None:
        return "NaN"
    return '"%s"' % safe_label(v)


def add_figure(ctx, doc, name, caption, alt):
    """Puts figure `name` (as drawn by ctx.figs) into doc, or says why it
    was not drawn."""
    if name is None:
        why = ctx.figs.failures[-1][1] if ctx.figs.failures else "no data to draw"
        doc.p("(Figure not drawn: ", why, ".)")
        return
    doc.figure(ctx.figs.path(name, "svg"), ctx.figs.path(name, "png"), caption, alt)
