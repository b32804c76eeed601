#!/usr/bin/env python3
"""report_test.py — the `report` suite: runs report/generate.py on the
committed fixture (a real quick-profile run, trimmed; see
tests/fixtures/report-quick/README.md) and on hostile results directories,
and checks what the report says, not only that it was written.

    python3 tests/report_test.py [-v]

Exit status 0 when every case passes; the figure cases are skipped (not
failed) when gnuplot is not installed.
"""

import copy
import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GENERATE = os.path.join(ROOT, "report", "generate.py")
FIXTURE = os.path.join(HERE, "fixtures", "report-quick")
HAVE_GNUPLOT = shutil.which("gnuplot") is not None

sys.path.insert(0, ROOT)  # the checkout, for tbkit
from tbkit import claims as C  # noqa: E402
from tbkit import figures as tb_figures  # noqa: E402
from tbkit import numbers as A  # noqa: E402
from tbkit import replaydata as RD  # noqa: E402
from tbkit import report as generate  # noqa: E402
from tbkit import sec_summary as SS  # noqa: E402
from tbkit import results as tb_results  # noqa: E402
from tbkit import stats as tb_stats  # noqa: E402

# The verdicts' tests need the Mann-Whitney U test (Debian python3-scipy).
NEED_SCIPY = unittest.skipUnless(tb_stats.have_scipy(), "scipy (python3-scipy) is not installed")

VERDICT = re.compile(r"^(holds( \(.+\))?|does not hold(: .+)?|holds only .+|not tested: .+|"
                     r"undecided at this noise.*|undecided( .+)?: too few repetitions to test.*|"
                     # the growth claim names the case it judged (issue 29)
                     r"(holds|does not hold|undecided) on (the worst case|average) .+)$")


def run(results_dir, *extra):
    """Runs the generator; returns (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, GENERATE, results_dir] + list(extra),
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def copy_fixture(tmp):
    dst = os.path.join(tmp, "results")
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("README.md"))
    return dst


def fixture_json():
    """Every benchmark entry of the fixture's JSON files, under the first
    file's context."""
    merged = None
    for name in sorted(os.listdir(FIXTURE)):
        if name.endswith(".json") and name != "machine.json":
            with open(os.path.join(FIXTURE, name), encoding="utf-8") as f:
                data = json.load(f)
            if merged is None:
                merged = data
            else:
                merged["benchmarks"] += data["benchmarks"]
    return merged


def medians_of(data, op):
    """One entry per run of `op` holding the median of every field over
    the repetitions: Google Benchmark's median aggregate when the file has
    one, else the repetitions' median (a single repetition is its own)."""
    import statistics
    runs, aggs = {}, {}
    for b in data["benchmarks"]:
        if not b["run_name"].startswith(op + "/") or b.get("error_occurred"):
            continue
        if b.get("aggregate_name") == "median":
            aggs[b["run_name"]] = b
        elif b.get("run_type") == "iteration":
            runs.setdefault(b["run_name"], []).append(b)
    out = list(aggs.values())
    for name, reps in runs.items():
        if name in aggs:
            continue
        m = dict(reps[0])
        for k, v in reps[0].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                m[k] = statistics.median(r[k] for r in reps)
        out.append(m)
    return out


def md_section(md, title):
    """The text of the `## title` section of report.md."""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), md, re.S | re.M)
    return m.group(1) if m else None


