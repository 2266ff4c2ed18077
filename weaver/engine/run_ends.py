"""Recording a run's end, and trying again, in the background, the ends the cache refused.

A run whose end is not recorded stays `running` and counts against its workflow's
`max_concurrent`, holding up the next: an end that could not be written (a full disk, a busy
database) is kept and tried again after `END_RETRY_SECONDS`, doubled after each failure up to
`END_RETRY_MAX_SECONDS`, until it is recorded or the engine stops (a last try on the way out).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions

END_RETRY_SECONDS = 0.5
END_RETRY_MAX_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class _UnrecordedEnd:
    fields: dict[str, Any]  # what `executions.finish` writes: status, message, result...
    finished: int
    next_try: float
    delay: float


class RunEnds:
    """Records the ends of the runs `process` runs; `on_recorded` is told of each late one."""

    def __init__(
        self,
        db: Engine,
        process: str,
        stopping: threading.Event,
        on_recorded: Callable[[], None],
    ) -> None:
        self._db = db
        self._process = process
        self._stopping = stopping
        self._on_recorded = on_recorded
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")
        self._lock = threading.Lock()
        self._unrecorded: dict[str, _UnrecordedEnd] = {}
        self._error: str | None = None
        self._retrier: threading.Thread | None = None

    @property
    def error(self) -> str | None:
        """Why the last end could not be recorded."""
        return self._error

    @property
    def faults(self) -> list[str]:
        """What is wrong now, for `health_check` (empty when nothing)."""
        with self._lock:
            waiting = len(self._unrecorded)
        if not waiting:
            return []
        return [f"{waiting} run end(s) not recorded yet, retrying: {self._error}"]

    def record(self, execution_id: str, fields: dict[str, Any], now: int) -> bool:
        """Write the end; False (and `error` set) when the cache refused it. Only while this
        process runs the row: a run taken over by another worker (this one's heartbeat was
        late) is the other's to end."""
        try:
            with self._db.begin() as conn:
                executions.finish(conn, execution_id, now=now, process=self._process, **fields)
        except Exception as exc:
            self._error = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
            return False
        return True

    def keep(self, execution_id: str, fields: dict[str, Any], now: int) -> None:
        """Try a refused end again in the background until it is recorded."""
        with self._lock:
            self._unrecorded[execution_id] = _UnrecordedEnd(
                fields, now, time.monotonic() + END_RETRY_SECONDS, END_RETRY_SECONDS
            )
            if self._retrier is None or not self._retrier.is_alive():
                self._retrier = threading.Thread(
                    target=self._retry_loop, name="weaver-engine-ends", daemon=True
                )
                self._retrier.start()

    def retry(self, force: bool = False) -> int:
        """Try again to record the ends whose time has come (all with `force`); returns how
        many are still unrecorded."""
        with self._lock:
            due = [
                (execution_id, end)
                for execution_id, end in self._unrecorded.items()
                if force or end.next_try <= time.monotonic()
            ]
        for execution_id, end in due:
            if self.record(execution_id, end.fields, end.finished):
                self._log.info("end of an execution recorded late", execution_id=execution_id)
                with self._lock:
                    self._unrecorded.pop(execution_id, None)
                self._on_recorded()
            else:
                delay = min(end.delay * 2, END_RETRY_MAX_SECONDS)
                with self._lock:
                    self._unrecorded[execution_id] = _UnrecordedEnd(
                        end.fields, end.finished, time.monotonic() + delay, delay
                    )
        with self._lock:
            return len(self._unrecorded)

    def _retry_loop(self) -> None:
        while self.retry():
            if self._stopping.wait(END_RETRY_SECONDS):
                self.retry(force=True)  # a last try on the way out
                return
