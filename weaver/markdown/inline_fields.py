"""Dataview inline fields: `key:: value` lines and `[key:: value]` / `(key:: value)` in text.

The types a note's inline fields become; they are indexed as note properties (frontmatter wins
on a clash of keys, and both stay visible in `get_file`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["InlineField"]


class InlineField(NamedTuple):
    key: str  # as written (`query_files where=` compares keys case-folded, as properties)
    value: str  # as written, stripped
    line: int  # 1-based line in the file