def md_table_rows(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows.append(cells)
    return rows


def claim_rows(md):
    """The claims as rows [claim, source, experiment, measured, verdict]:
    the claims table gives all but the measured figures, listed under it
    per claim (one paragraph, or a list whose items were joined by "; ")."""
    sec = md_section(md, "What the classic write-ups claim, checked")
    rows = [r for r in md_table_rows(sec)[1:] if len(r) == 4]
    measured = {}
    part = sec.split("Measured, per claim:", 1)[1].split("\nRules:", 1)[0]
    cur = None
    for line in part.splitlines():
        m = re.match(r"^\*\*(.+?)\*\*:(.*)$", line)
        if m:
            cur = m.group(1)
            measured[cur] = [m.group(2).strip()] if m.group(2).strip() else []
        elif line.startswith("- ") and cur is not None:
            measured[cur].append(line[2:])
    return [[c, src, exp, "; ".join(measured.get(c, [])), v] for c, src, exp, v in rows]


def unmd(text):
    """Markdown cell text back to plain text."""
    t = re.sub(r"\\(.)", r"\1", text.replace("`", "").replace("**", ""))
    return html.unescape(t)


class FixtureReport(unittest.TestCase):
    """The report of the committed quick run."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tb-report-")
        cls.dir = copy_fixture(cls.tmp)
        cls.rc, cls.out, cls.err = run(cls.dir)
        with open(os.path.join(cls.dir, "report.md"), encoding="utf-8") as f:
            cls.md = f.read()
        with open(os.path.join(cls.dir, "report.html"), encoding="utf-8") as f:
            cls.html = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_both_files_written(self):
        self.assertEqual(self.rc, 0, self.err)
        self.assertIn("report.md", self.out)
        self.assertIn("report.html", self.out)
        self.assertNotIn("Traceback", self.err)

    def test_sections_in_order(self):
        heads = re.findall(r"^## (.+)$", self.md, re.M)
        want = ["Summary", "Method", "How to read this report", "Machine and build",
                "Micro-benchmarks: cost per operation against N", "Memory per pending task",
                "Runtime behaviour (monotonic clock, real threads)",
                "What the classic write-ups claim, checked", "Which one to use",
                "Limitations and noise"]
        self.assertEqual([h for h in heads if h in want], want)

    def test_first_screen_is_the_figure_and_the_recommendations(self):
        s = md_section(self.md, "Summary")
        first = [l for l in s.splitlines() if l.strip()][:4]
        self.assertTrue(first[0].startswith("!["), first)          # the headline figure
        self.assertIn("[The full table](#which-one-to-use)", s)
        short = md_table_rows(s)
        self.assertEqual(short[0], ["workload", "recommended"])
        full = md_table_rows(md_section(self.md, "Which one to use"))
        # the short form names, per workload, what the full table recommends
        want = {r[0]: r[1] for r in full[1:]}
        for w, rec in short[1:]:
            self.assertIn(w, want)
            for name in re.findall(r"`([^`]+)`", rec):
                self.assertIn("`%s`" % name, want[w])
        with open(os.path.join(self.dir, "report.html"), encoding="utf-8") as f:
            html_text = f.read()
        self.assertIn('<a href="#choose">The full table</a>', html_text)

    def test_machine_is_a_compact_table_and_the_rest_an_appendix(self):
        rows = md_table_rows(md_section(self.md, "Machine and build"))
        facts = [unmd(r[0]) for r in rows[1:]]
        self.assertEqual(facts, ["CPU", "cores", "caches", "memory latency (measured)",
                                 "kernel", "compiler", "commit", "profile", "wall time",
                                 "load (1, 5, 15 min)"])
        with open(os.path.join(self.dir, "machine.json"), encoding="utf-8") as f:
            machine = json.load(f)
        vals = {unmd(r[0]): unmd(r[1]) for r in rows[1:]}
        self.assertIn(machine["machine"]["kernel"], vals["kernel"])
        self.assertIn(machine["build"]["c_compiler"], vals["compiler"])
        appendix = md_table_rows(md_section(self.md, "Appendix: machine.json in full"))
        keys = {unmd(r[0]) for r in appendix[1:]}
        self.assertIn("machine.kernel", keys)
        self.assertIn("build.c_compiler", keys)
        self.assertGreater(len(keys), 3 * len(facts))

    def test_measured_figures_are_listed_under_each_claim(self):
        rows = claim_rows(self.md)
        self.assertTrue(all(r[3] for r in rows), rows)
        sec = md_section(self.md, "What the classic write-ups claim, checked")
        self.assertNotIn("| measured |", sec)

    def test_summary_has_numbers(self):
        # a finding states its number; a claim's states its verdict and
        # links to the measured figures (issue 36: a bullet is a sentence
        # or two, about 400 characters at most)
        s = md_section(self.md, "Summary")
        items = [l for l in s.splitlines() if l.startswith("- ")]
        self.assertGreaterEqual(len(items), 3)
        titles = [C.CLAIMS[cid].title for cid, _ in C.summary_ids()]
        claims = 0
        for item in items:
            self.assertLessEqual(len(item) - 2, SS.SUMMARY_BULLET_MAX, item)
            if any(item.startswith("- " + t + ": **") for t in titles):
                claims += 1
                self.assertIn("](#what-the-classic-write-ups-claim-checked)", item)
            else:
                self.assertRegex(item, r"\d", "summary finding without a number: " + item)
        self.assertGreaterEqual(claims, 1)

    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_every_figure_exists_and_is_not_empty(self):
        refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", self.md)
        self.assertGreaterEqual(len(refs), 8)
        for ref in refs:
            svg = os.path.join(self.dir, ref)
            png = svg[:-4] + ".png"
            for path in (svg, png):
                self.assertTrue(os.path.isfile(path), path)
                self.assertGreater(os.path.getsize(path), 1000, path)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertNotIn("Figure not drawn", self.md)
        self.assertEqual(self.html.count("data:image/svg+xml;base64,"), len(refs))

    def test_html_is_self_contained(self):
        for attr in re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", self.html):
            self.assertTrue(attr.startswith(("data:", "#")), attr)
        self.assertNotIn("<script", self.html.lower())
        self.assertNotIn("@import", self.html)

    def test_every_claim_has_a_computed_verdict(self):
        rows = claim_rows(self.md)
        self.assertGreaterEqual(len(rows), 8)
        for r in rows:
            self.assertEqual(len(r), 5, r)
            self.assertRegex(unmd(r[4]), VERDICT)
        # this run has heapqueue and timerthread: the claims about them are tested
        with open(os.path.join(self.dir, "verdicts.json"), encoding="utf-8") as f:
            verdicts = {c["id"]: c for c in json.load(f)["claims"]}
        self.assertEqual(list(verdicts), C.ids())
        self.assertNotEqual(verdicts["slow_task"]["kind"], C.UNTESTED, verdicts["slow_task"])
        self.assertTrue(verdicts["slow_task"]["cases"])

    def test_each_recommendation_carries_the_numbers_it_was_decided_on(self):
        with open(os.path.join(self.dir, "verdicts.json"), encoding="utf-8") as f:
            recs = json.load(f)["recommendations"]
        decided = [r for r in recs if "decided" in r]
        self.assertGreaterEqual(len(decided), 6)
        for r in decided:
            d = r["decided"]
            self.assertIn(d["key"], C.PICKS + ("replay",), r)
            values = [x["value"] for x in d["values"]]
            self.assertEqual(values, sorted(values), r)      # best first
            if d["key"] == "replay":
                continue   # recommended by budgets kept, not by cost alone
            # the recommended are the best and those tied with it, and
            # the tied are within MIN_EFFECT of the best
            named = d["tied"] or [d["values"][0]["label"]]
            self.assertEqual(r["recommended"], named, r)
            by = {x["label"]: x["value"] for x in d["values"]}
            for label in d["tied"]:
                self.assertLessEqual(by[label], values[0] * (1 + tb_stats.MIN_EFFECT), r)

    def test_micro_tables_equal_the_json(self):
        data = fixture_json()
        medians = {}
        for b in data["benchmarks"]:
            if b.get("aggregate_name") == "median" and b["run_name"].split("/")[0] in (
                    "insert", "cancel", "expire", "timeouts", "periodic", "fill"):
                medians[b["run_name"]] = b["real_time"]
        self.assertGreater(len(medians), 10)
        micro = md_section(self.md, "Micro-benchmarks: cost per operation against N")
        tables = {}
        for part in re.split(r"^### ", micro, flags=re.M)[1:]:
            op = part.split("\n", 1)[0].strip()
            rows = md_table_rows(part)
            header = rows[0]
            for r in rows[1:]:
                tables[(op, unmd(r[0]), unmd(r[1]), unmd(r[2]))] = dict(zip(header, r))
        checked = 0
        for run_name, t in medians.items():
            parts = run_name.split("/")
            op, backend, wl, config = parts[:4]
            n = int(parts[4].split(":")[1])
            row = tables.get((op, backend, wl, config))
            self.assertIsNotNone(row, run_name)
            col = [k for k in row if k.startswith("N = ") and
                   k[4:].replace(",", "") in (str(n), "10^%d" % (len(str(n)) - 1))]
            self.assertEqual(len(col), 1, (run_name, list(row)))
            want = "%.1f" % t if t < 1000 else "{:,.0f}".format(t)
            self.assertTrue(row[col[0]].startswith(want + " "), (run_name, row[col[0]], want))
            checked += 1
        self.assertEqual(checked, len(medians))

    def test_lateness_table_equals_the_json(self):
        data = fixture_json()
        sec = md_section(self.md, "Runtime behaviour (monotonic clock, real threads)")
        late = re.split(r"^### ", sec, flags=re.M)
        late = [p for p in late if p.startswith("lateness")][0]
        rows = md_table_rows(late)
        header = rows[0]
        got = [dict(zip(header, r)) for r in rows[1:]]
        n = 0
        for b in medians_of(data, "lateness"):
            if True:
                _, backend, wl, config = b["run_name"].split("/")[:4]
                row = None
                for r in got:
                    if (unmd(r["workload"]), unmd(r["configuration"])) == (wl, config) and \
                            unmd(r["series"]).split(" ")[0] == backend:
                        row = r
                self.assertIsNotNone(row, b["run_name"])
                for col, key, need in (("p50 (us)", "p50", 20), ("p99 (us)", "p99", 1000),
                                       ("p99.9 (us)", "p999", 10000), ("max (us)", "max", 1)):
                    us = b[key] / 1000.0
                    if b["count"] >= need:
                        self.assertEqual(row[col], "%.1f" % us if us < 1000 else "{:,.0f}".format(us))
                    else:
                        # the sample-count rule: the cell says why it is empty
                        self.assertEqual(unmd(row[col]), "— (n = %s < %s)" % (
                            "{:,.0f}".format(b["count"]) if b["count"] >= 100 else "%g" % b["count"],
                            "{:,.0f}".format(need) if need >= 100 else str(need)), (col, row))
                n += 1
        self.assertGreater(n, 3)

    def test_complexity_fits_only_when_they_explain_the_data(self):
        data = fixture_json()
        rms = [b["rms"] for b in data["benchmarks"] if b.get("aggregate_name") == "RMS"]
        micro = md_section(self.md, "Micro-benchmarks: cost per operation against N")
        shown = re.findall(r"complexity fit for `[^`]+`: O\([^)]*\), RMS ([\d.]+) %", micro)
        refused = re.findall(r"no fit \(its best curve, O\([^)]*\), misses the points by "
                             r"RMS ([\d.]+) %, above 20\.0 %\)", micro)
        self.assertGreater(len(shown) + len(refused), 5)
        self.assertGreater(len(refused), 0)
        for v in shown:
            self.assertLessEqual(float(v), 20.0)
        for v in refused:
            self.assertGreater(float(v), 20.0)
        # every RMS the report prints is one of the JSON's
        json_rms = {float("%.1f" % (100 * r)) for r in rms}
        for v in shown + refused:
            self.assertIn(float(v), json_rms)

    def test_which_one_to_use(self):
        s = md_section(self.md, "Which one to use")
        rows = md_table_rows(s)
        self.assertGreaterEqual(len(rows) - 1, 4)
        self.assertEqual(rows[0][2], "precision")
        self.assertEqual(rows[0][3], "installed library of its structure")
        for r in rows[1:]:
            self.assertEqual(len(r), 6, r)
            self.assertRegex(r[5], r"\d")
            # the fixture has no libs.json: said, not left blank
            self.assertEqual(r[3], "libraries not measured")
            # the precision every row holds at: from the backend's kind and tick
            self.assertRegex(unmd(r[2]), r"^(exact|<= one tick \(\d+[mun]?s\)|"
                                   r"<= 1 tick \+ 8/63 of the delay \(its levels\), tick \d+[mun]?s)")

    def test_limitations_say_something_measured(self):
        s = md_section(self.md, "Limitations and noise")
        self.assertIn("coefficient of variation", s)
        self.assertIn("Harness overhead", s)


def with_repetitions(d, name, k=5):
    """Rewrites d/name so that each repetition of every instance appears k
    times, scaled by 1 + j/1000 (j = 0..k-1), and its aggregates are
    dropped: a run with enough repetitions for the Mann-Whitney U test
    (the fixture's runtime experiments ran once) and the same medians
    within 0.2 %."""
    path = os.path.join(d, name)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        for j in range(k):
            c = dict(b)
            c["repetition_index"] = b.get("repetition_index", 0) * k + j
            for key, v in b.items():
                if key not in ("repetition_index", "threads", "iterations", "family_index",
                               "per_family_instance_index", "repetitions") and \
                        isinstance(v, (int, float)) and not isinstance(v, bool):
                    c[key] = v * (1 + j / 1000.0)
            out.append(c)
    data["benchmarks"] = out
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def scaled_copies(data, prefix, old, new, scale):
    """Copies of the results in `data` whose run name starts with prefix,
    renamed (old -> new, once) and with their times scaled: synthetic lines
    whose verdict the test knows."""
    out = []
    for b in data["benchmarks"]:
        if b["run_name"].startswith(prefix):
            c = dict(b)
            for k in ("run_name", "name"):
                c[k] = b[k].replace(old, new, 1)
            for k in ("real_time", "cpu_time"):
                c[k] = b[k] * scale
            out.append(c)
    return out


@NEED_SCIPY
class VerdictsAreComputed(unittest.TestCase):
    """Changing the measurements changes the verdict."""

    def _claims(self, d):
        """{claim id: its verdict as verdicts.json holds it} of the report
        of d; the claims table says the same verdict."""
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "verdicts.json"), encoding="utf-8") as f:
            doc = json.load(f)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            table = {unmd(r[0]): unmd(r[4]) for r in claim_rows(f.read())}
        out = {c["id"]: c for c in doc["claims"]}
        for c in out.values():
            self.assertEqual(table[c["claim"]], c["verdict"])
        return out

    def _claim_with(self, d, name, data, cid):
        """The verdict (verdicts.json's) of claim `cid` once d/name holds
        `data`."""
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            json.dump(data, f)
        return self._claims(d)[cid]

    def test_one_repetition_is_too_few_to_decide(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            v = self._claims(d)["leader_follower"]
            self.assertEqual(v["kind"], C.UNDECIDED)
            self.assertEqual({c["decision"] for c in v["cases"]}, {"too few"})
            self.assertEqual({tuple(c["n"]) for c in v["cases"]}, {(1, 1)})

    def _copied_verdicts(self, d, cid, field, src, dst):
        """The verdict kind of claim `cid` before and after
        `field` of runtime.json's rows whose names `dst` accepts is set to
        that of the row `src` accepts of the same repetition or aggregate."""
        before = self._claims(d)[cid]["kind"]
        with open(os.path.join(d, "runtime.json"), encoding="utf-8") as f:
            data = json.load(f)

        def key(b):
            return b.get("aggregate_name") or b.get("repetition_index")

        values = {key(b): b[field] for b in data["benchmarks"] if src(b["run_name"])}
        for b in data["benchmarks"]:
            if dst(b["run_name"]):
                b[field] = values[key(b)]
        return before, self._claim_with(d, "runtime.json", data, cid)["kind"]

    def test_leader_follower_verdict_follows_the_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "runtime.json")
            before, after = self._copied_verdicts(
                d, "leader_follower", "timed_waits_per_task",
                lambda n: n.startswith("workers/") and "leader=on" in n,
                lambda n: n.startswith("workers/") and "leader=off" in n)
            self.assertEqual(before, C.HOLDS)
            self.assertEqual(after, C.FAILS)

    def test_hierarchy_verdict_needs_an_effect_not_a_p_value(self):
        # synthetic wide lines for hierwheel: its short ones, scaled
        def with_wide(d, insert_scale, expire_scale):
            path = os.path.join(d, "micro.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data["benchmarks"] = [b for b in data["benchmarks"]
                                  if "/hierwheel/wide/" not in b["run_name"]]
            extra = []
            for op, scale in (("insert", insert_scale), ("expire", expire_scale)):
                extra += scaled_copies(data, op + "/hierwheel/short/series=h2h",
                                       "/short/", "/wide/", scale)
            self.assertTrue(extra)
            data["benchmarks"] += extra
            v = self._claim_with(d, "micro.json", data, "hierarchy")
            return v["kind"], v["facts"].get("part")

        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "micro.json")
            self.assertEqual(with_wide(d, 1.0, 1.5), (C.HOLDS, None))
            no_cascade = (C.PARTLY, "range")
            # wide expiring cheaper, or dearer by under 10 %: significant
            # both, and neither a cascade cost a rerun would show again
            self.assertEqual(with_wide(d, 1.0, 0.85), no_cascade)
            self.assertEqual(with_wide(d, 1.0, 1.05), no_cascade)
            self.assertEqual(with_wide(d, 3.0, 1.5), (C.PARTLY, "cascade_cost"))

    def test_netty_lateness_bound_is_refuted_only_by_an_excess(self):
        # timerwheel's p50 well past the floor's plus a quarter tick, its
        # p99 at x times the bound (the floor's p99 plus one tick), in every
        # repetition; enough samples for a p99
        def verdict(d, x):
            path = os.path.join(d, "runtime.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            light = [b for b in data["benchmarks"] if b["run_name"].startswith("lateness/")
                     and "/light/" in b["run_name"] and "slack=default" in b["run_name"]]
            floor = {b["repetition_index"]: b for b in light
                     if b["run_name"].startswith("lateness/floor/")}
            for b in light:
                b["count"] = 2000
                m = re.search(r"tick=(\d+)ms", b["run_name"])
                if b["run_name"].startswith("lateness/timerwheel/") and m:
                    tick = int(m.group(1)) * 1e6
                    fb = floor[b["repetition_index"]]
                    b["p50"] = fb["p50"] + tick / 2
                    b["p99"] = (fb["p99"] + tick) * x
            return self._claim_with(d, "runtime.json", data, "netty_ticks")

        def p99_decisions(v):
            return {c["decision"] for c in v["cases"] if c["name"].endswith(", p99")}

        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "runtime.json")
            v = verdict(d, 0.9)
            self.assertEqual(v["kind"], C.HOLDS)
            self.assertEqual(p99_decisions(v), {"less"})
            # exactly at the bound is within it: "up to a tick" is refuted
            # by a significant excess only, not confirmed by a p-value
            v = verdict(d, 1.0)
            self.assertEqual(v["kind"], C.HOLDS)
            self.assertNotIn("greater", p99_decisions(v))
            v = verdict(d, 1.2)
            self.assertEqual(v["kind"], C.PARTLY)
            self.assertEqual(p99_decisions(v), {"greater"})
            self.assertEqual(v["facts"]["part"], "idle")
            self.assertTrue(all(r["tested"] for r in v["facts"]["lateness"]))

    def test_slow_task_verdict_follows_the_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "runtime.json")
            before, after = self._copied_verdicts(
                d, "slow_task", "max",
                lambda n: n.startswith("interference/heapqueue/") and "threads=4" in n,
                lambda n: n.startswith("interference/timerthread/"))
            self.assertEqual(before, C.HOLDS)
            self.assertEqual(after, C.FAILS)


    def test_failure_verdict_follows_the_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            before = self._claims(d)["failing_task"]
            self.assertEqual(before["kind"], C.HOLDS)
            self.assertEqual([c["decision"] for c in before["cases"]], ["as claimed"] * 2)
            path = os.path.join(d, "probe.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            for b in data["benchmarks"]:
                b["ran_after"] = b["after"]
                b["accepted_after"] = 1
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
            after = self._claims(d)["failing_task"]
            self.assertEqual(after["kind"], C.FAILS)
            t = [c for c in after["cases"] if c["name"] == "timerthread"][0]
            self.assertEqual(t["decision"], "not as claimed")
            self.assertEqual(t["values"]["ran_after"], t["values"]["after"])


@NEED_SCIPY
class HeapClaims(unittest.TestCase):
    """Claims 9 and 10 (a 4-ary heap at large N; lazy deletion), on the
    fixture with synthetic quadheap lines: the fixture's timerthread
    results renamed and scaled, so the verdict must follow the scale."""

    def _verdict(self, d, cid):
        """(measured figures, verdict, the claim in verdicts.json) of claim
        `cid` in the report of d, the verdict as verdicts.json holds it and
        the claims table says."""
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            md = f.read()
        with open(os.path.join(d, "verdicts.json"), encoding="utf-8") as f:
            v = [c for c in json.load(f)["claims"] if c["id"] == cid][0]
        rows = claim_rows(md)
        hits = [(unmd(r[3]), unmd(r[4])) for r in rows if unmd(r[0]) == C.CLAIMS[cid].title]
        self.assertEqual(len(hits), 1)
        self.assertEqual(hits[0][1], v["verdict"])
        return hits[0] + (v,)

    def _add_quadheap(self, d, op, scale, counters=None):
        """Adds quadheap results of `op`: timerthread's, times x scale and
        the given counters set."""
        path = os.path.join(d, "micro.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        data["benchmarks"] = [b for b in data["benchmarks"]
                              if not b["run_name"].startswith(op + "/quadheap/")]
        extra = scaled_copies(data, op + "/timerthread/", "/timerthread/", "/quadheap/",
                              scale)
        for c in extra:
            c.update(counters or {})
        self.assertTrue(extra)
        data["benchmarks"] += extra
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)
        # its capabilities as the binary's --info lists them, beside the
        # others': a heap (not ticked) that cancels lazily
        path = os.path.join(d, "machine.json")
        with open(path, encoding="utf-8") as f:
            machine = json.load(f)
        machine["build"].setdefault("backend_caps", {})["quadheap"] = ["lazy_cancel", "skip_missed"]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(machine, f)

    def test_four_ary_claim_follows_the_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "micro.json")
            measured, _, v = self._verdict(d, "four_ary_heap")
            self.assertEqual((v["kind"], v["facts"]), (C.UNTESTED, {"why": "no_results"}))
            self.assertEqual(measured, "no data")
            path = os.path.join(d, "micro.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            for b in data["benchmarks"]:
                if b["run_name"].startswith("expire/"):
                    b["sift_levels_per_op"] = 19.0
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
            # a hundredth of timerthread's time beats both binary heaps
            self._add_quadheap(d, "expire", 0.01, {"sift_levels_per_op": 9.5})
            _, _, v = self._verdict(d, "four_ary_heap")
            self.assertEqual(v["kind"], C.HOLDS)
            pairs = v["facts"]["pairs"]
            self.assertEqual(sorted((p["quad"], p["binary"], p["n"]) for p in pairs),
                             [("quadheap", "heapqueue", 10 ** 6),
                              ("quadheap", "timerthread", 10 ** 6)])
            self.assertEqual({(p["quad_sift_levels_per_op"], p["binary_sift_levels_per_op"])
                              for p in pairs}, {(9.5, 19.0)})
            self.assertEqual([c["name"] for c in v["cases"]],
                             ["%s against %s, N = 1000000" % (p["quad"], p["binary"])
                              for p in pairs])
            self.assertEqual([j["faster"] for j in v["facts"]["judged"]], ["yes"])
            self.assertIsNone(v["facts"]["valgrind"])
            # Valgrind's counts, when the run has them, are shown beside
            # (./timerbench counts --op expire --n 100000, this commit's)
            counted = [("timerthread", 441.6, 7.71), ("quadheap", 417.5, 4.96),
                       ("heapqueue", 595.6, 18.23)]
            with open(os.path.join(d, "counts.json"), "w", encoding="utf-8") as f:
                json.dump({"results": [
                    {"name": "expire/%s/uniform/series=h2h,step=1s/N:100000" % b, "op": "expire",
                     "backend": b, "workload": "uniform", "config": "series=h2h,step=1s",
                     "n": 100000, "ops": 1000, "instructions_per_op": ir,
                     "d1_misses_per_op": d1, "ll_misses_per_op": 0.0, "work_per_op": {}}
                    for b, ir, d1 in counted]}, f)
            measured, text, v = self._verdict(d, "four_ary_heap")
            self.assertEqual(v["kind"], C.HOLDS)
            self.assertEqual(v["facts"]["valgrind"]["n"], 100000)
            self.assertEqual([r["backend"] for r in v["facts"]["valgrind"]["rows"]],
                             ["quadheap", "heapqueue", "timerthread"])
            # the words, as claimtext says them in the report
            self.assertEqual(text, "holds")
            self.assertIn("N = 10^6: quadheap", measured)
            self.assertIn("sift levels per task 9.5 against 19", measured)
            self.assertIn("Valgrind, expire at N = 10^5: quadheap 418 instructions, 4.96 D1 "
                          "misses per task, heapqueue 596 instructions, 18.2 D1 misses per "
                          "task, timerthread 442 instructions, 7.71 D1 misses per task", measured)
            self._add_quadheap(d, "expire", 100.0)
            _, text, v = self._verdict(d, "four_ary_heap")
            self.assertEqual(v["kind"], C.FAILS)
            [judged] = v["facts"]["judged"]
            self.assertEqual(judged["faster"], "no")
            self.assertIn(judged["binary"], ("heapqueue", "timerthread"))
            self.assertRegex(text, r"^does not hold: not 10(\.0)? % faster than the fastest "
                                   r"binary heap \((heapqueue|timerthread)\)$")
            # a tie is no win either, whatever the test says of it: a
            # verdict must not wander with the p-value of a zero effect
            self._add_quadheap(d, "expire", 1.0)   # ties timerthread exactly
            _, _, v2 = self._verdict(d, "four_ary_heap")
            self.assertEqual((v2["kind"], v2["facts"]["judged"][0]["faster"]), (C.FAILS, "no"))

    def test_lazy_deletion_claim_follows_the_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "micro.json")
            # the fixture: heapqueue roc=off and timerthread mark only and
            # keep about 0.95 zombies per N in the timeouts steady state
            measured, _, v = self._verdict(d, "lazy_deletion")
            self.assertEqual(v["kind"], C.HOLDS)
            pairs = {(p["lazy"], p["removing"], p["n"]) for p in v["facts"]["pairs"]}
            self.assertIn(("timerthread", "heapqueue roc=on", 10 ** 6), pairs)
            npairs = len(v["facts"]["pairs"])
            self.assertEqual([c["decision"] for c in v["cases"][:npairs]], ["less"] * npairs)
            held = dict(zip([h["backend"] for h in v["facts"]["held"]], v["cases"][npairs:]))
            self.assertEqual(held["timerthread"]["decision"], "held")
            self.assertAlmostEqual(held["timerthread"]["values"]["zombies_per_n"], 0.95, 2)
            # a lazy heap that cleans its zombies (Go's quarter) still keeps some
            self._add_quadheap(d, "cancel", 1.0)
            self._add_quadheap(d, "timeouts", 1.0, {"zombies_per_n": 0.25})
            measured, _, v = self._verdict(d, "lazy_deletion")
            self.assertEqual(v["kind"], C.HOLDS)
            self.assertRegex(measured, r"quadheap zombies 0\.25\d* per N")
            # cleaned to nothing: the memory half fails
            self._add_quadheap(d, "timeouts", 1.0, {"zombies_per_n": 0.0})
            _, text, lazy = self._verdict(d, "lazy_deletion")
            self.assertEqual((lazy["kind"], lazy["facts"]["why"]), (C.PARTLY, "no_zombies"))
            zombies = {c["name"].split(" ")[0]: c for c in lazy["cases"] if " zombies, " in c["name"]}
            self.assertEqual(zombies["quadheap"]["decision"], "none")
            self.assertEqual(zombies["quadheap"]["values"]["zombies_per_n"], 0.0)
            self.assertEqual(zombies["timerthread"]["decision"], "held")
            # the words, as claimtext says them in the report
            self.assertEqual(text, "holds only in part: cancel is cheaper, but a lazy heap "
                                   "held no zombies")
            # and a lazy cancel slower than the removal
            self._add_quadheap(d, "cancel", 1000.0)
            self._add_quadheap(d, "timeouts", 1.0, {"zombies_per_n": 0.25})
            _, _, v = self._verdict(d, "lazy_deletion")
            self.assertEqual((v["kind"], v["facts"]["why"]), (C.PARTLY, "slower"))
            self.assertIn("greater", [c["decision"] for c in v["cases"]])
            self._add_quadheap(d, "timeouts", 1.0, {"zombies_per_n": 0.0})
            _, _, v = self._verdict(d, "lazy_deletion")
            self.assertEqual(v["kind"], C.FAILS)
            self.assertNotIn("why", v["facts"])

    def test_lazy_deletion_untested_without_a_removing_heap(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            path = os.path.join(d, "micro.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data["benchmarks"] = [b for b in data["benchmarks"]
                                  if "roc=on" not in b["run_name"]]
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
            measured, text, v = self._verdict(d, "lazy_deletion")
            self.assertEqual((v["kind"], v["facts"]), (C.UNTESTED, {"why": "no_cancel_results"}))
            self.assertEqual(text, "not tested: no cancel results (series h2h) for both a lazy "
                                   "heap and one that removes")
            self.assertEqual(measured, "no data")


@NEED_SCIPY
class WorkAndCounts(unittest.TestCase):
    """The structure's work counters (micro JSON) and Valgrind's counts
    (counts.json) in the report, and the growth claim judged on both."""

    def _report(self, d):
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("Traceback", err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            return f.read(), err

    def _growth(self, d):
        """The growth claim in verdicts.json."""
        with open(os.path.join(d, "verdicts.json"), encoding="utf-8") as f:
            return [c for c in json.load(f)["claims"] if c["id"] == "heap_vs_wheel_growth"][0]

    def _work_shapes(self, d):
        """{"heap": [...], "wheel": [...]}: the work shape of each line the
        growth claim judged, from its cases in verdicts.json."""
        g = self._growth(d)
        out = {"heap": [], "wheel": []}
        for case in g["cases"]:
            if "work_shape" not in case["values"]:
                continue        # a line of Valgrind's counts: its shape is the decision
            label = case["name"].split(" ", 2)[2]
            kind = "heap" if label.split(" ")[0] in ("heapqueue", "timerthread") else "wheel"
            out[kind].append(case["values"]["work_shape"])
        return out

    def _growth_average(self, d, md):
        """The growth claim's average case (its facts in verdicts.json),
        once the report's claims table is seen to say its verdict."""
        rows = claim_rows(md)
        title = C.CLAIMS["heap_vs_wheel_growth"].title
        g = self._growth(d)
        self.assertEqual([unmd(r[4]) for r in rows if unmd(r[0]) == title], [g["verdict"]])
        return g["facts"]["average"]

    def _set_work(self, d, heap_work):
        """Gives every insert and cancel result work counters: heaps
        heap_work(N) sift levels per op, wheels one transfer per op."""
        path = os.path.join(d, "micro.json")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            parts = b["run_name"].split("/")
            if parts[0] not in ("insert", "cancel") or len(parts) < 5 or not parts[4].startswith("N:"):
                continue
            n = int(parts[4][2:])
            heap = parts[1] in ("heapqueue", "timerthread")
            b["sift_levels_per_op"] = heap_work(n) if heap else 0.0
            b["transfers_per_op"] = 0.0 if heap else 1.0
            b["rounds_per_op"] = 0.0
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)

    def test_growth_claim_is_judged_on_work_and_on_time(self):
        import math
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            md, _ = self._report(d)
            a = self._growth_average(d, md)
            self.assertEqual((a["work_kind"], a["heaps_uncounted"]), (None, []))
            with_repetitions(d, "micro.json")
            self._set_work(d, lambda n: math.log2(n))
            md, _ = self._report(d)
            a = self._growth_average(d, md)
            self.assertEqual(a["work_kind"], C.HOLDS, a)
            self.assertIsNone(self._growth(d)["facts"]["worst"])
            # the cases carry each line's work shape: heaps grow, wheels stay flat
            shapes = self._work_shapes(d)
            self.assertTrue(shapes["heap"] and shapes["wheel"], shapes)
            self.assertEqual(set(shapes["heap"]), {"grows"}, shapes)
            self.assertEqual(set(shapes["wheel"]), {"flat"}, shapes)
            micro = unmd(md_section(md, "Micro-benchmarks: cost per operation against N"))
            self.assertIn("sift_levels 13.3", micro)      # log2(10^4) at N = 10^4
            self.assertIn("the structure's work per operation", micro)
            self._set_work(d, lambda n: 1.6)
            md, _ = self._report(d)
            a = self._growth_average(d, md)
            self.assertEqual(a["work_kind"], C.FAILS, a)
            self.assertEqual(set(self._work_shapes(d)["heap"]), {"flat"})
            # heaps whose counters never move do not count them: time alone
            self._set_work(d, lambda n: 0.0)
            md, _ = self._report(d)
            a = self._growth_average(d, md)
            self.assertEqual((a["work_kind"], a["heaps_uncounted"]),
                             (None, ["heapqueue", "timerthread"]))

    def test_counts_table_equals_counts_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            md, _ = self._report(d)
            sec = md_section(md, "Instructions and cache misses per operation (Valgrind)")
            self.assertIn("This run has no `counts.json`", sec)
            results = [
                {"name": "insert/heapqueue/uniform/series=h2h/N:1000", "op": "insert",
                 "backend": "heapqueue", "workload": "uniform", "config": "series=h2h", "n": 1000,
                 "ops": 125, "instructions_per_op": 250.25, "d1_misses_per_op": 1.7,
                 "ll_misses_per_op": 0.264, "work_per_op": {"sift_levels": 1.5, "visits": 0}},
                {"name": "insert/heapqueue/uniform/series=h2h/N:100000", "op": "insert",
                 "backend": "heapqueue", "workload": "uniform", "config": "series=h2h", "n": 100000,
                 "ops": 1024, "instructions_per_op": 500.5, "d1_misses_per_op": 6.25,
                 "ll_misses_per_op": 2.5, "work_per_op": {"sift_levels": 1.75}},
                {"name": "expire/timerwheel N=1000", "error": "exit 1: boom"},
                {"op": "cancel"},
            ]
            with open(os.path.join(d, "counts.json"), "w", encoding="utf-8") as f:
                json.dump({"valgrind": "valgrind-3.19.0",
                           "caches": {"D1": {"size": 32768, "assoc": 8, "line": 64}},
                           "results": results}, f)
            md, err = self._report(d)
            self.assertIn("1 results were not in the expected form", err)
            sec = md_section(md, "Instructions and cache misses per operation (Valgrind)")
            rows = md_table_rows(sec)
            self.assertEqual(rows[0][:6], ["backend", "workload", "N", "instructions / op",
                                           "D1 misses / op", "LL misses / op"])
            self.assertEqual([r[2:6] for r in rows[1:]],
                             [["10^3", "250.2", "1.70", "0.264"], ["10^5", "500.5", "6.25", "2.500"]])
            self.assertEqual(unmd(rows[1][6]), "sift_levels 1.5")
            self.assertIn("instructions 2.00×", sec)     # 500.5 / 250.25
            self.assertIn("D1 32 KiB 8-way", sec)
            self.assertIn("expire/timerwheel N=1000", sec)
            self.assertIn("boom", sec)

    def test_counts_alone_make_a_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "counts.json"), "w") as f:
                json.dump({"results": [{"op": "insert", "backend": "heapqueue", "workload": "uniform",
                                        "config": "series=h2h", "n": 1000, "ops": 125,
                                        "instructions_per_op": 250.0, "d1_misses_per_op": 1.0,
                                        "ll_misses_per_op": 0.0}]}, f)
            md, _ = self._report(tmp)
            self.assertIn("250.0", md_section(md, "Instructions and cache misses per operation (Valgrind)"))
            with open(os.path.join(tmp, "counts.json"), "w") as f:
                f.write('{"results": [')
            rc, _, err = run(tmp, "--no-figures")
            self.assertEqual(rc, 2)
            self.assertIn("counts.json", err)
            self.assertNotIn("Traceback", err)


