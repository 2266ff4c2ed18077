"""Edits inside a note's text: append, prepend, a section under a heading path, a block by its
`^id`, find and replace. Pure: text in, text out; every function takes and returns the whole
note with LF newlines (the caller converts CRLF notes), and raises `TextEditError` naming what
the note has when a target is missing.

Headings and block ids are found where Obsidian finds them: never in code, comments or math. A
heading path is the headings' texts joined by `::` (`"Project::Tasks"`), each nested under the
one before at any depth, compared as Obsidian compares a link's `#heading` (`# | ^ : % [ ] \\`
read as spaces, runs of spaces as one, case ignored); a heading whose own text has `::` in it is
still found.

A section is the lines after its heading up to the next heading of the same or a higher level;
its heading's own text is the part before its first sub-heading. `before` inserts at the top of
the section or on the line before a block; `after` at the end of the heading's own text (so
never inside a sub-section) or on the line after a block; `end_of_section` at the end of the
whole section, after its sub-sections; both end before the section's trailing blank lines.
`replace` replaces the whole section's text, sub-sections included (the heading stays), or the
block's (its `^id` stays).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import regex

from weaver.errors import WeaverError
from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patterns import mask_code

Position = Literal["before", "after", "end_of_section", "replace"]
BlockPosition = Literal["before", "after", "replace"]  # a block has no sub-sections
PATH_SEPARATOR = "::"
MAX_PATH_PARTS = 32
REGEX_TIMEOUT_S = 1.0
MAX_LISTED = 50  # headings or blocks named in an error
DIFF_PREVIEW_LINES = 12

_HEADING = re.compile(r"[ \t]{0,3}+(#{1,6}+)(?=[ \t]|$)")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]++)#++[ \t]*+$")
_UNLINKABLE = re.compile(r"[#|^:%\[\]\\\s]+")
_BLOCK_ID = re.compile(r"(?:^|[ \t])\^([A-Za-z0-9-]+)[ \t]*$")
_LIST_ITEM = re.compile(r"[ \t>]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]")
_YAML = ObsidianYAMLHandler()


class TextEditError(WeaverError):
    """The edit cannot be made to this text (a missing target, a bad pattern)."""


@dataclass(frozen=True, slots=True)
class HeadingSpan:
    level: int
    text: str
    start: int  # offset of the heading line
    content: int  # offset just after the heading line
    end: int = 0  # offset where the section ends (set once all headings are known)
    own_end: int = 0  # offset where its own text ends: the next heading of any level


@dataclass(frozen=True, slots=True)
class BlockSpan:
    block_id: str
    start: int  # offset of the block's first line
    end: int  # offset of the end of its last line (before the "\n")
    own_line: bool  # the id sits on a line of its own, after the block


@dataclass(frozen=True, slots=True)
class DiffSummary:
    lines_added: int
    lines_removed: int
    preview: tuple[str, ...]  # unified-diff lines (+/-), the first DIFF_PREVIEW_LINES


# ---------------------------------------------------------------- frontmatter and body


def split_body(text: str) -> tuple[str, str]:
    """(frontmatter block as written, closing line included, or "", body)."""
    if not _YAML.detect(text):
        return "", text
    _, body = _YAML.split(text)
    return text[: len(text) - len(body)], body


def append_text(text: str, addition: str) -> str:
    """`addition` at the end of the note, on a line of its own."""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + _as_lines(addition)


def prepend_text(text: str, addition: str) -> str:
    """`addition` at the top of the body, after the frontmatter block."""
    block, body = split_body(text)
    return block + _as_lines(addition) + body


def _as_lines(addition: str) -> str:
    return addition if addition.endswith("\n") or not addition else addition + "\n"


# ---------------------------------------------------------------- headings and sections


def normalize_heading(text: str) -> str:
    """A heading's text as Obsidian matches it against a link's `#subpath`."""
    return _UNLINKABLE.sub(" ", text).strip().casefold()


def list_headings(body: str) -> list[HeadingSpan]:
    """The headings of a body in order, each with the span of its section."""
    masked = mask_code(body)
    found: list[HeadingSpan] = []
    pos = 0
    for line in masked.split("\n"):
        match = _HEADING.match(line)
        if match:
            end = pos + len(line)
            raw = body[pos + match.end() : end].strip()
            level, content = len(match.group(1)), min(end + 1, len(body))
            found.append(HeadingSpan(level, _CLOSING_HASHES.sub("", raw), pos, content))
        pos += len(line) + 1
    spans = []
    for i, heading in enumerate(found):
        later = (h.start for h in found[i + 1 :] if h.level <= heading.level)
        own_end = found[i + 1].start if i + 1 < len(found) else len(body)
        spans.append(_with_ends(heading, next(later, len(body)), own_end))
    return spans


def _with_ends(heading: HeadingSpan, end: int, own_end: int) -> HeadingSpan:
    return HeadingSpan(heading.level, heading.text, heading.start, heading.content, end, own_end)


def find_section(body: str, path: str) -> HeadingSpan:
    """The section under a heading path; TextEditError naming the note's headings if none."""
    parts = [part.strip() for part in path.split(PATH_SEPARATOR)]
    if not path.strip() or len(parts) > MAX_PATH_PARTS:
        raise TextEditError(f"heading path {path!r} must name 1 to {MAX_PATH_PARTS} headings")
    headings = list_headings(body)
    index = _match_path(headings, parts, 0, len(headings), 0)
    if index is None:
        raise TextEditError(f"no heading path {path!r} in this note; {_heading_list(headings)}")
    return headings[index]


