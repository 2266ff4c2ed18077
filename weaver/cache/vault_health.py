"""Vault problems the link graph does not hold (see `views.health` for those it does): notes
that failed to parse, and notes changed per day."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from weaver.cache.models import Note
from weaver.paging import Page


@dataclass(frozen=True, slots=True)
class ParseFailure:
    path: str
    error: str


def list_parse_failures(conn: Connection, limit: int, offset: int) -> Page[ParseFailure]:
    """Notes the indexer could not parse, with its error, by path (one scan; they are few)."""
    rows = conn.execute(
        select(Note.path, Note.error).where(Note.error.is_not(None)).order_by(Note.path)
    ).all()
    items = [ParseFailure(path, error or "") for path, error in rows[offset : offset + limit]]
    return Page(items, len(rows), offset, limit)


def count_modified_by_day(conn: Connection, since: int, day_ms: int) -> dict[int, int]:
    """Notes last modified since `since`, counted by UTC day number (`modified // day_ms`)."""
    day = (Note.modified / day_ms).cast(Note.modified.type)
    rows = conn.execute(select(day, func.count()).where(Note.modified >= since).group_by(day))
    return {int(row[0]): row[1] for row in rows}
