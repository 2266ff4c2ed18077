"""A note's text -> the chunks that get embedded. Pure: no I/O.

One chunk per heading section, prefixed with what places it: the note's title and the path of
headings down to the section (`Title › Setup › Mobile`), so a section that says "it works on
both" still carries what "it" is. The text before the first heading also carries the note's
aliases and tags (the only frontmatter that says what a note is about; the rest is
bookkeeping). A section longer than `MAX_WORDS` is split into windows that overlap by
`OVERLAP_WORDS`, so a sentence cut at a boundary is whole in one of them; the model reads 256
tokens at most, and ~1.3 tokens per word leaves room for the prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

MAX_WORDS = 150
OVERLAP_WORDS = 30
PATH_SEPARATOR = " › "
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


@dataclass(frozen=True, slots=True)
class Chunk:
    heading: str  # the heading path inside the note ("" for the text before any heading)
    text: str  # what is embedded: prefix, blank line, section text
    body: str  # the section text alone, for snippets


@dataclass(frozen=True, slots=True)
class PageChunk:
    page: int  # the PDF page the chunk is on, from 1
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class _Section:
    path: tuple[str, ...]
    lines: list[str]


def chunk_note(
    title: str, body: str, aliases: Sequence[str] = (), tags: Sequence[str] = ()
) -> list[Chunk]:
    """The chunks of a note; at least one (its title), even when the body is empty."""
    chunks: list[Chunk] = []
    for section in _sections(body):
        words = " ".join(section.lines).split()
        if not words:
            continue
        prefix = _prefix(title, section.path, aliases if not section.path else (), tags)
        heading = PATH_SEPARATOR.join(section.path)
        for window in _windows(words):
            chunks.append(Chunk(heading, f"{prefix}\n\n{window}", window))
    if not chunks:
        chunks.append(Chunk("", _prefix(title, (), aliases, tags), ""))
    return chunks


def _prefix(title: str, path: tuple[str, ...], aliases: Sequence[str], tags: Sequence[str]) -> str:
    line = PATH_SEPARATOR.join((title, *path))
    extras = []
    if aliases:
        extras.append("also: " + ", ".join(aliases))
    if tags and not path:
        extras.append("tags: " + " ".join(tags))
    return "\n".join([line, *extras])


def _sections(body: str) -> Iterator[_Section]:
    """Sections in order; the heading stack gives each its path (a `##` closes a `###`)."""
    stack: list[tuple[int, str]] = []
    lines: list[str] = []
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        yield _Section(tuple(text for _, text in stack), lines)
        level = len(match.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, match.group(2).strip()))
        lines = []
    yield _Section(tuple(text for _, text in stack), lines)


def _windows(words: list[str]) -> Iterator[str]:
    if len(words) <= MAX_WORDS:
        yield " ".join(words)
        return
    step = MAX_WORDS - OVERLAP_WORDS
    for start in range(0, len(words) - OVERLAP_WORDS, step):
        yield " ".join(words[start : start + MAX_WORDS])


def chunk_pages(title: str, pages: Sequence[tuple[int, str]], max_chunks: int) -> list[PageChunk]:
    """The chunks of a PDF's pages (number, text), each page chunked as a note's body under
    the document's `title`, in page order, `max_chunks` at most (the first pages'): a page is
    chunked alone, so every chunk names the one page it is on."""
    chunks: list[PageChunk] = []
    for number, page_text in pages:
        if not page_text.strip():
            continue
        for chunk in chunk_note(title, page_text):
            if len(chunks) == max_chunks:
                return chunks
            chunks.append(PageChunk(number, chunk))
    return chunks
