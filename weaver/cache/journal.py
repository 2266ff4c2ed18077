"""The edit journal's SQL: every write by Weaver, recorded before it lands and kept as history.

A run is one operation (an edit, a move with its link rewrites, a tag renamed across the vault)
and its notes, each with its hash as read and as it will be ("" for absent). `old_data` keeps
what the write replaced, for undo; `new_data` what a change to many notes will write, until the
run finishes, so that `weaver.edits.interrupted` can finish it after a crash. See that module for
what is guaranteed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.sql.expression import bindparam

from weaver.cache import audit_log
from weaver.cache.models import EditJournal, EditJournalNote

PENDING, WRITTEN, SKIPPED, FAILED = "pending", "written", "skipped", "failed"
# Finished runs are kept this long (what an edit replaced stays restorable for a while), then go.
RETAIN_MS = 30 * 24 * 60 * 60 * 1000
# The replaced texts kept for undo, all notes together: past it the oldest are dropped first.
HISTORY_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class PlannedNote:
    """A note a run is about to change: hashes "" where the note is absent (before or after)."""

    path: str
    old_hash: str
    new_hash: str
    old_data: bytes | None = None  # what the write replaces, kept for undo
    new_data: bytes | None = None  # what it writes, kept until the run ends (crash recovery)


@dataclass(frozen=True, slots=True)
class JournalNote:
    path: str
    old_hash: str
    new_hash: str
    status: str
    detail: str | None
    new_data: bytes | None = None


@dataclass(frozen=True, slots=True)
class JournalRun:
    id: int
    operation: str
    arguments: dict[str, Any]
    started: int
    finished: int | None
    notes: tuple[JournalNote, ...]


@dataclass(frozen=True, slots=True)
class NoteEdit:
    """One write of one note, as `list_note_edits` shows it."""

    journal_id: int
    operation: str
    arguments: dict[str, Any]
    path: str
    old_hash: str
    new_hash: str
    written_at: int
    restorable: bool  # the replaced text is still kept


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def begin_run(
    conn: Connection,
    operation: str,
    arguments: dict[str, Any],
    notes: Sequence[PlannedNote],
    actor: audit_log.Actor | None = None,
) -> int:
    """Record a run and its notes, all pending, before the first of them is written, and with
    an `actor` its audit rows (the same transaction: the audit never lacks a journalled run)."""
    started = now_ms()
    run_id = conn.execute(
        insert(EditJournal)
        .values(operation=operation, arguments=arguments, started=started, finished=None)
        .returning(EditJournal.id)
    ).scalar_one()
    if actor is not None:
        audit_log.record_run(conn, int(run_id), actor, [n.path for n in notes], started)
    if notes:
        rows = [
            {
                "journal_id": run_id,
                "path": n.path,
                "old_hash": n.old_hash,
                "new_hash": n.new_hash,
                "status": PENDING,
                "old_data": n.old_data,
                "old_size": None if n.old_data is None else len(n.old_data),
                "new_data": n.new_data,
            }
            for n in notes
        ]
        conn.execute(insert(EditJournalNote), rows)
    return int(run_id)


def finish_run(
    conn: Connection,
    run_id: int,
    outcomes: Sequence[tuple[str, str, str | None]],
    *,
    new_hashes: dict[str, str] | None = None,
) -> None:
    """Store each note's (path, status, detail) and mark the run finished. A note written
    keeps what it replaced; `new_hashes` corrects a note written with other text than planned
    (re-read after a concurrent save). The planned texts are dropped: nothing is left to do."""
    now = now_ms()
    written = [o for o in outcomes if o[1] == WRITTEN]
    others = [o for o in outcomes if o[1] != WRITTEN]
    note = (EditJournalNote.journal_id == run_id, EditJournalNote.path == bindparam("p"))
    if written:  # keeps what it replaced (the history); the planned text is no longer needed
        statement = update(EditJournalNote).where(*note)
        conn.execute(
            statement.values(status=WRITTEN, detail=bindparam("d"), written_at=now, new_data=None),
            [{"p": p, "d": d} for p, _, d in written],
        )
    if others:  # not an edit after all: nothing to keep
        statement = update(EditJournalNote).where(*note)
        values = {"new_data": None, "old_data": None, "old_size": None}
        conn.execute(
            statement.values(status=bindparam("s"), detail=bindparam("d"), **values),
            [{"p": p, "s": s, "d": d} for p, s, d in others],
        )
    if new_hashes:
        statement = update(EditJournalNote).where(*note).values(new_hash=bindparam("h"))
        conn.execute(statement, [{"p": p, "h": h} for p, h in new_hashes.items()])
    conn.execute(update(EditJournal).where(EditJournal.id == run_id).values(finished=now))
    audit_log.settle_run(conn, run_id)
    prune(conn, now)


def prune(conn: Connection, now: int, max_bytes: int = HISTORY_MAX_BYTES) -> None:
    """Drop runs finished more than `RETAIN_MS` ago, and the oldest replaced texts past
    `max_bytes` in all (their runs stay listed, no longer restorable)."""
    old = select(EditJournal.id).where(EditJournal.finished < now - RETAIN_MS)
    conn.execute(delete(EditJournalNote).where(EditJournalNote.journal_id.in_(old)))
    conn.execute(delete(EditJournal).where(EditJournal.finished < now - RETAIN_MS))
    total = conn.execute(select(func.sum(EditJournalNote.old_size))).scalar_one()
    if total is None or total <= max_bytes:
        return  # the common case: one sum over the index, no text read
    kept = (
        select(
            EditJournalNote.journal_id,
            EditJournalNote.path,
            func.sum(EditJournalNote.old_size)
            .over(order_by=(EditJournalNote.journal_id.desc(), EditJournalNote.path))
            .label("running"),
        )
        .where(EditJournalNote.old_size.is_not(None))
        .subquery()
    )
    over = select(kept.c.journal_id, kept.c.path).where(kept.c.running > max_bytes)
    doomed = conn.execute(over).all()
    conn.execute(
        update(EditJournalNote)
        .where(EditJournalNote.journal_id == bindparam("j"))
        .where(EditJournalNote.path == bindparam("p"))
        .values(old_data=None, old_size=None),
        [{"j": j, "p": p} for j, p in doomed],
    )


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
    return _with_notes(conn, rows, with_data=True)


def get_run(conn: Connection, run_id: int) -> JournalRun | None:
    rows = conn.execute(select(*_RUN_COLUMNS).where(EditJournal.id == run_id)).all()
    found = _with_notes(conn, rows, with_data=False)
    return found[0] if found else None


def _with_notes(conn: Connection, runs: Sequence[Any], *, with_data: bool) -> list[JournalRun]:
    if not runs:
        return []
    data = EditJournalNote.new_data if with_data else None
    rows = conn.execute(
        select(
            EditJournalNote.journal_id,
            EditJournalNote.path,
            EditJournalNote.old_hash,
            EditJournalNote.new_hash,
            EditJournalNote.status,
            EditJournalNote.detail,
            *([data] if data is not None else []),
        )
        .where(EditJournalNote.journal_id.in_([run[0] for run in runs]))
        .order_by(EditJournalNote.journal_id, EditJournalNote.path)
    )
    by_run: dict[int, list[JournalNote]] = {}
    for run_id, *fields in rows:
        by_run.setdefault(run_id, []).append(JournalNote(*fields))
    return [
        JournalRun(run[0], run[1], dict(run[2]), run[3], run[4], tuple(by_run.get(run[0], [])))
        for run in runs
    ]


# ---------------------------------------------------------------- a note's history


_EDIT_COLUMNS = (
    EditJournal.id,
    EditJournal.operation,
    EditJournal.arguments,
    EditJournalNote.path,
    EditJournalNote.old_hash,
    EditJournalNote.new_hash,
    EditJournalNote.written_at,
)


def list_note_edits(
    conn: Connection, path: str, limit: int, offset: int
) -> tuple[list[NoteEdit], int]:
    """The writes of `path` by Weaver, newest first: one page and how many there are."""
    written = (EditJournalNote.path == path, EditJournalNote.status == WRITTEN)
    total = conn.execute(
        select(func.count()).select_from(EditJournalNote).where(*written)
    ).scalar_one()
    rows = conn.execute(
        select(*_EDIT_COLUMNS, EditJournalNote.old_size.is_not(None))
        .join(EditJournal, EditJournal.id == EditJournalNote.journal_id)
        .where(*written)
        .order_by(EditJournal.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return [
        NoteEdit(r[0], r[1], dict(r[2]), r[3], r[4], r[5], r[6] or 0, bool(r[7])) for r in rows
    ], int(total)


def get_replaced_text(
    conn: Connection, run_id: int, path: str
) -> tuple[NoteEdit, bytes | None] | None:
    """One write of `path` and the bytes it replaced (None once pruned or when it created the
    note); None when there is no such write."""
    row = conn.execute(
        select(*_EDIT_COLUMNS, EditJournalNote.old_data)
        .join(EditJournal, EditJournal.id == EditJournalNote.journal_id)
        .where(
            EditJournalNote.journal_id == run_id,
            EditJournalNote.path == path,
            EditJournalNote.status == WRITTEN,
        )
    ).first()
    if row is None:
        return None
    data = row[7]
    edit = NoteEdit(
        row[0], row[1], dict(row[2]), row[3], row[4], row[5], row[6] or 0, data is not None
    )
    return edit, (bytes(data) if data is not None else None)
