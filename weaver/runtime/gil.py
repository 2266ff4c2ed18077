"""A shorter GIL switch interval while a serving process answers calls.

A thread that lets go of the GIL (for a SQLite query, a socket write, a file stat) waits, to
take it back, until the thread holding it gives it up: at the latest after the switch interval,
5 ms by default. A tool call makes a handful of such round trips, so while something else in
the process computes (a workflow pass over the vault, a big answer being built, the first
index) each of them may wait that long. With 1 ms, a call waits at most 1 ms per round trip,
for a little more switching in the busy threads (figures in docs/benchmarks-notes.md).

Only while calls are under way, though: a process that answers nothing gains nothing from it,
and its background work (indexing, embedding) switches less with the default. `QuickSwitch`
counts the calls in flight and sets the short interval from the first until the last ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SWITCH_INTERVAL_S = 0.001


class QuickSwitch:
    """The short switch interval for as long as at least one call is being served."""

    def __init__(self, interval: float = SWITCH_INTERVAL_S) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._serving = 0
        self._default = sys.getswitchinterval()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Around one call: the first call under way shortens the interval, the last to end
        puts back the one the process had."""
        with self._lock:
            if self._serving == 0:
                self._default = sys.getswitchinterval()
                sys.setswitchinterval(self.interval)
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                if self._serving == 0:
                    sys.setswitchinterval(self._default)
