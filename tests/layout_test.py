#!/usr/bin/env python3
"""layout_test.py — a report a reader can scan (issue 36, item 7): every
summary bullet within its bound, with a link to the section that has what
was cut, and a page that never scrolls sideways at 1280 px.

The bound is tested on the bullet function with findings made long on
purpose, and on the committed fixture's report rendered with a small bound
so that its real findings are cut.  The layout is tested twice: the CSS
rules that keep wide content inside its own box are asserted as text
(always), and, when Debian's `chromium` is installed, Chromium lays the
page out at 1280x1000 and a script it runs writes the document's
scrollWidth into the DOM it dumps: a page of wide tables, long unbroken
names, a wide preformatted block and a wide image must be no wider than
the window with the report's CSS and wider without it (so the probe can
fail), and so must the fixture's report.  Layout is measured, never time.

    python3 tests/layout_test.py [-v]
"""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "fixtures", "report-quick")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import doc as D  # noqa: E402
from tbkit import report as generate  # noqa: E402
from tbkit import sec_summary as SS  # noqa: E402
from tbkit.doc import Bold, Code, Doc, Link, inline_markdown  # noqa: E402

MICRO = Link("Micro-benchmarks", "micro", "Micro-benchmarks: cost per operation against N")
WIDTH, HEIGHT = 1280, 1000


def clauses(n, name="heapqueue roc=on"):
    """The spans of a finding of n clauses joined by "; ", as the sections
    build them (tbkit.doc.join)."""
    parts = [(Code("op%d" % i), " (N = 10^6): ", Code(name), " %d.5 ns, slowest " % (100 + i),
              Code("timerwheel"), " 983 ns (13×)") for i in range(n)]
    return ("Fastest per operation at the largest N: ", *D.join(parts, "; "), ".")


def run_generate(results_dir, out_dir):
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = generate.main(["generate.py", results_dir, "--no-figures", "--out", out_dir])
    if rc != 0:
        raise AssertionError("report failed (%d): %s" % (rc, err.getvalue()))


def summary_items(md):
    s = md.split("\n## Summary\n", 1)[1].split("\n## ", 1)[0]
    return [l for l in s.splitlines() if l.startswith("- ")]


class Bullet(unittest.TestCase):
    """tbkit.sec_summary.bullet on findings made long on purpose."""

    def test_a_short_finding_is_kept_whole(self):
        spans = clauses(2)
        self.assertEqual(SS.bullet(spans, MICRO), tuple(spans))

    def test_a_long_finding_keeps_whole_clauses_and_links_to_the_rest(self):
        spans = clauses(12)
        whole = inline_markdown(spans)
        self.assertGreater(len(whole), 1000)
        got = inline_markdown(SS.bullet(spans, MICRO))
        self.assertLessEqual(len(got), SS.SUMMARY_BULLET_MAX, got)
        self.assertTrue(got.endswith(
            "; the rest in [Micro-benchmarks](#micro-benchmarks-cost-per-operation-against-n)."), got)
        kept = got[:-len("; the rest in [Micro-benchmarks](#micro-benchmarks-cost-per-"
                         "operation-against-n).")]
        # what is kept is the finding's start, cut after a whole clause
        self.assertTrue(whole.startswith(kept + "; "), (kept, whole))
        self.assertGreaterEqual(kept.count("; ") + 1, 2)
        # and as much as fits: one clause more would pass the bound
        nxt = whole[:whole.index("; ", len(kept) + 2)]
        self.assertGreater(len(nxt) + len(got) - len(kept), SS.SUMMARY_BULLET_MAX)

    def test_a_verdict_in_bold_is_cut_inside_and_stays_bold(self):
        text = Bold("; ".join("undecided on case %d: too few repetitions to test (3 and 3)" % i
                              for i in range(20)))
        spans = ("Heap insert grows as log n: ", text, " (", MICRO, ").")
        got = inline_markdown(SS.bullet(spans, MICRO))
        self.assertLessEqual(len(got), SS.SUMMARY_BULLET_MAX)
        self.assertRegex(got, r"^Heap insert grows as log n: \*\*undecided on case 0: .*\(3 and 3\)\*\*"
                              r"; the rest in \[Micro-benchmarks\]\(#[a-z-]+\)\.$")
        self.assertEqual(got.count("**"), 2, got)

    def test_text_without_a_clause_is_cut_at_a_word(self):
        spans = (" ".join(["word"] * 300),)
        got = inline_markdown(SS.bullet(spans))
        self.assertLessEqual(len(got), SS.SUMMARY_BULLET_MAX)
        self.assertTrue(got.endswith("word…; the rest below."), got)

    def test_no_bound_is_ever_passed(self):
        for n in (3, 8, 30):
            spans = clauses(n, name="x" * 40)
            # from the length of the link to the rest up
            for limit in range(100, 700, 23):
                for more in (None, MICRO):
                    got = inline_markdown(SS.bullet(spans, more, limit))
                    self.assertLessEqual(len(got), limit, (n, limit, got))


