"""Reads behind the graph and lookup tools: the link graph, tag sets (also for `search_tags`
with a wildcard), random picks, existence checks and name candidates. Set-based, a few
statements per call, never one per note.

`ByVersion` keeps the `Graph` built by `load_graph` until the cache's `last_updated` stamp
changes (the indexer makes it strictly increasing, and it changes in every pass that writes),
so the graph tools load the adjacency once, in whichever process, rather than once per call.
When the stamp moves, the notes changed since (`cache.changes`) are read again and patched in
(`update_graph`): an edit costs the graph tools the changed notes, not a reload of the vault.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select

from weaver import gc_freeze
from weaver.cache import browse, changes, read
from weaver.cache.dialect import is_postgres
from weaver.cache.models import Attachment, Link, Note, Tag, TagCounter
from weaver.cache.read import FileSummary, tag_pattern_condition, under_prefix
from weaver.cache.write import chunked
from weaver.paging import Page
from weaver.vault.fs import is_canvas_path
from weaver.views.link_graph import Graph, NodeInfo
from weaver.views.names import NameIndex, NameRow
from weaver.views.prefixes import PrefixIndex
from weaver.views.tag_tree import TagIndex, TagMode, first_paths

T = TypeVar("T")
# Changed notes up to which a kept index is patched rather than built again.
PATCH_LIMIT = 2000


def load_graph(conn: Connection) -> Graph:
    """Every note and the (source, target, relation) of each link: three plain scans (no
    DISTINCT: `Graph` folds duplicates faster than a sort in SQL would)."""
    nodes = [
        NodeInfo(path, title, folder)
        for path, title, folder in conn.execute(select(Note.path, Note.title, Note.folder))
    ]
    resolved = conn.execute(
        select(Link.source_path, Link.target_path, Link.relation).where(
            Link.target_path.is_not(None)
        )
    )
    broken = conn.execute(
        select(Link.source_path, Link.target, Link.relation).where(Link.target_path.is_(None))
    )
    edges = ((s, t, r) for s, t, r in resolved if t is not None)
    return Graph(nodes, edges, ((s, t, r) for s, t, r in broken))


def update_graph(graph: Graph, conn: Connection, changed: Collection[str]) -> Graph:
    """`graph` with the `changed` notes read again: their rows and the links from them."""
    nodes: list[NodeInfo] = []
    edges: list[tuple[str, str, str | None]] = []
    broken: list[tuple[str, str, str | None]] = []
    for batch in chunked(changed):
        rows = conn.execute(select(Note.path, Note.title, Note.folder).where(Note.path.in_(batch)))
        nodes += (NodeInfo(path, title, folder) for path, title, folder in rows)
        links = conn.execute(
            select(Link.source_path, Link.target_path, Link.target, Link.relation).where(
                Link.source_path.in_(batch)
            )
        )
        for source, target_path, target, relation in links:
            if target_path is None:
                broken.append((source, target, relation))
            else:
                edges.append((source, target_path, relation))
    return graph.patched(changed, nodes, edges, broken)


class ByVersion(Generic[T]):
    """Something built from the whole cache (the graph, the name and tag indexes), kept until the
    cache changes. Then `update` brings it up to date with the notes changed since, if they are
    known and few; otherwise it is built again. Thread-safe: one build or update at a time.

    `settle`: after a build, move what is alive out of the garbage collector's rounds (a full
    collection: worth it for a big index kept for long, not for a small value such as the
    vault's counts, rebuilt after every write)."""

    def __init__(
        self,
        build: Callable[[Connection], T],
        update: Callable[[T, Connection, Collection[str]], T] | None = None,
        *,
        settle: bool = True,
    ) -> None:
        self._build = build
        self._update = update
        self._settle = settle
        self._lock = threading.Lock()
        self._value: T | None = None
        self._version: int | None = None

    def get(self, conn: Connection) -> T:
        """The value as of `conn`'s snapshot (open it with `read.read_snapshot`)."""
        version = read.last_updated(conn)
        with self._lock:
            if self._value is None or version != self._version:
                self._value = self._refresh(self._value, conn, version)
                self._version = version
            return self._value

    def _refresh(self, value: T | None, conn: Connection, version: int | None) -> T:
        if value is not None and self._update is not None:
            changed = changes.changed_since(conn, self._version, version, PATCH_LIMIT)
            if changed is not None:
                return self._update(value, conn, changed)
        built = self._build(conn)
        if self._settle:
            gc_freeze.settle()  # kept for the process's life: out of the cycle collector's rounds
        return built


