"""Workflow records: what workflows keep for later, and every statement that reads or writes it.

A record is a JSON object a workflow filed under a `key` (usually a note path) and a `kind`
("change", "analysis", "version", "state", ...) at `recorded_at` (Unix epoch ms). The table is
append-mostly: a timeline per key, read back newest first. `WorkflowRecords` is the handle a
running workflow gets as `ctx.records`, scoped to its own workflow id; `fetch_page` is the core
behind the `get_workflow_records` tool and `weaver records`.

Set-based like the rest of `weaver.cache`: a batch is one INSERT, the latest record of many keys
one windowed SELECT per chunk of keys, never a query per row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, cast

from pydantic_core import to_jsonable_python
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    and_,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)

from weaver.cache.models import WorkflowRecord
from weaver.cache.read import read_snapshot
from weaver.cache.write import chunked
from weaver.errors import CacheError
from weaver.paging import Page

_TABLE = cast(Table, WorkflowRecord.__table__)
col = _TABLE.c

DEFAULT_KIND = "record"
PAGE_MAX_LIMIT = 500


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to file; `recorded_at` None means now."""

    key: str
    data: dict[str, Any]
    kind: str = DEFAULT_KIND
    recorded_at: int | None = None


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One row of `workflow_records`, as read back."""

    id: int
    workflow_id: str
    key: str
    kind: str
    recorded_at: int
    execution_id: str | None
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Which records to read: one workflow's, optionally one key's or kind's, within
    `since` (inclusive) and `until` (exclusive), both Unix epoch ms."""

    workflow_id: str
    key: str | None = None
    kind: str | None = None
    since: int | None = None
    until: int | None = None


_COLUMNS = [col[field.name] for field in fields(StoredRecord)]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def insert_records(
    conn: Connection,
    workflow_id: str,
    records: Iterable[NewRecord],
    *,
    now: int,
    execution_id: str | None = None,
) -> int:
    """File these records in one statement; returns how many."""
    rows = [
        {
            "workflow_id": workflow_id,
            "key": record.key,
            "kind": record.kind,
            "recorded_at": now if record.recorded_at is None else record.recorded_at,
            "execution_id": execution_id,
            # Dates, dataclasses and models become plain JSON here rather than failing later.
            "data": to_jsonable_python(record.data),
        }
        for record in records
    ]
    if rows:
        conn.execute(insert(_TABLE), rows)
    return len(rows)


