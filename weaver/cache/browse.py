"""Reads that survey the vault rather than find notes: every tag with its counts, the folder
tree, and the notes with problems (parse errors, broken links, orphans). Set-based, paged, each
page with the total it is a page of.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, and_, exists, func, select
from sqlalchemy.orm import aliased

from weaver.cache.dialect import is_postgres
from weaver.cache.models import Link, Note, Tag, TagCounter
from weaver.cache.read import NOTE_ROWS, under_prefix
from weaver.paging import Page

TagOrder = Literal["name", "count"]
SAMPLE_SOURCES = 5


@dataclass(frozen=True, slots=True)
class TagEntry:
    key: str  # normalised: lower case, no '#'
    tag: str  # as a note writes it
    notes: int  # notes carrying it or a tag nested below it
    own: int  # notes carrying exactly this tag
    children: int  # distinct tags directly below it


def _depth(column: Any) -> ColumnElement[int]:
    """How many '/' a tag key holds: 0 for a top-level tag."""
    return func.length(column) - func.length(func.replace(column, "/", ""))


def list_tags(
    conn: Connection,
    prefix: str | None,
    depth: int | None,
    limit: int,
    offset: int,
    order: TagOrder = "name",
) -> Page[TagEntry]:
    """Tags (with the implicit parents of nested ones), under `prefix` if given, at most
    `depth` levels below it (or below the top), by name or by notes (most first)."""
    tc = TagCounter
    conditions = [tc.notes > 0]
    base = 0
    if prefix:
        conditions.append(under_prefix(tc.key, prefix))
        base = prefix.count("/") + 1
    if depth is not None:
        conditions.append(_depth(tc.key) < base + depth)
    total = conn.execute(select(func.count()).select_from(tc).where(*conditions)).scalar_one()
    child = aliased(TagCounter)
    children = (
        select(func.count())
        .where(
            child.key > tc.key + "/",
            child.key < tc.key + "0",
            # no "/" past the parent's: a direct child (LIKE, as SQLite's instr is not PostgreSQL's)
            func.substr(child.key, func.length(tc.key) + 2).not_like("%/%"),
            child.notes > 0,
        )
        .scalar_subquery()
    )
    shown = select(Tag.tag).where(Tag.key == tc.key).limit(1).scalar_subquery()
    ordering = [tc.key] if order == "name" else [tc.notes.desc(), tc.key]
    rows = conn.execute(
        select(tc.key, shown, tc.notes, tc.own, children)
        .where(*conditions)
        .order_by(*ordering)
        .limit(limit)
        .offset(offset)
    ).all()
    entries = [TagEntry(k, s or k, n, o, c) for k, s, n, o, c in rows]
    return Page(entries, total)


@dataclass(frozen=True, slots=True)
class FolderEntry:
    path: str
    notes: int  # notes in it and in its subfolders
    own: int  # notes directly in it
    subfolders: int  # folders directly below it


def list_folders(
    conn: Connection, folder: str | None, depth: int | None, limit: int, offset: int
) -> Page[FolderEntry]:
    """Folders holding notes (with the folders above them), below `folder` if given, at most
    `depth` levels below it, by path. One grouped read of the folder index."""
    rows = conn.execute(
        select(Note.folder, func.count()).where(NOTE_ROWS).group_by(Note.folder)
    ).all()
    notes: Counter[str] = Counter()
    own: dict[str, int] = {}
    for name, count in rows:
        own[name] = count
        parts = name.split("/") if name else []
        for end in range(1, len(parts) + 1):
            notes["/".join(parts[:end])] += count
    base = folder.count("/") + 1 if folder else 0
    wanted = sorted(
        path
        for path in notes
        if (not folder or path.startswith(folder + "/"))
        and (depth is None or path.count("/") < base + depth)
    )
    subfolders = Counter(path.rsplit("/", 1)[0] for path in notes if "/" in path)
    entries = [
        FolderEntry(path, notes[path], own.get(path, 0), subfolders[path])
        for path in wanted[offset : offset + limit]
    ]
    return Page(entries, len(wanted))


def tag_keys(conn: Connection) -> list[str]:
    """Every tag key notes carry (with the parents of nested ones)."""
    return list(conn.execute(select(TagCounter.key).where(TagCounter.notes > 0)).scalars())


def root_notes(conn: Connection) -> int:
    return conn.execute(select(func.count()).where(Note.folder == "", NOTE_ROWS)).scalar_one()


# ---------------------------------------------------------------- problems


@dataclass(frozen=True, slots=True)
class NoteError:
    path: str
    error: str


@dataclass(frozen=True, slots=True)
class BrokenTarget:
    target: str  # as first written
    occurrences: int
    source_count: int
    sources: list[str]  # the first few, by path


def notes_with_errors(conn: Connection, limit: int, offset: int) -> Page[NoteError]:
    """Notes indexed with an error (frontmatter that does not parse, not UTF-8, too large)."""
    has_error = Note.error.is_not(None)
    total = conn.execute(select(func.count()).where(has_error)).scalar_one()
    rows = conn.execute(
        select(Note.path, Note.error)
        .where(has_error)
        .order_by(Note.path)
        .limit(limit)
        .offset(offset)
    ).all()
    return Page([NoteError(path, error or "") for path, error in rows], total)


@dataclass(frozen=True, slots=True)
class BrokenCount:
    key: str
    target: str  # as first written
    occurrences: int
    source_count: int


def count_broken_targets(conn: Connection) -> list[BrokenCount]:
    """Every link target that resolves to no file, most linked first: an aggregate over all
    broken links, which a server keeps per cache version (`cache.graph.broken_cache`)."""
    occurrences = func.count()
    rows = conn.execute(
        select(
            Link.target_key,
            func.min(Link.target),
            occurrences,
            func.count(Link.source_path.distinct()),
        )
        .where(Link.target_path.is_(None))
        .group_by(Link.target_key)
        .order_by(occurrences.desc(), Link.target_key)
    ).all()
    return [BrokenCount(key, target, count, sources) for key, target, count, sources in rows]


def broken_links(
    conn: Connection, limit: int, offset: int, counted: Sequence[BrokenCount] | None = None
) -> Page[BrokenTarget]:
    """Link targets that resolve to no file, most linked first, with the notes holding them;
    `counted` is `count_broken_targets` of this cache version, when the caller keeps it."""
    counted = count_broken_targets(conn) if counted is None else counted
    page = counted[offset : offset + limit]
    keys = [row.key for row in page]
    sources: dict[str, list[str]] = {}
    if keys:
        listed = conn.execute(
            select(Link.target_key, Link.source_path)
            .where(Link.target_path.is_(None), Link.target_key.in_(keys))
            .distinct()
            .order_by(Link.target_key, Link.source_path)
        )
        for key, source in listed:
            sources.setdefault(key, []).append(source)
    found = [
        BrokenTarget(
            row.target, row.occurrences, row.source_count, sources.get(row.key, [])[:SAMPLE_SOURCES]
        )
        for row in page
    ]
    return Page(found, len(counted))


def orphan_paths(conn: Connection) -> list[str]:
    """Notes with no resolved link to or from another note (as Obsidian's graph shows
    orphans), by path: the whole list, which a server keeps per cache version
    (`cache.graph.orphans_cache`) and pages, as it keeps the broken links' counts."""
    condition = _orphaned(probe_each=is_postgres(conn))
    listed = select(Note.path).where(condition, NOTE_ROWS).order_by(Note.path)
    return list(conn.execute(listed).scalars())


