#!/usr/bin/env python3
"""tools/report_diff.py BEFORE/report.md AFTER/report.md — every number and
every verdict of two timerbench reports, compared as multisets.

Numbers: every numeric token of the text (link and image targets left out:
they are file names), 10^k kept whole.  Verdicts: every bold span (the
report sets verdicts and recommendations in bold), each claim's verdict by
its claim text (the claims table's last column), and the count of each
verdict word.  Prints what the second report lacks (must be nothing), what
it adds, and of the additions those that are not a repeat of a number
already in the first report, each with its line."""
import collections
import re
import sys

NUM = re.compile(r"10\^-?\d+|-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
LINK = re.compile(r"\]\([^)]*\)")
VERDICTS = ("does not hold", "holds only in part", "not tested", "undecided", "holds")


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [LINK.sub("]()", l.rstrip("\n")) for l in f]


def numbers(ls):
    c = collections.Counter()
    where = {}
    for i, l in enumerate(ls, 1):
        for m in NUM.finditer(l):
            t = m.group(0).replace(",", "")
            c[t] += 1
            where.setdefault(t, []).append(i)
    return c, where


def bold(ls):
    return collections.Counter(m for l in ls for m in re.findall(r"\*\*(.+?)\*\*", l))


def claim_verdicts(ls):
    out, on = {}, False
    for l in ls:
        if l.startswith("## What the classic write-ups claim"):
            on = True
        elif l.startswith("## ") and on:
            break
        elif on and l.startswith("| ") and not l.startswith("| claim |"):
            cells = [c.strip() for c in l.strip("|").split(" | ")]
            out[cells[0]] = cells[-1]
    return out


def verdict_words(ls):
    c = collections.Counter()
    for l in ls:
        rest = l
        for v in VERDICTS:
            c[v] += rest.count(v)
            rest = rest.replace(v, "")
    return c


def main():
    a, b = lines(sys.argv[1]), lines(sys.argv[2])
    na, wa = numbers(a)
    nb, wb = numbers(b)
    lost, added = na - nb, nb - na
    print("numbers: %d in A, %d in B (%d distinct in A, %d in B)" % (
        sum(na.values()), sum(nb.values()), len(na), len(nb)))
    print("in A, not in B: %d %s" % (sum(lost.values()), dict(lost) if lost else ""))
    print("in B, not in A: %d (%d distinct)" % (sum(added.values()), len(added)))
    new = {t: n for t, n in added.items() if t not in na}
    print("  of which not a repeat of a number of A: %d" % sum(new.values()))
    for t in sorted(new):
        for i in wb[t][:3]:
            print("    %s  line %d: %s" % (t, i, b[i - 1][:160]))
    ba, bb = bold(a), bold(b)
    print("bold spans (verdicts, recommendations): A %d, B %d; lost %s; added %s" % (
        sum(ba.values()), sum(bb.values()), dict(ba - bb) or "none", dict(bb - ba) or "none"))
    ca, cb = claim_verdicts(a), claim_verdicts(b)
    same = sum(1 for k in ca if cb.get(k) == ca[k])
    print("claims: %d in A, %d in B, %d with the same verdict" % (len(ca), len(cb), same))
    for k in ca:
        if cb.get(k) != ca[k]:
            print("  DIFFERS: %s: %r -> %r" % (k, ca[k], cb.get(k)))
    va, vb = verdict_words(a), verdict_words(b)
    print("verdict words A %s" % dict(va))
    print("verdict words B %s" % dict(vb))
    return 1 if lost or (ba - bb) or same != len(ca) or len(ca) != len(cb) else 0


if __name__ == "__main__":
    sys.exit(main())