class PooledPercentiles(unittest.TestCase):
    """A configuration's samples over all its repetitions back a p99.9 that
    no single repetition's could (10^4 over 5 repetitions)."""

    def test_pooled_samples_back_the_tail(self):
        import csv
        import math
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            with_repetitions(d, "runtime.json")
            path = os.path.join(d, "samples.csv")
            with open(path, encoding="utf-8") as f:
                rows = list(csv.reader(f))
            raw = {}
            for r in rows[1:]:
                r[5] = str(int(r[5]) * 50)      # each row now stands for 50x its samples
                if r[1] == "lateness":
                    raw.setdefault(r[0], []).append((float(r[4]), int(r[5])))
            with open(path, "w", encoding="utf-8", newline="") as f:
                csv.writer(f).writerows(rows)
            rc, _, err = run(d, "--no-figures")
            self.assertEqual(rc, 0, err)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                md = f.read()
            late = [p for p in re.split(r"^### ", md_section(
                md, "Runtime behaviour (monotonic clock, real threads)"), flags=re.M)
                if p.startswith("lateness")][0]
            table = md_table_rows(late)
            got = [dict(zip(table[0], r)) for r in table[1:]]
            checked = 0
            for name, vals in raw.items():
                _, backend, wl, config = name.split("/")[:4]
                row = [r for r in got if unmd(r["series"]).split(" ")[0] == backend
                       and unmd(r["workload"]) == wl and unmd(r["configuration"]) == config]
                if not row:
                    continue
                row = row[0]
                # every sample, expanded from its row's weight: nearest rank
                flat = sorted(v for v, w in vals for _ in range(w))
                n = len(flat)
                self.assertEqual(row["samples"], "{:,.0f}".format(n))
                for col, q in (("p50 (us)", 0.5), ("p99.9 (us)", 0.999)):
                    want = flat[max(1, math.ceil(q * n)) - 1] / 1000.0
                    if n >= 10 / (1 - q) - 1e-9:
                        self.assertEqual(row[col], "%.1f" % want if want < 1000
                                         else "{:,.0f}".format(want), (name, col))
                checked += 1
            self.assertGreater(checked, 3)
            self.assertIn("pooled", late)


