#!/usr/bin/env python3
"""jvm_crosscheck — one behaviour cross-check of issue 32: runs the JVM
original on a script (jvm/CrossCheck.java) and the C rendering on the same
script (jvm/crosscheck.c, over the public API on the virtual clock) and
requires the same lines from both.

usage: jvm_crosscheck.py CHECK JAVA JAR NETTY_JAR C_DRIVER

Exit 0 when they agree, 1 when they differ (both outputs printed), 77
(meson's skip) when the JDK, the jar or Netty's jar is absent.

The scripts keep clear of the one behaviour the C renderings declare as
different that they could meet: a Netty deadline exactly on a tick
boundary fires on it in timerwheel, a tick later in Netty
(timerwheel/README.md, "Where it deliberately differs"); on the real
clock such a deadline does not occur, so the `tick` script's deadlines
fall between boundaries and the two must agree there.  Any other
difference is undeclared and fails the test.
"""

import os
import subprocess
import sys

CHECKS = ("ties", "fail", "catchup", "maxpending", "tick")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit("jvm_crosscheck: %s exited %d" % (cmd[0], p.returncode))
    return [line.rstrip() for line in p.stdout.splitlines() if line.strip()]


def main(argv):
    if len(argv) != 6 or argv[1] not in CHECKS:
        sys.stderr.write(__doc__)
        return 2
    check, java, jar, netty, driver = argv[1:]
    for path, what in ((java, "java"), (jar, "the harness jar"), (netty, "Netty's jar")):
        if not path or not os.path.exists(path):
            print("SKIP: %s not found (default-jdk-headless, libnetty-java)" % what)
            return 77
    jvm = run([java, "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
               "-cp", jar + os.pathsep + netty, "CrossCheck", check])
    c = run([driver, check])
    print("JVM original: " + "\n              ".join(jvm))
    print("C rendering:  " + "\n              ".join(c))
    if jvm != c or not jvm:
        print("DIFFER: the C rendering does not behave as the original on '%s'" % check)
        return 1
    print("same behaviour on '%s'" % check)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