def _conditions(where: RecordFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [col.workflow_id == where.workflow_id]
    if where.key is not None:
        conditions.append(col.key == where.key)
    if where.kind is not None:
        conditions.append(col.kind == where.kind)
    if where.since is not None:
        conditions.append(col.recorded_at >= where.since)
    if where.until is not None:
        conditions.append(col.recorded_at < where.until)
    return conditions


def list_records(
    conn: Connection,
    where: RecordFilter,
    *,
    limit: int | None = None,
    offset: int = 0,
    oldest_first: bool = False,
) -> list[StoredRecord]:
    """Matching records, newest first (or oldest first); `limit` None reads them all."""
    order = (col.recorded_at, col.id) if oldest_first else (col.recorded_at.desc(), col.id.desc())
    statement = select(*_COLUMNS).where(*_conditions(where)).order_by(*order)
    if limit is not None:
        statement = statement.limit(limit)
    if offset:
        statement = statement.offset(offset)
    return [StoredRecord(*row) for row in conn.execute(statement)]


def count_records(conn: Connection, where: RecordFilter) -> int:
    statement = select(func.count()).select_from(_TABLE).where(*_conditions(where))
    return int(conn.execute(statement).scalar_one())


def query_records(
    conn: Connection, where: RecordFilter, limit: int, offset: int
) -> Page[StoredRecord]:
    """One page, newest first, with the total number of matching records."""
    records = list_records(conn, where, limit=limit, offset=offset)
    return Page(records, count_records(conn, where), offset, limit)


def latest_records(
    conn: Connection, workflow_id: str, keys: Collection[str], kind: str | None = None
) -> dict[str, StoredRecord]:
    """The newest record of each key that has one (one windowed query per chunk of keys)."""
    found: dict[str, StoredRecord] = {}
    for batch in chunked(dict.fromkeys(keys)):
        conditions = [col.workflow_id == workflow_id, col.key.in_(batch)]
        if kind is not None:
            conditions.append(col.kind == kind)
        rank = func.row_number().over(
            partition_by=col.key, order_by=(col.recorded_at.desc(), col.id.desc())
        )
        ranked = select(*_COLUMNS, rank.label("rank")).where(*conditions).subquery()
        newest = select(*(ranked.c[c.name] for c in _COLUMNS)).where(ranked.c.rank == 1)
        for row in conn.execute(newest):
            record = StoredRecord(*row)
            found[record.key] = record
    return found


def delete_records(
    conn: Connection, workflow_id: str, keys: Collection[str], kind: str | None = None
) -> int:
    removed = 0
    for batch in chunked(keys):
        statement = delete(_TABLE).where(col.workflow_id == workflow_id, col.key.in_(batch))
        if kind is not None:
            statement = statement.where(col.kind == kind)
        removed += conn.execute(statement).rowcount
    return removed


def prune_superseded(conn: Connection, workflow_id: str, older_than: int, limit: int) -> int:
    """Delete up to `limit` of the workflow's records from before `older_than` (Unix epoch ms)
    that a newer record of the same key and kind has superseded; returns how many.

    The newest record of each key and kind always stays, whatever its age: `latest()` and
    `replace()` state keep answering, and a note untouched for a year keeps its last analysis.
    Only the old rows are visited (the workflow/recorded_at index), each checked against its
    key's timeline (the workflow/key/recorded_at index). `limit` lets a caller delete a long
    history in short transactions."""
    newer = _TABLE.alias("newer")
    superseded = (
        select(newer.c.id)
        .where(
            newer.c.workflow_id == col.workflow_id,
            newer.c.key == col.key,
            newer.c.kind == col.kind,
            or_(
                newer.c.recorded_at > col.recorded_at,
                and_(newer.c.recorded_at == col.recorded_at, newer.c.id > col.id),
            ),
        )
        .exists()
    )
    doomed = (
        select(col.id)
        .where(col.workflow_id == workflow_id, col.recorded_at < older_than, superseded)
        .limit(limit)
    )
    return conn.execute(delete(_TABLE).where(col.id.in_(doomed))).rowcount


def move_records(conn: Connection, workflow_id: str, old_key: str, new_key: str) -> int:
    """File a key's whole timeline under a new key (a renamed note keeps its history)."""
    statement = (
        update(_TABLE).where(col.workflow_id == workflow_id, col.key == old_key).values(key=new_key)
    )
    return conn.execute(statement).rowcount


def fetch_page(
    db: Engine, where: RecordFilter, limit: int = 50, offset: int = 0
) -> Page[StoredRecord]:
    """The page `get_workflow_records` and `weaver records` show: `limit` brought into
    1..500 and `offset` to at least 0, the page and its total read from one snapshot."""
    limit = min(max(limit, 1), PAGE_MAX_LIMIT)
    offset = max(offset, 0)
    with read_snapshot(db) as conn:
        return query_records(conn, where, limit, offset)


class RecordsReadOnlyError(CacheError):
    """A workflow tried to write through another workflow's records."""


class WorkflowRecords:
    """One workflow's records, as a running workflow sees them (`ctx.records`).

    Writes are filed under this workflow's id with the execution that made them, each call in
    its own transaction; `before_write` runs first (the engine refuses writes from an attempt
    that was cancelled). `of(other_id)` reads another workflow's records, never writes them.
    """

    def __init__(
        self,
        db: Engine,
        workflow_id: str,
        *,
        execution_id: str | None = None,
        before_write: Callable[[], None] | None = None,
        writable: bool = True,
    ) -> None:
        self._db = db
        self.workflow_id = workflow_id
        self._execution_id = execution_id
        self._before_write = before_write
        self._writable = writable

    def of(self, workflow_id: str) -> WorkflowRecords:
        """Read-only access to the records another workflow keeps."""
        return WorkflowRecords(self._db, workflow_id, writable=False)

    # -- writing --------------------------------------------------------------------------------

    def append(
        self, key: str, data: dict[str, Any], *, kind: str = DEFAULT_KIND, at: int | None = None
    ) -> None:
        self.extend([NewRecord(key, data, kind, at)])

    def extend(self, records: Iterable[NewRecord]) -> int:
        """File several records in one transaction (one INSERT); returns how many."""
        batch = list(records)
        if not batch:
            return 0
        self._check_write()
        with self._db.begin() as conn:
            return insert_records(
                conn, self.workflow_id, batch, now=_now_ms(), execution_id=self._execution_id
            )

    def replace(self, key: str, data: dict[str, Any], *, kind: str) -> None:
        """Keep only this record of `key` and `kind`: state remembered between runs."""
        self.replace_many([NewRecord(key, data, kind)])

    def replace_many(self, records: Sequence[NewRecord]) -> None:
        if not records:
            return
        self._check_write()
        with self._db.begin() as conn:
            for kind in {record.kind for record in records}:
                keys = [record.key for record in records if record.kind == kind]
                delete_records(conn, self.workflow_id, keys, kind)
            insert_records(
                conn, self.workflow_id, records, now=_now_ms(), execution_id=self._execution_id
            )

    def move_key(self, old_key: str, new_key: str) -> int:
        self._check_write()
        with self._db.begin() as conn:
            return move_records(conn, self.workflow_id, old_key, new_key)

    def _check_write(self) -> None:
        if not self._writable:
            raise RecordsReadOnlyError(f"the records of {self.workflow_id!r} are read-only here")
        if self._before_write is not None:
            self._before_write()

    # -- reading --------------------------------------------------------------------------------

    def latest(self, key: str, *, kind: str | None = None) -> StoredRecord | None:
        return self.latest_many([key], kind=kind).get(key)

    def latest_many(
        self, keys: Collection[str], *, kind: str | None = None
    ) -> dict[str, StoredRecord]:
        if not keys:
            return {}
        with self._db.connect() as conn:
            return latest_records(conn, self.workflow_id, keys, kind)

    def history(
        self,
        key: str | None = None,
        *,
        kind: str | None = None,
        since: int | None = None,
        until: int | None = None,
        limit: int | None = 100,
        oldest_first: bool = False,
    ) -> list[StoredRecord]:
        """Records newest first (or oldest first); `limit` None reads every match."""
        where = RecordFilter(self.workflow_id, key, kind, since, until)
        with self._db.connect() as conn:
            return list_records(conn, where, limit=limit, oldest_first=oldest_first)
