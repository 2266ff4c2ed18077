"""What a running workflow receives: its input, what started it, and the handles it may use.

`ctx.trigger` is one of three values, to be consumed with `match`:

    match ctx.trigger:
        case ManualTrigger(via=via): ...            # weaver trigger / trigger_workflow
        case FileTrigger(events=events): ...        # one watcher batch, filtered for this workflow
        case ScheduleTrigger(scheduled_time=when): ...

The cache is read-only (`ctx.cache.snapshot()` yields a connection that SQLite itself refuses to
write through); the vault is written through `ctx.vault`, a `VaultWriter` that records each
write so the file event it causes starts no workflow again. What a workflow wants to keep for
later (an audit log, a note's analysis, state between runs) goes to `ctx.records`, its own part
of the `workflow_records` table, which users query with `get_workflow_records`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from sqlalchemy import Connection, Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache.records import WorkflowRecords
from weaver.config import Settings
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent
from weaver.vault.writer import VaultWriter

InputT = TypeVar("InputT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ManualTrigger:
    """Started by hand: `via` is "cli", "mcp" or "api"."""

    via: str = "api"


@dataclass(frozen=True, slots=True)
class FileTrigger:
    """Started by a batch of vault changes; `events` holds those matching the workflow."""

    events: tuple[VaultEvent, ...]

    @property
    def paths(self) -> list[str]:
        return [event.path for event in self.events]


@dataclass(frozen=True, slots=True)
class ScheduleTrigger:
    """Started by the scheduler for the run planned at `scheduled_time` (timezone-aware)."""

    scheduled_time: datetime


Trigger = ManualTrigger | FileTrigger | ScheduleTrigger


def trigger_kind(trigger: Trigger) -> str:
    match trigger:
        case ManualTrigger():
            return "manual"
        case FileTrigger():
            return "file"
        case ScheduleTrigger():
            return "schedule"


def trigger_detail(trigger: Trigger) -> dict[str, Any]:
    """The JSON stored with the execution, from which `trigger_from_row` rebuilds it."""
    match trigger:
        case ManualTrigger(via=via):
            return {"via": via}
        case FileTrigger(events=events):
            return {"events": [_event_detail(event) for event in events]}
        case ScheduleTrigger(scheduled_time=when):
            return {"scheduledTime": int(when.timestamp() * 1000), "iso": when.isoformat()}


def trigger_from_row(kind: str, detail: dict[str, Any]) -> Trigger:
    if kind == "file":
        return FileTrigger(tuple(_event_from_detail(item) for item in detail["events"]))
    if kind == "schedule":
        return ScheduleTrigger(datetime.fromisoformat(detail["iso"]))
    return ManualTrigger(via=str(detail.get("via", "api")))


def _event_detail(event: VaultEvent) -> dict[str, Any]:
    detail: dict[str, Any] = {"kind": event.kind, "path": event.path}
    if isinstance(event, NoteMoved):
        detail["oldPath"] = event.old_path
    elif isinstance(event, NoteAdded) and event.initial:
        detail["initial"] = True
    return detail


def _event_from_detail(detail: dict[str, Any]) -> VaultEvent:
    path = detail["path"]
    match detail["kind"]:
        case "add":
            return NoteAdded(path, initial=bool(detail.get("initial")))
        case "delete":
            return NoteDeleted(path)
        case "move":
            return NoteMoved(old_path=detail["oldPath"], path=path)
        case _:
            return NoteModified(path)


class CacheReader:
    """Read access to the shadow cache for workflows."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A connection pinned to one consistent state of the cache, that cannot write.

        Usable with every query of `weaver.cache.read`. On SQLite, `PRAGMA query_only` makes a
        write through it fail instead of competing with the indexer.
        """
        with self._engine.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                conn.exec_driver_sql("PRAGMA query_only = 1")
                conn.exec_driver_sql("BEGIN")
            try:
                yield conn
            finally:
                conn.rollback()
                if sqlite:
                    conn.exec_driver_sql("PRAGMA query_only = 0")


@dataclass(frozen=True)
class WorkflowContext(Generic[InputT]):
    """Everything one attempt of one execution may use.

    `settings` are the workflow's own (its settings model filled from `[workflows.<id>.settings]`,
    or that table as a dict); `weaver_settings` is the whole configuration. `cancelled` is set
    when the attempt times out or the engine stops: a long synchronous workflow should look at
    it between steps, since a thread cannot be stopped from outside.
    """

    execution_id: str
    workflow_id: str
    attempt: int
    input: InputT
    trigger: Trigger
    settings: Any
    weaver_settings: Settings
    cache: CacheReader
    vault: VaultWriter
    records: WorkflowRecords
    log: FilteringBoundLogger
    cancelled: threading.Event
    progress_sink: Callable[[int, str | None], None]

    def report_progress(self, percent: float, message: str | None = None) -> None:
        """Record progress (clamped to 0..100) and an optional message on the execution."""
        self.progress_sink(int(min(max(percent, 0), 100)), message)
