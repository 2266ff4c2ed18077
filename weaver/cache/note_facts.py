"""What the built-in workflows read about notes from the cache, for a batch of paths at once.

The watcher hands a workflow a batch of changed notes; each function here answers for the whole
batch in one query per chunk of paths (`paths=None` means every note, with no IN list at all),
never a query per note. Link lines are 0-based, as the parser stores them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Select, func, select

from weaver.cache.models import Link, Note, Tag, Task
from weaver.cache.write import chunked

# Any SELECT: `.where` on one returns the same kind of statement.
StatementT = TypeVar("StatementT", bound=Select[*tuple[Any, ...]])


@dataclass(frozen=True, slots=True)
class NoteFacts:
    """A note's row in the cache, as the workflows use it."""

    path: str
    title: str
    type: str | None
    status: str | None
    frontmatter: dict[str, Any]
    size: int
    content_hash: str
    created: int
    modified: int
    word_count: int
    tasks_open: int  # TODO, IN_PROGRESS, ON_HOLD tasks (the Tasks plugin's `not done`)
    tasks_done: int  # DONE, CANCELLED, NON_TASK tasks (its `done`)


@dataclass(frozen=True, slots=True)
class BrokenLink:
    """A link whose target resolves to no file."""

    source: str
    target: str
    kind: str
    line: int


def _task_count(status_types: tuple[str, ...]) -> Any:
    """The note's tasks of these status types, from the task index: the types follow the
    vault's Tasks settings, so `[/]` counts as open and `[-]` as closed, as the plugin's `not
    done` and `done` filters split them (the notes table's counts only tell a space from the
    rest)."""
    return (
        select(func.count())
        .where(Task.note_path == Note.path, Task.status_type.in_(status_types))
        .correlate(Note)
        .scalar_subquery()
    )


_FACT_COLUMNS = (
    Note.path,
    Note.title,
    Note.type,
    Note.status,
    Note.frontmatter,
    Note.size,
    Note.content_hash,
    Note.created,
    Note.modified,
    Note.word_count,
    _task_count(("TODO", "IN_PROGRESS", "ON_HOLD")),
    _task_count(("DONE", "CANCELLED", "NON_TASK")),
)


def _per_chunk(
    statement: StatementT, column: Any, values: Collection[str] | None
) -> Iterator[StatementT]:
    """The statement for every value (None), or once per chunk of values (an IN list each)."""
    if values is None:
        yield statement
        return
    for batch in chunked(dict.fromkeys(values)):
        yield statement.where(column.in_(batch))


def get_note_facts(conn: Connection, paths: Collection[str] | None) -> dict[str, NoteFacts]:
    """The cached facts of these notes (those still in the cache), by path."""
    found: dict[str, NoteFacts] = {}
    for statement in _per_chunk(select(*_FACT_COLUMNS), Note.path, paths):
        for row in conn.execute(statement):
            found[row.path] = NoteFacts(*row)
    return found


def list_note_paths(conn: Connection, note_type: str | None = None) -> list[str]:
    """Every note's path, sorted; with `note_type`, those of that `type` (any case)."""
    statement = select(Note.path).order_by(Note.path)
    if note_type is not None:
        statement = statement.where(func.lower(Note.type) == note_type.lower())
    return list(conn.execute(statement).scalars())


def list_broken_links(
    conn: Connection, paths: Collection[str] | None
) -> dict[str, list[BrokenLink]]:
    """The broken links of these notes, in file order, by source path."""
    statement = (
        select(Link.source_path, Link.target, Link.kind, Link.line)
        .where(Link.target_path.is_(None))
        .order_by(Link.source_path, Link.id)
    )
    found: dict[str, list[BrokenLink]] = {}
    for chunk in _per_chunk(statement, Link.source_path, paths):
        for row in conn.execute(chunk):
            found.setdefault(row.source_path, []).append(BrokenLink(*row))
    return found


def list_broken_links_by_key(conn: Connection, keys: Collection[str]) -> list[BrokenLink]:
    """Broken links whose target names a file with one of these keys (`resolver.path_key`):
    the links a deleted or renamed file may have left broken."""
    statement = (
        select(Link.source_path, Link.target, Link.kind, Link.line)
        .where(Link.target_path.is_(None))
        .order_by(Link.source_path, Link.id)
    )
    return [
        BrokenLink(*row)
        for chunk in _per_chunk(statement, Link.target_key, keys)
        for row in conn.execute(chunk)
    ]


def count_tag_carriers(conn: Connection, keys: Collection[str]) -> dict[str, int]:
    """How many notes carry each of these tag keys exactly (not nested tags below them)."""
    statement = select(Tag.key, func.count()).group_by(Tag.key)
    return {
        row[0]: row[1]
        for chunk in _per_chunk(statement, Tag.key, keys)
        for row in conn.execute(chunk)
    }
