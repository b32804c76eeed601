#!/usr/bin/env python3
"""tools/tb_trace.py — checks a timer trace by the replay's rules and prints its statistics (tbkit/trace.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import trace  # noqa: E402

if __name__ == "__main__":
    sys.exit(trace.main(sys.argv))
