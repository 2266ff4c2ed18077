"""The audit log's SQL: which client made each write by Weaver, kept beside the edit journal.

A row per note of a journalled run. `record_run` inserts them, outcome "pending", in the
transaction that journals the run (`journal.begin_run`); `settle_run` copies each note's status
from the journal in the transaction that finishes it (`journal.finish_run`, which a restart's
recovery calls too). So a row never says "written" for a write that did not land, and a run
that landed always has its rows (both or neither are committed). Pruned by age, set-based.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from weaver.cache.models import AuditEntry, EditJournalNote

PENDING = "pending"


class Actor(Protocol):
    """Who is writing (`weaver.edits.attribution.Actor`): `kind` ("local", "token", "oauth",
    "cli", "workflow"), a stable `client_id` (what filters key on), the `name` a person reads,
    and the `tool` (or command, or workflow operation) that wrote."""

    @property
    def kind(self) -> str: ...
    @property
    def client_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def tool(self) -> str: ...


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """`client`: a client id or name; `note`: a note's path, or a folder ending in "/";
    `since`: Unix milliseconds."""

    client: str | None = None
    note: str | None = None
    since: int | None = None


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    at: int  # Unix milliseconds
    caller_kind: str
    client_id: str
    client_name: str
    tool: str
    path: str
    edit_id: int
    outcome: str
    detail: str | None


def record_run(conn: Connection, edit_id: int, actor: Actor, paths: Sequence[str], at: int) -> None:
    """One pending row per note of run `edit_id` (in the transaction that journals it)."""
    if not paths:
        return
    rows = [
        {
            "at": at,
            "caller_kind": actor.kind,
            "client_id": actor.client_id,
            "client_name": actor.name,
            "tool": actor.tool,
            "path": path,
            "edit_id": edit_id,
            "outcome": PENDING,
            "detail": None,
        }
        for path in paths
    ]
    conn.execute(insert(AuditEntry), rows)


def settle_run(conn: Connection, edit_id: int) -> None:
    """Each of the run's rows takes its note's outcome from the journal, in one statement."""
    note = (EditJournalNote.journal_id == AuditEntry.edit_id) & (
        EditJournalNote.path == AuditEntry.path
    )
    status = select(EditJournalNote.status).where(note).scalar_subquery()
    detail = select(EditJournalNote.detail).where(note).scalar_subquery()
    conn.execute(
        update(AuditEntry)
        .where(AuditEntry.edit_id == edit_id, AuditEntry.outcome == PENDING)
        .values(outcome=status, detail=detail)
    )


def prune(conn: Connection, older_than: int) -> int:
    """Delete the rows written before `older_than` (Unix ms); how many went."""
    return conn.execute(delete(AuditEntry).where(AuditEntry.at < older_than)).rowcount or 0


def list_entries(
    conn: Connection, where: AuditFilter, limit: int, offset: int
) -> tuple[list[AuditRow], int]:
    """The rows matching `where`, newest first: one page and how many match in all."""
    conditions = []
    if where.client:
        conditions.append(
            or_(AuditEntry.client_id == where.client, AuditEntry.client_name == where.client)
        )
    if where.note:
        if where.note.endswith("/"):
            conditions.append(AuditEntry.path.startswith(where.note, autoescape=True))
        else:
            conditions.append(AuditEntry.path == where.note)
    if where.since is not None:
        conditions.append(AuditEntry.at >= where.since)
    total = conn.execute(
        select(func.count()).select_from(AuditEntry).where(*conditions)
    ).scalar_one()
    rows = conn.execute(
        select(
            AuditEntry.id,
            AuditEntry.at,
            AuditEntry.caller_kind,
            AuditEntry.client_id,
            AuditEntry.client_name,
            AuditEntry.tool,
            AuditEntry.path,
            AuditEntry.edit_id,
            AuditEntry.outcome,
            AuditEntry.detail,
        )
        .where(*conditions)
        .order_by(AuditEntry.at.desc(), AuditEntry.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return [AuditRow(**row._mapping) for row in rows], int(total)
