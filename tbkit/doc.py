"""tbkit.doc — a tiny document model (bottom layer), rendered both as Markdown and as HTML.

The report is built once as a list of blocks and written twice, so the two
files always say the same thing.  Every piece of text that may come from a
results directory (backend, workload, configuration names, machine facts)
goes through the escapers here: in HTML it is entity-escaped, in Markdown it
is escaped too (Markdown viewers render raw HTML, and `|` would break a
table).
"""

import base64
import html
import os


class Code(str):
    """Inline code span (names, commands, file names)."""


class Bold(str):
    """Strong emphasis."""


class Link(str):
    """A link to a section of the same document: `anchor` is the heading's
    id in HTML; in Markdown the link goes to the slug a viewer derives
    from the heading's text (`heading`)."""

    def __new__(cls, text, anchor, heading):
        s = str.__new__(cls, text)
        s.anchor, s.heading = anchor, heading
        return s


def md_slug(heading):
    """The anchor GitHub and most Markdown viewers give a heading."""
    out = []
    for ch in str(heading).strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def join(items, sep=", "):
    """Spans of `items` (each a span or a tuple of spans) with `sep`
    between them."""
    out = []
    for i, it in enumerate(items):
        if i:
            out.append(sep)
        out.extend(it if isinstance(it, tuple) else (it,))
    return out


class Doc:
    """An ordered list of blocks: headings, paragraphs, lists, tables,
    figures, preformatted text."""

    def __init__(self, title):
        self.title = title
        self.blocks = []

    def h(self, level, text, anchor=None):
        self.blocks.append(("h", level, text, anchor))

    def p(self, *spans):
        self.blocks.append(("p", spans))

    def ul(self, items):
        """items: list of span tuples (or plain strings)."""
        self.blocks.append(("ul", [i if isinstance(i, tuple) else (i,) for i in items]))

    def table(self, headers, rows, numeric=None):
        """rows: lists of cells; a cell is a str, Code, Bold or tuple of
        spans.  numeric: set of column indexes to right-align."""
        self.blocks.append(("table", headers, rows, numeric or set()))

    def figure(self, svg_path, png_path, caption, alt):
        self.blocks.append(("fig", svg_path, png_path, caption, alt))

    def pre(self, text):
        self.blocks.append(("pre", text))

    def columns(self, left, right):
        """Two Docs' blocks side by side in HTML (the left one wider), one
        after the other in Markdown."""
        self.blocks.append(("cols", left.blocks, right.blocks))


# ---- Markdown -------------------------------------------------------------

_MD_SPECIAL = "\\`*_[]{}<>#|!"


def md_escape(text):
    out = []
    for ch in str(text):
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _md_code(text):
    # A code span cannot hold a backtick run of its own length, nor raw
    # HTML safely in every viewer: fall back to escaped text then.
    t = str(text).replace("\n", " ")
    if "`" in t or "<" in t or ">" in t or "&" in t or "|" in t:
        return md_escape(t)
    return "`%s`" % t


def _md_spans(spans):
    out = []
    for s in spans:
        if isinstance(s, Code):
            out.append(_md_code(s))
        elif isinstance(s, Bold):
            out.append("**%s**" % md_escape(s))
        elif isinstance(s, Link):
            out.append("[%s](#%s)" % (md_escape(s), md_slug(s.heading)))
        elif isinstance(s, tuple):
            out.append(_md_spans(s))
        else:
            out.append(md_escape(s))
    return "".join(out)


def inline_markdown(spans):
    """The Markdown of inline `spans` (a paragraph's or a list item's text),
    as to_markdown writes it: what a length bound on a bullet measures."""
    return _md_spans(spans)


def _cell(c):
    return c if isinstance(c, tuple) else (c,)


