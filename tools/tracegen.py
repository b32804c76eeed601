#!/usr/bin/env python3
"""tools/tracegen.py — writes a timer trace from a workload model (tbkit/tracegen.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import tracegen  # noqa: E402

if __name__ == "__main__":
    sys.exit(tracegen.main())