def graph_cache() -> ByVersion[Graph]:
    return ByVersion(load_graph, update_graph)


def broken_cache() -> ByVersion[list[browse.BrokenCount]]:
    """`list_problems broken_links`' counts, aggregated once per version like the stats."""
    return ByVersion(browse.count_broken_targets, settle=False)


def orphans_cache() -> ByVersion[list[str]]:
    """`list_problems orphans`' notes, found once per version: two anti-joins over every note
    and link, which a page of them would otherwise repeat per call."""
    return ByVersion(browse.orphan_paths, settle=False)


def stats_cache() -> ByVersion[read.VaultStats]:
    """`get_stats`'s counts, aggregated over the whole cache once per version rather than once
    per call (a dozen milliseconds at 10,000 notes, most of a call's cost)."""
    return ByVersion(read.get_stats, settle=False)


# ---------------------------------------------------------------- tags, random picks


def tags_condition(keys: Sequence[str], mode: TagMode) -> ColumnElement[bool]:
    """Notes carrying any (or all) of these normalised tags; nested tags and `*`/`?` match."""
    each = [Note.path.in_(select(Tag.note_path).where(tag_pattern_condition(k))) for k in keys]
    return and_(*each) if mode == "all" else or_(*each)


def load_tag_index(conn: Connection) -> TagIndex:
    """Every tag key with the notes carrying it, indexed for `notes_with_tags`.

    A row per key with its paths joined by NUL (which no path holds): SQLite hands over a few
    hundred strings instead of a tuple per tag of every note, a third of the time. PostgreSQL
    text cannot hold a NUL; it hands over an array per key instead."""
    if is_postgres(conn):
        lists = conn.execute(select(Tag.key, func.array_agg(Tag.note_path)).group_by(Tag.key))
        return TagIndex({key: list(paths) for key, paths in lists})
    joined = func.group_concat(Tag.note_path, func.char(0))
    rows = conn.execute(select(Tag.key, joined).group_by(Tag.key))
    return TagIndex({key: paths.split("\0") for key, paths in rows})


def update_tag_index(index: TagIndex, conn: Connection, changed: Collection[str]) -> TagIndex:
    """`index` with the tags of the `changed` notes read again."""
    tags: list[tuple[str, str]] = []
    for batch in chunked(changed):
        rows = conn.execute(select(Tag.note_path, Tag.key).where(Tag.note_path.in_(batch)))
        tags += ((path, key) for path, key in rows)
    return index.patched(changed, tags)


def tag_index_cache() -> ByVersion[TagIndex]:
    return ByVersion(load_tag_index, update_tag_index)


def keys_matching(conn: Connection, patterns: Sequence[str]) -> list[list[str]]:
    """The tag keys notes carry that each pattern matches (nested tags and `*`/`?` included):
    one statement over the kept counts, a row per carried key with a flag per pattern."""
    flags = [tag_pattern_condition(p, TagCounter.key) for p in patterns]
    rows = conn.execute(select(TagCounter.key, *flags).where(TagCounter.own > 0, or_(*flags)))
    groups: list[list[str]] = [[] for _ in patterns]
    for key, *matched in rows:
        for group, hit in zip(groups, matched, strict=True):
            if hit:
                group.append(key)
    return groups


