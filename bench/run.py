#!/usr/bin/env python3
"""bench/run.py — runs a benchmark profile into a results directory (tbkit/bench.py; `bench/run.py --help`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import bench  # noqa: E402

if __name__ == "__main__":
    sys.exit(bench.main())
