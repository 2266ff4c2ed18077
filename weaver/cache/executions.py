"""Workflow executions and the engine's own vault writes: every statement the engine runs.

The `executions` table doubles as the run queue. A row is inserted `pending`; `claim` turns it
`running` in one UPDATE whose WHERE clause also counts the workflow's running rows, so two
processes (the daemon and a `weaver trigger` in a shell) can never both take the last slot:
the database serialises the two UPDATEs and the second one matches nothing. Portable SQL only.

A run whose engine stopped under it (a clean stop, or a crash found at the next start) is put
back `pending` as it was asked for, its attempt counted, by `requeue_interrupted`: the next
claim is its next attempt. Each interruption is listed in its `trigger_detail` under
`interruptions` (a JSON column, so no schema change), which is how the history shows a run
that was interrupted and then resumed.

It stays whole at ~505 lines: it is every statement about a run's rows (its execution, the
notes it wrote, the records it left), as `cache/` keeps one subject's SQL in one module.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
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

from weaver.cache.dialect import is_postgres
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
# The key of `trigger_detail` listing a run's interruptions (`Interruption`), oldest first.
INTERRUPTIONS = "interruptions"


@dataclass(frozen=True, slots=True)
class Interruption:
    """One attempt of a run that ended because its engine stopped, not by itself."""

    attempt: int
    at: int
    reason: str


def interruptions_of(detail: dict[str, Any]) -> list[Interruption]:
    """The interruptions recorded in a row's `trigger_detail`, oldest first."""
    return [
        Interruption(int(item["attempt"]), int(item["at"]), str(item["reason"]))
        for item in detail.get(INTERRUPTIONS, [])
    ]


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

    @property
    def interruptions(self) -> list[Interruption]:
        return interruptions_of(self.trigger_detail)


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
    The attempt counts on from the row's (0 when queued, the interrupted attempt's when resumed).
    """
    if is_postgres(conn):
        # Two claims of one workflow's rows in concurrent transactions each count the running
        # rows before the other commits (READ COMMITTED), and both take the last slot: claims
        # of a workflow queue on a lock of its own until their transaction ends.
        conn.execute(
            select(func.pg_advisory_xact_lock(func.hashtext(col.workflow_id))).where(
                col.id == execution_id
            )
        )
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
        .values(status=RUNNING, started=now, attempt=col.attempt + 1, process=process, message=None)
    )
    return conn.execute(statement).rowcount == 1


def requeue_interrupted(
    conn: Connection, record: ExecutionRecord, *, now: int, reason: str, limit: int
) -> str | None:
    """Put back `pending` a run its engine stopped under (`record`, as read in this
    transaction, running under `record.process`): the next claim runs it again, same trigger
    and input, as its next attempt. A run interrupted `limit` times already ends `failed`
    instead, saying so: a run that takes its process down each time must not loop forever.

    Returns the status written (`pending` or `failed`); None when the row was not running
    under that process any more (it ended, or another process took it)."""
    detail = _with_interruption(record, now, reason)
    count = len(detail[INTERRUPTIONS])
    values: dict[str, Any] = {"trigger_detail": detail, "progress": 0}
    if count > limit:
        error = f"{reason}; given up: interrupted {count} times, more than the {limit} resumed"
        values |= {"status": FAILED, "finished": now, "duration": now - col.started}
        values |= {"message": error, "error": error}
    else:
        resumes = f"resumes as attempt {record.attempt + 1} at the next start of an engine"
        values |= {"status": PENDING, "process": None, "message": f"{reason}; {resumes}"}
    statement = (
        update(_TABLE)
        .where(col.id == record.id, col.status == RUNNING, col.process == record.process)
        .values(**values)
    )
    return str(values["status"]) if conn.execute(statement).rowcount == 1 else None


def _with_interruption(record: ExecutionRecord, now: int, reason: str) -> dict[str, Any]:
    entry = {"attempt": record.attempt, "at": now, "reason": reason}
    listed = list(record.trigger_detail.get(INTERRUPTIONS, []))
    return {**record.trigger_detail, INTERRUPTIONS: [*listed, entry]}


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


def has_live_job(conn: Connection, task_name: str, execution_id: str) -> bool:
    """Whether the job system holds a job of `task_name` for this execution that will still
    run (queued, or held by a worker, alive or to be handed back): Procrastinate's table."""
    statement = text(
        "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs WHERE task_name = :task "
        "AND status IN ('todo', 'doing') AND args ->> 'execution_id' = :execution_id)"
    )
    found = conn.execute(statement, {"task": task_name, "execution_id": execution_id})
    return bool(found.scalar_one())


def live_job_workers(conn: Connection, heard_within_s: float) -> int:
    """How many job-system workers (`weaver worker`) sent a heartbeat in the last
    `heard_within_s` seconds: Procrastinate's own table, on PostgreSQL."""
    statement = text(
        "SELECT count(*) FROM procrastinate_workers "
        "WHERE last_heartbeat > now() - make_interval(secs => :seconds)"
    )
    return int(conn.execute(statement, {"seconds": heard_within_s}).scalar_one())
