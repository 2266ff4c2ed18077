"""The files a base sees, from the cache: every note and attachment of the vault (a base with no
filters shows them all, as in Obsidian), as `bases.FileFacts`.

Two things keep a view over a big vault fast:
- **Narrowing in SQL.** The filter's leading required conditions that SQL decides exactly
  (`file.hasTag("a", "b")`, `file.inFolder("x")`, `file.ext == "md"`) choose the files loaded,
  through the tag and path indexes, and are then not evaluated again (`Narrowed.rest`). Only a
  leading run is taken, in the order the filter evaluates: a row a later condition drops would
  first have run the conditions before it, whose error must fail the view as it would without
  the narrowing. These three never fail, whatever the file.
- **Loading lists once, for all.** A file's tags, links, backlinks, embeds and properties are
  read the first time any file of the load asks for them, for every file of the load in one
  statement: a view that never reads backlinks never loads them, one that does pays one query.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Connection,
    Select,
    String,
    and_,
    false,
    func,
    or_,
    select,
    true,
)
from sqlalchemy import cast as sql_cast

from weaver.bases.filters import AllOf, Condition, Filter
from weaver.bases.syntax import Binary, Call, Literal, Member, Name, Node
from weaver.bases.values import note_target
from weaver.cache.models import Attachment, Link, Note, Tag
from weaver.cache.read import under_prefix
from weaver.markdown.patterns import normalize_tag
from weaver.markdown.resolver import LinkResolver

# The links a note's `file.links` lists; embeds are `file.embeds`, as Obsidian keeps them apart.
_LINK_KINDS = ("wikilink", "markdown", "frontmatter")
_IN_CHUNK = 900  # bound parameters per IN list, under SQLite's old limit of 999
_FEW = 200  # files of a load read by their paths; more, by the narrowing's statement

# A file as the cache lists it: path, size, created and modified (ms since the epoch), and the
# hash of a note's content ("" for an attachment). All a file's facts follow from these.
FileRow = tuple[str, int, float, float, str]
Paths = Select[Any] | CompoundSelect[Any]  # a statement selecting paths


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The files a filter may keep (`rows`), and what is left of the filter to evaluate on
    them (`rest`: None when SQL decided all of it). Their facts are read when asked for."""

    rows: list[FileRow]  # the notes first, then the attachments
    notes: int  # how many of the rows are notes
    rest: Filter | None
    conn: Connection
    scope: Paths  # the files' paths, to read lists for all of them in one statement

    @property
    def files(self) -> list[CachedFile]:
        return self.files_of(self.rows)

    def files_of(self, rows: Sequence[FileRow]) -> list[CachedFile]:
        """The files of some of the rows. A few have their lists read by their paths; more,
        through the narrowing's statement."""
        scope = [row[0] for row in rows] if len(rows) <= _FEW else self.scope
        load = _Load(self.conn, scope)
        return [CachedFile(load, *row[:2], row[2] / 1000, row[3] / 1000) for row in rows]


class CachedFile:
    """A note or attachment as the cache holds it. The list fields come from its `_Load`."""

    __slots__ = ("_created", "_load", "_modified", "ext", "folder", "name", "path", "size")

    def __init__(self, load: _Load, path: str, size: int, created: float, modified: float) -> None:
        self._load = load
        self.path = path
        slash = path.rfind("/")
        self.folder = path[:slash] if slash >= 0 else ""
        self.name = path[slash + 1 :]
        dot = self.name.rfind(".")
        self.ext = self.name[dot + 1 :] if dot > 0 else ""
        self.size = size
        self._created = created  # seconds since the epoch; a datetime only when read
        self._modified = modified

    @property
    def ctime(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._created)

    @property
    def mtime(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._modified)

    @property
    def tags(self) -> Sequence[str]:
        return self._load.lists("tags").get(self.path, ())

    @property
    def links(self) -> Sequence[str]:
        return self._load.lists("links").get(self.path, ())

    @property
    def backlinks(self) -> Sequence[str]:
        return self._load.lists("backlinks").get(self.path, ())

    @property
    def embeds(self) -> Sequence[str]:
        return self._load.lists("embeds").get(self.path, ())

    @property
    def properties(self) -> Mapping[str, object]:
        return self._load.properties(self.path)

    def __repr__(self) -> str:
        return f"CachedFile({self.path!r})"


