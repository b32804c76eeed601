"""tbkit.countscmd — bench/counts.py, `./timerbench counts`: instructions, simulated D1 and
LL cache misses and the structure's work per operation, for a quick look
while developing a backend.  Same driver and Valgrind set-up as
`bench/run.py --profile counts` (bench/counts.c under callgrind), printed
as a table instead of written to a results directory.

    bench/counts.py [--op insert,cancel] [--n 100000] [--backends a,b]
                    [--build DIR] [--jobs K] [--json FILE]

Defaults: insert and cancel at N = 10^5 for every registered backend and
the interface's floor (`floor`: what a call costs with no structure behind
it, insert and cancel only; not a registered backend),
two at a time (about half a minute on 2 cores).  expire walks the whole
1000 s of virtual time tick by tick and takes longer on a ticking wheel
(timerwheel: about 40 s at 10^5).
"""
import argparse
import json
import os
import sys

from tbkit import bench as run
from tbkit import countsdata as tb_counts
from tbkit import machine as M


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", default="insert,cancel",
                    help="comma-separated: insert, cancel, expire")
    ap.add_argument("--n", default="100000", help="comma-separated N")
    ap.add_argument("--backends", help="comma-separated backend names")
    ap.add_argument("--build", "--build-dir", dest="build_dir",
                    default=os.path.join(M.ROOT, "build", "release"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="also write the results to this file")
    opts = ap.parse_args(argv[1:])
    ops = [o for o in opts.op.split(",") if o]
    bad = [o for o in ops if o not in run.COUNTS_OPS]
    if bad or not ops:
        ap.error("unknown op %s (insert, cancel, expire)" % ",".join(bad))
    try:
        ns = [int(x) for x in opts.n.split(",") if x]
    except ValueError:
        ap.error("--n takes numbers")
    if not ns or any(n < 1 or n > 10 ** 7 for n in ns):
        ap.error("--n must be between 1 and 10^7")
    if not M.valgrind_version():
        sys.stderr.write("counts: valgrind is not installed (Debian package "
                         "valgrind)\n")
        return 1
    if opts.backends is not None and not all(n.strip() for n in opts.backends.split(",")):
        # checked before the build: an empty name is not "every backend"
        ap.error("--backends %r has an empty name; give one or more backend "
                 "names (or leave --backends out for all)" % opts.backends)
    if opts.no_build:
        binary = os.path.join(opts.build_dir, "bench", "timerbench-counts")
    else:
        binary = run.build_counts(opts.build_dir, opts.jobs)
    known = list(run.counts_backends(binary))
    floor = run.counts_floor(binary)
    backends = opts.backends.split(",") if opts.backends is not None else known
    unknown = [b for b in backends if b not in known and b != floor]
    if unknown:
        ap.error("unknown backend %s (registered: %s)" % (",".join(unknown),
                                                          ", ".join(known)))
    # the floor's rows (insert and cancel) unless --backends leaves it out
    with_floor = floor and (opts.backends is None or floor in backends)
    timers = [b for b in backends if b != floor]
    plan = [(floor, op, n, []) for op in ops if op in run.FLOOR_OPS
            for n in ns] if with_floor else []
    plan += run.counts_plan(binary, timers, ops, ns)
    results = run.run_counts(binary, plan, opts.jobs)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"results": results}, f, indent=1)
    print(tb_counts.format_table(results, ([floor] if floor else []) + known))
    if with_floor:
        print("floor: the interface alone (tb_backend_floor: the core's checks, "
              "the pool, the handle's check; no structure, not a timer)")
    print("per operation; simulated caches: %s" % "; ".join(
        "%s %d KiB %d-way" % (k, v[0] // 1024, v[1])
        for k, v in sorted(M.COUNTS_CACHES.items())))
    parts = tb_counts.format_split(results, ([floor] if floor else []) + known)
    if parts:
        print("\nwhere the instructions go, per operation, by the source file callgrind "
              "charged them to:\n%s" % parts)
        print("driver: bench/ (the loop around the call); interface: core/ and include/ "
              "(checks, pool, handle, record; inlined code counted where it comes "
              "from); structure: the backend's own folder")
    return max(_targets(results, ([floor] if floor else []) + known),
               1 if any(r.get("error") for r in results) else 0)


def _targets(results, order):
    """Prints issue 39's targets for the rows counted at N = 10^3 (with
    the references of bench/cgops/references.tsv); returns 1 when that
    file cannot be read, else 0 (a target missed is a finding, not an
    error)."""
    if not any(r.get("n") == tb_counts.TARGET_N for r in results):
        return 0
    path = os.path.join(M.ROOT, "bench", "cgops", "references.tsv")
    try:
        refs = tb_counts.read_references(path)
    except (OSError, ValueError) as e:
        sys.stderr.write("counts: the targets' references: %s\n" % e)
        return 1
    rows = tb_counts.target_rows(results, refs, order)
    if not rows:
        return 0
    print("\nissue 39's targets at 10^3 (the references counted on ../shared/peers's "
          "driver, bench/cgops/references.tsv, whose loop is a little dearer than this "
          "one's: the floor there %s):\n%s" % (
              ", ".join("%s %.1f" % (op, refs[(tb_counts.FLOOR, op)])
                        for op in ("insert", "cancel") if (tb_counts.FLOOR, op) in refs),
              tb_counts.format_targets(rows)))
    print("what each structure's own instructions are for, and what of them its "
          "original's design asks: bench/COUNTS.md, \"Issue 39's targets\"")
    return 0
