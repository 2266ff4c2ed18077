"""Reads from the cache for the MCP tools and the CLI: set-based, indexed, plain results.

Every function takes a `Connection` and returns frozen dataclasses; none runs a query per row
(the tags of a page of notes come from one `IN` query). Folder and tag prefixes are matched
with a range (`x >= :p AND x < :p || '0'`, `'0'` being the character after `'/'`, then `x = :p
OR x >= :p || '/'`), which is portable and lets the database use the column's index. Open
connections with `read_snapshot` so that a total and the page it describes come from the same
snapshot.

It stays one module at ~580 lines: its reads share `under_prefix`, `SUMMARY_COLUMNS`,
`summaries` and the snapshot they run in; the `where=` matching, a responsibility of its own, is
`cache.property_match`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
)

from weaver.cache import tag_counts
from weaver.cache.dialect import is_postgres
from weaver.cache.models import Attachment, CacheState, Link, Note, Tag, TagCounter
from weaver.cache.property_match import PropertyCondition, WhereMatch, count_matched, matched_notes
from weaver.markdown.inline_fields import InlineField
from weaver.paging import Page

Direction = Literal["outgoing", "incoming", "both"]
TOP_TAGS = 10
# Characters LIKE treats specially, escaped with this one.
LIKE_ESCAPE = "\\"


@dataclass(frozen=True, slots=True)
class FileFilters:
    """`query_files` filters, combined with AND; `None` leaves a filter out.

    `directory` is a vault-relative folder (`""` is the whole vault) and matches its subfolders;
    `tag` is a normalised tag key (case-folded, no `#`) and matches nested tags.
    """

    directory: str | None = None
    type: str | None = None
    status: str | None = None
    tag: str | None = None
    modified_since: int | None = None  # epoch ms, inclusive
    modified_until: int | None = None  # epoch ms, exclusive
    where: tuple[PropertyCondition, ...] = ()

    @property
    def narrow(self) -> bool:
        """True when a filter besides `tag` picks notes through a column of their own."""
        return (
            any(
                value is not None
                for value in (self.type, self.status, self.modified_since, self.modified_until)
            )
            or bool(self.directory)
            or bool(self.where)
        )


SortField = Literal["path", "modified", "created"]


@dataclass(frozen=True, slots=True)
class FileOrder:
    """How `query_files` orders its pages: by path, or by a time with ties by path (so that
    pages stay stable)."""

    by: SortField = "path"
    descending: bool = False

    def columns(self) -> list[ColumnElement[Any]]:
        column = {"path": Note.path, "modified": Note.modified, "created": Note.created}[self.by]
        first = column.desc() if self.descending else column.asc()
        return [first] if self.by == "path" else [first, Note.path.asc()]


@dataclass(frozen=True, slots=True)
class FileSummary:
    path: str
    title: str
    type: str | None
    status: str | None
    frontmatter: dict[str, Any]
    tags: tuple[str, ...]
    created: int
    modified: int
    size: int


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """Where a link points: the resolved path, or the raw target text while it is broken."""

    target: str
    broken: bool


@dataclass(frozen=True, slots=True)
class FileDetail:
    summary: FileSummary
    aliases: tuple[str, ...]
    outgoing: list[LinkTarget]  # distinct, in order of first appearance; the first `limit`
    incoming: list[str]  # distinct source paths, sorted; the first `limit`
    content_hash: str  # sha256 of the note's bytes when last indexed
    outgoing_total: int = 0
    incoming_total: int = 0
    broken_total: int = 0  # distinct outgoing targets that resolve to nothing
    error: str | None = None  # why the note was indexed without its metadata, if it was
    heading: str | None = None  # the first H1, as text
    # Dataview inline fields as written, in file order (the frontmatter stays in `summary`).
    inline_fields: tuple[InlineField, ...] = ()


@dataclass(frozen=True, slots=True)
class TagSearch:
    files: list[FileSummary]
    total: int
    matched_tags: list[str]  # the tag keys that matched, sorted


@dataclass(frozen=True, slots=True)
class LinkSearch:
    """One side or both of a note's links; counts are totals, lists are limited."""

    outgoing: list[LinkTarget] = field(default_factory=list)
    incoming: list[str] = field(default_factory=list)
    outgoing_total: int = 0
    incoming_total: int = 0


@dataclass(frozen=True, slots=True)
class TagCount:
    tag: str
    count: int