class _Load:
    """The files of one load and what has been read of them, read on first demand. `scope`
    selects the notes' paths in SQL (a narrowing's statement), or is the list of paths."""

    def __init__(self, conn: Connection, scope: Paths | list[str]) -> None:
        self.conn = conn
        self.scope = scope
        self._lists: dict[str, dict[str, list[str]]] = {}
        self._raw: dict[str, str] | None = None
        self._parsed: dict[str, Mapping[str, object]] = {}

    def lists(self, field: str) -> dict[str, list[str]]:
        found = self._lists.get(field)
        if found is None:
            found = self._lists[field] = self._read(field)
        return found

    def properties(self, path: str) -> Mapping[str, object]:
        parsed = self._parsed.get(path)
        if parsed is None:
            if self._raw is None:
                self._raw = dict(self._rows(_FRONTMATTER, Note.path))
            text = self._raw.get(path)
            parsed = self._parsed[path] = json.loads(text) if text else {}
        return parsed

    def _read(self, field: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for path, value in self._rows(*_LIST_QUERIES[field]):
            found.setdefault(path, []).append(value)
        return found

    def _rows(self, statement: Any, column: Any) -> Iterator[tuple[str, str]]:
        if isinstance(self.scope, list):
            for start in range(0, len(self.scope), _IN_CHUNK):
                chunk = self.scope[start : start + _IN_CHUNK]
                yield from self.conn.execute(statement.where(column.in_(chunk))).all()
        else:
            yield from self.conn.execute(statement.where(column.in_(self.scope))).all()


_FRONTMATTER = select(Note.path, sql_cast(Note.frontmatter, String))


def _link_query(kinds: Sequence[str]) -> Any:
    """Each link's resolved path, or its raw target while it resolves to nothing."""
    shown = func.coalesce(Link.target_path, Link.target)
    return select(Link.source_path, shown).where(Link.kind.in_(kinds)).order_by(Link.id)


# Each list field: the statement reading it as (path, item) rows, and the column its scope
# applies to.
_LIST_QUERIES: dict[str, tuple[Any, Any]] = {
    "tags": (select(Tag.note_path, Tag.tag).order_by(Tag.note_path, Tag.key), Tag.note_path),
    "links": (_link_query(_LINK_KINDS), Link.source_path),
    "embeds": (_link_query(("embed",)), Link.source_path),
    "backlinks": (
        select(Link.target_path, Link.source_path).distinct().order_by(Link.source_path),
        Link.target_path,
    ),
}


def load_files(
    conn: Connection, filter: Filter | None, notes: Collection[str] | None = None
) -> Narrowed:
    """Every vault file `filter` may keep, narrowed in SQL by its leading exact conditions;
    with `notes` (at most `_IN_CHUNK` paths), only those of the notes, and every attachment."""
    conditions, rest = _split(filter)
    note_where = and_(true(), *(c.note for c in conditions))
    if notes is not None:
        note_where = and_(note_where, Note.path.in_(list(notes)))
    listed = conn.execute(_NOTE_ROWS.where(note_where)).all()
    rows = cast(list[FileRow], list(map(tuple, listed)))  # plain tuples compare 10× faster
    count = len(rows)
    note_paths = select(Note.path).where(note_where)
    scope: Paths = note_paths
    if not any(c.notes_only for c in conditions):
        attachment_where = and_(true(), *(c.attachment for c in conditions))
        found = conn.execute(_ATTACHMENT_ROWS.where(attachment_where))
        rows += [_attachment_row(*row) for row in found]
        # An attachment has backlinks too.
        scope = note_paths.union_all(select(Attachment.path).where(attachment_where))
    return Narrowed(rows, count, rest, conn, scope)


def left_to_evaluate(filter: Filter | None) -> Filter | None:
    """What of `filter` `load_files` leaves to evaluate on the files it lists (`rest`)."""
    return _split(filter)[1]


def file_at(conn: Connection, path: str) -> CachedFile | None:
    """The note or attachment at `path` (None: the cache has no such file)."""
    load = _Load(conn, [path])
    row = conn.execute(_NOTE_ROWS.where(Note.path == path)).first()
    if row is not None:
        return CachedFile(load, row.path, row.size, row.created / 1000, row.modified / 1000)
    found = conn.execute(_ATTACHMENT_ROWS.where(Attachment.path == path)).first()
    if found is None:
        return None
    path, size, created, modified, _ = _attachment_row(*found)
    return CachedFile(load, path, size, created / 1000, modified / 1000)


def file_finder(conn: Connection, source: str = "") -> Callable[[str], CachedFile | None]:
    """Resolves a link target or a path to its file as Obsidian resolves links from `source`
    (`link.asFile()`, `file(path)`); the vault's paths are read on the first call only."""
    resolver: list[LinkResolver] = []
    found: dict[str, CachedFile | None] = {}

    def find(target: str) -> CachedFile | None:
        if target not in found:
            if not resolver:
                paths = conn.execute(select(Note.path).union_all(select(Attachment.path)))
                resolver.append(LinkResolver(paths.scalars()))
            path = resolver[0].resolve(note_target(target), source)
            found[target] = None if path is None else file_at(conn, path)
        return found[target]

    return find


_NOTE_ROWS = select(Note.path, Note.size, Note.created, Note.modified, Note.content_hash)
_ATTACHMENT_ROWS = select(Attachment.path, Attachment.size, Attachment.mtime_ns)


def _attachment_row(path: str, size: int, mtime_ns: int) -> FileRow:
    millis = mtime_ns / 1e6  # the cache keeps no creation time of attachments
    return path, size, millis, millis, ""


# ---------------------------------------------------------------- narrowing


@dataclass(frozen=True, slots=True)
class _Where:
    """A condition's SQL for notes and for attachments. `exact`: SQL decides it for every file,
    so it need not be evaluated again; else it only narrows, and is evaluated on what is left."""

    note: ColumnElement[bool]
    attachment: ColumnElement[bool]
    exact: bool = True
    notes_only: bool = False


def _split(filter: Filter | None) -> tuple[list[_Where], Filter | None]:
    """The SQL of the filter's leading required conditions it can take, and the filter left to
    evaluate. Narrowing stops at the first item that may fail for some file: the rows a later
    condition drops would have evaluated it first."""
    wheres: list[_Where] = []
    kept: list[Filter] = []
    narrowing = True
    for item in _flat(filter):
        if not narrowing or not isinstance(item, Condition):
            narrowing = False
            kept.append(item)
            continue
        parts = list(_and_chain(item.program.root))
        taken = list(itertools.takewhile(bool, map(_condition, parts)))
        wheres += [w for w in taken if w]
        if len(taken) < len(parts):
            narrowing = False  # its next part may fail: nothing after it narrows
        if len(taken) < len(parts) or not all(w and w.exact for w in taken):
            kept.append(item)
    rest = None if not kept else kept[0] if len(kept) == 1 else AllOf(tuple(kept))
    return wheres, rest


def _flat(filter: Filter | None) -> Iterator[Filter]:
    """The filter as the items an `and` evaluates in order (nested `and`s opened)."""
    match filter:
        case None:
            return
        case AllOf(items=items):
            for item in items:
                yield from _flat(item)
        case _:
            yield filter


def _and_chain(node: Node) -> Iterator[Node]:
    """`a && b && c` as a, b, c: evaluated left to right, each only if those before held."""
    if isinstance(node, Binary) and node.op == "&&":
        yield from _and_chain(node.left)
        yield from _and_chain(node.right)
    else:
        yield node


def _file_call(node: Node, method: str) -> list[str] | None:
    """The text arguments of `file.<method>("a", ...)` when `node` is that call with text
    literals only (then it cannot fail); else None."""
    if not isinstance(node, Call) or node.name != method or not _is_file(node.target):
        return None
    values = [arg.value if isinstance(arg, Literal) else None for arg in node.args]
    if not values or not all(isinstance(v, str) for v in values):
        return None
    return [str(v) for v in values]


def _is_file(node: Node | None) -> bool:
    return isinstance(node, Name) and node.name == "file"


def _is_file_member(node: Node, name: str) -> bool:
    return isinstance(node, Member) and node.name == name and _is_file(node.target)


def _ext_test(node: Node) -> str | None:
    """The extension of `file.ext == "md"` (either way round), when `node` is that."""
    if not isinstance(node, Binary) or node.op != "==":
        return None
    for field, value in ((node.left, node.right), (node.right, node.left)):
        if _is_file_member(field, "ext") and isinstance(value, Literal):
            return value.value if isinstance(value.value, str) else None
    return None


def _condition(node: Node) -> _Where | None:
    """The SQL of a condition that never fails, for notes and attachments; else None."""
    tags = _file_call(node, "hasTag")
    if tags is not None:
        keys = [normalize_tag(t) for t in tags]
        if not all(keys):  # an empty tag: leave its odd case to the evaluator
            return None
        tagged = select(Tag.note_path).where(or_(*(under_prefix(Tag.key, k) for k in keys)))
        return _Where(Note.path.in_(tagged), false(), notes_only=True)
    folders = _file_call(node, "inFolder")
    if folders is not None and len(folders) == 1:
        folder = folders[0].strip("/")
        if not folder:
            return _Where(true(), true())
        within = and_(Attachment.path > folder + "/", Attachment.path < folder + "0")
        return _Where(under_prefix(Note.folder, folder), within)
    if _ext_test(node) == "md":
        # Every .md file is a note (an attachment never is), but a note may end in `.MD`: the
        # attachments go, the notes are still asked.
        return _Where(true(), false(), exact=False, notes_only=True)
    return None
