#!/usr/bin/env python3
"""imports_test.py — holds tbkit to its layers (tbkit/README.md): walks
every module's imports with `ast` (nothing is imported) and fails on

- an import against the direction of the layers (a back edge): a module
  may import only modules of a lower layer, or of its own layer when that
  layer allows it (the sections never import each other);
- an import circle among tbkit's modules;
- a project import inside a function (or anywhere but a module's top
  level), where it hides a dependency and, before this package, closed a
  circle;
- a tbkit module the layer map below does not place;
- a sys.path edit in tbkit, or more than the one line a thin command
  (bench/*.py, report/*.py, tools/*.py) needs to find tbkit.

The checker is tested first on small made-up packages that break each rule
once, so a checker that sees nothing cannot pass.

    python3 tests/imports_test.py
"""

import ast
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = "tbkit"

# Layers, bottom first: (name, rank, whether its modules may import each
# other).  A module imports only modules of a strictly lower rank, or of
# its own layer when that layer allows it.  The reading side runs results
# -> analysis -> claims -> figures -> sections -> report; the running side
# machine -> runstate -> runners; both stand on the base.
LAYERS = {
    "base": (0, True),
    "results": (1, True),
    "machine": (1, True),
    "tools": (1, True),
    "analysis": (2, True),
    "runstate": (2, True),
    "claims": (3, True),
    "runners": (3, True),
    "figures": (4, True),
    "sections": (5, False),
    "report": (6, True),
}
# Every tbkit module and its layer (tbkit/README.md is the same map, with
# what each module is for).
MODULES = {
    "__init__": "base",
    "formats": "base", "stats": "base", "doc": "base", "numbers": "base",
    "trace": "base", "precision": "base", "articles": "base", "verdict": "base",
    "texts": "base",
    "results": "results",
    "machine": "machine",
    "tracegen": "tools", "perf2trace": "tools", "loopback": "tools",
    "analysis": "analysis", "front": "analysis", "replaydata": "analysis",
    "countsdata": "analysis", "jvm": "analysis", "libs": "analysis",
    "purgatory": "analysis",
    "runstate": "runstate",
    "claims": "claims", "claimtable": "claims", "claimtext": "claims",
    "bench": "runners", "replayrun": "runners", "countscmd": "runners",
    "purgjvm": "runners", "purgrun": "runners",
    "figures": "figures", "page": "figures",
    "sec_summary": "sections", "sec_micro": "sections", "sec_runtime": "sections",
    "sec_counts": "sections", "sec_replay": "sections", "sec_claims": "sections",
    "sec_jvm": "sections", "sec_libs": "sections", "sec_purgatory": "sections",
    "sec_articles": "sections",
    "report": "report", "compare": "report",
}
# The modules that only put decided values into words (DECISIONS D51):
# they may import the base layer and the claim table, never a module that
# reads results or decides, so that words can never decide.
WORDS_ONLY = {"claimtext": {"claimtable"}, "texts": set()}
# Where the thin commands live: each may hold one sys.path line.
COMMAND_DIRS = ("bench", "report", "tools")
# The module names the scripts had before tbkit: importing one of them is
# a project import too (it would only work through a sys.path edit).
OLD_NAMES = {"run", "replay", "counts", "generate", "compare", "tracegen",
             "perf2trace", "loopback_load", "tb_trace", "tb_runstate",
             "tb_results", "tb_stats", "tb_doc", "tb_analysis", "tb_claims",
             "tb_figures", "tb_front", "tb_precision", "tb_replay",
             "tb_counts", "tb_experiments", "tb_sections"}


def imported(node, modules):
    """The tbkit modules an Import/ImportFrom node names, and whether it
    is a project import at all (tbkit, relative, or a pre-tbkit name)."""
    out, project = [], False
    if isinstance(node, ast.Import):
        for a in node.names:
            parts = a.name.split(".")
            if parts[0] == PKG:
                project = True
                if len(parts) > 1:
                    out.append(parts[1])
            elif parts[0] in OLD_NAMES:
                project = True
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            project = True
            base = (node.module or "").split(".")[0]
            out += [base] if base else [a.name for a in node.names if a.name in modules]
        elif node.module:
            parts = node.module.split(".")
            if parts[0] == PKG:
                project = True
                if len(parts) > 1:
                    out.append(parts[1])
                else:
                    out += [a.name for a in node.names]
            elif parts[0] in OLD_NAMES:
                project = True
    return out, project


def _sys_path_edits(tree):
    """Calls of sys.path.insert/append/extend and assignments to sys.path."""
    n = 0
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append", "extend")
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "path"
                and isinstance(node.func.value.value, ast.Name)
                and node.func.value.value.id == "sys"):
            n += 1
    return n


