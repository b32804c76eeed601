"""tbkit.countsdata — the instructions and simulated cache misses per
operation that `bench/run.py --profile counts` (and `./timerbench counts`)
measure under Valgrind, as rows (analysis layer): their order, the
structure's work per operation, the table for the terminal, and the cache
model in words.

The figures are deterministic: the same binary, seed and cache model give
the same counts on any machine, so they show what an operation costs
without the noise of the timings.
"""

from tbkit import numbers as A

# The structure's work counters bench/counts.c reports (per operation), in
# the order tables show them; a backend keeps only some of them.
WORK = ("sift_levels", "visits", "rounds", "cascades", "bucket_offers",
        "ticks", "transfers")
OPS = ("insert", "cancel", "expire")
# The interface's floor (issue 39, tb_backend_floor; bench/counts.c
# --backend floor): its rows come first, and it is not a timer.
FLOOR = "floor"


def variant(r):
    """What distinguishes rows of one backend besides N: the roc= part."""
    for part in r["config"].split(","):
        if part.startswith("roc="):
            return part
    return ""


def order_results(results, backends=None):
    order = {b: i for i, b in enumerate(backends or [])}
    return sorted(results, key=lambda r: (OPS.index(r["op"]) if r["op"] in OPS else 9,
                                          r["n"], order.get(r["backend"], 99),
                                          r["backend"], variant(r)))


def work_text(r):
    w = r.get("work") or r.get("work_per_op") or {}
    parts = ["%s %s" % (k, A.fmt_num(w[k])) for k in WORK if w.get(k)]
    return ", ".join(parts) if parts else "none counted"


def format_table(results, backends=None):
    """Plain text table, one line per result (errors included)."""
    head = "%-8s %-12s %-8s %9s %14s %12s %12s  %s" % (
        "op", "backend", "variant", "N", "instructions", "D1 misses", "LL misses",
        "work per op")
    lines = [head]
    good = [r for r in results if not r.get("error")]
    for r in order_results(good, backends):
        lines.append("%-8s %-12s %-8s %9s %14.1f %12.2f %12.3f  %s" % (
            r["op"], r["backend"], variant(r), A.fmt_n(r["n"]),
            r["instructions_per_op"], r["d1_misses_per_op"], r["ll_misses_per_op"],
            work_text(r)))
    for r in results:
        if r.get("error"):
            lines.append("error: %s: %s" % (r.get("name"), r["error"]))
    return "\n".join(lines)


def cache_model_text(meta):
    caches = (meta or {}).get("caches")
    if not isinstance(caches, dict):
        return None
    out = []
    for k in ("I1", "D1", "LL"):
        c = caches.get(k)
        if isinstance(c, dict) and all(isinstance(c.get(x), int) for x in ("size", "assoc", "line")):
            out.append("%s %s KiB %d-way, %d-byte lines" % (k, A.fmt_num(c["size"] / 1024.0),
                                                           c["assoc"], c["line"]))
    return "; ".join(out) if out else None


# ---- where an operation's instructions go --------------------------------

# The parts of an operation's instructions, by the source file callgrind
# charged them to (inlined code to its own file): the driver's loop
# (bench/), the interface (core/ and include/: the entry's checks, the
# pool, the handle, the record; the floor's own file too, since the floor
# is the interface), the backend's own files (its structure), the rest
# (libc, a file without debug information).
PARTS = ("driver", "interface", "structure", "other")


def part_of(path, backend):
    """Which of PARTS a source file (relative to the checkout) is, for an
    operation of `backend`."""
    top = path.split("/", 1)[0] if "/" in path else ""
    if top == "bench":
        return "driver"
    if top in ("core", "include"):
        return "interface"
    if top == backend:
        return "structure"
    return "other"


def split(r):
    """{part: instructions per operation} of a counts result with
    per-file costs ("by_file"), or None without them."""
    files = r.get("by_file")
    if not files:
        return None
    out = dict.fromkeys(PARTS, 0.0)
    for path, v in files.items():
        out[part_of(path, r["backend"])] += v
    return out


def format_split(results, backends=None):
    """The table of where each operation's instructions go, or None when
    no result has per-file costs (a binary without debug information)."""
    rows = [r for r in order_results([r for r in results if not r.get("error")], backends)
            if split(r)]
    if not rows:
        return None
    lines = ["%-8s %-12s %-8s %9s %9s %10s %10s %7s" % (
        "op", "backend", "variant", "N", "driver", "interface", "structure", "other")]
    for r in rows:
        s = split(r)
        lines.append("%-8s %-12s %-8s %9s %9.1f %10.1f %10.1f %7.1f" % (
            r["op"], r["backend"], variant(r), A.fmt_n(r["n"]), s["driver"],
            s["interface"], s["structure"], s["other"]))
    return "\n".join(lines)


# ---- issue 39's targets ----------------------------------------------------

