"""What a running workflow receives: its input, what started it, and the handles it may use.

`ctx.trigger` is one of three values, to be consumed with `match`:

    match ctx.trigger:
        case ManualTrigger(via=via): ...            # weaver trigger / trigger_workflow
        case FileTrigger(events=events): ...        # one watcher batch, filtered for this workflow
        case ScheduleTrigger(scheduled_time=when): ...

The cache is read through the context's typed methods (`note_facts`, `note_paths`,
`broken_links`, `broken_links_to`, `tag_counts`, `failures`, `query_tasks`), each answering for
a whole batch of notes from one consistent snapshot; `ctx.cache.snapshot()` yields the raw read-only
connection (one SQLite itself refuses to write through) for anything else. Notes are read from
disk and parsed with `ctx.load_note`. The vault is written through `ctx.vault`, a `VaultWriter`
that records each write so the file event it causes starts no workflow again. What a workflow
wants to keep for later (an audit log, a note's analysis, state between runs) goes to
`ctx.records`, its own part of the `workflow_records` table, which users query with
`get_workflow_records`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from sqlalchemy import Connection, Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache.executions import ExecutionRecord, list_failures
from weaver.cache.note_facts import (
    BrokenLink,
    NoteFacts,
    count_tag_carriers,
    get_note_facts,
    list_broken_links,
    list_broken_links_by_key,
    list_note_paths,
)
from weaver.cache.records import WorkflowRecords
from weaver.cache.task_queries import TaskPage, run_task_query
from weaver.cache.write import load_all_paths
from weaver.config import Settings
from weaver.engine.analysis import LoadedNote, load_note
from weaver.markdown.resolver import LinkResolver, path_key
from weaver.tasks.query_language import parse_task_query
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
        write through it fail instead of competing with the indexer; on PostgreSQL, a READ
        ONLY transaction at REPEATABLE READ does both.
        """
        with self._engine.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                conn.exec_driver_sql("PRAGMA query_only = 1")
                conn.exec_driver_sql("BEGIN")
            elif conn.dialect.name == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
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

    # -- reading the cache: one snapshot per call, one query per chunk of paths ---------------

    def note_facts(self, paths: Collection[str] | None) -> dict[str, NoteFacts]:
        """The cached facts of these notes (None: every note), by path; a path no longer in the
        cache is left out."""
        with self.cache.snapshot() as conn:
            return get_note_facts(conn, paths)

    def note_paths(self, note_type: str | None = None) -> list[str]:
        """Every note's path, sorted; with `note_type`, those of that frontmatter `type`."""
        with self.cache.snapshot() as conn:
            return list_note_paths(conn, note_type)

    def broken_links(self, paths: Collection[str] | None) -> dict[str, list[BrokenLink]]:
        """The broken links of these notes (None: every note), in file order, by source."""
        with self.cache.snapshot() as conn:
            return list_broken_links(conn, paths)

    def broken_links_to(self, paths: Collection[str]) -> dict[str, list[BrokenLink]]:
        """The broken links that would resolve to one of these (deleted) paths if it were back,
        by that path; links from those paths themselves are left out.

        Only links whose target names a file of the same name can; they are resolved again
        against the files of those names plus the paths (the rules need no other file).
        """
        keys = {path_key(path) for path in paths}
        gone = set(paths)
        with self.cache.snapshot() as conn:
            candidates = list_broken_links_by_key(conn, keys)
            same_name = [path for path in load_all_paths(conn) if path_key(path) in keys]
        resolver = LinkResolver([*same_name, *paths])
        found: dict[str, list[BrokenLink]] = {}
        for link in candidates:
            target = resolver.resolve(link.target, link.source)
            if target in gone and link.source not in gone:
                found.setdefault(target, []).append(link)
        return found

    def tag_counts(self, keys: Collection[str]) -> dict[str, int]:
        """How many notes carry each of these tag keys exactly (not the tags nested below)."""
        with self.cache.snapshot() as conn:
            return count_tag_carriers(conn, keys)

    def failures(self, since: int, until: int) -> list[ExecutionRecord]:
        """Executions of any workflow that failed within [since, until) (epoch ms), oldest
        first."""
        with self.cache.snapshot() as conn:
            return list_failures(conn, since, until)

    def query_tasks(self, query: str, today: date, offset: int = 0, limit: int = 50) -> TaskPage:
        """The tasks `query` (in the Tasks plugin's language, its relative dates read against
        `today`) finds, one page from `offset` with the true total; a line Weaver does not
        support raises `TaskQueryError` naming it."""
        parsed = parse_task_query(query, today)
        with self.cache.snapshot() as conn:
            return run_task_query(conn, parsed, today, offset, limit)

    def load_note(self, path: str) -> LoadedNote | None:
        """A note read from disk now and parsed; None when it is not there (any more)."""
        return load_note(self.vault.vault, path)
