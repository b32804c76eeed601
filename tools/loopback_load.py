#!/usr/bin/env python3
"""tools/loopback_load.py — the loopback TCP load traces/kernel-tcp-loopback.trace was recorded under (tbkit/loopback.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import loopback  # noqa: E402

if __name__ == "__main__":
    sys.exit(loopback.main())
