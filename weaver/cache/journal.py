"""The edit journal's SQL: changes to many notes, recorded before they start (see
`weaver.edits.journal` for what it guarantees)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.sql.expression import bindparam

from weaver.cache.models import EditJournal, EditJournalNote

PENDING = "pending"
# Finished runs are kept this long (what a rename did stays answerable for a while), then go.
RETAIN_MS = 30 * 24 * 60 * 60 * 1000


@dataclass(frozen=True, slots=True)
class JournalNote:
    path: str
    old_hash: str
    new_hash: str
    status: str
    detail: str | None


@dataclass(frozen=True, slots=True)
class JournalRun:
    id: int
    operation: str
    arguments: dict[str, Any]
    started: int
    finished: int | None
    notes: tuple[JournalNote, ...]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def begin_run(
    conn: Connection,
    operation: str,
    arguments: dict[str, Any],
    notes: Sequence[tuple[str, str, str]],
) -> int:
    """Record a run and its notes as (path, hash as read, hash to write), all pending."""
    run_id = conn.execute(
        insert(EditJournal)
        .values(operation=operation, arguments=arguments, started=_now_ms(), finished=None)
        .returning(EditJournal.id)
    ).scalar_one()
    if notes:
        rows = [
            {"journal_id": run_id, "path": p, "old_hash": old, "new_hash": new, "status": PENDING}
            for p, old, new in notes
        ]
        conn.execute(insert(EditJournalNote), rows)
    return int(run_id)


def finish_run(
    conn: Connection, run_id: int, outcomes: Sequence[tuple[str, str, str | None]]
) -> None:
    """Store each note's (path, status, detail) and mark the run finished."""
    if outcomes:
        statement = (
            update(EditJournalNote)
            .where(EditJournalNote.journal_id == run_id)
            .where(EditJournalNote.path == bindparam("p"))
            .values(status=bindparam("s"), detail=bindparam("d"))
        )
        conn.execute(statement, [{"p": p, "s": s, "d": d} for p, s, d in outcomes])
    now = _now_ms()
    conn.execute(update(EditJournal).where(EditJournal.id == run_id).values(finished=now))
    old = select(EditJournal.id).where(EditJournal.finished < now - RETAIN_MS)
    conn.execute(delete(EditJournalNote).where(EditJournalNote.journal_id.in_(old)))
    conn.execute(delete(EditJournal).where(EditJournal.finished < now - RETAIN_MS))


_RUN_COLUMNS = (
    EditJournal.id,
    EditJournal.operation,
    EditJournal.arguments,
    EditJournal.started,
    EditJournal.finished,
)


def unfinished_runs(conn: Connection) -> list[JournalRun]:
    """Runs that started and never finished (the process died), oldest first."""
    rows = conn.execute(
        select(*_RUN_COLUMNS).where(EditJournal.finished.is_(None)).order_by(EditJournal.id)
    ).all()
    return _with_notes(conn, rows)


def get_run(conn: Connection, run_id: int) -> JournalRun | None:
    rows = conn.execute(select(*_RUN_COLUMNS).where(EditJournal.id == run_id)).all()
    found = _with_notes(conn, rows)
    return found[0] if found else None


def _with_notes(conn: Connection, runs: Sequence[Any]) -> list[JournalRun]:
    if not runs:
        return []
    rows = conn.execute(
        select(
            EditJournalNote.journal_id,
            EditJournalNote.path,
            EditJournalNote.old_hash,
            EditJournalNote.new_hash,
            EditJournalNote.status,
            EditJournalNote.detail,
        )
        .where(EditJournalNote.journal_id.in_([run[0] for run in runs]))
        .order_by(EditJournalNote.journal_id, EditJournalNote.path)
    )
    by_run: dict[int, list[JournalNote]] = {}
    for run_id, path, old, new, status, detail in rows:
        by_run.setdefault(run_id, []).append(JournalNote(path, old, new, status, detail))
    return [
        JournalRun(run[0], run[1], dict(run[2]), run[3], run[4], tuple(by_run.get(run[0], [])))
        for run in runs
    ]