@dataclass(frozen=True, slots=True)
class VaultStats:
    total_files: int
    total_attachments: int
    files_with_errors: int
    total_tags: int
    total_links: int
    broken_links: int
    files_by_type: dict[str, int]
    files_by_status: dict[str, int]
    top_tags: list[TagCount]
    vault_size: int
    last_updated: int | None


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose queries all see one consistent state of the cache.

    The pysqlite driver runs each SELECT in its own implicit transaction, so a count and the
    page after it could straddle a write; an explicit BEGIN pins one WAL snapshot until the
    connection is rolled back (it never writes). PostgreSQL's default READ COMMITTED takes a
    new snapshot per statement: REPEATABLE READ keeps the first one for the transaction.
    """
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN")
        elif is_postgres(conn):
            conn.execution_options(isolation_level="REPEATABLE READ")
        conn.info[_SNAPSHOT_STAMPS] = {}
        try:
            yield conn
        finally:
            conn.info.pop(_SNAPSHOT_STAMPS, None)
            conn.rollback()


# The version stamps kept views and the vector matrix compare, read together once per snapshot
# (they cannot change within one): a search asked for them five times, each a round trip on
# PostgreSQL. Kept in the connection's `info` for the snapshot's life only.
_SNAPSHOT_STAMPS = "weaver.snapshot_stamps"
VERSION_STAMPS = ("last_updated", "vectors_version", "attachment_vectors_version")


def counter(conn: Connection, key: str) -> int:
    """One of the `VERSION_STAMPS` kept as a counter (0 before its first change)."""
    value = version_stamp(conn, key)
    return int(json.loads(value)) if value is not None else 0


def version_stamp(conn: Connection, key: str) -> str | None:
    """The raw `cache_state` value of one of `VERSION_STAMPS`."""
    memo: dict[str, str | None] | None = conn.info.get(_SNAPSHOT_STAMPS)
    if memo is not None and key in memo:
        return memo[key]
    rows = dict(
        conn.execute(
            select(CacheState.key, CacheState.value).where(CacheState.key.in_(VERSION_STAMPS))
        ).all()
    )
    if memo is not None:
        memo.update({stamp: rows.get(stamp) for stamp in VERSION_STAMPS})
    return rows.get(key)


def under_prefix(column: Any, prefix: str | ColumnElement[str]) -> ColumnElement[bool]:
    """`column` equals `prefix` or starts with `prefix/`, as one index range with a check of
    each entry in it (an `OR` of the two would read the table row of every entry). `prefix`
    may be a bound parameter (of type String, so `+` concatenates)."""
    return and_(
        column >= prefix,
        column < prefix + "0",
        or_(column == prefix, column >= prefix + "/"),
    )


def holds_folder(conn: Connection, folder: str) -> bool:
    """Whether any note or attachment is in `folder` or below it."""
    note = select(Note.path).where(under_prefix(Note.folder, folder)).limit(1)
    below = and_(Attachment.path >= folder + "/", Attachment.path < folder + "0")
    attachment = select(Attachment.path).where(below).limit(1)
    return conn.execute(note).first() is not None or conn.execute(attachment).first() is not None


def note_folders(conn: Connection) -> set[str]:
    """Every folder holding notes, with the folders above them (the root left out)."""
    found: set[str] = set()
    for (folder,) in conn.execute(select(Note.folder).distinct()):
        parts = folder.split("/") if folder else []
        found.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return found


def tag_condition(key: str | ColumnElement[str]) -> ColumnElement[bool]:
    """Tags equal to `key` or nested below it (`project` -> `project`, `project/alpha`)."""
    return under_prefix(Tag.key, key)


def is_wildcard(pattern: str) -> bool:
    return "*" in pattern or "?" in pattern


def tag_pattern_condition(pattern: str, column: Any = Tag.key) -> ColumnElement[bool]:
    """A normalised tag with `*`/`?` wildcards, as LIKE; nested tags below a match match too.
    `column` holds tag keys: the tags table's by default."""
    if not is_wildcard(pattern):
        return under_prefix(column, pattern)
    like = wildcard_to_like(pattern)
    return or_(
        column.like(like, escape=LIKE_ESCAPE),
        column.like(like + "/%", escape=LIKE_ESCAPE),
    )


def like_folded(conn: Connection, column: Any, pattern: str) -> ColumnElement[bool]:
    """`column LIKE pattern` (escaped with `LIKE_ESCAPE`) ignoring case, as SQLite's LIKE does
    for ASCII letters; PostgreSQL's LIKE respects case, its ILIKE ignores it."""
    if is_postgres(conn):
        return column.ilike(pattern, escape=LIKE_ESCAPE)  # type: ignore[no-any-return]
    return column.like(pattern, escape=LIKE_ESCAPE)  # type: ignore[no-any-return]


