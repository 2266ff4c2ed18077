"""One part of a note, as an Obsidian link names it: a heading's section or a block.

`"Setup"` is the section under the heading "Setup": that heading's line through the line before
the next heading of the same or a higher level. `"Setup::Linux"` (or `"Setup#Linux"`, as a
link's subpath writes it) is the heading "Linux" within the section of "Setup", at any depth
below it. `"^intro"` is the block ending in `^intro`: that list item or line's paragraph or,
when the id stands on its own line after a block (a table, a quote), that block.
Headings are compared ignoring case, surrounding `#` and runs of spaces. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from weaver.markdown.parser import Heading

HEADING_SEPARATORS = re.compile(r"::|#")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]")


@dataclass(frozen=True, slots=True)
class Section:
    start: int  # character offsets in the note's text
    end: int
    heading_line: int | None  # 0-based line of the heading, None for a block


def heading_key(text: str) -> str:
    return " ".join(text.strip().strip("#").split()).casefold()


def split_section(section: str) -> list[str]:
    """`"Setup::Linux"` -> `["Setup", "Linux"]`; a block (`^id`) stays one part."""
    if section.strip().startswith("^"):
        return [section.strip()]
    return [part for part in HEADING_SEPARATORS.split(section) if part.strip()]


def find_section(text: str, headings: Sequence[Heading], section: str) -> Section | None:
    """Where `section` (a heading path or `^block`) lies in `text`, or None if nowhere."""
    parts = split_section(section)
    if not parts:
        return None
    starts = _line_starts(text)
    if parts[0].startswith("^"):
        return _find_block(text, starts, parts[0][1:])
    found = _find_heading(headings, [heading_key(p) for p in parts])
    if found is None:
        return None
    index, end_line = found
    start = starts[headings[index].line]
    end = starts[end_line] if end_line < len(starts) else len(text)
    return Section(start, end, headings[index].line)


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _find_heading(headings: Sequence[Heading], keys: list[str]) -> tuple[int, int] | None:
    """The index of the last heading of the path and the line its section ends before."""
    low, high = 0, len(headings)  # the headings the next part is looked for among
    index = -1
    for key in keys:
        index = next((i for i in range(low, high) if heading_key(headings[i].text) == key), -1)
        if index < 0:
            return None
        low, high = index + 1, _section_end(headings, index, high)
    end = _section_end(headings, index, len(headings))
    return index, headings[end].line if end < len(headings) else 2**62


def _section_end(headings: Sequence[Heading], index: int, high: int) -> int:
    level = headings[index].level
    return next((i for i in range(index + 1, high) if headings[i].level <= level), high)


def _find_block(text: str, starts: list[int], block_id: str) -> Section | None:
    if not block_id:
        return None
    marker = re.compile(rf"(?:^|\s)\^{re.escape(block_id)}[ \t]*\r?$", re.MULTILINE)
    match = marker.search(text)
    if match is None:
        return None
    lines = text.split("\n")
    id_line = text.count("\n", 0, match.start() + 1)
    first = id_line
    if lines[id_line].strip() == "^" + block_id:  # an id on its own line, after its block
        while first > 0 and not lines[first - 1].strip():
            first -= 1
        first = max(first - 1, 0)
    if not _LIST_ITEM.match(lines[first]):  # a paragraph, table or quote: back to its start
        while first > 0 and _continues_block(lines[first - 1]):
            first -= 1
    end_line = id_line + 1
    end = starts[end_line] if end_line < len(starts) else len(text)
    return Section(starts[first], end, None)


def _continues_block(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#") and not _LIST_ITEM.match(line)
