"""Stress scripts for memoryport's stores: concurrency, SIGKILL, first open, disk full.

Not timed tests. ``make stress`` (or ``python -m benchmarks.stress``) runs every scenario
and prints, for each, the writes acknowledged vs the writes a fresh open reads back; the
run fails on any lost or corrupt write. See docs/stress.md.
"""