def wildcard_to_like(pattern: str) -> str:
    """`proj*` -> `proj%`, `a?c` -> `a_c`; a literal `%`, `_` or `\\` is escaped."""
    out: list[str] = []
    for char in pattern:
        if char in (LIKE_ESCAPE, "%", "_"):
            out.append(LIKE_ESCAPE + char)
        elif char == "*":
            out.append("%")
        elif char == "?":
            out.append("_")
        else:
            out.append(char)
    return "".join(out)


# The columns `summaries` turns into `FileSummary` values.
SUMMARY_COLUMNS = (
    Note.path,
    Note.title,
    Note.type,
    Note.status,
    Note.frontmatter,
    Note.created,
    Note.modified,
    Note.size,
)


# The rows of `notes` that are markdown notes: a canvas has a row too (its cards' links, tags and
# text; `weaver.canvas.contents`), which the tools listing or counting notes leave out, as
# Obsidian's own lists of notes do (docs/canvas.md). Its path says which: no column to keep.
NOTE_ROWS: ColumnElement[bool] = func.lower(Note.path).not_like("%.canvas")


def _file_conditions(
    filters: FileFilters, where: WhereMatch, scan: bool = False
) -> list[ColumnElement[bool]]:
    """`filters` as conditions on notes; `where`: its `where` tests, matched once a query
    (`matched_notes` probes the index to choose the narrowest test)."""
    conditions: list[ColumnElement[bool]] = [NOTE_ROWS]
    if filters.directory:
        conditions.append(under_prefix(Note.folder, filters.directory))
    if filters.type is not None:
        conditions.append(Note.type == filters.type)
    if filters.status is not None:
        conditions.append(Note.status == filters.status)
    if filters.modified_since is not None:
        conditions.append(Note.modified >= filters.modified_since)
    if filters.modified_until is not None:
        conditions.append(Note.modified < filters.modified_until)
    if filters.tag is not None:
        conditions.append(_tagged(tag_condition(filters.tag), scan))
    matched, absent = where
    conditions.extend(absent if matched is None else [Note.path.in_(matched), *absent])
    return conditions


def _count_properties_only(conn: Connection, filters: FileFilters, where: WhereMatch) -> int | None:
    """The total of a query filtered by `where` alone, counted in the property index (None for
    any other query)."""
    if not filters.where or filters != FileFilters(where=filters.where):
        return None
    return count_matched(conn, where)


def _tagged(condition: ColumnElement[bool], scan: bool) -> ColumnElement[bool]:
    """Notes with a tag matching `condition`, in the form that suits the query (`_prefer_scan`):
    a list of the tagged paths, or a check of each note's own tags as notes are walked."""
    if scan:
        return exists(select(Tag.key).where(Tag.note_path == Note.path, condition))
    return Note.path.in_(select(Tag.note_path).where(condition))


def _prefer_scan(conn: Connection, matches: int, wanted: int) -> bool:
    """Whether a page of `wanted` notes out of `matches` tagged ones is found sooner by walking
    notes in path order and checking each one's tags (about `wanted * notes / matches` notes
    read) than by listing every tagged note first (about `matches` tag rows read, each a lookup
    in the tags table). For a common tag the walk wins by far; for a rare tag the list wins by
    as much."""
    if matches == 0:
        return False
    notes = conn.execute(select(func.count()).select_from(Note)).scalar_one()
    return wanted * notes < matches * matches


def query_files(
    conn: Connection,
    filters: FileFilters,
    limit: int,
    offset: int,
    order: FileOrder = FileOrder(),
) -> Page[FileSummary]:
    """One page of notes matching `filters`, in `order`, with the total match count."""
    # With a folder, type, status or time filter, SQLite walks that column's index and
    # checking each note's tags beats listing every tagged note (for a common tag, by far).
    narrowed = filters.narrow
    where = matched_notes(conn, filters.where)
    conditions = _file_conditions(filters, where, scan=narrowed)
    if filters.tag is not None and not narrowed:
        total = tag_counts.notes_under(conn, filters.tag)
    elif (counted := _count_properties_only(conn, filters, where)) is not None:
        total = counted
    else:
        total = conn.execute(select(func.count()).select_from(Note).where(*conditions)).scalar_one()
    if filters.tag is not None and not narrowed and _prefer_scan(conn, total, offset + limit):
        conditions = _file_conditions(filters, where, scan=True)
    page = select(*SUMMARY_COLUMNS).where(*conditions).order_by(*order.columns())
    rows = conn.execute(page.limit(limit).offset(offset)).all()
    return Page(summaries(conn, rows), total, offset, limit)


