"""A shorter GIL switch interval for the processes that serve (`weaver serve`, `weaver daemon`).

A thread that lets go of the GIL (for a SQLite query, a socket write, a file stat) waits, to
take it back, until the thread holding it gives it up: at the latest after the switch interval,
5 ms by default. A tool call makes a handful of such round trips, so while something else in
the process computes (a workflow pass over the vault, a big answer being built, the first
index) each of them may wait that long. With 1 ms, a call waits at most 1 ms per round trip,
for a little more switching in the busy threads (figures in docs/benchmarks-notes.md).
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.001


def share_quickly() -> None:
    """Hand the GIL over to waiting threads after `SWITCH_INTERVAL_S` rather than 5 ms."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