class GrowthRule(unittest.TestCase):
    """tb_claims' rule for one operation on one part (work or time)."""

    def test_rule(self):
        v = C._part_verdict
        grows, flat = ("grows", 4.0, 6.0), ("flat", 0.9, 1.1)
        self.assertEqual(v([grows, grows], [flat, flat]), C.HOLDS)
        self.assertEqual(v([grows], [("grows", 2.0, 2.2)]), C.PARTLY)
        self.assertEqual(v([grows], [("grows", 2.0, 4.5)]), C.FAILS)     # overlaps a heap
        # heaps that do not grow never make it "in part", however wheels fare
        self.assertEqual(v([("flat", 0.83, 1.23)], [("flat", 0.6, 0.75)]), C.FAILS)
        self.assertEqual(v([("undecided", 1.2, 7.3)], [flat]), C.UNDECIDED)
        self.assertEqual(v([("too few", 5, 5)], [flat]), C.UNDECIDED)
        self.assertEqual(C._combine([C.HOLDS, C.PARTLY]), C.PARTLY)
        self.assertEqual(C._combine([C.FAILS, C.FAILS]), C.FAILS)
        # an operation that fails outright decides against an undecided one
        # (which could at most make it "in part"), not the other way round
        self.assertEqual(C._combine([C.FAILS, C.UNDECIDED]), C.FAILS)
        self.assertEqual(C._combine([C.UNDECIDED, C.FAILS]), C.FAILS)
        self.assertEqual(C._combine([C.HOLDS, C.UNDECIDED]), C.UNDECIDED)
        self.assertEqual(C._combine([C.PARTLY, C.UNDECIDED]), C.UNDECIDED)
        self.assertEqual(C._combine([C.HOLDS, C.FAILS]), C.PARTLY)
        self.assertEqual(C._combine([C.PARTLY, C.FAILS, C.UNDECIDED]), C.UNDECIDED)