def check_package(sources, modules=MODULES, layers=LAYERS):
    """Problems (strings) of a package given as {module name: source}."""
    problems = []
    edges = {}
    for name, src in sorted(sources.items()):
        tree = ast.parse(src, name)
        if name not in modules:
            problems.append("%s: not in the layer map (tests/imports_test.py MODULES, "
                            "tbkit/README.md)" % name)
            continue
        if _sys_path_edits(tree):
            problems.append("%s: edits sys.path" % name)
        top = set(id(n) for n in tree.body)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets, project = imported(node, modules)
            if not project:
                continue
            if id(node) not in top:
                problems.append("%s:%d: project import below the top level (inside a "
                                "function, class or block)" % (name, node.lineno))
                continue
            for t in targets:
                if t == name:
                    continue
                if t not in modules:
                    problems.append("%s:%d: imports %s, which is not a module of the "
                                    "package" % (name, node.lineno, t))
                    continue
                edges.setdefault(name, set()).add(t)
                ls, lt = modules[name], modules[t]
                (rs, intra), (rt, _) = layers[ls], layers[lt]
                if rt < rs or (ls == lt and intra):
                    continue
                problems.append("%s:%d: back edge: %s (layer %s) imports %s (layer %s)"
                                % (name, node.lineno, name, ls, t, lt))
    problems += ["import circle: " + " -> ".join(c) for c in circles(edges)]
    return problems


def circles(edges):
    """Every elementary circle found by a depth-first walk (each reported
    once, starting at its smallest name)."""
    found = set()
    out = []

    def walk(start, node, path, seen):
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                cyc = path + [start]
                key = tuple(sorted(set(cyc)))
                if key not in found:
                    found.add(key)
                    out.append(cyc)
            elif nxt not in seen and nxt > start:
                walk(start, nxt, path + [nxt], seen | {nxt})
    for s in sorted(edges):
        walk(s, s, [s], {s})
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def package_sources():
    d = os.path.join(ROOT, PKG)
    return {f[:-3]: read(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".py")}


def check_commands():
    """Problems of the thin commands: more than one sys.path line, or a
    project import that is not tbkit's."""
    problems = []
    for d in COMMAND_DIRS:
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            tree = ast.parse(read(os.path.join(ROOT, path)), path)
            n = _sys_path_edits(tree)
            if n > 1:
                problems.append("%s: %d sys.path edits (a thin command needs one)" % (path, n))
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                             else [node.module or ""])
                    if any(x.split(".")[0] in OLD_NAMES for x in names):
                        problems.append("%s:%d: imports a pre-tbkit module %s"
                                        % (path, node.lineno, ", ".join(names)))
    return problems


class Checker(unittest.TestCase):
    """The checker on made-up packages, each breaking one rule."""

    MODS = {"low": "base", "mid": "analysis", "high": "report",
            "s1": "sections", "s2": "sections", "a2": "analysis"}

    def check(self, sources):
        return check_package(sources, self.MODS)

    def test_a_clean_package_passes(self):
        self.assertEqual(self.check({
            "low": "import os\n",
            "mid": "from tbkit import low\n",
            "high": "from tbkit import mid, low\nfrom tbkit.s1 import x\n",
            "s1": "from tbkit.mid import f\n"}), [])

    def test_back_edge(self):
        p = self.check({"low": "from tbkit import mid\n", "mid": ""})
        self.assertEqual(len(p), 1)
        self.assertIn("back edge: low (layer base) imports mid (layer analysis)", p[0])

    def test_sections_do_not_import_each_other(self):
        p = self.check({"s1": "from tbkit import s2\n", "s2": ""})
        self.assertEqual(len(p), 1)
        self.assertIn("back edge", p[0])

    def test_import_in_a_function(self):
        p = self.check({"mid": "def f():\n    from tbkit import low\n", "low": ""})
        self.assertEqual(len(p), 1)
        self.assertIn("mid:2: project import below the top level", p[0])
        p = self.check({"mid": "def f():\n    import tb_results\n"})
        self.assertEqual(len(p), 1)

    def test_stdlib_import_in_a_function_is_allowed(self):
        self.assertEqual(self.check({"mid": "def f():\n    import json\n"}), [])

    def test_circle_within_a_layer(self):
        p = self.check({"mid": "from tbkit import a2\n", "a2": "import tbkit.mid\n"})
        self.assertEqual(p, ["import circle: a2 -> mid -> a2"])

    def test_unplaced_module(self):
        p = self.check({"new": ""})
        self.assertIn("new: not in the layer map", p[0])

    def test_sys_path(self):
        p = self.check({"low": "import sys\nsys.path.insert(0, '.')\n"})
        self.assertEqual(p, ["low: edits sys.path"])


class Tbkit(unittest.TestCase):
    """The package itself and its commands."""

    def test_layers_circles_and_function_imports(self):
        sources = package_sources()
        self.assertIn("report", sources)
        self.assertEqual(check_package(sources), [])

    def test_the_words_import_no_module_that_decides(self):
        sources = package_sources()
        for name, extra in WORDS_ONLY.items():
            tree = ast.parse(sources[name], name)
            got = set()
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    got.update(imported(node, MODULES)[0])
            allowed = {m for m, layer in MODULES.items() if layer == "base"} | extra
            self.assertEqual(sorted(got - allowed), [], name)

    def test_every_layer_is_used_as_declared(self):
        for m, layer in MODULES.items():
            self.assertIn(layer, LAYERS, m)

    def test_the_readme_maps_every_module(self):
        readme = read(os.path.join(ROOT, PKG, "README.md"))
        for m in package_sources():
            self.assertIn("| `%s.py` | %s (" % (m, MODULES.get(m, "?")), readme, m)

    def test_thin_commands(self):
        self.assertEqual(check_commands(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