# Each structure at its reference's cost (issue 39, item 3): (backend,
# variant, op) -> (reference, factor), the count at N = TARGET_N at most
# factor x the reference's; a lazy cancel at most LAZY_CANCEL_MAX
# instructions.  The references are counted on ../shared/peers's driver
# (bench/cgops/cgops.sh), recorded in bench/cgops/references.tsv.
TARGET_N = 1000
LAZY_CANCEL_MAX = 30.0
TARGETS = {
    ("kernelwheel", "", "insert"): ("wahern", 1.3),
    ("kernelwheel", "", "cancel"): ("wahern", 1.5),
    ("hierwheel", "", "insert"): ("wahern", 1.5),
    ("hierwheel", "", "cancel"): ("wahern", 1.5),
    ("timerwheel", "", "insert"): ("ratas", 1.5),
    ("timerwheel", "", "cancel"): ("ratas", 2.0),
    ("heapqueue", "", "insert"): ("libevent", 1.3),
    ("heapqueue", "roc=on", "cancel"): ("libevent", 1.5),
    ("timerthread", "", "insert"): ("libevent", 1.3),
    ("quadheap", "", "insert"): ("libevent", 1.3),
    ("hrtree", "", "insert"): ("bsdtree", 1.3),
    ("hrtree", "", "cancel"): ("bsdtree", 1.3),
}
# the lazy cancels, held to LAZY_CANCEL_MAX
LAZY = {("heapqueue", "roc=off", "cancel"), ("timerthread", "", "cancel"),
        ("quadheap", "", "cancel")}
# The names references.tsv gives the driver's ops.
REF_OPS = {"insert": "add", "cancel": "cancel"}


def read_references(path):
    """{(implementation, op): instructions per operation at TARGET_N} of
    bench/cgops/references.tsv (op as this driver names it: insert,
    cancel); lines "impl<TAB>op<TAB>N<TAB>instructions", '#' comments.
    Raises ValueError naming the line of a malformed file."""
    out = {}
    back = {v: k for k, v in REF_OPS.items()}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 4 or parts[1] not in back:
                raise ValueError("%s:%d: want impl, add|cancel, N, instructions "
                                 "separated by tabs, got %r" % (path, i, line))
            try:
                n, v = int(parts[2]), float(parts[3])
            except ValueError:
                raise ValueError("%s:%d: N and instructions must be numbers: %r"
                                 % (path, i, line)) from None
            if v <= 0 or n != TARGET_N:
                raise ValueError("%s:%d: want N = %d and a positive count: %r"
                                 % (path, i, TARGET_N, line))
            out[(parts[0], back[parts[1]])] = v
    return out


def target_rows(results, refs, backends=None):
    """[dict] one per target whose operation was counted at TARGET_N:
    backend, variant, op, count, reference (name, count, factor; None for
    a lazy cancel), target, within (count <= target), and the parts
    (split) a reason is given in.  The count is this driver's, the
    reference's the side-by-side driver's, whose loop around the call is
    a little dearer (the floors of the two say by how much)."""
    rows = []
    for r in order_results([r for r in results if not r.get("error")
                            and r["n"] == TARGET_N and r["backend"] != FLOOR], backends):
        key = (r["backend"], variant(r), r["op"])
        if key in TARGETS:
            name, factor = TARGETS[key]
            ref = refs.get((name, r["op"]))
            if ref is None:
                continue
            target, reference = factor * ref, (name, ref, factor)
        elif key in LAZY:
            target, reference = LAZY_CANCEL_MAX, None
        else:
            continue
        count = r["instructions_per_op"]
        rows.append({"backend": r["backend"], "variant": variant(r), "op": r["op"],
                     "count": count, "reference": reference, "target": target,
                     "within": count <= target, "parts": split(r)})
    return rows


def reason_text(row):
    """Why a row is over its target, in instructions: what the target leaves
    the structure once the driver's loop and the interface are paid, and
    what the structure does (needs the parts; else the excess alone)."""
    over = row["count"] - row["target"]
    p = row["parts"]
    if not p:
        return "over by %.1f (no per-file counts: the binary has no debug information)" % over
    left = row["target"] - p["driver"] - p["interface"] - p["other"]
    ref = row["reference"]
    whole = (" (%s's whole %s: %.1f)" % (ref[0], REF_OPS[row["op"]], ref[1])
             if ref else "")
    return ("over by %.1f: after the driver's %.1f and the interface's %.1f the target "
            "leaves the structure %.1f, which does %.1f%s"
            % (over, p["driver"], p["interface"], left, p["structure"], whole))


def format_targets(rows):
    """The targets table for the terminal: this driver's count against the
    target, within or why not."""
    lines = ["%-12s %-8s %-7s %8s %-28s  %s" % (
        "backend", "variant", "op", "count", "target", "within")]
    for t in rows:
        ref = t["reference"]
        what = ("%s x %s %.1f = %.1f" % (A.fmt_num(ref[2]), ref[0], ref[1], t["target"])
                if ref else "lazy cancel <= %.1f" % t["target"])
        lines.append("%-12s %-8s %-7s %8.1f %-28s  %s" % (
            t["backend"], t["variant"], t["op"], t["count"], what,
            "yes" if t["within"] else "no, " + reason_text(t)))
    return "\n".join(lines)
