"""Rename a tag inside one note's text, the way Obsidian's Tag Wrangler does. Pure.

Matching is Obsidian's: case-insensitive, `#from` and its children (`#from/x` becomes `#to/x`),
the new name spelled as given. Inline tags are found by the parser's own `find_inline_tags`, so
a tag in code, inline code, comments, math, links or URLs is never touched, exactly as it never
counted. In the frontmatter only the `tags` key is read (a list, one string, or the comma and
space separated form), and only the tag's characters inside each value are replaced in the
source text itself: comments, quoting, order and layout stay byte for byte. A list that then
names a tag twice (the rename merged into a tag the note already had) loses the later item.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.parser import find_inline_tags
from weaver.markdown.patterns import normalize_tag

_TAG_TOKEN = re.compile(r"[^\s\x00-\x2c.\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]+")
_YAML = ObsidianYAMLHandler()
_OPENING = re.compile(r"---[ \t]*\r?\n")
_TAGS_KEY = re.compile(r"^[\"']?tags[\"']?[ \t]*:", re.IGNORECASE | re.MULTILINE)
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class LineChange:
    line: int  # 1-based line in the file
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class Retagged:
    text: str
    changes: tuple[LineChange, ...]


def renamed(tag: str, old: str, new: str) -> str | None:
    """`tag` under the new name if it is `old` or one of its children, else None."""
    key = normalize_tag(old)
    folded = tag.casefold()
    if folded == key or folded.startswith(key + "/"):
        return new + tag[len(key) :]
    return None


def rename_tag_in_text(text: str, old: str, new: str) -> Retagged:
    """The note's text (LF newlines) with tag `old` renamed to `new` (both without '#')."""
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in text
    span = _frontmatter_source(text)
    if span is not None:
        edits.extend(_frontmatter_edits(text, span[0], span[1], old, new))
    body_start = 0 if span is None else span[2]
    for pos, tag in find_inline_tags(text[body_start:]):
        name = renamed(tag, old, new)
        if name is not None and name != tag:
            start = body_start + pos + 1
            edits.append((start, start + len(tag), name))
    if not edits:
        return Retagged(text, ())
    edits.sort()
    parts, pos = [], 0
    for start, end, replacement in edits:
        parts.append(text[pos:start])
        parts.append(replacement)
        pos = end
    parts.append(text[pos:])
    new_text = "".join(parts)
    return Retagged(new_text, tuple(_line_changes(text, new_text)))


def _frontmatter_source(text: str) -> tuple[int, int, int] | None:
    """(yaml start, yaml end, body start) offsets, or None without a frontmatter block."""
    if not _YAML.detect(text):
        return None
    source, body = _YAML.split(text)
    body_start = len(text) - len(body)
    opening = _OPENING.match(text)
    start = opening.end() if opening else body_start
    return start, start + len(source), body_start


def _frontmatter_edits(
    text: str, start: int, end: int, old: str, new: str
) -> Iterator[tuple[int, int, str]]:
    source = text[start:end]
    if not _TAGS_KEY.search(source):
        return  # the usual case for a note tagged inline: no YAML to compose
    root = _compose(source)
    if not isinstance(root, yaml.MappingNode):
        return  # an invalid block is left as it is: Obsidian reads no tags from it either
    for key, value in root.value:
        if not (isinstance(key, yaml.ScalarNode) and str(key.value).casefold() == "tags"):
            continue
        scalars = [value] if isinstance(value, yaml.ScalarNode) else []
        if isinstance(value, yaml.SequenceNode):
            scalars = [item for item in value.value if isinstance(item, yaml.ScalarNode)]
        seen: set[str] = set()
        for scalar in scalars:
            if scalar.style in ("|", ">"):
                continue
            lo, hi = start + scalar.start_mark.index, start + scalar.end_mark.index
            replaced = list(_token_edits(text, lo, hi, old, new))
            name = scalar.value.strip().removeprefix("#")
            final = (renamed(name, old, new) or name).casefold()
            if replaced and final in seen and isinstance(value, yaml.SequenceNode):
                yield _item_removal(text, lo, hi, value.flow_style)  # merged into a tag it has
            else:
                yield from replaced
            seen.add(final)


def _compose(source: str) -> yaml.Node | None:
    """The node tree with source offsets: libyaml's when its offsets check out against the text
    (the faster), else PyYAML's own."""
    try:
        root = yaml.compose(source, Loader=_FAST_LOADER)
        if _FAST_LOADER is yaml.SafeLoader or _offsets_hold(source, root):
            return root
        return yaml.compose(source, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None


def _offsets_hold(source: str, root: yaml.Node | None) -> bool:
    """Whether each plain or simply quoted scalar's marks slice exactly its value."""
    if not isinstance(root, yaml.MappingNode):
        return True
    for _, value in root.value:
        items = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for item in items:
            if not isinstance(item, yaml.ScalarNode) or "\\" in item.value:
                continue
            raw = source[item.start_mark.index : item.end_mark.index]
            if item.style in ("'", '"'):
                raw = raw[1:-1]
            if item.style in (None, "'", '"') and raw != item.value and "\n" not in raw:
                return False
    return True


def _token_edits(text: str, lo: int, hi: int, old: str, new: str) -> Iterator[tuple[int, int, str]]:
    for match in _TAG_TOKEN.finditer(text, lo, hi):
        name = renamed(match.group(), old, new)
        if name is not None and name != match.group():
            yield match.start(), match.end(), name


def _item_removal(text: str, lo: int, hi: int, flow: bool | None) -> tuple[int, int, str]:
    """An edit deleting the sequence item at text[lo:hi] (its line, or `, item` in [a, b])."""
    if flow:
        comma = text.rfind(",", 0, lo)
        return comma, hi, ""
    line_start = text.rfind("\n", 0, lo) + 1
    line_end = text.find("\n", hi)
    return line_start, len(text) if line_end < 0 else line_end + 1, ""


def _line_changes(old: str, new: str) -> Iterator[LineChange]:
    """Changed lines, by line number; a deleted list item shows as its line emptied."""
    a, b = old.split("\n"), new.split("\n")
    if len(a) == len(b):
        for index, (before, after) in enumerate(zip(a, b, strict=True)):
            if before != after:
                yield LineChange(index + 1, before, after)
        return
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            before = a[i1 + k] if i1 + k < i2 else ""
            after = b[j1 + k] if j1 + k < j2 else ""
            yield LineChange(i1 + k + 1, before, after)
