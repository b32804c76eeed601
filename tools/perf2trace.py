#!/usr/bin/env python3
"""tools/perf2trace.py — imports the kernel's timer tracepoints (perf script) as a timer trace (tbkit/perf2trace.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import perf2trace  # noqa: E402

if __name__ == "__main__":
    sys.exit(perf2trace.main())