@unittest.skipUnless(os.environ.get("TB_PROBE"), "TB_PROBE (timerbench-probe's path) not set")
class ProbeOutput(unittest.TestCase):
    """report/probe.c's output, run by the `report-probe` Meson test."""

    def test_probe_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "probe.json")
            p = subprocess.run([os.environ["TB_PROBE"], "--out", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, encoding="utf-8") as f:
                data = json.load(f)
            entries = data["benchmarks"]
            self.assertGreaterEqual(len(entries), 1)
            failure = [e for e in entries if e["name"].startswith("failure/")]
            wall = [e for e in entries if e["name"].startswith("wallstep/")]
            self.assertEqual(len(failure) + len(wall), len(entries))
            self.assertGreaterEqual(len(failure), 1)
            # two steps (back, forward) for every backend of the failure probe
            self.assertEqual(len(wall), 2 * len(failure))
            for e in wall:
                self.assertNotIn("error_occurred", e)
                backend, case = e["name"].split("/")[1:3]
                self.assertEqual(e["step_ns"], {"back": -50e6, "forward": 15e6}[case], e)
                self.assertEqual(e["ran"], e["tasks"], e)
                self.assertEqual(e["tasks"], 3, e)
                shifts = [e["shift_ns_%d" % k] for k in (1, 2, 3)]
                delays = [e["delay_ns_%d" % k] for k in (1, 2, 3)]
                if not e["wall_clock"]:
                    # deadlines on the monotonic clock: the step moves nothing
                    self.assertEqual(shifts, [0, 0, 0], e)
                elif case == "back":
                    # java.util.Timer: every pending task waits out the step
                    self.assertEqual(shifts, [50e6] * 3, e)
                else:
                    # the awaited head on time, the tasks behind it early
                    self.assertEqual(shifts, [0, -10e6, -15e6], e)
                if backend in ("heapqueue", "timerthread"):
                    # exact runners on the virtual clock: delay is the shift
                    self.assertEqual(delays, shifts, e)
            self.assertEqual({e["name"].split("/")[1] for e in wall if e["wall_clock"]},
                             {"timerthread"})
            for e in failure:
                self.assertNotIn("error_occurred", e)
                self.assertEqual(e["ran_before"], 2, e)
                self.assertEqual(e["after"], 7, e)
                self.assertIn(e["ran_after"], (0, 7), e)
                self.assertEqual(e["failed"], 1, e)
                # a timer that died refuses new work; one that did not, takes it
                self.assertEqual(e["accepted_after"], 1 if e["ran_after"] else 0, e)
            rc, _, err = run(tmp, "--no-figures")
            self.assertEqual(rc, 0, err)


class MissingAndHostile(unittest.TestCase):
    """Results directories with parts missing, broken or malicious."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-report-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _only(self, keep):
        """A results dir holding only the fixture's benchmarks whose op is
        in `keep` (and no CSV)."""
        d = os.path.join(self.tmp, "partial")
        os.makedirs(d)
        data = fixture_json()
        data["benchmarks"] = [b for b in data["benchmarks"] if b["run_name"].split("/")[0] in keep]
        with open(os.path.join(d, "results.json"), "w", encoding="utf-8") as f:
            json.dump(data, f)
        return d

    def _md(self, d):
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            return f.read()

    def test_missing_runtime_harness_is_reported(self):
        d = self._only({"insert", "cancel", "expire", "fill", "timeouts", "periodic"})
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        md = self._md(d)
        rt = md_section(md, "Runtime behaviour (monotonic clock, real threads)")
        self.assertIn("No runtime results", rt)
        self.assertIn("this section has no data", rt)
        lim = md_section(md, "Limitations and noise")
        self.assertIn("Missing data:", lim)
        self.assertIn("Runtime behaviour", lim)
        with open(os.path.join(d, "verdicts.json"), encoding="utf-8") as f:
            slow = [c for c in json.load(f)["claims"] if c["id"] == "slow_task"][0]
        self.assertEqual(slow["kind"], C.UNTESTED)
        self.assertEqual(slow["cases"], [])
        self.assertEqual(slow["facts"], {"why": "no_results"})

    def test_missing_micro_harness_is_reported(self):
        d = self._only({"lateness", "idle", "workers", "interference"})
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        md = self._md(d)
        self.assertIn("No micro-benchmark results", md)
        self.assertIn("No memory results", md)
        self.assertIn("No `jitter` results in this results directory", md)

    def test_truncated_json_names_the_file_and_keeps_the_rest(self):
        # (a results file by its own name: another is not read, issue 42)
        d = copy_fixture(self.tmp)
        with open(os.path.join(d, "micro.json"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(d, "shim.json"), "w", encoding="utf-8") as f:
            f.write(text[:len(text) // 3])
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertIn("shim.json", err)
        self.assertIn("truncated", err)
        self.assertNotIn("Traceback", err)
        lim = md_section(self._md(d), "Limitations and noise")
        self.assertIn("shim.json", lim)
        self.assertIn("truncated", lim)

    def test_nothing_usable_is_a_clear_error(self):
        d = os.path.join(self.tmp, "bad")
        os.makedirs(d)
        with open(os.path.join(d, "results.json"), "w") as f:
            f.write('{"context": {}, "benchmarks": [ {"name": "insert/x/y/z/N:1", ')
        with open(os.path.join(d, "foreign.json"), "w") as f:
            json.dump({"hello": "world"}, f)
        with open(os.path.join(d, "binary.json"), "wb") as f:
            f.write(b"\xff\xfe\x00garbage")
        rc, _, err = run(d)
        self.assertEqual(rc, 2)
        self.assertIn("no usable benchmark results", err)
        self.assertIn("results.json", err)
        self.assertIn("foreign.json", err)
        self.assertIn("not Google Benchmark output", err)
        self.assertIn("binary.json", err)
        self.assertNotIn("Traceback", err)
        self.assertFalse(os.path.exists(os.path.join(d, "report.md")))

    def test_no_such_directory(self):
        rc, _, err = run(os.path.join(self.tmp, "nowhere"))
        self.assertEqual(rc, 2)
        self.assertIn("nowhere", err)
        self.assertIn("no such results directory", err)

    def test_wrong_types_do_not_crash(self):
        d = os.path.join(self.tmp, "types")
        os.makedirs(d)
        good = {"name": "insert/heapqueue/uniform/series=h2h/N:100", "run_name":
                "insert/heapqueue/uniform/series=h2h/N:100", "run_type": "iteration",
                "real_time": 10.0, "cpu_time": 10.0, "time_unit": "ns"}
        weird = [None, 3, "x", {"name": 7}, {"run_name": "insert"},
                 dict(good, real_time="fast"), dict(good, time_unit="fortnights"),
                 dict(good, real_time=float("1e400")), {"run_name": "////"},
                 dict(good, run_name="insert/heapqueue/uniform/series=h2h/N:abc"),
                 dict(good, run_type="aggregate", aggregate_name="median", real_time=None)]
        with open(os.path.join(d, "r.json"), "w") as f:
            json.dump({"context": "not a dict", "benchmarks": [good] + weird}, f)
        with open(os.path.join(d, "machine.json"), "w") as f:
            json.dump(["not", "an", "object"], f)
        with open(os.path.join(d, "samples.csv"), "w") as f:
            f.write("benchmark,metric,rep,seq,value_ns,weight\n\"lateness/x/light/s=1/N:0\",lateness,0,0,12\n")
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("entries were not in the expected form", err)
        self.assertIn("machine.json", err)

    def test_hostile_names_are_escaped(self):
        evil = "<script>alert(1)</script>"
        pipe = "a|b*c_d`e"
        quote = "x');system('touch PWNED');('"
        d = os.path.join(self.tmp, "evil")
        os.makedirs(d)
        benches = []
        for backend in (evil, pipe, quote):
            for n, t in ((100, 10.0), (1000, 12.0), (10000, 15.0)):
                name = "insert/%s/uniform/series=h2h,note=<b>hi</b>/N:%d" % (backend, n)
                for rep in range(2):
                    benches.append({"name": name, "run_name": name, "run_type": "iteration",
                                    "repetition_index": rep, "real_time": t + rep,
                                    "cpu_time": t, "time_unit": "ns"})
        with open(os.path.join(d, "r.json"), "w") as f:
            json.dump({"context": {"host_name": evil, "kernel": "<img src=x onerror=alert(1)>"},
                       "benchmarks": benches}, f)
        rc, _, err = run(d)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(os.path.join(d, "PWNED")))
        self.assertFalse(os.path.exists("PWNED"))
        with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertNotIn("<script", page.lower())
        self.assertNotIn("<img src=x", page)
        self.assertNotIn("<b>hi</b>", page)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", page)
        md = self._md(d)
        self.assertNotIn("<script>", md)
        self.assertNotIn("<b>hi</b>", md)
        for line in md.splitlines():
            if line.startswith("| ") and "insert" not in line and evil[:3] in line:
                self.fail("unescaped: " + line)
        # a name with a pipe stays inside its table cell
        micro = md_section(md, "Micro-benchmarks: cost per operation against N")
        rows = md_table_rows(micro)
        widths = {len(r) for r in rows}
        self.assertEqual(len(widths), 1, widths)


class MutatedResults(unittest.TestCase):
    """Seeded random damage to real results: the generator writes a report
    or says which file is unusable (exit 0 or 2), never fails inside."""

    def test_mutations(self):
        import random
        rng = random.Random(20261121)
        files = sorted(f for f in os.listdir(FIXTURE) if f.endswith(".json"))
        originals = {}
        for name in files:
            with open(os.path.join(FIXTURE, name), encoding="utf-8") as f:
                originals[name] = json.load(f)
        values = [None, True, -1, 0, 1e308, "x", [], {}, "N:", "/", "<b>", float("nan")]
        for i in range(int(os.environ.get("TB_MUTATIONS", "24"))):
            with tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(tmp, "m%d" % i)
                shutil.copytree(FIXTURE, d, ignore=shutil.ignore_patterns("README.md"))
                victim = files[i % len(files)]
                doc = copy.deepcopy(originals[victim])
                if victim == "machine.json":
                    for key in rng.sample(sorted(doc), min(3, len(doc))):
                        doc[key] = rng.choice(values)
                else:
                    entries = doc["benchmarks"]
                    doc["benchmarks"] = rng.sample(entries, min(len(entries), 150))
                    for b in doc["benchmarks"]:
                        for _ in range(rng.randint(0, 3)):
                            key = rng.choice(sorted(b))
                            b[key] = rng.choice(values)
                text = json.dumps(doc)
                if i % 3 == 0:
                    text = text[:rng.randint(1, len(text) - 1)]
                elif i % 3 == 1:
                    pos = rng.randint(0, len(text) - 1)
                    text = text[:pos] + rng.choice("{}[],:\"\\0") + text[pos + 1:]
                with open(os.path.join(d, victim), "w", encoding="utf-8") as f:
                    f.write(text)
                with open(os.path.join(FIXTURE, "samples.csv"), encoding="utf-8") as f:
                    csv_text = f.read()
                with open(os.path.join(d, "samples.csv"), "w", encoding="utf-8") as f:
                    f.write(csv_text[:rng.randint(0, len(csv_text))])
                rc, _, err = run(d, "--no-figures")
                self.assertIn(rc, (0, 2), "%s: %s" % (victim, err))
                self.assertNotIn("Traceback", err)
                self.assertNotIn("internal error", err)


class MachineState(unittest.TestCase):
    """The memory latency each repetition started with (bench/shim.cc) is
    summarised in the Method: its median, 90th percentile and maximum, the
    waits and the redone batches, all from the run's counters."""

    def test_method_reports_the_latency(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            path = os.path.join(d, "micro.json")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            marked = False
            for b in data["benchmarks"]:
                if b.get("run_type") == "iteration":
                    b["mem_latency_ns"] = 150.0
                    b["slow_spell_waits"] = b["slow_spell_redone"] = 0
                    if not marked and b["name"].startswith("insert/"):
                        b.update(mem_latency_ns=900.0, slow_spell_waits=2,
                                 slow_spell_redone=1)
                        marked = True
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
            rc, _, err = run(d, "--no-figures")
            self.assertEqual(rc, 0, err)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                s = unmd(md_section(f.read(), "Method"))
            self.assertIn("The machine during the run.", s)
            m = re.search(r"Over (\d+) repetitions the latency was 150 ns median, "
                          r"150 ns at the 90th percentile, 900 ns at most", s)
            self.assertTrue(m, s)
            self.assertGreater(int(m.group(1)), 100)
            self.assertIn(": 2 waits;", s)
            self.assertIn("was run again: 1.", s)

    def test_absent_without_the_counter(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            rc, _, err = run(d, "--no-figures")
            self.assertEqual(rc, 0, err)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                self.assertNotIn("The machine during the run", f.read())


class Colours(unittest.TestCase):
    def test_every_backend_gets_a_distinct_colour(self):
        names = ["b%d" % i for i in range(24)]
        cols = tb_figures.assign_colours(names)
        self.assertEqual(len(set(cols.values())), len(names))
        for c in cols.values():
            self.assertRegex(c, r"^#[0-9A-F]{6}$")

    def test_colour_depends_on_registry_position_only(self):
        a = tb_figures.assign_colours(["heapqueue", "timerthread", "timerwheel", "hierwheel", "mine"])
        b = tb_figures.assign_colours(["heapqueue", "timerthread", "timerwheel", "hierwheel"])
        for k in b:
            self.assertEqual(a[k], b[k])

    def test_gnuplot_strings_cannot_escape(self):
        for text in ("a'b", "`rm -rf /`", "@macro", "x\ny", "$(id)", "\\'"):
            lit = tb_figures.gp_string(text)
            self.assertTrue(lit.startswith("'") and lit.endswith("'"))
            inner = lit[1:-1]
            for ch in "'`@$\\\n":
                self.assertNotIn(ch, inner)

    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_same_colour_in_every_figure(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            rc, _, err = run(d)
            self.assertEqual(rc, 0, err)
            figs = os.path.join(d, "figures")
            want = tb_figures.colour_for(0)  # heapqueue: first in the registry
            rgb = "rgb(%3d, %3d, %3d)" % tuple(int(want[i:i + 2], 16) for i in (1, 3, 5))
            svgs = [f for f in os.listdir(figs) if f.endswith(".svg")]
            self.assertGreater(len(svgs), 5)
            for f in svgs:
                with open(os.path.join(figs, f), encoding="utf-8") as fh:
                    self.assertIn(rgb, fh.read(), f)


    @unittest.skipUnless(HAVE_GNUPLOT, "gnuplot is not installed")
    def test_a_panel_of_many_series_is_drawn(self):
        """A panel's colour list is never cut: the reschedule op's 17
        series (backend x strategy) made 136 characters of colours, past
        the 120 a gnuplot string was cut to, and gnuplot refused the
        figure.  Here the fixture's insert results, copied under an op no
        section knows with nine strategies each, make 18 series or more."""
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            path = os.path.join(d, "micro.json")
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            extra = []
            for b in doc["benchmarks"]:
                parts = b["name"].split("/")
                if parts[0] != "insert" or parts[2] != "uniform" or parts[3] != "series=h2h":
                    continue
                for k in "abcdefghi":
                    c = copy.deepcopy(b)
                    for key in ("name", "run_name"):
                        q = c[key].split("/")
                        q[0], q[2], q[3] = "manyseries", "idle", q[3] + ",strategy=" + k
                        c[key] = "/".join(q)
                    extra.append(c)
            labels = {tuple(b["name"].split("/")[1:4]) for b in extra}
            self.assertGreaterEqual(len(labels), 16)
            doc["benchmarks"] += extra
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            rc, _, err = run(d)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("other-manyseries not drawn", err)
            figs = os.listdir(os.path.join(d, "figures"))
            self.assertTrue(any(f.endswith("-other-manyseries.svg") for f in figs), figs)


class SafeWrites(unittest.TestCase):
    """The report is written whole or not at all (issue 31, item 6): a full
    disk or an unwritable file leaves the previous report.md and
    report.html as they were, with a clear error and no traceback."""

    @classmethod
    def setUpClass(cls):
        cls.generate = generate

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-report-")
        self.dir = copy_fixture(self.tmp)
        self.old = {}
        # verdicts.json is the report's: never left ahead of it
        for name in ("report.md", "report.html", "verdicts.json"):
            with open(os.path.join(self.dir, name), "w", encoding="utf-8") as f:
                f.write("the previous %s, whole\n" % name)
            self.old[name] = "the previous %s, whole\n" % name

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def main(self, *args):
        """generate.main in this process; (exit status, stderr)."""
        import contextlib
        import io
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = self.generate.main(["generate.py", self.dir, "--no-figures"] + list(args))
        return rc, err.getvalue()

    def assert_old_pair(self):
        for name, text in self.old.items():
            with open(os.path.join(self.dir, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), text, name)
        left = [f for f in os.listdir(self.dir) if ".tmp-" in f or ".old-" in f
                or f.startswith(".report-")]
        self.assertEqual(left, [], "temporary files left behind")

    def full_disk_at(self, which):
        """generate.write_file as on a disk that fills up in the middle of
        the `which` document: half of it written, then ENOSPC."""
        import errno
        real = self.generate.write_file

        def write_file(path, text):
            if os.path.basename(path).startswith(which):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text[:len(text) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            real(path, text)
        return unittest.mock.patch.object(self.generate, "write_file", write_file)

    def test_full_disk_while_writing_the_markdown(self):
        with self.full_disk_at("report.md"):
            rc, err = self.main()
        self.assertEqual(rc, 1, err)
        self.assertIn("No space left on device", err)
        self.assertIn("report.md and report.html there are as they were", err)
        self.assert_old_pair()

    def test_full_disk_while_writing_the_verdicts(self):
        with self.full_disk_at("verdicts.json"):
            rc, err = self.main()
        self.assertEqual(rc, 1, err)
        self.assert_old_pair()

    def test_full_disk_while_writing_the_html(self):
        with self.full_disk_at("report.html"):
            rc, err = self.main()
        self.assertEqual(rc, 1, err)
        self.assert_old_pair()

    def test_markdown_that_cannot_be_replaced_puts_the_html_back(self):
        import errno
        real = os.replace

        def replace(src, dst):
            if os.path.basename(dst) == "report.md":
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), dst)
            real(src, dst)
        with unittest.mock.patch.object(self.generate.os, "replace", replace):
            rc, err = self.main()
        self.assertEqual(rc, 1, err)
        self.assert_old_pair()

    def test_unwritable_html_leaves_the_markdown_alone(self):
        # the command itself, as a user runs it: no traceback
        html = os.path.join(self.dir, "report.html")
        os.remove(html)
        os.mkdir(html)
        del self.old["report.html"]
        rc, out, err = run(self.dir, "--no-figures")
        self.assertEqual(rc, 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("report.html", err)
        self.assertTrue(os.path.isdir(html))
        self.assert_old_pair()

    def test_a_good_write_replaces_both(self):
        rc, err = self.main()
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.dir, "report.md"), encoding="utf-8") as f:
            self.assertIn("## Summary", f.read())
        with open(os.path.join(self.dir, "report.html"), encoding="utf-8") as f:
            self.assertIn("<h2", f.read())
        with open(os.path.join(self.dir, "verdicts.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["format"], 1)
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp-" in f
                          or f.startswith(".report-")], [])


class WhatIsAResultsDirectory(unittest.TestCase):
    """Issue 31, items 7, 12 and 15: what is not a results directory is
    refused before anything below it is read or anything written; damaged
    values and formats are named, never a traceback."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tb-report-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_directory_above_results_is_refused_unread(self):
        # `report --from /` walked the whole filesystem and wrote into /:
        # here a directory holding a results directory one level down
        top = os.path.join(self.tmp, "top")
        os.makedirs(top)
        copy_fixture(top)
        with open(os.path.join(top, "notes.txt"), "w") as f:
            f.write("not results\n")
        rc, _, err = run(top)
        self.assertEqual(rc, 2, err)
        self.assertIn("is not a results directory", err)
        self.assertIn("machine.json", err)
        self.assertEqual(sorted(os.listdir(top)), ["notes.txt", "results"])

    def test_known_files_or_benchmark_json_make_one(self):
        d = os.path.join(self.tmp, "d")
        os.makedirs(d)
        self.assertIn("is not a results directory", tb_results.results_dir_problem(d))
        with open(os.path.join(d, "package.json"), "w") as f:
            json.dump({"name": "not benchmarks"}, f)
        self.assertIsNotNone(tb_results.results_dir_problem(d))
        with open(os.path.join(d, "mine.json"), "w") as f:
            json.dump({"context": {}, "benchmarks": []}, f)
        self.assertIsNone(tb_results.results_dir_problem(d))
        os.remove(os.path.join(d, "mine.json"))
        open(os.path.join(d, "machine.json"), "w").close()
        self.assertIsNone(tb_results.results_dir_problem(d))

    def test_a_5000_digit_number_is_a_damaged_value(self):
        d = copy_fixture(self.tmp)
        path = os.path.join(d, "micro.json")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # the first real_time of the file, 5,000 digits long
        text = re.sub(r'"real_time":\s*[0-9.e+-]+', '"real_time": ' + "7" * 5000, text, count=1)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("internal error", err)
        self.assertNotIn("Traceback", err)
        self.assertIn("micro.json: 1 entries were not in the expected form", err)

    def machine_with(self, version):
        d = copy_fixture(self.tmp)
        path = os.path.join(d, "machine.json")
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        m["format_version"] = version
        with open(path, "w", encoding="utf-8") as f:
            json.dump(m, f)
        return d

    @staticmethod
    def with_run_state(d, status, instances, **run):
        """Rewrites d/machine.json as a run in `status` wrote it (format 2,
        `instances`, the run's other fields `run`)."""
        path = os.path.join(d, "machine.json")
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        m["format_version"] = 2
        m.setdefault("run", {})["status"] = status
        m["run"].update(run)
        m["instances"] = instances
        with open(path, "w", encoding="utf-8") as f:
            json.dump(m, f)

    def test_format_version_of_the_wrong_type_is_named(self):
        d = self.machine_with("2")
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 2, err)
        self.assertIn('format_version is "2" (a string), not an integer', err)
        self.assertNotIn("reads formats up to", err)
        self.assertFalse(os.path.exists(os.path.join(d, "report.md")))

    def test_a_running_run_whose_journal_is_gone_keeps_its_files(self):
        # machine.json as a run writes it when it starts: every instance
        # missing; its journal gone, the harness's JSON whole
        d = copy_fixture(self.tmp)
        data = fixture_json()
        names = sorted({b["run_name"] for b in data["benchmarks"]
                        if b.get("run_type") == "iteration"})
        self.with_run_state(d, "running", {"expected": {"micro": names},
                                           "missing": {"micro": names}})
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            md = f.read()
        lim = md_section(md, "Limitations and noise")
        self.assertNotIn("insert/heapqueue/uniform", lim)
        # the summary says the record is unfinished, not that results are
        # partial: every instance is there
        self.assertIn("Unfinished record:", md)
        self.assertNotIn("Partial results:", md)
        self.assertEqual(tb_results.load(d).missing, [])

    def test_problems_in_the_report_are_capped(self):
        d = copy_fixture(self.tmp)
        for i in range(35):
            with open(os.path.join(d, "bad%02d.json" % i), "w") as f:
                f.write("{not json")
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            lim = md_section(f.read(), "Limitations and noise")
        self.assertEqual(len(re.findall(r"`bad\d\d\.json`", lim)), 20, lim)
        self.assertIn("... and 15 more files with problems, not listed.", lim)

    def test_resume_hint_in_the_report_is_shell_quoted(self):
        # an interrupted run in a directory whose name a shell would act on
        d = os.path.join(self.tmp, "it's `touch PWNED` a_b")
        shutil.copytree(FIXTURE, d, ignore=shutil.ignore_patterns("README.md"))
        data = fixture_json()
        names = sorted({b["run_name"] for b in data["benchmarks"]
                        if b.get("run_type") == "iteration"})
        self.with_run_state(
            d, "interrupted",
            {"expected": {"micro": names + ["fill/x/y/series=a/N:1"]},
             "missing": {"micro": ["fill/x/y/series=a/N:1"]}},
            interrupted={"signal": "SIGINT", "where": "in micro"})
        rc, _, err = run(d, "--no-figures")
        self.assertEqual(rc, 0, err)
        with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("Partial results:", md)
        # a code span cannot hold this name's backquotes: Markdown shows it
        # as text with each backquote escaped
        hint = re.search(r"`?(\./timerbench report --resume [^\n]*?)`? measures", md)
        self.assertIsNotNone(hint, md[:3000])
        # and Markdown escapes punctuation in text (a temp name's `_` too)
        text = re.sub(r"\\([\\`*_{}\[\]()#+.!|-])", r"\1", hint.group(1))
        argv = shlex.split(text)
        self.assertEqual(argv[-1], d)

    def test_problems_on_the_terminal_are_capped(self):
        d = os.path.join(self.tmp, "many")
        os.makedirs(d)
        open(os.path.join(d, "micro.json"), "w").close()
        for i in range(2000):
            open(os.path.join(d, "e%05d.json" % i), "w").close()
        rc, _, err = run(d)
        self.assertEqual(rc, 2, err)
        lines = err.splitlines()
        self.assertLessEqual(len(lines), 12, err[:2000])
        self.assertIn("... and 1991 more", err)


def _spread(median, lo, hi):
    return {"median": median, "min": lo, "max": hi, "reps": [lo, median, hi]}


def precision_replay_json():
    """A replay.json with the fields of issue 27 (budgets, the tick sweep,
    the verdict): a hand-made trace where the budgets rule the wheels out.
    The numbers are this test's input; the report must print them."""
    def backend(name, ticked, tick, cpu, late_max, late_p99, beyond, fires):
        return {"name": name, "backend": name.split("+")[0], "ticked": ticked, "tick_ns": tick,
                "wakeups": 2000000000 // tick if tick else fires - 7, "run_instants": fires - 7,
                "ns_per_event": _spread(cpu * 1.3, cpu * 1.2, cpu * 1.4),
                "cpu_ms_per_million_events": _spread(cpu, cpu * 0.95, cpu * 1.05),
                "ns_per_op": {}, "peak_pending": 28, "bytes_at_peak": 4096, "fires": fires,
                "lateness": {"fires": fires, "ns": {"p50": late_p99 // 2, "p90": late_p99,
                                                    "p99": late_p99, "p999": late_max,
                                                    "max": late_max},
                             "ticks": {}, "beyond_budget": beyond, "budget_fires": fires,
                             "no_budget_fires": 0,
                             "over_budget_ns": {"p50": 7000, "p99": 9000, "max": 11000}
                             if beyond else None,
                             "relative": {"p50": 0.1, "p99": 0.9, "max": 1.5}},
                "checks": {"passed": True}}
    def point(b, tick, cpu, late_max, late_p99, beyond):
        return {"name": "%s tick=%s" % (b, tick[0]), "backend": b, "tick_ns": tick[1],
                "wakeups": 2000000000 // tick[1], "run_instants": 390,
                "cpu_ms_per_million_events": _spread(cpu, cpu * 0.95, cpu * 1.05),
                "ns_per_event": _spread(cpu * 1.3, cpu * 1.2, cpu * 1.4),
                "lateness": {"max_ns": late_max, "p99_ns": late_p99, "beyond_budget": beyond,
                             "budget_fires": 400}, "checks": {"passed": True}}
    backends = [backend("heapqueue", False, 0, 120.0, 0, 0, 0, 400),
                backend("hierwheel", True, 1000000, 61.0, 1000000, 990000, 317, 400),
                backend("kernelwheel", True, 1000000, 55.0, 62600000, 40000000, 390, 400)]
    sweep = [point("hierwheel", t, cpu, late, late, beyond) for t, cpu, late, beyond in (
        (("1us", 1000), 97.0, 1000, 0), (("10us", 10000), 83.0, 10000, 0),
        (("100us", 100000), 70.0, 100000, 133), (("1ms", 1000000), 61.0, 1000000, 317))]
    sweep.append({"name": "hierwheel tick=100ms", "backend": "hierwheel",
                  "tick_ns": 100000000, "skipped": "more than 10^8 ticks (test)"})
    trace = {"name": "budgeted.trace", "file": "traces/budgeted.trace", "events": 1000,
             "cancel_ratio": 0.25, "timers": 500,
             "ops": {"schedule": 800, "cancel": 200}, "cancel_unknown": 0,
             "reschedule_unknown": 0, "delay_ns": {"min": 400000, "p50": 5000000,
                                                   "max": 90000000},
             "delay_cdf": [[400000, 0.1], [5000000, 0.5], [90000000, 1.0]],
             "comments": [], "start_ns": 0, "end_ns": 2000000000,
             "format_version": 2,
             "budget": {"source": "trace", "timers_with_budget": 480, "timers": 500,
                        "slack_ns": {"min": 0, "p50": 50000, "p90": 50000, "p99": 500000,
                                     "max": 1000000}},
             "backends": backends, "sweep": sweep,
             "verdict": {"recommended": ["hierwheel tick=10us"], "kind": "best",
                         "rule": "written by the test", "within_budget": [], "missed": {}}}
    return {"traces": [trace], "reps": 3, "tick_ns": 1000000, "lateness_override": None}


def precision_micro_json():
    """The fixture's timeouts h2h results at their largest N, renamed as the
    series=precision sweep of bench/micro.c with its lateness counters."""
    with open(os.path.join(FIXTURE, "micro.json"), encoding="utf-8") as f:
        src = json.load(f)
    base = [b for b in src["benchmarks"] if b["name"].startswith("timeouts/")
            and "/series=h2h" in b["name"] and re.search(r"/N:\d+/", b["name"])]
    top = max(int(re.search(r"/N:(\d+)", b["name"]).group(1)) for b in base)
    out = []
    lat = {"1us": 0, "10us": 15000, "100us": 150000, "1ms": 1050000}
    for b in base:
        if "/N:%d/" % top not in b["name"]:
            continue
        ticks = [None] if "tick=" not in b["name"] else list(lat)
        for t in ticks:
            e = copy.deepcopy(b)
            cfg = "series=precision" + (",tick=%s" % t if t else "")
            e["name"] = re.sub(r"/series=[^/]*/", "/%s/" % cfg, e["name"])
            e["run_name"] = re.sub(r"/series=[^/]*/", "/%s/" % cfg, e.get("run_name", e["name"]))
            e["lateness_max_ns"] = float(lat[t] if t else 0)
            e["lateness_p99_ns"] = float(lat[t] if t else 0)
            e["lateness_max_share"] = (lat[t] if t else 0) / 30e9
            e["step_ns"] = 15e9 / top
            e["tick_ns"] = float({"1us": 1e3, "10us": 1e4, "100us": 1e5, "1ms": 1e6}[t]) if t else 0.0
            out.append(e)
    return {"context": src["context"], "benchmarks": out}


class Precision(unittest.TestCase):
    """Issue 27 on the report's side: budgets, fires beyond them, the
    verdict of tb_precision, the cost-precision front and the precision
    rows of "Which one to use"; an older results directory still renders."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.dir = copy_fixture(cls.tmp)
        cls.replay = precision_replay_json()
        cls.micro = precision_micro_json()
        with open(os.path.join(cls.dir, "replay.json"), "w") as f:
            json.dump(cls.replay, f)
        # into micro.json, where bench/micro.c writes the sweep (a file of
        # another name is not read, issue 42)
        with open(os.path.join(cls.dir, "micro.json"), encoding="utf-8") as f:
            micro = json.load(f)
        micro["benchmarks"] += cls.micro["benchmarks"]
        with open(os.path.join(cls.dir, "micro.json"), "w") as f:
            json.dump(micro, f)
        cls.rc, cls.out, cls.err = run(cls.dir)
        with open(os.path.join(cls.dir, "report.md"), encoding="utf-8") as f:
            cls.md = html.unescape(f.read())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_renders(self):
        self.assertEqual(self.rc, 0, self.err)

    def test_budget_and_beyond_counts_come_from_the_json(self):
        t = self.replay["traces"][0]
        b = t["budget"]
        self.assertIn("%s of %s timers have one" % (A.fmt_n(b["timers_with_budget"]),
                                                     A.fmt_n(b["timers"])), self.md)
        self.assertIn("slack min %s, p50 %s" % (A.fmt_ns(b["slack_ns"]["min"]),
                                                A.fmt_ns(b["slack_ns"]["p50"])), self.md)
        for e in t["backends"] + [p for p in t["sweep"] if "lateness" in p]:
            late = e["lateness"]
            cell = "%s of %s (%s)" % (A.fmt_n(late["beyond_budget"]), A.fmt_n(late["budget_fires"]),
                                      A.fmt_pct(late["beyond_budget"] / late["budget_fires"]))
            self.assertIn(cell, self.md, e["name"])
        self.assertIn("skipped: " + t["sweep"][-1]["skipped"], self.md)

    def test_verdict_text_is_tb_precisions(self):
        v = RD.budget_verdict(copy.deepcopy(self.replay["traces"][0]))
        line = next(l for l in self.md.splitlines() if "Which one for this trace:" in l)
        self.assertIn(", ".join(v["recommended"]), line)
        self.assertIn(v["rule"], line)

    def test_summary_quotes_the_verdict_with_its_precision(self):
        summary = self.md.split("## Summary", 1)[1].split("\n## ", 1)[0]
        line = next(l for l in summary.splitlines() if "Replayed traces" in l)
        self.assertIn("`budgeted`", line)
        self.assertIn("every timer within its budget", line)

    def test_front_table_has_cost_lateness_and_wakeups(self):
        # issue 38: the front's third axis, each candidate's count as the
        # JSON gives it, beside its cost and lateness
        t = self.replay["traces"][0]
        self.assertIn("The front's three axes", self.md)
        part = self.md.split("The front's three axes", 1)[1].split("Cheapest at each", 1)[0]
        rows = {r[0].strip("`"): r for r in md_table_rows(part)[1:]}
        self.assertEqual(len(rows), len(t["backends"]) + len(t["sweep"]) - 1)
        for e in t["backends"] + [p for p in t["sweep"] if "lateness" in p]:
            row = rows[e["name"]]
            self.assertEqual(row[-1], A.fmt_n(e["wakeups"]), e["name"])
            late = e["lateness"].get("max_ns", e["lateness"].get("ns", {}).get("max"))
            self.assertEqual(row[2], A.fmt_ns(late), e["name"])

    def test_front_data_holds_the_sweep_points(self):
        figs = os.path.join(self.dir, "figures")
        name = next(f for f in os.listdir(figs) if "replay-front-budgeted" in f
                    and f.endswith("_1.tsv"))
        with open(os.path.join(figs, name), encoding="utf-8") as f:
            text = f.read()
        for p in self.replay["traces"][0]["sweep"]:
            if "lateness" in p:
                row = "%g\t%g" % (p["cpu_ms_per_million_events"]["median"],
                                   p["lateness"]["max_ns"])
                self.assertIn(row, text.replace(".0\t", "\t"), p["name"])
        self.assertNotIn("tick=100 ms", text)  # the skipped point is not drawn
        name = next(f for f in os.listdir(figs) if "timeouts-front" in f and f.endswith("_1.tsv"))
        with open(os.path.join(figs, name), encoding="utf-8") as f:
            text = f.read()
        for e in self.micro["benchmarks"]:
            if e.get("run_type") != "aggregate" and e.get("lateness_max_ns"):
                self.assertIn("\t%g\t" % e["lateness_max_ns"], text, e["name"])

    def test_which_one_to_use_has_precision_rows(self):
        sec = self.md.split("## Which one to use", 1)[1].split("\n## ", 1)[0]
        head = next(l for l in sec.splitlines() if l.startswith("| workload"))
        self.assertIn("| precision |", head)
        for cls in ("exact", "<= 50 us", "<= 1 ms", "<= 1 tick + 8/63 of the delay"):
            self.assertIn("Replay of trace budgeted, precision %s" % cls, sec)
            self.assertRegex(sec, r"Server timeouts \(N = [^)]*\), precision %s" % re.escape(cls))
        # the replay's exact class: heapqueue (never late), the only exact candidate
        row = next(l for l in sec.splitlines() if "budgeted, precision exact" in l)
        self.assertIn("`heapqueue`", row)
        # <= 50 us: the cheapest sweep point whose max lateness fits (10 us tick)
        row = next(l for l in sec.splitlines() if "budgeted, precision <= 50 us" in l)
        self.assertIn("`hierwheel tick=10us`", row)
        for r in md_table_rows(sec)[1:]:
            self.assertTrue(r[2] and r[2] != "n/a", r)
        # the micro rows say the clock step their lateness was seen at
        row = next(l for l in sec.splitlines() if re.search(r"Server timeouts \(N = [^)]*\), precision exact", l))
        self.assertRegex(row, r"seen on a clock moving in steps of [0-9.]+ [mun]?s")

    def test_an_old_results_directory_still_renders(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            old = precision_replay_json()
            t = old["traces"][0]
            for k in ("format_version", "budget", "sweep", "verdict"):
                del t[k]
            for b in t["backends"]:
                for k in ("beyond_budget", "budget_fires", "no_budget_fires",
                          "over_budget_ns", "relative"):
                    del b["lateness"][k]
                del b["wakeups"], b["run_instants"]
            del old["lateness_override"]
            with open(os.path.join(d, "replay.json"), "w") as f:
                json.dump(old, f)
            rc, out, err = run(d)
            self.assertEqual(rc, 0, err)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                md = html.unescape(f.read())
            self.assertIn("this replay.json is from before budgets", md)
            self.assertIn("n/a (no budget counts)", md)
            self.assertNotIn("precision exact", md)
            self.assertIn("was not measured in this run", md)
            self.assertNotIn("The front's three axes", md)

    def test_what_the_profile_leaves_to_full_is_said(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = copy_fixture(tmp)
            path = os.path.join(d, "machine.json")
            with open(path, encoding="utf-8") as f:
                m = json.load(f)
            prof = m["run"]["profile"]
            flags = {"orig": False, "cover": True, "burst": False, "wide": True,
                     "wide_all": False, "precision_n": 0, "precision_reps": 3}
            m.setdefault("build", {}).setdefault("profiles", {}).setdefault(prof, {})["micro"] = flags
            with open(path, "w", encoding="utf-8") as f:
                json.dump(m, f)
            rc, out, err = run(d)
            self.assertEqual(rc, 0, err)
            with open(os.path.join(d, "report.md"), encoding="utf-8") as f:
                md = unmd(f.read())
            self.assertIn("does not measure series orig, the burst workload, the wide "
                          "workload in fill and cancel:", md)
            self.assertNotIn("series cover, ", md.split("does not measure", 1)[1][:200])
            self.assertIn("its profile (%s) has no precision sweep" % prof, md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