def notes_with_tags(
    conn: Connection,
    index: TagIndex,
    patterns: Sequence[str],
    mode: TagMode,
    limit: int,
    offset: int = 0,
) -> Page[FileSummary]:
    """Notes matching the tag patterns (any or all of them), `limit` by path from `offset`
    on, with the total count. `index` is `tag_index_cache().get(conn)`, of the same snapshot."""
    return _first_notes(conn, index.matching(keys_matching(conn, patterns), mode), limit, offset)


def search_tags(
    conn: Connection, tag_index: ByVersion[TagIndex], pattern: str, limit: int, offset: int = 0
) -> read.TagSearch:
    """Notes carrying a tag matching `pattern` (normalised; nested tags and `*`/`?` match), the
    first `limit` by path, with the total and the keys that matched.

    A plain tag is one range of the tags index with a kept total: SQL answers it
    (`read.search_tag`), and the in-memory index is not rebuilt for it after a change. A
    wildcard may match hundreds of tags whose notes overlap: their union comes from the index
    in memory (`tag_index`, built on first use), where SQLite would sort every tag row of them
    to count distinct notes."""
    if not read.is_wildcard(pattern):
        return read.search_tag(conn, pattern, limit, offset)
    keys = keys_matching(conn, [pattern])[0]
    page = _first_notes(conn, tag_index.get(conn).carrying(keys), limit, offset)
    return read.TagSearch(page.items, page.total, sorted(keys))


def _first_notes(
    conn: Connection, found: set[str], limit: int, offset: int = 0
) -> Page[FileSummary]:
    page = first_paths(found, offset + limit)[offset:]
    rows = conn.execute(
        select(*read.SUMMARY_COLUMNS).where(Note.path.in_(page)).order_by(Note.path)
    ).all()
    return Page(read.summaries(conn, rows), len(found), offset, limit)


def random_note(
    conn: Connection, index: TagIndex, keys: Sequence[str], rng: random.Random | None = None
) -> FileSummary | None:
    """One note picked uniformly (among those with any of the tags), or None.

    With tags, from the set `index` (`tag_index_cache().get(conn)`) holds for them, as
    `notes_with_tags` finds them; without, by offset in the notes' own order, which never sorts
    the table."""
    pick = rng or random.SystemRandom()
    if keys:
        matching = index.matching(keys_matching(conn, keys), "any")
        found = sorted(p for p in matching if not is_canvas_path(p))  # sorted: repeatable
        if not found:
            return None
        chosen = select(*read.SUMMARY_COLUMNS).where(Note.path == pick.choice(found))
    else:
        total = conn.execute(select(func.count()).where(read.NOTE_ROWS)).scalar_one()
        if total == 0:
            return None
        offset = pick.randrange(total)
        chosen = select(*read.SUMMARY_COLUMNS).where(read.NOTE_ROWS).order_by(Note.path)
        chosen = chosen.limit(1).offset(offset)
    row = conn.execute(chosen).first()
    return None if row is None else read.summaries(conn, [row])[0]


def titles_of(conn: Connection, paths: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(paths), 900):
        batch = paths[start : start + 900]
        found.update(conn.execute(select(Note.path, Note.title).where(Note.path.in_(batch))).all())
    return found


# ---------------------------------------------------------------- existence, names


def existing_paths(conn: Connection, paths: Sequence[str]) -> set[str]:
    """Which of these exact paths are notes or attachments in the cache."""
    found: set[str] = set()
    for start in range(0, len(paths), 900):
        batch = paths[start : start + 900]
        found.update(conn.execute(select(Note.path).where(Note.path.in_(batch))).scalars())
        found.update(
            conn.execute(select(Attachment.path).where(Attachment.path.in_(batch))).scalars()
        )
    return found


