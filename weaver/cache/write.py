"""Writes to the cache: set-based, a handful of statements per batch, never one per link."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)

from weaver.cache import fts
from weaver.cache.dialect import is_postgres
from weaver.cache.models import (
    Attachment,
    Base,
    CacheState,
    Link,
    Note,
    NoteProperty,
    Tag,
    Task,
)
from weaver.cache.rows import NoteRecord, StoredFile
from weaver.cache.tag_counts import TagDelta, keys_by_note
from weaver.cache.task_rows import (
    TASK_COLUMNS,
    inline_fields_value,
    inline_property_rows,
    task_rows,
)
from weaver.markdown.patterns import normalize_tag
from weaver.markdown.resolver import LinkResolver, link_key
from weaver.tasks.statuses import StatusRegistry
from weaver.vault.fs import FileStat, is_canvas_path, split_path

# Well under SQLite's bound-parameter limit, and large enough to keep statement counts low.
CHUNK = 900
T = TypeVar("T")


def chunked(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def load_stored_files(
    conn: Connection, under: Collection[str] | None = None
) -> dict[str, StoredFile]:
    """Every note and attachment the cache knows, by path; with `under`, only those at these
    paths or below them (a watcher batch need not read the whole vault's rows)."""
    stored: dict[str, StoredFile] = {}
    batches: Iterable[list[str] | None] = (
        [None] if under is None else chunked(sorted(under), CHUNK // 3)
    )
    for batch in batches:
        notes = select(Note.path, Note.size, Note.mtime_ns, Note.content_hash, Note.created)
        attachments = select(Attachment.path, Attachment.size, Attachment.mtime_ns)
        if batch is not None:
            notes = notes.where(_at_or_below(Note.path, batch))
            attachments = attachments.where(_at_or_below(Attachment.path, batch))
        for path, size, mtime_ns, digest, created in conn.execute(notes):
            stored[path] = StoredFile(path, size, mtime_ns, digest, created)
        for path, size, mtime_ns in conn.execute(attachments):
            stored[path] = StoredFile(path, size, mtime_ns, None, None)
    return stored


def _at_or_below(column: Any, paths: Sequence[str]) -> ColumnElement[bool]:
    below = (and_(column >= p + "/", column < p + "0") for p in paths)
    return or_(column.in_(paths), *below)


def replace_notes(
    conn: Connection,
    records: Sequence[NoteRecord],
    resolver: LinkResolver,
    stored: Collection[str] | None = None,
    statuses: StatusRegistry | None = None,
) -> None:
    """Insert these notes, replacing any previous version with their tags, links, properties
    and tasks.

    `stored` (the paths the cache holds, when the caller knows them) spares a first index the
    deletes of notes that cannot be there. `statuses` labels the tasks (the plugin's defaults
    when None)."""
    if not records:
        return
    delete_files(conn, [r.path for r in records if stored is None or r.path in stored])
    first_rowid = next_search_rowid(conn)
    # SQLite stores JSON as text: encoded here as SQLAlchemy's JSON type would (`json.dumps`).
    encode = json.dumps if conn.dialect.name == "sqlite" else _as_is
    rows = [_note_row(r, first_rowid + i, encode) for i, r in enumerate(records)]
    insert_rows(conn, Note, NOTE_COLUMNS, rows)
    fts.insert_search(conn, records, first_rowid)
    tag_rows = [list(_tag_rows(r)) for r in records]
    insert_rows(conn, Tag, TAG_COLUMNS, [row for rows in tag_rows for row in rows])
    counts = TagDelta()
    for record, rows in zip(records, tag_rows, strict=True):
        if not is_canvas_path(record.path):  # counts are of notes, as Obsidian's tag pane
            counts.add([key for _, key, _ in rows], 1)
    counts.apply(conn)
    insert_rows(conn, Link, LINK_COLUMNS, [row for r in records for row in _link_rows(r, resolver)])
    properties = [row for r in records for row in (*property_rows(r), *inline_property_rows(r))]
    insert_rows(conn, NoteProperty, PROPERTY_COLUMNS, properties)
    registry = statuses or StatusRegistry()
    tasks = [row for r in records for row in task_rows(r, registry, encode)]
    insert_rows(conn, Task, TASK_COLUMNS, tasks)


def insert_rows(
    conn: Connection, model: type[Base], columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert plain tuples of `columns`. On SQLite they go straight to the driver's
    executemany, skipping SQLAlchemy's per-row parameter handling, which added more than half
    again to SQLite's own work. Other dialects go through Core."""
    if not rows:
        return
    if conn.dialect.name != "sqlite":
        conn.execute(insert(model), [dict(zip(columns, row, strict=True)) for row in rows])
        return
    names = ", ".join(columns)
    marks = ", ".join("?" * len(columns))
    table = cast(Table, model.__table__).name
    conn.exec_driver_sql(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)


def next_search_rowid(conn: Connection) -> int:
    """One past the highest full-text rowid in use (`cache.fts`): notes written next get
    rowids from here up, in the order they are written. One index lookup."""
    highest = conn.execute(select(func.max(Note.search_rowid))).scalar()
    return (highest or 0) + 1


NOTE_COLUMNS = (
    "path",
    "folder",
    "name",
    "title",
    "heading",
    "frontmatter",
    "type",
    "status",
    "aliases",
    "size",
    "created",
    "modified",
    "mtime_ns",
    "content_hash",
    "indexed_at",
    "word_count",
    "tasks_open",
    "tasks_done",
    "error",
    "inline_fields",
    "search_rowid",
)


def _note_row(
    record: NoteRecord, search_rowid: int, encode: Callable[[Any], Any]
) -> tuple[Any, ...]:
    """The `NOTE_COLUMNS` of a note; `encode` turns its JSON values into what the driver takes."""
    folder, name = split_path(record.path)
    return (
        record.path,
        folder,
        name,
        record.title,
        record.heading,
        encode(record.frontmatter),
        record.type,
        record.status,
        encode(list(record.aliases)),
        record.size,
        record.created,
        record.modified,
        record.mtime_ns,
        record.content_hash,
        record.indexed_at,
        record.word_count,
        record.tasks_open,
        record.tasks_done,
        record.error,
        None if (fields := inline_fields_value(record)) is None else encode(fields),
        search_rowid,
    )


def _as_is(value: Any) -> Any:
    return value


TAG_COLUMNS = ("note_path", "key", "tag")
LINK_COLUMNS = (
    "source_path",
    "target",
    "target_key",
    "target_path",
    "kind",
    "alias",
    "subpath",
    "relation",
    "line",
)


PROPERTY_COLUMNS = ("note_path", "key", "text", "num")


def property_rows(record: NoteRecord) -> Iterator[tuple[str, str, str | None, float | None]]:
    """A row per frontmatter scalar and per element of a list (`NoteProperty`); a nested
    object is only there (a row with no value), so that `exists` still finds it."""
    for name, value in record.frontmatter.items():
        key = str(name).casefold()
        values = value if isinstance(value, list) else [value]
        for item in values or [None]:
            yield (record.path, key, *property_value(item))


def property_value(value: Any) -> tuple[str | None, float | None]:
    """How a frontmatter value is stored and compared: text, or a number."""
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    if isinstance(value, int | float):
        return None, float(value)
    if isinstance(value, str):
        return value, None
    return None, None


def _tag_rows(record: NoteRecord) -> Iterator[tuple[str, str, str]]:
    seen: set[str] = set()
    for tag in record.tags:
        key = normalize_tag(tag)
        if key and key not in seen:
            seen.add(key)
            yield record.path, key, tag.lstrip("#")


def _link_rows(record: NoteRecord, resolver: LinkResolver) -> Iterator[tuple[Any, ...]]:
    path = record.path
    for link in record.links:
        target = link.target
        yield (
            path,
            target,
            link_key(target),
            resolver.resolve(target, path),
            link.kind,
            link.alias,
            link.subpath,
            link.relation,
            link.line,
        )


def delete_files(conn: Connection, paths: Collection[str]) -> None:
    """Forget notes (with their tags, outgoing links, properties and tasks) and attachments."""
    counts = TagDelta()
    for batch in chunked(paths):
        for keys in keys_by_note(conn, [p for p in batch if not is_canvas_path(p)]).values():
            counts.add(keys, -1)
        conn.execute(delete(Link).where(Link.source_path.in_(batch)))
        conn.execute(delete(Tag).where(Tag.note_path.in_(batch)))
        conn.execute(delete(NoteProperty).where(NoteProperty.note_path.in_(batch)))
        conn.execute(delete(Task).where(Task.note_path.in_(batch)))
        fts.delete_search(conn, batch)
        conn.execute(delete(Note).where(Note.path.in_(batch)))
        conn.execute(delete(Attachment).where(Attachment.path.in_(batch)))
    counts.apply(conn)


def touch_notes(conn: Connection, stats: Sequence[FileStat]) -> None:
    """Record a new size/mtime for notes whose content turned out to be unchanged."""
    if not stats:
        return
    statement = (
        update(Note)
        .where(Note.path == bindparam("p"))
        .values(size=bindparam("s"), mtime_ns=bindparam("m"), modified=bindparam("ms"))
    )
    rows = [
        {"p": s.path, "s": s.size, "m": s.mtime_ns, "ms": s.mtime_ns // 1_000_000} for s in stats
    ]
    conn.execute(statement.execution_options(synchronize_session=False), rows)


def upsert_attachments(conn: Connection, stats: Sequence[FileStat]) -> None:
    if not stats:
        return
    delete_files(conn, [s.path for s in stats])
    rows = [{"path": s.path, "size": s.size, "mtime_ns": s.mtime_ns} for s in stats]
    conn.execute(insert(Attachment), rows)


def reresolve_links(
    conn: Connection, keys: Collection[str], resolver: LinkResolver, skip_sources: Collection[str]
) -> list[str]:
    """Resolve again every link whose target could name a file that appeared or vanished.

    Only links whose `target_key` is among `keys` can change; the rest are untouched. Links
    of `skip_sources` were just written with fresh resolutions. Returns the source note of
    each link that changed.
    """
    changed: list[dict[str, Any]] = []
    sources: list[str] = []
    skip = set(skip_sources)
    for batch in chunked(keys):
        rows = conn.execute(
            select(Link.id, Link.source_path, Link.target, Link.target_path).where(
                Link.target_key.in_(batch)
            )
        )
        for row in rows:
            if row.source_path in skip:
                continue
            resolved = resolver.resolve(row.target, row.source_path)
            if resolved != row.target_path:
                changed.append({"link_id": row.id, "resolved": resolved})
                sources.append(row.source_path)
    if changed:
        statement = (
            update(Link)
            .where(Link.id == bindparam("link_id"))
            .values(target_path=bindparam("resolved"))
        )
        conn.execute(statement.execution_options(synchronize_session=False), changed)
    return sources


# What a big pass rewrites, analyzed after it on PostgreSQL (workflow tables change all the
# time and are left to autovacuum).
PG_ANALYZED = (
    "notes",
    "note_texts",
    "tags",
    "links",
    "note_properties",
    "tag_counts",
    "tasks",
)


def refresh_statistics(conn: Connection) -> None:
    """Let the planner know how the notes' columns are spread, after a pass that changed many
    of them (cheap next to the pass). Without statistics SQLite guesses, and for `query_files`
    with a type and a status it walked the status index rather than the narrower type one.
    PostgreSQL's autovacuum would analyze the tables too, but only a while after a first index
    (a minute or more); until then it guessed 68 rows for a tag 4,904 notes carry, and hashed
    them all to sort out a page of 100 (11 ms against 0.2), and read every tag row for a
    page's tags (5 ms against 0.5). So every table a pass fills is analyzed with the notes."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("ANALYZE notes")
        conn.exec_driver_sql("ANALYZE tasks")
    elif is_postgres(conn):
        conn.exec_driver_sql(f"ANALYZE {', '.join(PG_ANALYZED)}")


def statistics_missing(conn: Connection) -> bool:
    """Whether the planner has no statistics for the notes: a cache that no big pass has
    reached since big passes began to end with `refresh_statistics` (any made before). On
    PostgreSQL: a table of `PG_ANALYZED` that neither ANALYZE nor VACUUM has read since it was
    created (its `reltuples` is -1 until then)."""
    if is_postgres(conn):
        unread = conn.execute(
            text(
                "SELECT 1 FROM pg_class WHERE relname = ANY(:tables) AND reltuples < 0 "
                "AND relnamespace = to_regnamespace(current_schema())"
            ),
            {"tables": list(PG_ANALYZED)},
        )
        return unread.first() is not None
    if conn.dialect.name != "sqlite":
        return False
    if conn.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").first():
        found = conn.exec_driver_sql("SELECT 1 FROM sqlite_stat1 WHERE tbl = 'notes' LIMIT 1")
        return found.first() is None
    return True


def load_all_paths(conn: Connection) -> list[str]:
    notes = conn.execute(select(Note.path)).scalars()
    attachments = conn.execute(select(Attachment.path)).scalars()
    return [*notes, *attachments]


def set_state(conn: Connection, key: str, value: Any) -> None:
    encoded = json.dumps(value)
    conn.execute(delete(CacheState).where(CacheState.key == key))
    conn.execute(insert(CacheState).values(key=key, value=encoded))


def get_state(conn: Connection, key: str) -> Any:
    value = conn.execute(select(CacheState.value).where(CacheState.key == key)).scalar()
    return None if value is None else json.loads(value)
