"""The rows the indexer hands the cache: a parsed note to write, and what the cache remembers
of a file. They live here, below `index/`, so that the cache's writers need nothing above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from weaver.markdown.inline_fields import InlineField
from weaver.markdown.parser import ParsedLink
from weaver.markdown.tasks import ParsedTask


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
    tasks: tuple[ParsedTask, ...] = ()
    inline_fields: tuple[InlineField, ...] = ()
