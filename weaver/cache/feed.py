"""The durable change feed: every file event a pass applies, kept in the cache for consumers.

Every change reaches the cache through the indexer, which writes the pass's events into
`vault_events` in the transactions that write the notes: nothing the cache holds was applied
without its event. Events of a pass still under way are provisional (`sealed = 0`); a pass that
died midway has its provisional rows sealed by the next (`seal_leftovers`).

Consumers read sealed rows after their cursor (`event_cursors`) and move it, by compare-and-set,
in the transaction that acts on them: each consumer sees each event exactly once, across
processes, crashes and restarts; of two processes consuming under one name, one wins, the other
retries.

Retention: rows older than `RETAIN_MS` (7 days) and all but the newest `MAX_EVENTS` (100,000)
go, whether read or not; a consumer that far behind skips what went, with a warning.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, select, update

from weaver.cache.models import EventCursor, VaultEventRow
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent

RETAIN_MS = 7 * 24 * 60 * 60 * 1000
MAX_EVENTS = 100_000


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One sealed event and its position in the feed."""

    id: int
    event: VaultEvent


# The columns every read of the feed takes (`_event` makes the event of a row).
_EVENT_COLUMNS = (
    VaultEventRow.id,
    VaultEventRow.kind,
    VaultEventRow.path,
    VaultEventRow.old_path,
    VaultEventRow.initial,
)


def seal_leftovers(conn: Connection) -> list[VaultEvent]:
    """Seal the provisional rows of a pass that never ended (their notes are in the cache);
    returns their events. One indexed look, as nearly every pass finds none."""
    rows = conn.execute(
        select(*_EVENT_COLUMNS).where(VaultEventRow.sealed.is_(False)).order_by(VaultEventRow.id)
    ).all()
    if rows:
        conn.execute(
            update(VaultEventRow).where(VaultEventRow.sealed.is_(False)).values(sealed=True)
        )
    return [_event(row.kind, row.path, row.old_path, row.initial) for row in rows]


def record_provisional(conn: Connection, events: Sequence[VaultEvent]) -> None:
    """In the transaction writing these notes, while the pass is under way."""
    _insert(conn, events, sealed=False)


def record_final(conn: Connection, events: Sequence[VaultEvent]) -> None:
    """In the transaction ending the pass: its provisional rows give way to its final events,
    and the feed is cut back to `MAX_EVENTS` rows.

    A pass that removed nothing paired nothing into moves: its final events are its
    provisional ones, which are sealed where they are (a first index of 100,000 notes would
    otherwise delete and insert them all again)."""
    unsealed = VaultEventRow.sealed.is_(False)
    provisional = conn.execute(select(func.count()).where(unsealed)).scalar_one()
    if provisional == len(events) and all(
        isinstance(event, NoteAdded | NoteModified) for event in events
    ):
        conn.execute(update(VaultEventRow).where(unsealed).values(sealed=True))
    else:
        conn.execute(delete(VaultEventRow).where(unsealed))
        _insert(conn, events, sealed=True)
    _trim(conn, events)


def _trim(conn: Connection, events: Sequence[VaultEvent]) -> None:
    if events:
        newest = conn.execute(select(func.max(VaultEventRow.id))).scalar() or 0
        conn.execute(delete(VaultEventRow).where(VaultEventRow.id <= newest - MAX_EVENTS))


def _insert(conn: Connection, events: Sequence[VaultEvent], sealed: bool) -> None:
    if not events:
        return
    now = _now_ms()
    rows = [
        {
            "kind": event.kind,
            "path": event.path,
            "old_path": event.old_path if isinstance(event, NoteMoved) else None,
            "initial": isinstance(event, NoteAdded) and event.initial,
            "sealed": sealed,
            "created": now,
        }
        for event in events
    ]
    conn.execute(insert(VaultEventRow), rows)


def read_after(conn: Connection, position: int, limit: int) -> list[FeedEntry]:
    """Up to `limit` sealed events after `position`, oldest first."""
    rows = conn.execute(
        select(*_EVENT_COLUMNS)
        .where(VaultEventRow.id > position, VaultEventRow.sealed.is_(True))
        .order_by(VaultEventRow.id)
        .limit(limit)
    )
    return [
        FeedEntry(row.id, _event(row.kind, row.path, row.old_path, row.initial)) for row in rows
    ]


def count_after(conn: Connection, position: int, at_most: int) -> int:
    """How many sealed events follow `position`, counted up to `at_most` (a backlog's size
    is all a consumer asks; counting on past that would read the whole feed)."""
    waiting = (
        select(VaultEventRow.id)
        .where(VaultEventRow.id > position, VaultEventRow.sealed.is_(True))
        .limit(at_most)
        .subquery()
    )
    return int(conn.execute(select(func.count()).select_from(waiting)).scalar() or 0)


def _event(kind: str, path: str, old_path: str | None, initial: bool) -> VaultEvent:
    match kind:
        case "add":
            return NoteAdded(path, initial=bool(initial))
        case "modify":
            return NoteModified(path)
        case "delete":
            return NoteDeleted(path)
        case _:
            return NoteMoved(old_path=old_path or path, path=path)


def oldest_id(conn: Connection) -> int | None:
    return conn.execute(select(func.min(VaultEventRow.id))).scalar()


def newest_id(conn: Connection) -> int:
    """The position of the newest event (sealed or not); 0 for an empty feed."""
    return conn.execute(select(func.max(VaultEventRow.id))).scalar() or 0


def get_cursor(conn: Connection, consumer: str) -> int | None:
    """The id of the last event `consumer` acted on; None for a consumer never seen."""
    return conn.execute(
        select(EventCursor.position).where(EventCursor.consumer == consumer)
    ).scalar()


def advance_cursor(conn: Connection, consumer: str, expected: int | None, position: int) -> bool:
    """Move the cursor from `expected` to `position`; False (nothing changed) when another
    process moved it first, in which case the caller must roll back what it did."""
    now = _now_ms()
    if expected is None:
        found = conn.execute(select(EventCursor.consumer).where(EventCursor.consumer == consumer))
        if found.first() is not None:
            return False
        conn.execute(insert(EventCursor).values(consumer=consumer, position=position, updated=now))
        return True
    result = conn.execute(
        update(EventCursor)
        .where(EventCursor.consumer == consumer, EventCursor.position == expected)
        .values(position=position, updated=now)
    )
    return bool(result.rowcount)


def prune(conn: Connection, now: int | None = None) -> int:
    """Drop sealed rows older than `RETAIN_MS`; returns how many went."""
    cutoff = (_now_ms() if now is None else now) - RETAIN_MS
    result = conn.execute(
        delete(VaultEventRow).where(VaultEventRow.created < cutoff, VaultEventRow.sealed.is_(True))
    )
    return int(result.rowcount or 0)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
