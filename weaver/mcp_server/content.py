"""A note's text as answers carry it: one page, or one section, sized for a context window;
and the lines of the notes linking to one (the backlinks pane's context).

A page is at most `length` characters and at most `sizing.TEXT_TOKEN_BUDGET` estimated tokens
(a page of Chinese text holds fewer characters than one of English), so that every default
answer of `get_file_content` stays under the bound whatever the note is written in.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from weaver.errors import NoteDecodeError, WeaverError, did_you_mean, suggest
from weaver.markdown.parser import find_link_spans, parse_note
from weaver.markdown.sections import find_section
from weaver.mcp_server.schemas import BacklinkContext, BacklinkLine, FileContentData
from weaver.mcp_server.sizing import fit_text
from weaver.vault.fs import Vault

CONTEXT_LINES = 3
CONTEXT_CHARS = 300
ELLIPSIS = "…"
WORD_SLACK = 20  # a window edge moves in this far at most to end on a whole word


class SectionNotFoundError(WeaverError):
    """A `section` names no heading or block of the note (with the headings it may mean)."""

    def __init__(self, path: str, section: str, close: Sequence[str]) -> None:
        hint = f" ({did_you_mean(close)})" if close else " (the note has no such heading)"
        super().__init__(f"Section not found: {section!r} in {path!r}{hint}")


def decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise NoteDecodeError(path, f"invalid byte at offset {exc.start}") from None


def read_page(
    vault: Vault, path: str, offset: int, length: int, section: str | None
) -> FileContentData:
    """The note at `path` (checked), or its `section`, from `offset` on: one page."""
    data = vault.read_note(path)
    text = decode(path, data)
    if section is not None:
        text = section_text(path, text, section)
    page = text[offset : offset + length]
    page = page[: fit_text(page)]
    end = offset + len(page)
    more = end < len(text)
    return FileContentData(
        path=path,
        content=page,
        size=len(data),
        offset=min(offset, len(text)),
        total_length=len(text),
        truncated=more,
        next_offset=end if more else None,
        section=section,
    )


def section_text(path: str, text: str, section: str) -> str:
    headings = parse_note(path, text).headings
    found = find_section(text, headings, section)
    if found is None:
        last = section.replace("::", "#").rsplit("#", 1)[-1].strip()
        raise SectionNotFoundError(path, section, suggest(last, (h.text for h in headings)))
    return text[found.start : found.end]


def backlink_context(
    vault: Vault, lines: dict[str, dict[int, set[str]]], sources: Sequence[str]
) -> list[BacklinkContext]:
    """For each source (in order), the first lines linking here, read from disk: 1-based, each
    cut to a window around the link."""
    found = []
    for source in sources:
        wanted = list(lines.get(source, {}).items())[:CONTEXT_LINES]
        try:
            text = decode(source, vault.read_note(source)).split("\n")
        except (WeaverError, OSError):  # changed or gone since it was indexed: no context
            text = []
        found.append(
            BacklinkContext(
                path=source,
                lines=[
                    BacklinkLine(line=n + 1, text=link_window(text[n], targets))
                    for n, targets in wanted
                    if n < len(text)
                ],
            )
        )
    return found


def link_window(line: str, targets: Collection[str], width: int = CONTEXT_CHARS) -> str:
    """`line`, trimmed, cut to `width` characters around its first link to one of `targets`
    (a longer link whole), with an ellipsis on each side that was cut."""
    line = line.strip()
    if len(line) <= width:
        return line
    start, end = _link_span(line, targets)
    size = max(width, end - start)
    lo = max(0, min(start - (size - (end - start)) // 2, len(line) - size))
    lo, hi = _word_bounds(line, lo, lo + size, start, end)
    head = ELLIPSIS if lo > 0 else ""
    tail = ELLIPSIS if hi < len(line) else ""
    return f"{head}{line[lo:hi].strip()}{tail}"


def _word_bounds(line: str, lo: int, hi: int, start: int, end: int) -> tuple[int, int]:
    """The window [lo, hi) narrowed to whole words where a space is near its edges, never
    cutting into the link at [start, end)."""
    cut_word = lo > 0 and line[lo - 1] != " "
    if cut_word and (space := line.find(" ", lo, min(start, lo + WORD_SLACK))) >= 0:
        lo = space + 1
    cut_word = hi < len(line) and line[hi] != " "
    if cut_word and (space := line.rfind(" ", max(end, hi - WORD_SLACK), hi)) >= 0:
        hi = space
    return lo, hi


def _link_span(line: str, targets: Collection[str]) -> tuple[int, int]:
    """Where the line links to one of `targets`; the first mention of one when the line alone
    does not parse as it did in its note (a code span opened on an earlier line), else 0."""
    for start, end, target in find_link_spans(line):
        if target in targets:
            return start, end
    for target in targets:
        if target and (seen := re.search(re.escape(target), line, re.IGNORECASE)):
            return seen.span()
    return 0, 0
