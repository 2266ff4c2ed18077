"""Dataview inline fields: `key:: value` lines and `[key:: value]` / `(key:: value)` in text.

The types a note's inline fields become; they are indexed as note properties (frontmatter wins
on a clash of keys, and both stay visible in `get_file`).

Read as Dataview reads them (its "Adding Metadata" docs): a field owning a whole line, also in a
list item, a task or a quote, its key maybe **bold**, its value the rest of the line; and any
number of bracketed fields inside a line, the value up to the closing bracket. The body is read
with code, comments and links blanked (`weaver.markdown.links`): a link inside a value does not
close it, and nothing in code is a field. The link parser asks the same `LineFields` which field
a link stands in (`rel:: [[X]]`), so a relation and a field always agree.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from weaver.markdown.patterns import BRACKET, BRACKET_FIELD, LINE_FIELD

__all__ = ["InlineField", "LineFields", "find_inline_fields"]


class InlineField(NamedTuple):
    key: str  # as written (`query_files where=` compares keys case-folded, as properties)
    value: str  # as written, stripped
    line: int  # 1-based line in the file


class LineFields:
    """The Dataview inline fields of one line (code and links blanked): `key:: value` owning the
    line, and `[key:: value]` / `(key:: value)`."""

    def __init__(self, line: str) -> None:
        self.brackets: list[tuple[int, int, str]] = []  # (value start, value end, key), disjoint
        for match in BRACKET_FIELD.finditer(line):
            close = BRACKET.search(line, match.end())
            if close and close.group() == ("]" if match.group(1) == "[" else ")"):
                self.brackets.append((match.end(), close.start(), match.group(2).strip()))
        self.starts = [start for start, _, _ in self.brackets]
        whole = LINE_FIELD.match(line)
        self.line_field = (whole.end(), whole.group(1).strip()) if whole else None

    def key_at(self, start: int, end: int) -> str | None:
        """The key of the field whose value holds start..end, if any."""
        index = bisect_right(self.starts, start) - 1
        if index >= 0 and end <= self.brackets[index][1]:
            return self.brackets[index][2]
        if self.line_field and start >= self.line_field[0]:
            return self.line_field[1]
        return None

    def fields(self, raw: str, line: int) -> list[InlineField]:
        """The fields in the order they start, values read from `raw` (the line as written)."""
        found = []
        if self.line_field:
            end, key = self.line_field
            found.append(InlineField(key, raw[end:].strip(), line))
        found += [InlineField(key, raw[lo:hi].strip(), line) for lo, hi, key in self.brackets]
        return found


def find_inline_fields(text: str, masked: str, first_line: int) -> tuple[InlineField, ...]:
    """The inline fields of a note body in file order: `masked` is the body with code, comments
    and links blanked (as `parse_note` has it), `first_line` the 0-based file line it starts at.
    Only the lines holding "::" are looked at."""
    fields: list[InlineField] = []
    index, counted, pos = 0, 0, masked.find("::")
    while pos >= 0:
        start = masked.rfind("\n", 0, pos) + 1
        end = masked.find("\n", pos)
        end = len(masked) if end < 0 else end
        index += masked.count("\n", counted, start)
        counted = start
        fields += LineFields(masked[start:end]).fields(text[start:end], first_line + index + 1)
        pos = masked.find("::", end)
    return tuple(fields)
