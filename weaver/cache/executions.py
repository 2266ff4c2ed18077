"""Workflow executions and the engine's own vault writes: every statement the engine runs.

The `executions` table doubles as the run queue. A row is inserted `pending`; `claim` turns it
`running` in one UPDATE whose WHERE clause also counts the workflow's running rows, so two
processes (the daemon and a `weaver trigger` in a shell) can never both take the last slot:
the database serialises the two UPDATEs and the second one matches nothing. Portable SQL only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, cast, get_args

from sqlalchemy import (
    BigInteger,
    Connection,
    Table,
    and_,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)

from weaver.cache.models import Execution, Note, WorkflowRecord, WorkflowWrite

# Core table and columns rather than ORM attributes: the engine runs several of these
# statements per execution, and building them from the table is noticeably cheaper.
_TABLE = cast(Table, Execution.__table__)
col = _TABLE.c

PENDING = "pending"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = (COMPLETED, FAILED, CANCELLED)
ExecutionStatus = Literal["pending", "running", "completed", "failed", "cancelled"]
EXECUTION_STATUSES: tuple[ExecutionStatus, ...] = get_args(ExecutionStatus)
# The `content_hash` recorded for a note the engine deleted.
DELETED = ""


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """One row of `executions`, as read back."""

    id: str
    workflow_id: str
    workflow_name: str
    trigger_kind: str
    trigger_detail: dict[str, Any]
    input: dict[str, Any]
    status: str
    progress: int
    message: str | None
    attempt: int
    started: int | None
    finished: int | None
    duration: int | None
    result: Any
    error: str | None
    traceback: str | None
    process: str | None
    created: int

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True, slots=True)
class WorkflowStats:
    count: int
    last_executed: int | None


_COLUMNS = [col[field.name] for field in fields(ExecutionRecord)]


def insert_execution(
    conn: Connection,
    *,
    execution_id: str,
    workflow_id: str,
    workflow_name: str,
    trigger_kind: str,
    trigger_detail: dict[str, Any],
    input: dict[str, Any],
    created: int,
) -> None:
    """Queue a run: a `pending` row, attempt 0, no process yet."""
    conn.execute(
        insert(_TABLE).values(
            id=execution_id,
            workflow_id=workflow_id,
            workflow_name=workflow_name,
            trigger_kind=trigger_kind,
            trigger_detail=trigger_detail,
            input=input,
            status=PENDING,
            progress=0,
            attempt=0,
            created=created,
        )
    )


def claim(conn: Connection, execution_id: str, max_running: int, process: str, now: int) -> bool:
    """Make a pending row `running` if its workflow has fewer than `max_running` running rows.

    True when this call took it; False when it was not pending any more or no slot was free.
    """
    other = _TABLE.alias("other")
    running = (
        select(func.count())
        .select_from(other)
        .where(other.c.workflow_id == col.workflow_id, other.c.status == RUNNING)
        .scalar_subquery()
    )
    statement = (
        update(_TABLE)
        .where(col.id == execution_id, col.status == PENDING, running < max_running)
        .values(status=RUNNING, started=now, attempt=1, process=process, message=None)
    )
    return conn.execute(statement).rowcount == 1


def take_over(
    conn: Connection, execution_id: str, previous: str | None, process: str, now: int
) -> int | None:
    """Make a `running` row this process's, its process (`previous`) having stopped: the job
    system handed its job on after that worker's heartbeat stopped. The takeover counts as
    one more attempt, recorded with who gave it up. Returns the new attempt's number, None
    when the row was not running under `previous` any more (another worker took it)."""
    statement = (
        update(_TABLE)
        .where(col.id == execution_id, col.status == RUNNING, col.process == previous)
        .values(
            attempt=col.attempt + 1,
            started=now,
            process=process,
            progress=0,
            message=f"attempt retried on {process}: its worker {previous} stopped",
        )
        .returning(col.attempt)
    )
    attempt = conn.execute(statement).scalar()
    return None if attempt is None else int(attempt)


def list_pending(
    conn: Connection, workflow_ids: Collection[str] | None = None, limit: int = 100
) -> list[tuple[str, str]]:
    """(execution id, workflow id) of pending rows, oldest first."""
    statement = select(col.id, col.workflow_id).where(col.status == PENDING)
    if workflow_ids is not None:
        statement = statement.where(col.workflow_id.in_(list(workflow_ids)))
    statement = statement.order_by(col.created, col.id).limit(limit)
    return [(row.id, row.workflow_id) for row in conn.execute(statement)]


def start_attempt(conn: Connection, execution_id: str, attempt: int, message: str | None) -> None:
    conn.execute(
        update(_TABLE)
        .where(col.id == execution_id, col.status == RUNNING)
        .values(attempt=attempt, message=message)
    )


def set_progress(conn: Connection, execution_id: str, progress: int, message: str | None) -> None:
    values: dict[str, Any] = {"progress": progress}
    if message is not None:
        values["message"] = message
    conn.execute(
        update(_TABLE).where(col.id == execution_id, col.status == RUNNING).values(**values)
    )


def finish(
    conn: Connection,
    execution_id: str,
    *,
    status: str,
    now: int,
    message: str | None,
    result: Any = None,
    error: str | None = None,
    traceback: str | None = None,
    from_status: Sequence[str] = (RUNNING,),
    process: str | None = None,
) -> bool:
    """End a run (or cancel a pending one); False when the row had already ended. With
    `process`, only while that process runs it (a worker whose run was taken over by another,
    its heartbeat having been late, must not record an end over the new attempt's)."""
    values: dict[str, Any] = {
        "status": status,
        "finished": now,
        "duration": now - col.started,  # NULL for a pending row cancelled
        "message": message,
        "result": result,
        "error": error,
        "traceback": traceback,
    }
    if status == COMPLETED:
        values["progress"] = 100
    statement = (
        update(_TABLE)
        .where(col.id == execution_id, col.status.in_(list(from_status)))
        .values(**values)
    )
    if process is not None:
        statement = statement.where(col.process == process)
    return conn.execute(statement).rowcount == 1


def get_execution(conn: Connection, execution_id: str) -> ExecutionRecord | None:
    row = conn.execute(select(*_COLUMNS).where(col.id == execution_id)).first()
    return None if row is None else ExecutionRecord(*row)


def list_executions(
    conn: Connection,
    workflow_id: str | None,
    limit: int,
    offset: int,
    status: str | None = None,
    *,
    since: int | None = None,
    until: int | None = None,
) -> tuple[list[ExecutionRecord], int]:
    """A page of history (of one workflow, in one status, asked for within [since, until)),
    newest first, and the total number of rows matching."""
    conditions = []
    if workflow_id is not None:
        conditions.append(col.workflow_id == workflow_id)
    if status is not None:
        conditions.append(col.status == status)
    if since is not None:
        conditions.append(col.created >= since)
    if until is not None:
        conditions.append(col.created < until)
    page = select(*_COLUMNS).where(*conditions).order_by(col.created.desc(), col.id.desc())
    count = select(func.count()).select_from(_TABLE).where(*conditions)
    rows = conn.execute(page.limit(limit).offset(offset))
    return [ExecutionRecord(*row) for row in rows], conn.execute(count).scalar_one()


def insert_executions(conn: Connection, records: Sequence[ExecutionRecord]) -> None:
    """Write whole rows at once (one executemany): imports, and test and benchmark vaults."""
    if records:
        conn.execute(insert(_TABLE), [_row_of(record) for record in records])


def _row_of(record: ExecutionRecord) -> dict[str, Any]:
    return {field.name: getattr(record, field.name) for field in fields(ExecutionRecord)}


def count_by_status(conn: Connection, since: int) -> dict[str, int]:
    """How many executions asked for since `since` are in each status."""
    # Grouped by an expression: by the bare column, SQLite reads the whole status index
    # instead of the `created` range.
    status = func.coalesce(col.status, "")
    statement = select(status, func.count()).where(col.created >= since).group_by(status)
    return {row[0]: row[1] for row in conn.execute(statement)}


def count_by_day(conn: Connection, since: int, day_ms: int) -> dict[tuple[int, str], int]:
    """Executions asked for since `since`, counted by (day number, status); the day number is
    `created // day_ms` (UTC days)."""
    day = (col.created / day_ms).cast(BigInteger)
    statement = (
        select(day, col.status, func.count()).where(col.created >= since).group_by(day, col.status)
    )
    return {(int(row[0]), row[1]): row[2] for row in conn.execute(statement)}


def workflow_stats(conn: Connection) -> dict[str, WorkflowStats]:
    """Per workflow: how many executions the history holds and when the last one started."""
    statement = select(
        col.workflow_id, func.count(), func.max(func.coalesce(col.started, 0))
    ).group_by(col.workflow_id)
    return {
        row[0]: WorkflowStats(count=row[1], last_executed=row[2] or None)
        for row in conn.execute(statement)
    }


def list_failures(conn: Connection, since: int, until: int) -> list[ExecutionRecord]:
    """Executions that ended `failed` within [since, until), oldest first (the status index
    narrows it to failed rows, which retention keeps few)."""
    statement = (
        select(*_COLUMNS)
        .where(col.status == FAILED, col.finished >= since, col.finished < until)
        .order_by(col.finished, col.id)
    )
    return [ExecutionRecord(*row) for row in conn.execute(statement)]


def list_running(conn: Connection) -> list[tuple[str, str | None, int | None]]:
    """(execution id, process, started) of every `running` row."""
    rows = conn.execute(select(col.id, col.process, col.started).where(col.status == RUNNING))
    return [(row.id, row.process, row.started) for row in rows]


def list_active(conn: Connection) -> list[tuple[str, str, int, str | None]]:
    """(execution id, status, progress, message) of every pending or running row, by id."""
    statement = (
        select(col.id, col.status, col.progress, col.message)
        .where(col.status.in_([PENDING, RUNNING]))
        .order_by(col.id)
    )
    return [(row.id, row.status, row.progress, row.message) for row in conn.execute(statement)]


def newest_created(conn: Connection) -> int | None:
    """When the newest execution was asked for (one step down the `created` index)."""
    return conn.execute(select(func.max(col.created))).scalar()


def mark_interrupted(conn: Connection, execution_ids: Iterable[str], now: int, error: str) -> int:
    done = 0
    for execution_id in execution_ids:
        done += finish(conn, execution_id, status=FAILED, now=now, message=error, error=error)
    return done


def prune(conn: Connection, *, older_than: int | None, keep: int | None) -> int:
    """Delete ended rows created before `older_than`, then all but the newest `keep` ended rows.

    Pending and running rows are never pruned. The count cut finds the first row to drop with
    LIMIT/OFFSET and deletes from there down, which every SQL database can do.
    """
    ended = col.status.in_(TERMINAL)
    removed = 0
    if older_than is not None:
        removed += conn.execute(delete(_TABLE).where(ended, col.created < older_than)).rowcount
    if keep is not None:
        cut = conn.execute(
            select(col.created, col.id)
            .where(ended)
            .order_by(col.created.desc(), col.id.desc())
            .limit(1)
            .offset(keep)
        ).first()
        if cut is not None:
            below = or_(
                col.created < cut.created,
                and_(col.created == cut.created, col.id <= cut.id),
            )
            removed += conn.execute(delete(_TABLE).where(ended, below)).rowcount
    return removed


def record_write(
    conn: Connection, path: str, content_hash: str, execution_id: str | None, now: int
) -> None:
    """Remember that the engine wrote `path` with this content (or deleted it: `DELETED`)."""
    key = (WorkflowWrite.path == path, WorkflowWrite.content_hash == content_hash)
    conn.execute(delete(WorkflowWrite).where(*key))
    conn.execute(
        insert(WorkflowWrite).values(
            path=path, content_hash=content_hash, execution_id=execution_id, written=now
        )
    )


def self_written(conn: Connection, present: Collection[str], deleted: Collection[str]) -> set[str]:
    """The paths among these whose current state is one the engine wrote itself.

    `present` are notes in the cache now (added, modified, moved here): they match when the
    cache's content hash equals a hash the engine wrote. `deleted` match a recorded deletion.
    """
    found: set[str] = set()
    if present:
        joined = select(WorkflowWrite.path).join(
            Note,
            and_(Note.path == WorkflowWrite.path, Note.content_hash == WorkflowWrite.content_hash),
        )
        found.update(conn.execute(joined.where(WorkflowWrite.path.in_(list(present)))).scalars())
    if deleted:
        gone = select(WorkflowWrite.path).where(
            WorkflowWrite.path.in_(list(deleted)), WorkflowWrite.content_hash == DELETED
        )
        found.update(conn.execute(gone).scalars())
    return found


def forget_deletions(conn: Connection, paths: Collection[str]) -> None:
    """A note the engine deleted came back: its deletion no longer says anything."""
    if paths:
        conn.execute(
            delete(WorkflowWrite).where(
                WorkflowWrite.path.in_(list(paths)), WorkflowWrite.content_hash == DELETED
            )
        )


def prune_writes(conn: Connection, older_than: int) -> int:
    return conn.execute(delete(WorkflowWrite).where(WorkflowWrite.written < older_than)).rowcount


@dataclass(frozen=True, slots=True)
class ExecutionOutputs:
    """What one execution left behind: the notes it wrote and deleted, its records by kind."""

    written: list[str]
    deleted: list[str]
    records: dict[str, int]


def get_outputs(
    conn: Connection, execution_id: str, workflow_id: str, since: int
) -> ExecutionOutputs:
    """The outputs of the execution created at `since` (ms): both reads go through the time
    index of their table, so a long history costs nothing."""
    writes = conn.execute(
        select(WorkflowWrite.path, WorkflowWrite.content_hash)
        .where(WorkflowWrite.written >= since, WorkflowWrite.execution_id == execution_id)
        .distinct()
        .order_by(WorkflowWrite.path)
    ).all()
    kinds = conn.execute(
        select(WorkflowRecord.kind, func.count())
        .where(
            WorkflowRecord.workflow_id == workflow_id,
            WorkflowRecord.recorded_at >= since,
            WorkflowRecord.execution_id == execution_id,
        )
        .group_by(WorkflowRecord.kind)
        .order_by(WorkflowRecord.kind)
    ).all()
    written = sorted({path for path, digest in writes if digest != DELETED})
    deleted = sorted({path for path, digest in writes if digest == DELETED} - set(written))
    return ExecutionOutputs(written, deleted, {kind: int(count) for kind, count in kinds})


def live_job_workers(conn: Connection, heard_within_s: float) -> int:
    """How many job-system workers (`weaver worker`) sent a heartbeat in the last
    `heard_within_s` seconds: Procrastinate's own table, on PostgreSQL."""
    statement = text(
        "SELECT count(*) FROM procrastinate_workers "
        "WHERE last_heartbeat > now() - make_interval(secs => :seconds)"
    )
    return int(conn.execute(statement, {"seconds": heard_within_s}).scalar_one())
