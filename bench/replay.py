#!/usr/bin/env python3
"""bench/replay.py — `./timerbench replay`: replays timer traces on every backend (tbkit/replayrun.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout, for tbkit
from tbkit import replayrun  # noqa: E402

if __name__ == "__main__":
    sys.exit(replayrun.main())
