#!/usr/bin/env python3
"""report/compare.py — two results directories side by side (tbkit/compare.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import compare  # noqa: E402

if __name__ == "__main__":
    sys.exit(compare.main(sys.argv))