def _orphaned(probe_each: bool) -> ColumnElement[bool]:
    """No link to the note from another, none from it to another. `probe_each`: `OFFSET 0`
    keeps PostgreSQL from making the tests anti-joins, which hash every resolved link for each
    query, where probing the links' indexes per note is cheaper (figures in
    docs/benchmarks-notes.md). SQLite probes each note's links anyway."""
    linked_in = select(Link.id).where(Link.target_path == Note.path, Link.source_path != Note.path)
    linked_out = select(Link.id).where(
        and_(
            Link.source_path == Note.path,
            Link.target_path.is_not(None),
            Link.target_path != Note.path,
        )
    )
    if probe_each:
        linked_in, linked_out = linked_in.offset(0), linked_out.offset(0)
    return ~exists(linked_in) & ~exists(linked_out)


@dataclass(frozen=True, slots=True)
class NoteListing:
    path: str
    title: str
    size: int


def notes_after(conn: Connection, after: str | None, limit: int) -> list[NoteListing]:
    """Notes by path after `after` (a keyset page: stable while notes come and go, one range
    of the primary key however deep the page)."""
    query = select(Note.path, Note.title, Note.size).where(NOTE_ROWS)
    query = query.order_by(Note.path).limit(limit)
    if after is not None:
        query = query.where(Note.path > after)
    return [NoteListing(path, title, size) for path, title, size in conn.execute(query)]


def paths_starting(conn: Connection, prefix: str, limit: int) -> tuple[list[str], bool]:
    """Note paths starting with `prefix` as typed, by path: one range of the primary key. And
    whether more follow. (Ignoring case is `views.prefixes`' work: a scan here.)"""
    ranged = select(Note.path).where(Note.path >= prefix, NOTE_ROWS)
    ranged = ranged.order_by(Note.path).limit(limit + 1)
    if prefix:
        ranged = ranged.where(Note.path < prefix + "\U0010ffff")
    found = list(conn.execute(ranged).scalars())
    return found[:limit], len(found) > limit
