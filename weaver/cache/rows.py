"""The rows the indexer hands the cache: a parsed note to write, and what the cache remembers
of a file. They live here, below `index/`, so that the cache's writers need nothing above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from weaver.markdown.inline_fields import InlineField
from weaver.markdown.parser import ParsedLink
from weaver.markdown.tasks import ParsedTask, TaskDates

# One task as a parse worker hands it to the writer: the `tasks` columns the parser decides, in
# `TASK_ROW_FIELDS` order. A plain tuple rather than a named tuple, because big passes send tens
# of thousands of them through a pipe: a named tuple pickles by its class and, once loaded, stays
# tracked by the cycle collector, which then walks it at every collection while the writer runs;
# an exact tuple of strings, numbers and such tuples is untracked after the first collection.
# What only the writer knows is added there: the note's path, the status type (the vault's
# settings) and the JSON encoding of the last four (the database's dialect).
TaskRow = tuple[
    int,  # line
    int | None,  # parent_line
    str | None,  # heading
    str | None,  # block_id
    str,  # status_char
    str,  # description
    str,  # raw
    str | None,  # due
    str | None,  # scheduled
    str | None,  # start
    str | None,  # created
    str | None,  # done
    str | None,  # cancelled
    str | None,  # recurrence
    int,  # priority
    str | None,  # task_id
    tuple[str, ...],  # tags
    tuple[str, ...],  # depends_on
    tuple[tuple[str, str], ...],  # fields
    tuple[str, ...],  # warnings
]
# The names of a `TaskRow`'s values, as `ParsedTask` and `TaskDates` name them.
TASK_ROW_FIELDS = (
    "line",
    "parent_line",
    "heading",
    "block_id",
    "status_char",
    "description",
    "raw",
    *TaskDates._fields,
    "recurrence",
    "priority",
    "task_id",
    "tags",
    "depends_on",
    "fields",
    "warnings",
)
# Where the status character and the first of the values to encode as JSON stand in a row
# (literals, so that mypy knows the types of what is read there).
STATUS_CHAR_AT: Final = 4
JSON_FROM: Final = 16


def task_row(task: ParsedTask) -> TaskRow:
    """What the writer needs of a parsed task, as a `TaskRow`."""
    dates = task.dates
    return (
        task.line,
        task.parent_line,
        task.heading,
        task.block_id,
        task.status_char,
        task.description,
        task.raw,
        dates.due,
        dates.scheduled,
        dates.start,
        dates.created,
        dates.done,
        dates.cancelled,
        task.recurrence,
        task.priority,
        task.task_id,
        task.tags,
        task.depends_on,
        task.fields,
        task.warnings,
    )


@dataclass(frozen=True, slots=True)
class StoredFile:
    """What the cache remembers about a file, enough to tell whether it changed on disk."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str | None  # None for attachments
    created: int | None


class NoteRecord(NamedTuple):
    """One parsed note, ready to be written. A named tuple (as `ParsedLink`) because records
    come back from parse workers pickled, and tuples unpickle several times faster."""

    path: str
    title: str
    frontmatter: dict[str, Any]
    type: str | None
    status: str | None
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    links: tuple[ParsedLink, ...]
    size: int
    created: int
    modified: int
    mtime_ns: int
    content_hash: str
    indexed_at: int
    word_count: int
    tasks_open: int
    tasks_done: int
    error: str | None
    body: str  # the text after the frontmatter, for full-text search
    heading: str | None = None  # the first H1, as text
    headings: str = ""  # every heading's text, one a line, for full-text search
    front: str = ""  # the text before `body` (the frontmatter block): front + body is the note
    # `body` as full-text search indexes it (`markdown.cjk.segment`), made by the parse worker so
    # that the writer, the slower side of a big pass, does not scan every body again. The same
    # object as `body` when it holds no CJK text, so it costs nothing to pickle. None: not made.
    search_body: str | None = None
    tasks: tuple[TaskRow, ...] = ()  # made from the parsed tasks by `task_row`
    inline_fields: tuple[InlineField, ...] = ()
