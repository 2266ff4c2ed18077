"""Which notes each indexing pass changed, so readers can update what they built, not rebuild.

The graph tools, `resolve_names` and the tag lookups keep an index built from the whole cache
(`cache.graph.ByVersion`) and used to build it again whenever the cache's version moved, a cost
paid by the first call after every edit. The indexer now records
each note whose row, tags or links it changed (written, removed, or with a link resolved
anew), and a reader holding version V updates just the notes changed since V.

Notes touched (a new size or time, the same content) are recorded and move the version too:
their row changed, and a base shows `file.mtime`. So `unchanged_since(V)` can tell a reader
holding something built at version V that the notes and attachments are still exactly so.

A pass records its notes as it writes them, with no version (it is not known yet), and stamps
them with the version it ends on; a pass that never ended leaves its rows to be stamped by the
next. `changes_since` in `cache_state` is the oldest version the rows cover: a reader older
than that builds from scratch. A big pass (a first index, `--full`, thousands of notes)
records nothing: before its first write it moves `changes_since` past every version readers
may hold, so that they rebuild once, even if the pass dies midway. Rows older than a day are
dropped; a reader idle that long rebuilds once.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from weaver.cache.models import NoteChange
from weaver.cache.write import get_state, set_state

SINCE_KEY = "changes_since"
RETAIN_MS = 24 * 60 * 60 * 1000


def record(conn: Connection, paths: Collection[str]) -> None:
    """Note these paths as changed by the pass under way."""
    if paths:
        conn.execute(insert(NoteChange), [{"path": path, "version": None} for path in paths])


def stamp(conn: Connection, version: int, previous: object) -> None:
    """The pass under way ends at `version`, its predecessor being `previous`: its rows get
    that version, and rows older than `RETAIN_MS` go."""
    conn.execute(update(NoteChange).where(NoteChange.version.is_(None)).values(version=version))
    stored = get_state(conn, SINCE_KEY)
    since = stored
    if not isinstance(since, int):  # the first pass recorded: what came before is unknown
        since = previous if isinstance(previous, int) else version
    old = select(func.max(NoteChange.version)).where(NoteChange.version < version - RETAIN_MS)
    dropped = conn.execute(old).scalar()
    if dropped is not None:  # readers from that version on still find all they need
        conn.execute(delete(NoteChange).where(NoteChange.version <= dropped))
        since = max(since, dropped)
    if since != stored:
        set_state(conn, SINCE_KEY, since)


def forget(conn: Connection, previous: object) -> None:
    """A pass that records nothing is about to write over `previous` (the cache's version):
    readers holding it or anything older must build afresh."""
    conn.execute(delete(NoteChange))
    # A cache with no version yet is new, or made again (`runtime.rebuild`): a version held by
    # anyone came from before it, and versions are times, so now is past all of them.
    since = previous + 1 if isinstance(previous, int) else int(time.time() * 1000)
    set_state(conn, SINCE_KEY, since)


def changed_since(
    conn: Connection, version: int | None, current: int | None, limit: int
) -> set[str] | None:
    """The notes changed after `version`, up to `current` (the cache's version now), including
    any pass under way; None when the recorded changes do not reach back to `version` or name
    more than `limit` notes (a reader far behind rebuilds without reading them all)."""
    since = get_state(conn, SINCE_KEY)
    if version is None or current is None or not isinstance(since, int):
        return None
    if not since <= version <= current:
        return None
    rows = conn.execute(
        select(NoteChange.path)
        .where(or_(NoteChange.version > version, NoteChange.version.is_(None)))
        .distinct()
        .limit(limit + 1)
    )
    changed = set(rows.scalars())
    return changed if len(changed) <= limit else None


def unchanged_since(conn: Connection, version: int | None) -> bool:
    """Whether the cache's notes and attachments are as they were at `version`: no pass has
    ended since (each moves the version), and none under way has written or touched a note
    (it records them as it writes, or moves `changes_since` past every version first)."""
    current = get_state(conn, "last_updated")
    if version is None or current != version:
        return False
    return changed_since(conn, version, current, 0) == set()