def summaries(conn: Connection, rows: Sequence[Any]) -> list[FileSummary]:
    """`FileSummary` values for rows of `SUMMARY_COLUMNS`, with their tags (one query).

    Rows are unpacked as tuples: a `Row`'s attribute access costs more than the query."""
    tags = tags_of(conn, [row[0] for row in rows])
    return [
        FileSummary(
            path=path,
            title=title,
            type=type_,
            status=status,
            frontmatter=frontmatter or {},
            tags=tags.get(path, ()),
            created=created,
            modified=modified,
            size=size,
        )
        for path, title, type_, status, frontmatter, created, modified, size in rows
    ]


# Built once: nearly every tool lists tags, and building a statement costs SQLAlchemy more
# than SQLite takes to run this one.
_TAGS_OF = (
    select(Tag.note_path, Tag.tag)
    .where(Tag.note_path.in_(bindparam("paths", expanding=True)))
    .order_by(Tag.note_path, Tag.key)
)


def tags_of(conn: Connection, paths: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The display tags of each note in `paths` (one query), ordered by key."""
    if not paths:
        return {}
    rows = conn.execute(_TAGS_OF, {"paths": list(paths)}).all()
    found: dict[str, list[str]] = {}
    for path, tag in rows:
        found.setdefault(path, []).append(tag)
    return {path: tuple(tags) for path, tags in found.items()}


def note_exists(conn: Connection, path: str) -> bool:
    return conn.execute(select(Note.path).where(Note.path == path)).first() is not None


def get_file(conn: Connection, path: str, links_limit: int | None = None) -> FileDetail | None:
    """A note's metadata with its distinct outgoing targets and backlinks (the first
    `links_limit` of each, with their totals), or None."""
    row = conn.execute(
        select(
            *SUMMARY_COLUMNS,
            Note.aliases,
            Note.content_hash,
            Note.error,
            Note.heading,
            Note.inline_fields,
        ).where(Note.path == path)
    ).first()
    if row is None:
        return None
    target = func.coalesce(Link.target_path, Link.target)
    grouped = (
        select(target.label("target"), func.min(Link.target_path).label("resolved"))
        .where(Link.source_path == path)
        .group_by(target)
        .order_by(func.min(Link.id))
    )
    # A note links to hundreds of targets at most: all of them, counted and cut here.
    every_target = [LinkTarget(r.target, r.resolved is None) for r in conn.execute(grouped)]
    sources = select(Link.source_path).where(Link.target_path == path).distinct()
    incoming_total = conn.execute(select(func.count()).select_from(sources.subquery())).scalar_one()
    listed = sources.order_by(Link.source_path)
    incoming = list(
        conn.execute(listed if links_limit is None else listed.limit(links_limit)).scalars()
    )
    summary = summaries(conn, [row[: len(SUMMARY_COLUMNS)]])[0]
    return FileDetail(
        summary,
        tuple(row.aliases or ()),
        every_target[:links_limit],
        incoming,
        row.content_hash,
        outgoing_total=len(every_target),
        incoming_total=incoming_total,
        broken_total=sum(t.broken for t in every_target),
        error=row.error,
        heading=row.heading,
        inline_fields=tuple(InlineField(k, v, n) for k, v, n in row.inline_fields or ()),
    )


def search_tag(conn: Connection, key: str, limit: int, offset: int = 0) -> TagSearch:
    """Notes carrying tag `key` (normalised, no wildcards) or one nested below it, by path.

    One range of the tags index, with the total the writer keeps per tag: no in-memory index
    to rebuild after a change. (A wildcard goes through `cache.graph.search_tags`.)"""
    listed = select(TagCounter.key).where(TagCounter.own > 0, under_prefix(TagCounter.key, key))
    matched = list(conn.execute(listed.order_by(TagCounter.key)).scalars())
    total = tag_counts.notes_under(conn, key)
    tagged = _tagged(tag_condition(key), scan=_prefer_scan(conn, total, offset + limit))
    rows = conn.execute(
        select(*SUMMARY_COLUMNS)
        .where(tagged, NOTE_ROWS)
        .order_by(Note.path)
        .limit(limit)
        .offset(offset)
    ).all()
    return TagSearch(summaries(conn, rows), total, matched)


def search_links(
    conn: Connection, path: str, direction: Direction, limit: int, offset: int = 0
) -> LinkSearch:
    """The distinct targets a note links to and/or the notes linking to it, sorted: `limit` of
    each side from `offset` on, with each side's total."""
    outgoing: list[LinkTarget] = []
    incoming: list[str] = []
    outgoing_total = incoming_total = 0
    if direction in ("outgoing", "both"):
        target = func.coalesce(Link.target_path, Link.target)
        grouped = (
            select(target.label("target"), func.min(Link.target_path).label("resolved"))
            .where(Link.source_path == path)
            .group_by(target)
            .subquery()
        )
        outgoing_total = conn.execute(select(func.count()).select_from(grouped)).scalar_one()
        ordered = select(grouped).order_by(grouped.c.target).limit(limit).offset(offset)
        rows = conn.execute(ordered)
        outgoing = [LinkTarget(r.target, r.resolved is None) for r in rows]
    if direction in ("incoming", "both"):
        # One read of the backlinks, counted and cut here: a count and a page in SQL would each
        # look up every linking row (thousands for a hub note).
        sources = select(Link.source_path).where(Link.target_path == path).distinct()
        every = sorted(conn.execute(sources).scalars())
        incoming, incoming_total = every[offset : offset + limit], len(every)
    return LinkSearch(outgoing, incoming, outgoing_total, incoming_total)


