#!/usr/bin/env python3
"""articles_test.py — holds tbkit/articles.py (every testable statement of
the five source articles and where the suite answers it) to the tree: each
entry complete with a known status, ids unique, every named test present
and registered in its file, every declared difference's key phrase in its
backend's README, every claim one the report registers (tbkit/claims.py), and each
quote verbatim in its article when the sources are beside the checkout
(../shared/sources, or TB_SOURCES).  Prints the count per status.

    python3 tests/articles_test.py [-v]
"""

import ast
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# tbkit is a namespace package: the repository root on the path is enough
sys.path.insert(0, ROOT)
import tbkit.articles as A  # noqa: E402

QUOTE_MAX = 120
ID = re.compile(r"^[a-z][a-z0-9_]*$")
C_DEF = re.compile(r"^\s*(?:static\s+)?void\s+(test_\w+)\s*\(\s*void\s*\*\*\s*\w*\s*\)\s*$",
                   re.M)
C_REG = re.compile(r"cmocka_unit_test\s*\(\s*(test_\w+)\s*\)")


def answers(s):
    """Every answer of a statement: its own, then those in `see`."""
    return (s.answer,) + tuple(s.see)


def squash(text):
    """Whitespace runs as one space: a README wraps its lines anywhere."""
    return " ".join(text.split())


def c_tests(path):
    """Names of the cmocka tests a C file defines and registers."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return set(C_DEF.findall(text)) & set(C_REG.findall(text))


def py_tests(path):
    """Names of the test methods of a Python file's classes."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    out.add(item.name)
    return out


def test_names(path):
    full = os.path.join(ROOT, path)
    if path.endswith(".c"):
        return c_tests(full)
    if path.endswith(".py"):
        return py_tests(full)
    raise ValueError("not a C or Python test file: " + path)


def sources_dir():
    """The articles beside the checkout, or None."""
    cands = [os.environ.get("TB_SOURCES"),
             os.path.join(ROOT, "..", "shared", "sources"),
             os.path.join(ROOT, "..", "..", "shared", "sources")]
    for d in cands:
        if d and os.path.isfile(os.path.join(d, A.ARTICLES[0].file)):
            return d
    return None


class Entries(unittest.TestCase):

    def test_every_entry_is_complete_with_a_known_status(self):
        files = {a.file for a in A.ARTICLES}
        for s in A.STATEMENTS:
            with self.subTest(s.id):
                self.assertRegex(s.id, ID)
                for field in ("quote", "english", "statement", "answer", "why"):
                    v = getattr(s, field)
                    self.assertIsInstance(v, str, field)
                    self.assertTrue(v.strip(), "%s is empty" % field)
                    self.assertNotIn("\n", v, field)
                self.assertIn(s.article, files)
                self.assertIsInstance(s.also_in, tuple)
                self.assertIsInstance(s.see, tuple)
                for f in s.also_in:
                    self.assertIn(f, files)
                self.assertNotIn(s.article, s.also_in)
                self.assertEqual(len(set(s.also_in)), len(s.also_in))
                for a in answers(s):
                    self.assertIn(A.status(a), A.STATUSES, a)
                self.assertEqual(len(set(answers(s))), len(answers(s)),
                                 "an answer repeated in see")
                self.assertNotIn("uncovered", s.see, "uncovered is an answer, not a reference")
                # a short quote: the report quotes it in a table cell
                self.assertLessEqual(len(s.quote), QUOTE_MAX, s.quote)

    def test_ids_unique(self):
        ids = [s.id for s in A.STATEMENTS]
        self.assertEqual(len(ids), len(set(ids)),
                         sorted({i for i in ids if ids.count(i) > 1}))

    def test_articles(self):
        self.assertEqual(len(A.ARTICLES), 5)
        self.assertEqual(len({a.file for a in A.ARTICLES}), 5)
        for a in A.ARTICLES:
            self.assertTrue(a.covers)
            self.assertTrue(A.label(a.file).startswith(a.file))
        # every article makes at least one statement
        made = {s.article for s in A.STATEMENTS} | {f for s in A.STATEMENTS for f in s.also_in}
        self.assertEqual(made, {a.file for a in A.ARTICLES})

    def test_every_named_test_exists_and_is_registered(self):
        cache = {}
        for s in A.STATEMENTS:
            for a in answers(s):
                if A.status(a) != "test":
                    continue
                with self.subTest(s.id, ref=a):
                    parts = a.split(":")
                    self.assertEqual(len(parts), 3, a)
                    _, path, name = parts
                    self.assertFalse(os.path.isabs(path), a)
                    self.assertTrue(os.path.isfile(os.path.join(ROOT, path)), path)
                    if path not in cache:
                        cache[path] = test_names(path)
                    self.assertIn(name, cache[path], "%s has no test %s" % (path, name))

    def test_every_difference_is_declared_in_its_readme(self):
        for s in A.STATEMENTS:
            diffs = [a for a in answers(s) if A.status(a) == "difference"]
            with self.subTest(s.id):
                self.assertLessEqual(len(diffs), 1, "one difference per entry, with its key")
                self.assertEqual(bool(diffs), bool(s.key), "key goes with a difference")
                for a in diffs:
                    parts = a.split(":")
                    self.assertEqual(len(parts), 2, a)
                    readme = os.path.join(ROOT, parts[1], "README.md")
                    self.assertTrue(os.path.isfile(readme), readme)
                    with open(readme, encoding="utf-8") as f:
                        text = squash(f.read())
                    self.assertIn(squash(s.key), text,
                                  "the README of %s does not say %r" % (parts[1], s.key))

    def test_every_claim_is_a_claim_of_the_report(self):
        from tbkit import claims
        registered = set(claims.ids())
        for s in A.STATEMENTS:
            for a in answers(s):
                if A.status(a) == "claim":
                    self.assertIn(a.split(":", 1)[1], registered, "%s: %s" % (s.id, a))

    def test_every_planned_claim_is_one_of_issue_29(self):
        for s in A.STATEMENTS:
            for a in answers(s):
                if A.status(a) == "planned":
                    self.assertIn(a.split(":", 1)[1], A.PLANNED_IDS, "%s: %s" % (s.id, a))
        # and each planned claim answers at least one statement
        used = {a.split(":", 1)[1] for s in A.STATEMENTS for a in answers(s)
                if A.status(a) == "planned"}
        self.assertEqual(used, set(A.PLANNED_IDS))

    def test_bare_statuses_have_no_argument(self):
        for s in A.STATEMENTS:
            for a in answers(s):
                if A.status(a) == "uncovered":
                    self.assertEqual(a, "uncovered")
                elif A.status(a) in ("claim", "planned"):
                    self.assertRegex(a.split(":", 1)[1], ID)

    def test_quotes_are_verbatim(self):
        d = sources_dir()
        if d is None:
            self.skipTest("the source articles are not beside the checkout "
                          "(../shared/sources, or set TB_SOURCES)")
        for s in A.STATEMENTS:
            with self.subTest(s.id):
                with open(os.path.join(d, s.article), encoding="utf-8") as f:
                    self.assertIn(s.quote, f.read())

    def test_count_per_status(self):
        counts = A.count_by_status()
        self.assertEqual(sum(counts.values()), len(A.STATEMENTS))
        for k in ("claim", "test", "difference", "uncovered"):
            self.assertGreater(counts[k], 0, k)
        print("\nsource-article statements per status: " +
              ", ".join("%s %d" % (k, counts[k]) for k in A.STATUSES) +
              " (%d in all)" % len(A.STATEMENTS))


if __name__ == "__main__":
    unittest.main(verbosity=2)
