"""tbkit.figures — the figures layer: writes the data files the gnuplot
scripts read and runs them, the drawings the sections share (lines against
N, CDFs, bars, the cost-precision front) and the page context the sections
render with (Page).

Each figure is one script in plots/ (see plots/README.md), run once with
variables passed on gnuplot's command line; the script writes
<out>.svg and <out>.png.  Every value handed to gnuplot as program text is
either a number, a colour of the form #rrggbb made here, or a string
reduced to a safe character set (results may carry any name, and gnuplot
strings can call the shell); series titles travel in the data files
(`columnheader`), which gnuplot reads as data, never as commands.
"""

import colorsys
import math
import os
import re
import shutil
import subprocess

from tbkit import numbers as A

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
    expand macros or run commands: unsafe characters become '?'.  Cut to
    `limit` characters (None: never cut)."""
    t = _SAFE.sub("?", str(text))[:limit]
    return "'%s'" % t


def gp_path(path):
    """A path as a gnuplot single-quoted string literal, byte for byte: a
    quote is doubled (gnuplot's one escape in such a literal), nothing
    else is special in it."""
    return "'%s'" % str(path).replace("'", "''")


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
        # gnuplot runs in the figures directory and is given the names in
        # it, not the results directory's path, which may hold any byte
        # (a quote, or bytes that are not UTF-8): issue 42, items 7 and 8
        variables["out"] = RawPath(name)
        variables["plotdir"] = RawPath(self.plots_dir + os.sep)
        for k, v in variables.items():
            if isinstance(v, bool):
                v = int(v)
            if isinstance(v, (int, float)):
                lit = repr(v) if isinstance(v, int) else "%.10g" % v
            elif isinstance(v, Words):
                lit = gp_string(v, limit=None)
            elif isinstance(v, RawPath):
                if v.startswith(self.out_dir + os.sep):
                    v = os.path.relpath(v, self.out_dir)
                lit = gp_path(v)
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
            r = subprocess.run(args, capture_output=True, text=True, timeout=120,
                               errors="replace", cwd=self.out_dir)
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


class Words(str):
    """A space-separated list a script reads with word() (a panel's colours
    and dash types, one per series): sanitised as any string but never cut,
    since a cut list leaves the last series without a colour and gnuplot
    refuses the figure (the reschedule op's 17 series in one panel, 136
    characters of colours, passed the 120 a title is cut to)."""


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


# ---- the figures the sections share -------------------------------------------

def registry_order(ctx, items):
    """Sorts (label, m, ...) tuples by registry position, then label."""
    pos = {b: i for i, b in enumerate(ctx.backends + ctx.floor)}
    return sorted(items, key=lambda it: (pos.get(it[1].backend, len(pos)), it[0]))


def series_order(ctx, series):
    key = ctx.backend_sort_key()
    return sorted(series, key=lambda s: (key(series[s][0].backend), s))


def draw_n_figure(ctx, stem, title, panels, ylabel="time per operation (ns)",
                  xlabel="N (tasks pending)", value=None, linx=False, x=None, panel_px=None):
    """panels: [(panel title, {series label: [Measurement]})].  value(m)
    gives (median, low, high) or None; default the time per operation.
    panel_px: (width, height) of a panel in pixels, plots/micro.gp's
    480 x 390 when None.  Returns the figure name, or None when nothing
    could be drawn."""
    if value is None:
        value = lambda m: (m.median, m.low, m.high)  # noqa: E731
    panels = [(t, s) for t, s in panels if s]
    if not panels:
        return None
    name = ctx.fig_name(stem)
    variables = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)),
                 "title": title, "npanels": len(panels),
                 "ylabel": ylabel, "xlabel": xlabel, "linx": int(bool(linx))}
    if panel_px is not None:
        variables["panelw"], variables["panelh"] = panel_px
    for k, (ptitle, series) in enumerate(panels, 1):
        blocks, colours, dashes = [], [], []
        variant_of = {}
        for label in series_order(ctx, series):
            ms = series[label]
            rows = []
            for m in ms:
                v = value(m)
                if v is None or v[0] is None:
                    continue
                xv = x(m) if x is not None else m.n
                rows.append([xv, float(v[0]), float(v[1] if v[1] is not None else v[0]),
                             float(v[2] if v[2] is not None else v[0])])
            if not rows:
                continue
            b = ms[0].backend
            variant_of[b] = variant_of.get(b, 0) + 1
            blocks.append((label, rows))
            colours.append(ctx.colour(b))
            dashes.append(str(1 + (variant_of[b] - 1) % 5))
        if not blocks:
            return None
        ctx.figs.write_blocks("%s_%d" % (name, k), blocks, ["series", "median", "low", "high"])
        variables["ptitle_%d" % k] = ptitle
        variables["nseries_%d" % k] = len(blocks)
        variables["colours_%d" % k] = Words(" ".join(colours))
        variables["dashes_%d" % k] = Words(" ".join(dashes))
    if not ctx.figs.draw("micro", name, variables):
        return None
    return name


def draw_cdf(ctx, stem, title, xlabel, panels):
    """panels: [(title, [(label, backend, [(x, fraction)])])]."""
    panels = [(t, [s for s in ss if s[2]]) for t, ss in panels]
    panels = [(t, ss) for t, ss in panels if ss]
    if not panels:
        return None
    name = ctx.fig_name(stem)
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)), "title": title,
         "npanels": len(panels), "xlabel": xlabel}
    for k, (pt, ss) in enumerate(panels, 1):
        seen = {}
        dashes = []
        for label, backend, pts in ss:
            seen[backend] = seen.get(backend, 0) + 1
            dashes.append(str(2 if backend in ctx.floor else 1 + (seen[backend] - 1) % 5))
        ctx.figs.write_blocks("%s_%d" % (name, k), [(l, [[x, f] for x, f in p]) for l, _, p in ss],
                              ["series", "fraction"])
        v["ptitle_%d" % k] = pt
        v["nseries_%d" % k] = len(ss)
        v["colours_%d" % k] = Words(" ".join(ctx.colour(b) for _, b, _ in ss))
        v["dashes_%d" % k] = Words(" ".join(dashes))
    return name if ctx.figs.draw("cdf", name, v) else None


def draw_bars(ctx, stem, title, panels):
    """panels: [(title, ylabel, logy, [(label, backend, (v, lo, hi))])]."""
    panels = [p for p in panels if any(b[2] is not None for b in p[3])]
    if not panels:
        return None
    name = ctx.fig_name(stem)
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)), "title": title,
         "npanels": len(panels)}
    for k, (pt, yl, logy, bars) in enumerate(panels, 1):
        rows = []
        for label, backend, val in bars:
            if val is None:
                continue
            med, lo, hi = val
            if logy and med <= 0:
                continue
            rows.append([label, float(med), float(lo), float(hi),
                         int(ctx.colour(backend).lstrip("#"), 16)])
        if not rows:
            return None
        ctx.figs.write_blocks("%s_%d" % (name, k), [("label", rows)],
                              ["label", "value", "low", "high", "colour"])
        v["ptitle_%d" % k] = pt
        v["ylabel_%d" % k] = yl
        v["logy_%d" % k] = int(bool(logy))
    return name if ctx.figs.draw("bars", name, v) else None


def draw_front(ctx, name, title, cands, ylabel):
    """The front: two panels (max and p99 lateness on x, log scale; cost on
    y), one line per ticked backend through its sweep points in the
    backend's colour, the exact structures (and any point that was never
    late) at the left-most "exact" position.  Returns the figure's name or
    None.  The data files keep the true lateness (0 for exact) in a column
    beside the x drawn."""
    lines = {}
    for c in cands:
        if c["sweep"]:
            lines.setdefault(c["backend"], []).append(c)
    points = [c for c in cands if not c["sweep"] and not (c["ticked"] and c["backend"] in lines)]
    late = [c[k] for c in cands for k in ("max_ns", "p99_ns") if c.get(k)]
    if not cands:
        return None
    # "exact" sits one decade left of the smallest lateness drawn (in us)
    floor_us = min(late) / 1e3 if late else 1.0
    exact_x = 10 ** (math.floor(math.log10(floor_us)) - 1)
    order = {b: i for i, b in enumerate(ctx.res.registry())}
    series = [(b, sorted(ps, key=lambda c: c["tick_ns"])) for b, ps in
              sorted(lines.items(), key=lambda kv: order.get(kv[0], len(order)))]
    series += [(c["name"], [c]) for c in sorted(points, key=lambda c: (
        order.get(c["backend"], len(order)), c["name"]))]
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)), "title": title,
         "npanels": 2, "exact_x": float(exact_x), "ylabel": ylabel,
         "xlabel": "lateness (us, log scale; exact = never late)"}
    for k, key, what in ((1, "max_ns", "max lateness"), (2, "p99_ns", "p99 lateness")):
        blocks, colours, dashes = [], [], []
        for title_s, ps in series:
            rows = []
            for c in ps:
                x = c.get(key)
                if x is None:
                    continue
                rows.append([exact_x if x <= 0 else x / 1e3, c["cost"], x,
                             "tick=%s" % A.fmt_ns(c["tick_ns"]) if c["ticked"] else
                             "exact" if x <= 0 else "no tick"])
            if not rows:
                continue
            blocks.append((title_s, rows))
            colours.append(ctx.colour(ps[0]["backend"]))
            dashes.append("1" if ps[0]["sweep"] or "+" not in ps[0]["name"] else "2")
        if not blocks:
            return None
        ctx.figs.write_blocks("%s_%d" % (name, k), blocks,
                              ["series", "cost", "lateness_ns", "point"])
        v["ptitle_%d" % k] = "cost against %s" % what
        v["nseries_%d" % k] = len(blocks)
        v["colours_%d" % k] = Words(" ".join(colours))
        v["dashes_%d" % k] = Words(" ".join(dashes))
    return name if ctx.figs.draw("front", name, v) else None


def draw_lines(ctx, stem, title, panels, xlabel, ylabel):
    """Lines on log-log axes with error bars (plots/micro.gp), from points
    already made: panels [(panel title, [(label, colour #rrggbb, dash type,
    rows [[x, median, low, high]])])].  Returns the figure's name, or None
    when nothing could be drawn."""
    panels = [(t, [s for s in ss if s[3]]) for t, ss in panels]
    panels = [(t, ss) for t, ss in panels if ss]
    if not panels:
        return None
    name = ctx.fig_name(stem)
    v = {"data": RawPath(os.path.join(ctx.figs.out_dir, name)), "title": title,
         "npanels": len(panels), "xlabel": xlabel, "ylabel": ylabel, "linx": 0}
    for k, (pt, ss) in enumerate(panels, 1):
        ctx.figs.write_blocks("%s_%d" % (name, k), [(s[0], s[3]) for s in ss],
                              ["series", "median", "low", "high"])
        v["ptitle_%d" % k] = pt
        v["nseries_%d" % k] = len(ss)
        v["colours_%d" % k] = Words(" ".join(s[1] for s in ss))
        v["dashes_%d" % k] = Words(" ".join(str(int(s[2])) for s in ss))
    return name if ctx.figs.draw("micro", name, v) else None
