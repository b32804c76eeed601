"""tbkit — timerbench's Python: reading results and writing the report,
running the benchmarks and replays, and the trace tools.  One package in
layers, imported in one direction only (tbkit/README.md has the map and
tests/imports_test.py holds it); the scripts under bench/, report/ and
tools/ are thin commands over it.
"""
