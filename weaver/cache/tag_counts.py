"""How many notes each tag covers, kept in `tag_counts` as notes are written and forgotten.

Counting the notes under a broad tag means reading every tag row below it and removing the
notes that carry two of them, a cost that grows with the tag and was paid by every
`search_tags`, `query_files tag=` and `get_stats`. The writer knows which tags a note gains
and loses, so it keeps the answer instead: a handful of upserts per batch.

A row per tag and per ancestor of a tag (`a` and `a/b` for `a/b/c`): `notes` counts the notes
carrying the tag or one nested below it, each once (what a search for the tag finds); `own`
those carrying exactly this tag (what `get_stats` ranks). A row whose `notes` reaches 0 is
deleted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from sqlalchemy import Connection, delete, func, select, text

from weaver.cache.models import Tag, TagCounter

_UPSERT = text(
    "INSERT INTO tag_counts (key, notes, own) VALUES (:key, :notes, :own) "
    "ON CONFLICT (key) DO UPDATE SET "
    "notes = tag_counts.notes + excluded.notes, own = tag_counts.own + excluded.own"
)


def scopes(keys: Iterable[str]) -> set[str]:
    """Every key with all its ancestors: {`a/b/c`} -> {`a`, `a/b`, `a/b/c`}."""
    found: set[str] = set()
    for key in keys:
        slash = key.find("/")
        while slash != -1:
            found.add(key[:slash])
            slash = key.find("/", slash + 1)
        found.add(key)
    return found


class TagDelta:
    """Changes to the counts from notes gained (+1) and lost (-1), applied in one upsert."""

    def __init__(self) -> None:
        self.notes: Counter[str] = Counter()
        self.own: Counter[str] = Counter()

    def add(self, keys: Collection[str], sign: int) -> None:
        """A note with these (distinct, normalised) tag keys appeared (1) or went away (-1)."""
        # Plain loops: `Counter.update` with a mapping costs several times more per key, and a
        # first index adds every note's keys.
        own, notes = self.own, self.notes
        for key in keys:
            own[key] += sign
        for key in scopes(keys):
            notes[key] += sign

    def apply(self, conn: Connection) -> None:
        rows = [
            {"key": key, "notes": change, "own": self.own.get(key, 0)}
            for key, change in self.notes.items()
            if change or self.own.get(key, 0)
        ]
        if not rows:
            return
        conn.execute(_UPSERT, rows)
        if any(change < 0 for change in self.notes.values()):
            conn.execute(delete(TagCounter).where(TagCounter.notes <= 0))


def keys_by_note(conn: Connection, paths: Collection[str]) -> Mapping[str, list[str]]:
    """The tag keys the cache holds for each of these notes (one query)."""
    found: dict[str, list[str]] = {}
    rows = conn.execute(select(Tag.note_path, Tag.key).where(Tag.note_path.in_(paths))).all()
    for path, key in rows:
        found.setdefault(path, []).append(key)
    return found


def notes_under(conn: Connection, key: str) -> int:
    """How many notes carry `key` or a tag nested below it."""
    found = conn.execute(select(TagCounter.notes).where(TagCounter.key == key)).scalar()
    return int(found or 0)


def distinct_tags(conn: Connection) -> int:
    return int(
        conn.execute(
            select(func.count()).select_from(TagCounter).where(TagCounter.own > 0)
        ).scalar_one()
    )