def backlink_lines(
    conn: Connection, path: str, sources: Sequence[str]
) -> dict[str, dict[int, set[str]]]:
    """For each of `sources`, the 0-based lines on which it links to `path` (in order), each
    with the targets as written there, which find the link within the line (one query)."""
    if not sources:
        return {}
    rows = conn.execute(
        select(Link.source_path, Link.line, Link.target)
        .where(Link.target_path == path, Link.source_path.in_(list(sources)))
        .distinct()
        .order_by(Link.source_path, Link.line)
    )
    found: dict[str, dict[int, set[str]]] = {}
    for source, line, target in rows:
        found.setdefault(source, {}).setdefault(line, set()).add(target)
    return found


def get_stats(conn: Connection) -> VaultStats:
    """Counts over the whole cache: a handful of aggregate queries."""
    notes = conn.execute(
        select(
            func.count(case((NOTE_ROWS, 1))),
            func.coalesce(func.sum(Note.size), 0),
            func.count(Note.error),  # a broken canvas too: list_problems lists it
            func.count(case((~NOTE_ROWS, 1))),  # canvases: files of the vault, not notes
        )
    ).one()
    attachments = conn.execute(
        select(func.count(), func.coalesce(func.sum(Attachment.size), 0))
    ).one()
    # count(*) reads the smallest index; the broken ones are a range of the target_path index.
    links = conn.execute(select(func.count()).select_from(Link)).scalar_one()
    broken = conn.execute(
        select(func.count()).select_from(Link).where(Link.target_path.is_(None))
    ).scalar_one()
    top = conn.execute(
        select(TagCounter.key, TagCounter.own)
        .where(TagCounter.own > 0)
        .order_by(TagCounter.own.desc(), TagCounter.key)
        .limit(TOP_TAGS)
    ).all()
    return VaultStats(
        total_files=notes[0],
        total_attachments=attachments[0] + notes[3],
        files_with_errors=notes[2],
        total_tags=tag_counts.distinct_tags(conn),
        total_links=links,
        broken_links=broken,
        files_by_type=_grouped(conn, Note.type),
        files_by_status=_grouped(conn, Note.status),
        top_tags=[TagCount(key, count) for key, count in top],
        vault_size=int(notes[1]) + int(attachments[1]),
        last_updated=last_updated(conn),
    )


def _grouped(conn: Connection, column: Any) -> dict[str, int]:
    rows = conn.execute(
        select(column, func.count()).where(column.is_not(None)).group_by(column).order_by(column)
    )
    return {row[0]: row[1] for row in rows}


def last_updated(conn: Connection) -> int | None:
    """When the cache last changed (Unix epoch ms), or None if it never has."""
    value = version_stamp(conn, "last_updated")
    if value is None:
        return None
    decoded = json.loads(value)
    return int(decoded) if isinstance(decoded, int | float) else None


def count_notes(conn: Connection) -> int:
    """The notes in the cache (one count over the smallest index)."""
    return int(conn.execute(select(func.count()).where(NOTE_ROWS)).scalar_one())


def linking_to(conn: Connection, target: str, sources: Sequence[str]) -> set[str]:
    """Those of `sources` that link to the note `target`."""
    rows = select(Link.source_path).where(Link.target_path == target, Link.source_path.in_(sources))
    return set(conn.execute(rows).scalars())


def notes_linking_to(conn: Connection, target: str) -> set[str]:
    """The notes with a link resolved to the note `target` (its backlinks' sources)."""
    rows = select(Link.source_path).where(Link.target_path == target).distinct()
    return set(conn.execute(rows).scalars())


def probe(conn: Connection) -> None:
    """Read one row: raises if the cache cannot be queried (missing, corrupt, unreachable)."""
    conn.execute(select(Note.path).limit(1)).all()