def paths_by_lower(conn: Connection, lowered: Sequence[str]) -> dict[str, list[str]]:
    """Notes and attachments whose lower-cased path is one of `lowered` (ASCII case folding,
    as SQL's lower() does it), for "did you mean" answers."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(lowered), 900):
        batch = lowered[start : start + 900]
        for model in (Note, Attachment):
            rows = conn.execute(select(model.path).where(func.lower(model.path).in_(batch)))
            for path in rows.scalars():
                found.setdefault(path.lower(), []).append(path)
    return {key: sorted(paths) for key, paths in found.items()}


def load_names(conn: Connection) -> NameIndex:
    """Every note's names (path, file name, title, aliases), indexed for `resolve_names`."""
    return NameIndex(_name_rows(conn.execute(select(*_NAME_COLUMNS))))


def update_names(index: NameIndex, conn: Connection, changed: Collection[str]) -> NameIndex:
    """`index` with the names of the `changed` notes read again."""
    rows: list[NameRow] = []
    for batch in chunked(changed):
        rows += _name_rows(conn.execute(select(*_NAME_COLUMNS).where(Note.path.in_(batch))))
    return index.patched(changed, rows)


_NAME_COLUMNS = (Note.path, Note.title, Note.aliases)


def _name_rows(rows: Iterable[Any]) -> Iterator[NameRow]:
    """(path, title, aliases) rows as `NameRow`s."""
    for path, title, aliases in rows:
        yield NameRow(path, title, tuple(str(a) for a in aliases or ()))


def names_cache() -> ByVersion[NameIndex]:
    return ByVersion(load_names, update_names)


def load_path_prefixes(conn: Connection) -> PrefixIndex:
    """Every note path, found by any prefix ignoring case (completions)."""
    return PrefixIndex(conn.execute(select(Note.path)).scalars())


def update_path_prefixes(
    index: PrefixIndex, conn: Connection, changed: Collection[str]
) -> PrefixIndex:
    """`index` with the `changed` paths that are notes now in it, and the others out."""
    present: list[str] = []
    for batch in chunked(changed):
        present += conn.execute(select(Note.path).where(Note.path.in_(batch))).scalars()
    return index.patched(changed, present)


def path_prefixes_cache() -> ByVersion[PrefixIndex]:
    return ByVersion(load_path_prefixes, update_path_prefixes)


def folder_prefixes_cache() -> ByVersion[PrefixIndex]:
    """The folders holding notes (and those above them), read again when the cache changes: a
    few thousand at 100,000 notes, one grouped read of the folder index."""
    return ByVersion(lambda conn: PrefixIndex(read.note_folders(conn)), settle=False)


def notes_within(conn: Connection, directory: str | None, tag: str | None) -> set[str] | None:
    """Paths of the notes in `directory` (with subfolders) carrying `tag` (nested tags too);
    None when neither filter is given (every note)."""
    conditions: list[ColumnElement[bool]] = []
    if directory:
        conditions.append(under_prefix(Note.folder, directory))
    if tag:
        conditions.append(tags_condition([tag], "any"))
    if not conditions:
        return None
    return set(conn.execute(select(Note.path).where(*conditions)).scalars())


# ---------------------------------------------------------------- writes' helpers


def move_sources(conn: Connection, path: str, new_key: str) -> set[str]:
    """Notes whose links a move of `path` may change: those linking to it, and those with a
    resolved link that a note of the new name (`new_key`, see `resolver.path_key`) could
    capture (a same-named note arriving in their folder)."""
    rows = conn.execute(
        select(Link.source_path)
        .where(
            or_(
                Link.target_path == path,
                and_(Link.target_key == new_key, Link.target_path.is_not(None)),
            )
        )
        .distinct()
    )
    return set(rows.scalars())


def note_hashes(conn: Connection, paths: Sequence[str]) -> dict[str, str]:
    """The content hash the cache holds for each of these notes (absent: not in the cache)."""
    found: dict[str, str] = {}
    for start in range(0, len(paths), 900):
        batch = paths[start : start + 900]
        rows = conn.execute(select(Note.path, Note.content_hash).where(Note.path.in_(batch)))
        found.update((row.path, row.content_hash) for row in rows)
    return found
