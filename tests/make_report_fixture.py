#!/usr/bin/env python3
"""make_report_fixture.py — trims a real results directory (from
`bench/run.py --profile quick`) into the small fixture the `report` suite
runs on: fewer N and workloads in the micro-benchmarks, the raw samples
thinned to at most --rows per benchmark and metric (each kept row weighing
for the rows it stands for, so the distributions keep their shape), the
logs dropped.  Numbers are copied, never changed.

    python3 tests/make_report_fixture.py RESULTS_DIR tests/fixtures/report-quick
"""

import csv
import io
import json
import os
import sys

KEEP_N = {"100", "10000", "1000000"}
KEEP_WORKLOADS = {"uniform", "short", "timeouts", "periodic"}


def keep(name):
    parts = name.split("/")
    if parts[0] in ("fill", "insert", "cancel", "expire", "timeouts", "periodic"):
        n = [p.split(":", 1)[1] for p in parts if p.startswith("N:")]
        # entries without N are the family's BigO / RMS fit: kept as fitted
        return parts[2] in KEEP_WORKLOADS and (not n or n[0] in KEEP_N)
    return True


def trim_json(src, dst):
    with open(src, encoding="utf-8") as f:
        data = json.load(f)
    data["benchmarks"] = [b for b in data["benchmarks"]
                          if keep(b.get("run_name", b.get("name", "")))]
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


def trim_csv(src, dst, rows_per_group):
    groups = {}
    with open(src, encoding="utf-8", newline="") as f:
        r = csv.reader(f)
        header = next(r)
        col = {h: i for i, h in enumerate(header)}
        for row in r:
            groups.setdefault((row[col["benchmark"]], row[col["metric"]]), []).append(row)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    w.writerow(header)
    for key in sorted(groups):
        rows = sorted(groups[key], key=lambda x: float(x[col["value_ns"]]))
        total = sum(float(x[col["weight"]]) for x in rows)
        if len(rows) <= rows_per_group:
            kept = rows
        else:
            # evenly spaced in rank, the minimum and the maximum included;
            # each kept row carries the weight of the rows up to the next.
            step = (len(rows) - 1) / (rows_per_group - 1)
            idx = sorted({int(round(i * step)) for i in range(rows_per_group)})
            kept = []
            prev = -1
            for i in idx:
                row = list(rows[i])
                row[col["weight"]] = "%d" % round(sum(float(x[col["weight"]])
                                                      for x in rows[prev + 1:i + 1]))
                kept.append(row)
                prev = i
            assert abs(sum(float(x[col["weight"]]) for x in kept) - total) < len(kept)
        for seq, row in enumerate(kept):
            row = list(row)
            row[col["seq"]] = str(seq)
            w.writerow(row)
    with open(dst, "w", encoding="utf-8") as f:
        f.write(out.getvalue())


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    src, dst = argv[1], argv[2]
    rows = int(argv[3]) if len(argv) > 3 else 120
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if name == "machine.json":
            with open(p, encoding="utf-8") as f, open(os.path.join(dst, name), "w", encoding="utf-8") as g:
                g.write(f.read())
        elif name.endswith(".json"):
            trim_json(p, os.path.join(dst, name))
        elif name.endswith(".csv"):
            trim_csv(p, os.path.join(dst, name), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
