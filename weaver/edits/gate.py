"""The point of no return of a write, and what its caller is told about it.

A tool call has a deadline; a write must never be abandoned half way by it (the note written,
the answer "timed out"). So a call that writes runs under a `WriteGate`: until the write
begins (`commit_point`, called by the edits core just before its first irreversible step), the
caller may `cancel` it and answer the timeout, and the work stops at its next check; once the
write has begun, `cancel` refuses, the caller waits for the write to finish and answers what
it did. After the commit point the thread's cache queries have no deadline either, so the
cache update that follows a write is never interrupted.

The gate also collects warnings for the answer ("written, but the cache could not be
updated"), which the edits core raises with `warn` wherever it is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import structlog

from weaver.cache.db import lift_deadline
from weaver.errors import WeaverError

log = structlog.get_logger(__name__)

OPEN, WRITING, CANCELLED = "open", "writing", "cancelled"


class WriteCancelledError(WeaverError):
    """The call's deadline passed before its write began: nothing was written."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"Timed out: the call took longer than {seconds:g} s before its write began, and "
            "was stopped; nothing was written (retry it, or raise tool_timeout_s)"
        )


class WriteGate:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.warnings: list[str] = []
        self._state = OPEN
        self._lock = threading.Lock()

    def cancel(self) -> bool:
        """Stop the call if its write has not begun (True); False once it has."""
        with self._lock:
            if self._state == OPEN:
                self._state = CANCELLED
            return self._state == CANCELLED

    @property
    def writing(self) -> bool:
        return self._state == WRITING

    def check(self) -> None:
        if self._state == CANCELLED:
            raise WriteCancelledError(self.seconds)

    def begin_write(self) -> None:
        with self._lock:
            self.check()
            self._state = WRITING


class _Current(threading.local):
    gate: WriteGate | None = None


_current = _Current()


@contextmanager
def gated(gate: WriteGate) -> Iterator[WriteGate]:
    """Run the block's writes under `gate` (this thread only)."""
    previous, _current.gate = _current.gate, gate
    try:
        yield gate
    finally:
        _current.gate = previous


def check() -> None:
    """Give up now if the call was cancelled (waiting for a lock, before a write)."""
    if _current.gate is not None:
        _current.gate.check()


def commit_point() -> None:
    """The write begins: from here on it is finished whatever the deadline."""
    if _current.gate is not None:
        _current.gate.begin_write()
    lift_deadline()


def warn(message: str) -> None:
    """Tell the caller something about a write that succeeded (logged too)."""
    log.warning("write warning", detail=message)
    if _current.gate is not None:
        _current.gate.warnings.append(message)