def _match_path(
    headings: Sequence[HeadingSpan], parts: Sequence[str], lo: int, hi: int, above: int
) -> int | None:
    """Index of the heading that `parts` leads to among headings[lo:hi] deeper than `above`.
    Longer pieces first, so a heading spelled "A::B" wins over "A" then "B"."""
    for taken in range(len(parts), 0, -1):
        key = normalize_heading(PATH_SEPARATOR.join(parts[:taken]))
        for i in range(lo, hi):
            heading = headings[i]
            if heading.level <= above or normalize_heading(heading.text) != key:
                continue
            if taken == len(parts):
                return i
            inner_hi = next((j for j in range(i + 1, hi) if headings[j].start >= heading.end), hi)
            found = _match_path(headings, parts[taken:], i + 1, inner_hi, heading.level)
            if found is not None:
                return found
    return None


def _heading_list(headings: Sequence[HeadingSpan]) -> str:
    if not headings:
        return "it has no headings"
    names = [f"{'#' * h.level} {h.text}" for h in headings[:MAX_LISTED]]
    more = f" and {len(headings) - MAX_LISTED} more" if len(headings) > MAX_LISTED else ""
    return "its headings are: " + ", ".join(names) + more


def edit_section(text: str, path: str, position: Position, content: str) -> str:
    """Insert `content` at the top of the section at `path` (`before`), at the end of its
    heading's own text (`after`) or of the whole section (`end_of_section`), or replace the
    whole section's text (`replace`)."""
    block, body = split_body(text)
    section = find_section(body, path)
    addition = _as_lines(content)
    if position == "before":
        start = end = section.content
        if section.content == len(body) and not body.endswith("\n"):
            addition = "\n" + addition
    else:
        own = position == "after"
        start, end = section.content, _last_text_end(body, section, own_text=own)
        if position != "replace":
            start = end
        if start == len(body) and body and not body.endswith("\n"):
            addition = "\n" + addition
    return block + body[:start] + addition + body[end:]


def _last_text_end(body: str, section: HeadingSpan, *, own_text: bool) -> int:
    """Offset after the last non-blank line of the heading's own text, or of its whole section
    (its content start if that has none)."""
    inner = body[section.content : section.own_end if own_text else section.end]
    stripped = inner.rstrip(" \t\n")
    if not stripped:
        return section.content
    line_end = inner.find("\n", len(stripped))
    return section.content + (len(inner) if line_end < 0 else line_end + 1)


# ---------------------------------------------------------------- blocks


def list_blocks(body: str) -> list[BlockSpan]:
    """Every block with a `^id`, in order."""
    masked = mask_code(body)
    lines = masked.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    blocks = []
    for index, line in enumerate(lines):
        match = _BLOCK_ID.search(line)
        if match is None:
            continue
        own_line = line.strip() == "^" + match.group(1)
        first = index if _LIST_ITEM.match(line) and not own_line else _paragraph_start(lines, index)
        end = starts[index] + len(line)
        blocks.append(BlockSpan(match.group(1), starts[first], end, own_line))
    return blocks


def _paragraph_start(lines: Sequence[str], index: int) -> int:
    first = index
    while first > 0 and lines[first - 1].strip() and not _HEADING.match(lines[first - 1]):
        first -= 1
    return first


