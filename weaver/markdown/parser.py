"""Parse one note into a ParsedNote: frontmatter, links, tags, headings, tasks, word count.

Pure: no I/O. The contract is the README's "How a vault is read"; where it is
silent we follow what Obsidian computed for the tasks-demo corpus
(tests/markdown/test_obsidian_parity.py holds the evidence).

The frontmatter block is read by `weaver.markdown.frontmatter`; the body is masked and scanned
with the patterns of `weaver.markdown.patterns` (its docstring tells how), which the link
rewriter shares. Every pattern runs in linear time, so the cost grows with the size of the note
and the number of links, tags and masked spans found in it, never worse.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from weaver.markdown.frontmatter import (
    frontmatter_aliases,
    frontmatter_tags,
    read_frontmatter,
    scalar_text,
)
from weaver.markdown.html_mask import mask_html
from weaver.markdown.inline_fields import InlineField, LineFields, find_inline_fields
from weaver.markdown.links import LinkKind, RawLink, find_body_links
from weaver.markdown.patterns import (
    CLOSING_HASHES,
    DIGITS,
    HEADING,
    INLINE_TAG_RUN,
    MD_SUFFIX,
    TASK,
    WORD_BYTES,
    mask_code,
    normalize_tag,
)
from weaver.markdown.tasks import HeadingLine, ParsedTask, find_tasks

__all__ = [
    "PARSER_VERSION",
    "Heading",
    "LinkKind",
    "ParsedLink",
    "ParsedNote",
    "decode_note",
    "find_inline_tags",
    "find_link_spans",
    "parse_note",
]

# Raised whenever the same text parses to different tags, links or fields: a cache parsed by an
# older version re-reads every note once (`weaver.index.indexer`), so no upgrade leaves notes
# indexed by old rules until they happen to change. 2: tags around HTML, `#a#b`. 3: tasks with
# their fields and nesting, and Dataview inline fields (the cache had neither before). 4: canvases
# read (their cards' links, tags and text), where the cache listed them as attachments.
PARSER_VERSION = 4


class ParsedLink(NamedTuple):
    """One link occurrence. A named tuple rather than a dataclass: parsed notes cross a process
    boundary on a big index (`weaver.index.workers`), and tuples unpickle several times faster."""

    target: str  # path as written (markdown: percent-decoded); "" for a self-link like [[#H]]
    kind: LinkKind
    alias: str | None  # display text after the first "|", or a markdown link's [text]
    subpath: str | None  # after the target's first "#": "Heading", "H1#H2", "^blockid"
    relation: str | None  # Dataview field (`rel:: [[X]]`), `[[rel::X]]`, or the frontmatter key
    line: int  # 0-based line in the file


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class ParsedNote:
    frontmatter: dict[str, Any]
    title: str  # the frontmatter title, else the file name; never markup
    heading: str | None  # the first H1, as text
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    type: str | None
    status: str | None
    links: tuple[ParsedLink, ...]
    headings: tuple[Heading, ...]
    tasks_open: int
    tasks_done: int
    body: str
    word_count: int
    error: str | None
    tasks: tuple[ParsedTask, ...] = ()  # every checkbox list item, in file order
    inline_fields: tuple[InlineField, ...] = ()  # Dataview `key:: value` fields, in file order


class _Lines:
    """Offsets to 0-based file lines (the body starts at line `offset`)."""

    def __init__(self, text: str, offset: int) -> None:
        self._starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self._text_len = len(text)
        self.offset = offset

    def index(self, pos: int) -> int:
        return bisect_right(self._starts, pos) - 1

    def bounds(self, index: int) -> tuple[int, int]:
        end = self._starts[index + 1] - 1 if index + 1 < len(self._starts) else self._text_len
        return self._starts[index], end


# ---------------------------------------------------------------- links


def _finish(raws: list[RawLink], linkless: str, lines: _Lines) -> Iterator[ParsedLink]:
    """Give each link its line, and the inline field it sits in (`rel:: [[X]]`)."""
    if "::" not in linkless:  # no inline field anywhere (most notes): only the lines to find
        offset, index_of = lines.offset, lines.index
        for start, _, kind, target, alias, subpath, relation in raws:
            yield ParsedLink(target, kind, alias, subpath, relation, offset + index_of(start))
        return
    fields: dict[int, tuple[int, LineFields | None]] = {}
    for start, end, kind, target, alias, subpath, relation in raws:
        index = lines.index(start)
        if index not in fields:
            lo, hi = lines.bounds(index)
            line = linkless[lo:hi]
            fields[index] = (lo, LineFields(line) if "::" in line else None)
        lo, found = fields[index]
        if relation is None and found is not None:
            relation = found.key_at(start - lo, end - lo)
        yield ParsedLink(target, kind, alias, subpath, relation, lines.offset + index)


def _body_links(text: str, masked: str, lines: _Lines) -> tuple[tuple[ParsedLink, ...], str]:
    """Links in document order, and the masked text with every link blanked (for tags)."""
    raws, linkless = find_body_links(text, masked)
    return tuple(_finish(raws, linkless, lines)), linkless


# ---------------------------------------------------------------- tags, headings, title


def _dedupe_tags(tags: Iterable[str]) -> tuple[str, ...]:
    firsts: dict[str, str] = {}
    for tag in tags:
        firsts.setdefault(normalize_tag(tag), tag)
    return tuple(firsts.values())


def _inline_tags(tagged: str) -> list[str]:
    """Distinct inline tags in order; findall and fromkeys keep a tag-dense note fast."""
    runs = dict.fromkeys(INLINE_TAG_RUN.findall(tagged))
    unique = dict.fromkeys(tag for run in runs for tag in run.split("#")[1:])
    return [tag for tag in unique if DIGITS.fullmatch(tag) is None]


def _headings(text: str, masked: str, lines: _Lines) -> tuple[Heading, ...]:
    headings = []
    for match in HEADING.finditer("\n" + masked):
        start, end = match.start(), match.end() - 1  # offsets in text: minus the "\n" prefix
        line_end = text.find("\n", end)
        raw = text[end : len(text) if line_end < 0 else line_end].strip()
        level, line = len(match.group(1)), lines.offset + lines.index(start)
        headings.append(Heading(level, CLOSING_HASHES.sub("", raw), line))
    return tuple(headings)


_WIKILINK_TEXT = re.compile(r"!?\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]")
_MD_LINK_TEXT = re.compile(r"!?\[([^\[\]]*)\]\([^()]*\)")
_EMPHASIS = re.compile(r"\*\*|__|~~|==|`")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


def plain_text(text: str) -> str:
    """Inline markup as a reader sees it: `[[a|b]]` -> b, `[[a#h]]` -> a#h, `[t](u)` -> t,
    no `**`, `__`, `~~`, `==`, backticks or HTML tags; runs of spaces made one."""
    text = _WIKILINK_TEXT.sub(lambda m: m.group(2) or m.group(1), text)
    text = _MD_LINK_TEXT.sub(lambda m: m.group(1), text)
    text = _HTML_TAG.sub("", _EMPHASIS.sub("", text))
    return " ".join(text.split())


def _title(path: str, frontmatter: Mapping[str, Any]) -> str:
    """As Obsidian shows a note: its frontmatter `title` if it has one, else its file name."""
    title = frontmatter.get("title")
    if isinstance(title, str) and plain_text(title):
        return plain_text(title)
    return MD_SUFFIX.sub("", path.rsplit("/", 1)[-1])


def _first_h1(headings: Iterable[Heading]) -> str | None:
    return next((plain_text(h.text) for h in headings if h.level == 1 and plain_text(h.text)), None)


def _tasks(
    scan: str,
    masked: str,
    linkless: str,
    tagged: str,
    headings: tuple[Heading, ...],
    offset: int,
) -> tuple[ParsedTask, ...]:
    if TASK.search("\n" + masked) is None:  # most notes: no list walk at all
        return ()
    outline = [HeadingLine(h.line, h.level, h.text) for h in headings]
    return find_tasks(scan, linkless, tagged, outline, offset)


# ---------------------------------------------------------------- entry points


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse a note's text; path is vault-relative and used for the title and error messages."""
    text = text.removeprefix("\ufeff")
    fm = read_frontmatter(path, text)
    body = text[fm.body_start :]
    scan = body.replace("\r\n", "\n")  # same line count, so line numbers still match the file
    masked = mask_code(scan)
    lines = _Lines(scan, text.count("\n", 0, fm.body_start))
    body_links, linkless = _body_links(scan, masked, lines)
    headings = _headings(scan, masked, lines)
    tagged = mask_html(linkless)
    tasks = _tasks(scan, masked, linkless, tagged, headings, lines.offset)
    done = sum(task.status_char != " " for task in tasks)
    fm_links = tuple(
        ParsedLink(lk.target, "frontmatter", lk.alias, lk.subpath, lk.relation, lk.line)
        for lk in fm.links
    )
    return ParsedNote(
        frontmatter=fm.data,
        title=_title(path, fm.data),
        heading=_first_h1(headings),
        tags=_dedupe_tags([*frontmatter_tags(fm.data), *_inline_tags(tagged)]),
        aliases=frontmatter_aliases(fm.data),
        type=scalar_text(fm.data.get("type")),
        status=scalar_text(fm.data.get("status")),
        links=fm_links + body_links,
        headings=headings,
        tasks_open=len(tasks) - done,
        tasks_done=done,
        body=body,
        word_count=len(masked.encode().translate(WORD_BYTES).split()),
        error=fm.error,
        tasks=tasks,
        inline_fields=find_inline_fields(scan, linkless, lines.offset),
    )


def decode_note(data: bytes) -> tuple[str, str | None]:
    """UTF-8 decode, stripping a leading BOM. Not UTF-8: ("", "not valid UTF-8: <detail>")."""
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", f"not valid UTF-8: {exc}"


def find_link_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, target as `ParsedLink.target` holds it) of each link in `text`, in order,
    found as `parse_note` finds them: where in a line the link the index knows stands."""
    raws, _ = find_body_links(text, mask_code(text))
    return [(start, end, target) for start, end, _, target, *_ in raws]


def find_inline_tags(body: str) -> list[tuple[int, str]]:
    """(offset of the '#', tag without it) of each inline tag in a note body with LF newlines,
    found exactly as `parse_note` finds them: never in code, comments, math, links, URLs or
    HTML (`weaver.markdown.html_mask`).
    For edits that must touch the tags the index knows and nothing else (`weaver.markdown.retag`).
    """
    _, linkless = find_body_links(body, mask_code(body))
    found: list[tuple[int, str]] = []
    for run in INLINE_TAG_RUN.finditer(mask_html(linkless)):
        offset = run.start()
        for tag in run.group().split("#")[1:]:
            if DIGITS.fullmatch(tag) is None:
                found.append((offset, tag))
            offset += len(tag) + 1
    return found