class FixtureSummary(unittest.TestCase):
    """The fixture's report: its bullets within the bound, and cut with a
    link to an existing section when the bound is small."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tb-layout-")
        cls.res = os.path.join(cls.tmp, "results")
        shutil.copytree(FIXTURE, cls.res, ignore=shutil.ignore_patterns("README.md"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def render(self, name):
        out = os.path.join(self.tmp, name)
        run_generate(self.res, out)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            return md, f.read()

    def test_every_bullet_is_within_the_bound(self):
        md, _ = self.render("plain")
        items = summary_items(md)
        self.assertGreaterEqual(len(items), 3)
        for item in items:
            self.assertLessEqual(len(item) - 2, SS.SUMMARY_BULLET_MAX, item)

    def test_a_small_bound_cuts_the_findings_and_links_to_their_sections(self):
        plain, _ = self.render("plain2")
        with unittest.mock.patch.object(SS, "SUMMARY_BULLET_MAX", 200):
            md, html_text = self.render("small")
        items = summary_items(md)
        cut = [i for i in items if "; the rest in [" in i]
        self.assertTrue(cut, items)            # the fixture's headline finding is 374
        anchors = set(re.findall(r'<h2 id="([^"]+)"', html_text))
        for item in items:
            self.assertLessEqual(len(item) - 2, 200, item)
        for item in cut:
            target = re.search(r"the rest in \[[^\]]+\]\(#([^)]+)\)\.$", item).group(1)
            self.assertIn(target, {D.md_slug(h) for h in re.findall(r"^## (.+)$", md, re.M)})
            head = item.split("; the rest in [", 1)[0].rstrip("…")
            self.assertTrue(any(p.startswith(head) for p in summary_items(plain)), item)
        self.assertIn("micro", anchors)
        self.assertIn('the rest in <a href="#', html_text)


class Css(unittest.TestCase):
    """The rules that keep wide content in its own box, as text."""

    def rule(self, selector):
        """The declarations of every rule for `selector`, merged."""
        found = re.findall(r"(?:^|[}\s])%s\{([^}]*)\}" % re.escape(selector), D._CSS)
        self.assertTrue(found, selector)
        return {k.strip(): v.strip() for body in found for k, v in
                (kv.split(":", 1) for kv in body.split(";") if kv.strip())}

    def test_tables_scroll_inside_their_own_box(self):
        t = self.rule("table")
        self.assertEqual((t["display"], t["max-width"], t["overflow-x"]), ("block", "100%", "auto"))

    def test_images_preformatted_text_and_long_words_fit(self):
        self.assertEqual(self.rule("figure img")["max-width"], "100%")
        self.assertEqual(self.rule("pre")["overflow"], "auto")
        self.assertEqual(self.rule("body")["overflow-wrap"], "break-word")


PROBE = ("<script>window.addEventListener('load',function(){var p=document."
         "createElement('p');p.textContent='TB-LAYOUT '+document.documentElement.scrollWidth+"
         "' '+document.documentElement.clientWidth;document.body.appendChild(p);});</script>")


def page_width(html_text, tmp):
    """(scrollWidth, clientWidth) of the page laid out by Chromium at
    WIDTH x HEIGHT: a copy of the page with a script that writes them into
    the DOM Chromium dumps once the page has loaded."""
    path = os.path.join(tmp, "probe.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(html_text.replace("</body>", PROBE + "</body>", 1))
    p = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox",
                        "--user-data-dir=" + os.path.join(tmp, "profile"),
                        "--window-size=%d,%d" % (WIDTH, HEIGHT), "--hide-scrollbars",
                        "--virtual-time-budget=10000", "--dump-dom", "file://" + path],
                       capture_output=True, text=True, timeout=300)
    m = re.search(r"TB-LAYOUT (\d+) (\d+)", p.stdout)
    if not m:
        raise AssertionError("chromium wrote no layout (exit %d): %s" % (p.returncode, p.stderr[-2000:]))
    return int(m.group(1)), int(m.group(2))


def wide_page():
    """A document with every kind of wide content the report can hold."""
    d = Doc("wide content")
    d.h(2, "Wide", "wide")
    d.p("A long unbroken name: ", Code("insert/" + "x" * 400 + "/uniform/series=h2h/N:1000000"),
        " and plain ", "y" * 400, ".")
    d.table(["name"] + ["N = 10^%d" % i for i in range(30)],
            [[Code("timeouts/heapqueue/timeouts/series=precision,roc=on/N:1000000")] +
             ["%d.5 ns (±%d %%)" % (i, i) for i in range(30)]] * 3, numeric=set(range(1, 31)))
    d.pre("\n".join("a line of %d characters: %s" % (300, "z " * 150) for _ in range(3)))
    d.ul([("item ", Code("q" * 500))])
    html_text = D.to_html(d)
    # an image wider than the window, inline like the report's figures
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="200">'
           '<rect width="3000" height="200" fill="#888"/></svg>')
    import base64
    img = ('<figure><img alt="wide" src="data:image/svg+xml;base64,%s"></figure>'
           % base64.b64encode(svg.encode()).decode())
    return html_text.replace("</body>", img + "</body>", 1)


@unittest.skipUnless(CHROMIUM, "chromium is not installed (Debian: apt-get install chromium)")
class NoSidewaysScroll(unittest.TestCase):
    """Chromium's layout at 1280x1000."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-layout-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_wide_content_stays_in_its_box(self):
        page = wide_page()
        scroll, client = page_width(page, self.tmp)
        self.assertLessEqual(scroll, client)
        self.assertLessEqual(client, WIDTH)
        # the probe can fail: without the report's CSS the same page is wider
        bare_scroll, bare_client = page_width(page.replace(D._CSS, ""), self.tmp)
        self.assertGreater(bare_scroll, bare_client + 500)

    def test_the_fixture_report_is_no_wider_than_the_window(self):
        res = os.path.join(self.tmp, "results")
        shutil.copytree(FIXTURE, res, ignore=shutil.ignore_patterns("README.md"))
        out = os.path.join(self.tmp, "out")
        run_generate(res, out)
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            scroll, client = page_width(f.read(), self.tmp)
        self.assertLessEqual(scroll, client)


if __name__ == "__main__":
    unittest.main(verbosity=2)
