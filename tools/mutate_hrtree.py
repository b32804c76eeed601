#!/usr/bin/env python3
"""mutate_hrtree.py — checks that hrtree's differential test can fail.

Copies the checkout's tracked files to a scratch directory, builds
tests/diff_hrtree there once, then for each mutation of hrtree/hrtree.c
below applies it (each must match exactly once), rebuilds and runs the
test, which must fail; the original file is put back between mutations.
The checkout itself is never touched.  Exit status 0 when every mutation
was caught, 1 when one survived, 2 when a mutation no longer applies or
the build fails.

    tools/mutate_hrtree.py [--keep] [--only NAME]

The mutations (issue 38): the soft expiry compared with < for <=; the
forward wrong at an exact multiple of the period; the fixed-rate forward
from the clock at the interrupt (the run's start) instead of the end of the
callback; any look at the clock taken as an interrupt (the queue run once a
soft expiry has passed, not only at the programmed hard expiry); a one-shot
restarted from its own callback dropped.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SRC = "hrtree/hrtree.c"
TIMEOUT = 120  # s; the test takes about 6 s unmutated

MUTATIONS = [
    ("soft-lt",
     "(t = q->leftmost) != NULL && soft_of(t) <= now) {",
     "(t = q->leftmost) != NULL && soft_of(t) < now) {"),
    ("forward-exact",
     "    if (delta >= interval) {",
     "    if (delta > interval) {"),
    ("forward-from-interrupt",
     "    bool failed = fn(arg) != 0;\n"
     "    int64_t end = tb_clock_now(&q->base); /* hrtimer_forward_now's clock */\n",
     "    int64_t end = tb_clock_now(&q->base); /* hrtimer_forward_now's clock */\n"
     "    bool failed = fn(arg) != 0;\n"),
    ("wakeup-is-interrupt",
     "           first->base.deadline <= (now = tb_clock_now(&q->base)))",
     "           soft_of(first) <= (now = tb_clock_now(&q->base)))"),
    ("restart-dropped",
     "bool restart = state == TB_TASK_RUNNING && t == q->running;",
     "bool restart = false;"),
]


def run(cmd, cwd, timeout=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch directory")
    ap.add_argument("--only", help="run this mutation only")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    muts = [m for m in MUTATIONS if not args.only or m[0] == args.only]
    if not muts:
        print(f"mutate_hrtree: no mutation named {args.only!r}",
              file=sys.stderr)
        return 2
    files = run(["git", "ls-files", "-z"], root).stdout.split("\0")
    tmp = tempfile.mkdtemp(prefix="tb-mutate-")
    try:
        for f in filter(None, files):
            if not os.path.isfile(os.path.join(root, f)):
                continue
            os.makedirs(os.path.join(tmp, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(root, f), os.path.join(tmp, f))
        build = os.path.join(tmp, "build")
        setup = run(["meson", "setup", build, "--werror", "-Dbench=disabled"],
                    tmp)
        if setup.returncode:
            print(setup.stdout, file=sys.stderr)
            return 2
        path = os.path.join(tmp, SRC)
        with open(path) as fh:
            original = fh.read()
        survived = 0
        for name, old, new in muts:
            if original.count(old) != 1:
                print(f"mutate_hrtree: {name}: the text to mutate is found "
                      f"{original.count(old)} times in {SRC}",
                      file=sys.stderr)
                return 2
            with open(path, "w") as fh:
                fh.write(original.replace(old, new))
            b = run(["ninja", "-C", build, "tests/diff_hrtree"], tmp)
            if b.returncode:
                print(b.stdout, file=sys.stderr)
                return 2
            try:
                t = run([os.path.join(build, "tests", "diff_hrtree")], tmp,
                        timeout=TIMEOUT)
                caught = t.returncode != 0
                first = next((ln for ln in t.stdout.splitlines()
                              if "vs Linux" in ln or "ERROR" in ln), "")
            except subprocess.TimeoutExpired:
                # meson's timeout would fail it the same way
                caught, first = True, "hung: killed after %d s" % TIMEOUT
            print(f"{name}: {'caught' if caught else 'SURVIVED'}"
                  f"{' — ' + first.strip() if caught and first else ''}")
            survived += not caught
        with open(path, "w") as fh:
            fh.write(original)
        return 1 if survived else 0
    finally:
        if args.keep:
            print(f"mutate_hrtree: scratch directory {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