def find_block(body: str, block_id: str) -> BlockSpan:
    wanted = block_id.strip().removeprefix("^")
    blocks = list_blocks(body)
    for block in blocks:
        if block.block_id.casefold() == wanted.casefold():
            return block
    if not blocks:
        raise TextEditError(f"no block ^{wanted} in this note; it has no block ids")
    names = ", ".join(f"^{b.block_id}" for b in blocks[:MAX_LISTED])
    raise TextEditError(f"no block ^{wanted} in this note; its blocks are: {names}")


def edit_block(text: str, block_id: str, position: BlockPosition, content: str) -> str:
    """Insert `content` on the lines before/after the block `^id`, or replace its text."""
    block_fm, body = split_body(text)
    block = find_block(body, block_id)
    content = content.rstrip("\n")
    if position == "before":
        new = body[: block.start] + content + "\n" + body[block.start :]
    elif position == "after":
        new = body[: block.end] + "\n" + content + body[block.end :]
    else:
        tail = f"\n^{block.block_id}" if block.own_line else f" ^{block.block_id}"
        new = body[: block.start] + content + tail + body[block.end :]
    return block_fm + new


# ---------------------------------------------------------------- find and replace


def replace_text(
    text: str,
    find: str,
    replacement: str,
    *,
    use_regex: bool = False,
    ignore_case: bool = False,
    include_frontmatter: bool = False,
    timeout: float = REGEX_TIMEOUT_S,
    max_chars: int | None = None,
) -> tuple[str, int]:
    """Replace every match of `find` (literal, or a regex with \\1 / \\g<name> in the
    replacement); (new text, matches). The frontmatter is left alone unless included. A regex
    that runs longer than `timeout` seconds (catastrophic backtracking) is refused, and so is a
    replacement whose result would pass `max_chars`: it is stopped as soon as it does, so the
    memory it takes stays within the bound (a 20 KB note cannot be made 381 MiB)."""
    if not find:
        raise TextEditError("the text to find is empty")
    block, body = ("", text) if include_frontmatter else split_body(text)
    flags = regex.IGNORECASE if ignore_case else 0
    try:
        if use_regex:
            pattern = regex.compile(find, flags | regex.MULTILINE)
        else:
            pattern = regex.compile(regex.escape(find), flags)
            replacement = replacement.replace("\\", "\\\\")
    except regex.error as exc:
        raise TextEditError(f"invalid regular expression {find!r}: {exc}") from None
    budget = None if max_chars is None else max_chars - len(block) - len(body)
    try:
        new, count = pattern.subn(_bounded(replacement, budget), body, timeout=timeout)
    except TimeoutError:
        raise TextEditError(
            f"the regular expression {find!r} ran longer than {timeout:g} s on this note; "
            "simplify it (nested repetition like (a+)+ backtracks without end)"
        ) from None
    except (regex.error, IndexError, KeyError) as exc:  # \3 with two groups, \g<missing>
        raise TextEditError(f"invalid replacement {replacement!r}: {exc}") from None
    return block + new, count


def _bounded(template: str, budget: int | None) -> Callable[[Any], str]:
    """The replacement as a function counting what it adds, refusing past `budget` chars."""
    grown = 0

    def expand(match: Any) -> str:
        nonlocal grown
        out: str = match.expand(template)
        if budget is not None:
            grown += len(out) - (match.end() - match.start())
            if grown > budget:
                raise TextEditError(
                    "the replacement would make the note bigger than a note may be "
                    f"(+{grown:,} characters and counting); nothing was changed"
                )
        return out

    return expand


# ---------------------------------------------------------------- what changed


def summarize_diff(old: str, new: str) -> DiffSummary:
    """Lines added and removed, and the start of a unified diff. Lines shared at both ends are
    set aside first, so a small edit of a long note costs what the edit costs."""
    a, b = old.split("\n"), new.split("\n")
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(a_mid) + len(b_mid) > 4000:  # too big to diff cheaply: the changed region as a whole
        preview = [f"-{line}" for line in a_mid[:6]] + [f"+{line}" for line in b_mid[:6]]
        return DiffSummary(len(b_mid), len(a_mid), tuple(preview))
    added = removed = 0
    preview = []
    for line in difflib.unified_diff(a_mid, b_mid, n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        added += line[0] == "+"
        removed += line[0] == "-"
        if len(preview) < DIFF_PREVIEW_LINES:
            preview.append(line)
    return DiffSummary(added, removed, tuple(preview))
