#!/usr/bin/env python3
"""citations_test.py — every document the tree cites is in the tree, and
every decision it cites is in DECISIONS.md (issue 30, Build 2).

Documents: any Markdown file name (a word ending in .md, bare or after a
folder) in a source, build, script or
documentation file (comments, strings, prose alike) must exist, relative to
the citing file's directory or to the checkout's root; one that leaves
the checkout (`../shared/...`, the workplace's directory beside the
clone) is held only where that directory is present.  Left out: the
report a run writes (`report.md`, in a results directory, never in the
tree) and lower-case bare names (`self.md`: Python attributes).

Sections: a document cited with a quoted section name after it
(`bench/README.md`, "The format"; README.md ("Reading a results
directory"); a comment's line break between the two is allowed) must have
a heading that starts with that name, so a section moved to another
document cannot leave its citations behind (issue 36).

Decisions: every `Dn` (a decision number; `--D1=` and Valgrind's `D1mr`
are cache options and event names, not citations) must have its entry,
`## Dn — ...`, in DECISIONS.md.  DECISIONS.md's own preamble is left out:
it names a number that was never used.

The scanners are tested first on made-up text, so a scanner that finds
nothing cannot pass.

    python3 tests/citations_test.py
"""

import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What is scanned: text the project writes.  Build directories, results,
# Git's own files and recorded data (traces, test fixtures' inputs) are not.
SKIP_DIRS = {".git", "results", "__pycache__", "fixtures"}
TEXT_EXT = (".md", ".py", ".c", ".h", ".cc", ".build", ".gp", ".txt", ".in", ".sh",
            ".options", ".dict")
TEXT_NAMES = ("timerbench", "run", "meson_options.txt")
MAX_BYTES = 2 * 1024 * 1024
# This file: its made-up examples are not citations.
SELF = os.path.join("tests", "citations_test.py")

DOC = re.compile(r"(?<![\w./-])((?:\.\.?/)?(?:[\w-]+/)*[\w-]+\.md)\b")
DECISION = re.compile(r"\bD(\d+)\b(?!=)")
ENTRY = re.compile(r"^## D(\d+) ", re.M)
# a document, then a quoted section name: `X.md`, "Name" / X.md ("Name" / X.md "Name"
SECTION = re.compile(r"(?<![\w./-])((?:\.\.?/)?(?:[\w-]+/)*[A-Z][\w-]*\.md)(?!\x22)`?\)?,?"
                     r"(?:[ \t]*\n[ \t]*(?:#|\*|//|--)?)?[ \t]*\(?\"([^\"\n]{2,80})\"")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*$", re.M)


def tree_files(root=ROOT):
    """Relative paths of the text files the project writes."""
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")
                         and not (rel == "." and x.startswith(".") and x != ".ci"))
        for f in sorted(files):
            if f.endswith(TEXT_EXT) or f in TEXT_NAMES:
                p = os.path.join(d, f)
                if os.path.getsize(p) <= MAX_BYTES and \
                        os.path.normpath(os.path.relpath(p, root)) != SELF:
                    out.append(os.path.normpath(os.path.relpath(p, root)))
    return out


def cited_documents(text):
    """(line, path) of every document citation in `text`."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in DOC.finditer(line):
            p = m.group(1)
            base = os.path.basename(p)
            if base == "report.md":
                continue          # a results directory's report, never in the tree
            if "/" not in p and not base[0].isupper():
                continue          # self.md, cls.md: attributes, not documents
            out.append((i, p))
    return out


def cited_decisions(text, path=""):
    """(line, number) of every decision citation in `text`."""
    start = 0
    if os.path.basename(path) == "DECISIONS.md":
        m = ENTRY.search(text)
        start = text[:m.start()].count("\n") if m else len(text.splitlines())
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if i <= start or ENTRY.match(line):
            continue            # the preamble, or an entry's own heading
        out += [(i, int(n)) for n in DECISION.findall(line)]
    return out


def cited_sections(text):
    """(line, path, section name) of every section citation in `text`."""
    return [(text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in SECTION.finditer(text)]


def headings(text):
    """The headings of a Markdown text, code spans' backquotes dropped."""
    return [h.replace("`", "") for h in HEADING.findall(text)]


def missing_sections(root=ROOT):
    """[(citing file, line, path, name)] whose document has no heading
    starting with the name (citations of a document not in the tree are
    missing_documents' to report)."""
    bad = []
    for rel in tree_files(root):
        for line, p, name in cited_sections(read(os.path.join(root, rel))):
            for cand in (os.path.join(root, os.path.dirname(rel), p), os.path.join(root, p)):
                if os.path.isfile(cand):
                    if not any(h.startswith(name.replace("`", "")) for h in headings(read(cand))):
                        bad.append((rel, line, p, name))
                    break
    return bad


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def outside(root, path):
    """The directory beside the checkout that `path` (a resolved citation)
    leads into, such as ROOT/../shared for ../shared/peers/fetch.md; None
    for a path inside the checkout."""
    root = os.path.normpath(root)
    rel = os.path.relpath(os.path.normpath(path), root)
    if not rel.startswith(os.pardir + os.sep):
        return None
    parts = rel.split(os.sep)
    ups = 0
    while parts[ups] == os.pardir:
        ups += 1
    return os.path.normpath(os.path.join(root, *parts[:ups + 1]))


