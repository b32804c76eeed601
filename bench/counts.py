#!/usr/bin/env python3
"""bench/counts.py — `./timerbench counts`: instructions and cache misses per operation under Valgrind (tbkit/countscmd.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import countscmd  # noqa: E402

if __name__ == "__main__":
    sys.exit(countscmd.main(sys.argv))