def shown(text):
    """`text` with every byte that a path carried undecoded (Python's
    surrogate escapes, os.fsdecode of bytes that are not UTF-8) written
    \\xNN, so that it can be written as UTF-8; other text is unchanged."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def to_markdown(doc, rel_to):
    """The document as Markdown (figures linked relative to `rel_to`)."""
    lines = ["# " + md_escape(doc.title), ""]
    _md_blocks(doc.blocks, rel_to, lines)
    return shown("\n".join(lines))


def _md_blocks(blocks, rel_to, lines):
    for b in blocks:
        kind = b[0]
        if kind == "cols":
            _md_blocks(b[1], rel_to, lines)
            _md_blocks(b[2], rel_to, lines)
        if kind == "h":
            lines += ["#" * b[1] + " " + md_escape(b[2]), ""]
        elif kind == "p":
            lines += [_md_spans(b[1]), ""]
        elif kind == "ul":
            lines += ["- " + _md_spans(i) for i in b[1]] + [""]
        elif kind == "table":
            _, headers, rows, numeric = b
            lines.append("| " + " | ".join(md_escape(h) for h in headers) + " |")
            lines.append("|" + "|".join("---:" if i in numeric else "---"
                                        for i in range(len(headers))) + "|")
            for r in rows:
                lines.append("| " + " | ".join(_md_spans(_cell(c)) for c in r) + " |")
            lines.append("")
        elif kind == "fig":
            _, svg, png, caption, alt = b
            target = os.path.relpath(svg, rel_to)
            lines += ["![%s](%s)" % (md_escape(alt), target.replace(" ", "%20")), "",
                      "*" + _md_spans(caption) + "* (PNG: [%s](%s))" % (
                          md_escape(os.path.basename(png)),
                          os.path.relpath(png, rel_to).replace(" ", "%20")), ""]
        elif kind == "pre":
            fence = "```"
            while fence in b[1]:
                fence += "`"
            lines += [fence, b[1], fence, ""]


# ---- HTML -----------------------------------------------------------------

def _h(text):
    return html.escape(str(text), quote=True)


def _html_spans(spans):
    out = []
    for s in spans:
        if isinstance(s, Code):
            out.append("<code>%s</code>" % _h(s))
        elif isinstance(s, Bold):
            out.append("<strong>%s</strong>" % _h(s))
        elif isinstance(s, Link):
            out.append('<a href="#%s">%s</a>' % (_h(s.anchor), _h(s)))
        elif isinstance(s, tuple):
            out.append(_html_spans(s))
        else:
            out.append(_h(s))
    return "".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
 max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1b1b;line-height:1.5}
h1,h2,h3{line-height:1.2}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
body{overflow-wrap:break-word}
table{border-collapse:collapse;margin:1em 0;font-size:.92em;display:block;max-width:100%;
 overflow-x:auto}
th,td{border:1px solid #ccc;padding:.25em .6em;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f4f4f4;padding:0 .25em;border-radius:3px}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto;border:1px solid #e4e4e4}
figcaption{font-size:.9em;color:#444}pre{background:#f6f6f6;padding:.8em;overflow:auto}
nav ul{columns:3;margin:0}
.cols{display:flex;gap:1.5em;align-items:flex-start}.cols>div{flex:1 1 0;min-width:0}
.cols>div.wide{flex:1.4 1 0}.cols figure{margin-top:0}
@media (max-width:800px){.cols{display:block}}
"""


def _svg_data_uri(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if not data:
        return None
    return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")


def to_html(doc):
    """The document as one HTML page (figures inlined)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>%s</title>" % _h(doc.title),
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<style>%s</style></head><body>" % _CSS,
             "<h1>%s</h1>" % _h(doc.title)]
    toc = [(b[2], b[3]) for b in doc.blocks if b[0] == "h" and b[1] == 2]
    if toc:
        parts.append("<nav><ul>" + "".join(
            '<li><a href="#%s">%s</a></li>' % (_h(a), _h(t)) for t, a in toc)
            + "</ul></nav>")
    _html_blocks(doc.blocks, parts)
    parts.append("</body></html>")
    return shown("\n".join(parts))


def _html_blocks(blocks, parts):
    for b in blocks:
        kind = b[0]
        if kind == "cols":
            parts.append('<div class="cols"><div class="wide">')
            _html_blocks(b[1], parts)
            parts.append('</div><div>')
            _html_blocks(b[2], parts)
            parts.append('</div></div>')
        elif kind == "h":
            anchor = ' id="%s"' % _h(b[3]) if b[3] else ""
            parts.append("<h%d%s>%s</h%d>" % (b[1], anchor, _h(b[2]), b[1]))
        elif kind == "p":
            parts.append("<p>%s</p>" % _html_spans(b[1]))
        elif kind == "ul":
            parts.append("<ul>%s</ul>" % "".join("<li>%s</li>" % _html_spans(i) for i in b[1]))
        elif kind == "table":
            _, headers, rows, numeric = b
            head = "".join("<th>%s</th>" % _h(x) for x in headers)
            body = []
            for r in rows:
                body.append("<tr>%s</tr>" % "".join(
                    '<td%s>%s</td>' % (' class="n"' if i in numeric else "",
                                       _html_spans(_cell(c)))
                    for i, c in enumerate(r)))
            parts.append("<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>"
                         % (head, "".join(body)))
        elif kind == "fig":
            _, svg, png, caption, alt = b
            uri = _svg_data_uri(svg)
            if uri is None:
                parts.append("<p><em>Figure missing: %s</em></p>" % _h(os.path.basename(svg)))
                continue
            parts.append('<figure><img src="%s" alt="%s"><figcaption>%s</figcaption></figure>'
                         % (uri, _h(alt), _html_spans(caption)))
        elif kind == "pre":
            parts.append("<pre>%s</pre>" % _h(b[1]))