def missing_documents(root=ROOT):
    """[(citing file, line, cited path)] whose document is not in the tree.
    A citation that leaves the checkout (`../shared/peers/fetch.md`: the
    workplace's directory beside the clone) is held only where that
    directory is there, so a clone on its own still passes and a clone
    beside it (as CI runs) catches a wrong name."""
    bad = []
    for rel in tree_files(root):
        for line, p in cited_documents(read(os.path.join(root, rel))):
            cands = (os.path.join(root, os.path.dirname(rel), p), os.path.join(root, p))
            if any(os.path.isfile(c) for c in cands):
                continue
            sides = [d for d in (outside(root, c) for c in cands) if d]
            if sides and not any(os.path.isdir(d) for d in sides):
                continue    # beside the checkout, and not here: nothing to hold it to
            bad.append((rel, line, p))
    return bad


def missing_decisions(root=ROOT):
    """[(citing file, line, n)] whose decision has no entry in DECISIONS.md."""
    have = {int(n) for n in ENTRY.findall(read(os.path.join(root, "DECISIONS.md")))}
    bad = []
    for rel in tree_files(root):
        for line, n in cited_decisions(read(os.path.join(root, rel)), rel):
            if n not in have:
                bad.append((rel, line, "D%d" % n))
    return bad


class Scanners(unittest.TestCase):
    """The scanners on made-up text."""

    def test_documents(self):
        text = ("see DECISIONS.md and bench/README.md, ../DESIGN.md;\n"
                "self.md = 1; out/report.md and report.md are outputs\n"
                "ARCHITECTURE.md (the map)\n")
        self.assertEqual(cited_documents(text), [(1, "DECISIONS.md"), (1, "bench/README.md"),
                                                 (1, "../DESIGN.md"), (3, "ARCHITECTURE.md")])

    def test_decisions(self):
        text = ("DECISIONS.md D1, D12; (D4)\n"
                "--D1=32768,8,64 D1mr D55E00 2D\n")
        self.assertEqual(cited_decisions(text), [(1, 1), (1, 12), (1, 4)])

    def test_the_decisions_preamble_is_not_a_citation(self):
        text = "# Decisions\nNo D3 was ever cited.\n\n## D1 — x\nD2 replaces it\n"
        self.assertEqual(cited_decisions(text, "DECISIONS.md"), [(5, 2)])

    def test_sections(self):
        text = ('see `bench/README.md`, "The format"; README.md ("Reading a\n'
                'results") and "README.md", b"x", bench/replay.c\'s bench/README.md "Replay"\n'
                ' * (bench/REPLAY.md,\n * "The tick sweep") and self.md, "Summary"\n')
        self.assertEqual(cited_sections(text), [(1, "bench/README.md", "The format"),
                                                (2, "bench/README.md", "Replay"),
                                                (3, "bench/REPLAY.md", "The tick sweep")])
        self.assertEqual(headings("# A `x` b\n\n## Two ##\nno # heading\n"), ["A x b", "Two"])

    def test_a_moved_section_is_found(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "DOC.md"), "w") as f:
                f.write("# Doc\n\n## The format (D4)\n")
            with open(os.path.join(d, "x.py"), "w") as f:
                f.write('# DOC.md, "The format"; DOC.md, "Replay"\n')
            self.assertEqual(missing_sections(d), [("x.py", 1, "DOC.md", "Replay")])

    def test_a_missing_document_and_decision_are_found(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "sub"))
            with open(os.path.join(d, "DECISIONS.md"), "w") as f:
                f.write("# Decisions\n\n## D1 — one\n")
            with open(os.path.join(d, "sub", "x.c"), "w") as f:
                f.write("/* README.md, DESIGN.md, DECISIONS.md D1 and D2 */\n")
            with open(os.path.join(d, "sub", "README.md"), "w") as f:
                f.write("here\n")
            self.assertEqual(missing_documents(d), [("sub/x.c", 1, "DESIGN.md")])
            self.assertEqual(missing_decisions(d), [("sub/x.c", 1, "D2")])

    def test_a_document_beside_the_checkout(self):
        import tempfile
        with tempfile.TemporaryDirectory() as top:
            d = os.path.join(top, "clone")
            os.makedirs(os.path.join(d, "bench"))
            with open(os.path.join(d, "bench", "x.sh"), "w") as f:
                f.write("# ../shared/peers/fetch.md, ../shared/peers/README.md\n")
            self.assertEqual(outside(d, os.path.join(d, "../shared/peers/fetch.md")),
                             os.path.join(top, "shared"))
            self.assertIsNone(outside(d, os.path.join(d, "bench/x.md")))
            # no ../shared beside the clone: not held
            self.assertEqual(missing_documents(d), [])
            os.makedirs(os.path.join(top, "shared", "peers"))
            with open(os.path.join(top, "shared", "peers", "README.md"), "w") as f:
                f.write("here\n")
            # there, with one of the two documents: the other is missing
            self.assertEqual(missing_documents(d), [("bench/x.sh", 1, "../shared/peers/fetch.md")])


class Tree(unittest.TestCase):
    """This checkout."""

    def test_the_scan_sees_the_tree(self):
        files = tree_files()
        for f in ("README.md", "DECISIONS.md", "bench/README.md", "tbkit/README.md",
                  "include/timerbench/scheduler.h", "timerbench"):
            self.assertIn(f, files)

    def test_every_cited_document_is_in_the_tree(self):
        self.assertEqual(["%s:%d: %s" % b for b in missing_documents()], [])

    def test_every_cited_section_is_in_its_document(self):
        seen = sum(len(cited_sections(read(os.path.join(ROOT, rel)))) for rel in tree_files())
        self.assertGreaterEqual(seen, 10)
        self.assertEqual(["%s:%d: %s, \"%s\"" % b for b in missing_sections()], [])

    def test_every_cited_decision_has_its_entry(self):
        self.assertTrue(cited_decisions(read(os.path.join(ROOT, "heapqueue", "heapqueue.c"))))
        self.assertEqual(["%s:%d: %s" % b for b in missing_decisions()], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
