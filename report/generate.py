#!/usr/bin/env python3
"""report/generate.py — a results directory into report.md and report.html (tbkit/report.py).

    python3 report/generate.py RESULTS_DIR [--out DIR] [--no-figures]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import report  # noqa: E402

if __name__ == "__main__":
    sys.exit(report.run(sys.argv))
