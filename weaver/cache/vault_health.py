"""What is wrong with the vault, as the cache sees it: broken links, notes that failed to parse,
and file names several notes share (which make `[[name]]` links ambiguous). Orphans come from
the link graph (`views.graph.orphans`).

Each list is a page (`limit`, `offset`) with its total, in a stable order, so the dashboard can
page through a vault with thousands of problems. Set-based: a page of broken targets gets its
source notes in one `IN` query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy import Connection, func, select

from weaver.cache.models import Link, Note

T = TypeVar("T")
# Notes named per broken target or shared name; the total says how many more there are.
SOURCES_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.items) < self.total


@dataclass(frozen=True, slots=True)
class BrokenTarget:
    """A link target no note or attachment answers to, and the notes linking to it."""

    target: str
    links: int  # occurrences
    sources: tuple[str, ...]  # distinct source notes, sorted, at most SOURCES_SHOWN
    source_total: int


@dataclass(frozen=True, slots=True)
class ParseFailure:
    path: str
    error: str


@dataclass(frozen=True, slots=True)
class SharedName:
    """A file name (case-folded) carried by several notes."""

    name: str
    paths: tuple[str, ...]


def list_broken_targets(conn: Connection, limit: int, offset: int) -> Page[BrokenTarget]:
    """Broken link targets, the most linked first (ties by target).

    One read of the broken links (a range of the `target_path` index; a vault's broken links
    are few next to its links), grouped here: a page in SQL would need the sources of its
    targets in a second query, by `target`, which no index covers."""
    rows = conn.execute(
        select(Link.target, Link.source_path).where(Link.target_path.is_(None))
    ).all()
    counts: dict[str, int] = {}
    sources: dict[str, set[str]] = {}
    for target, source in rows:
        counts[target] = counts.get(target, 0) + 1
        sources.setdefault(target, set()).add(source)
    ranked = sorted(counts, key=lambda target: (-counts[target], target))
    items = []
    for target in ranked[offset : offset + limit]:
        holders = sorted(sources[target])
        items.append(
            BrokenTarget(target, counts[target], tuple(holders[:SOURCES_SHOWN]), len(holders))
        )
    return Page(items, len(ranked), limit, offset)


def list_parse_failures(conn: Connection, limit: int, offset: int) -> Page[ParseFailure]:
    """Notes the indexer could not parse, with its error, by path (one scan; they are few)."""
    rows = conn.execute(
        select(Note.path, Note.error).where(Note.error.is_not(None)).order_by(Note.path)
    ).all()
    items = [ParseFailure(path, error or "") for path, error in rows[offset : offset + limit]]
    return Page(items, len(rows), limit, offset)


def list_shared_names(conn: Connection, limit: int, offset: int) -> Page[SharedName]:
    """File names (case-folded) that more than one note has, in different folders.

    Grouped here from the paths alone, which SQLite reads off the primary key's index: the
    notes table itself is wide (frontmatter), and reading it all costs ten times more."""
    by_name: dict[str, list[str]] = {}
    for path in conn.execute(select(Note.path).order_by(Note.path)).scalars():
        by_name.setdefault(path.rpartition("/")[2].casefold(), []).append(path)
    shared = sorted(name for name, paths in by_name.items() if len(paths) > 1)
    items = [
        SharedName(name, tuple(by_name[name][:SOURCES_SHOWN]))
        for name in shared[offset : offset + limit]
    ]
    return Page(items, len(shared), limit, offset)


def count_modified_by_day(conn: Connection, since: int, day_ms: int) -> dict[int, int]:
    """Notes last modified since `since`, counted by UTC day number (`modified // day_ms`)."""
    day = (Note.modified / day_ms).cast(Note.modified.type)
    rows = conn.execute(select(day, func.count()).where(Note.modified >= since).group_by(day))
    return {int(row[0]): row[1] for row in rows}
