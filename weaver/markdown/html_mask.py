"""Where a note's HTML hides tags: HTML blocks whole, and the markup of inline HTML.

Obsidian reads a note as CommonMark does: an HTML block (a line opening with `<div>`, `<p>`,
`<table>`, ..., up to a blank line) is raw HTML, and nothing in it is a tag; in a paragraph,
an inline tag's own markup (`<span style="color: #1a1a1a">`) is raw HTML too, while the text
between tags is text (`<b>red #this</b>` has the tag `this`). Read back from Obsidian 1.13.7:
`<div>` / `hello #tp` / `</div>` and `<p>x #tr</p>` have no tags (cyanheads/obsidian-mcp-server
#140). Only tags are masked here: whether Obsidian indexes links inside HTML blocks has not been
checked, so links are found there as before.

The blocks are CommonMark's seven kinds, simplified where a note never tells the difference:
indentation up to three spaces or blockquote markers, and a block of kind 7 (any other whole
tag alone on a line) only after a blank line, since it cannot interrupt a paragraph.
"""

from __future__ import annotations

import re

from weaver.markdown.patterns import fill

_RAW_TEXT = "pre|script|style|textarea"  # kind 1: ends at the line with its closing tag
_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|"
    "optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|"
    "track|ul"
)
# Quoted values end at their line (CommonMark lets them run on): an unclosed quote then costs a
# line, not the rest of a big note, for every tag that has one.
_VALUE = r"""(?:[^ \t\n"'=<>`]++|'[^'\n]*+'|"[^"\n]*+")"""
_ATTRIBUTE = rf"(?:[ \t\n]++[A-Za-z_:][A-Za-z0-9_.:-]*+(?:[ \t\n]*+=[ \t\n]*+{_VALUE})?+)"
_OPEN_TAG = rf"<[A-Za-z][A-Za-z0-9-]*+{_ATTRIBUTE}*+[ \t\n]*+/?>"
_CLOSE_TAG = r"</[A-Za-z][A-Za-z0-9-]*+[ \t\n]*+>"
# Run over "\n" + text: each block opens at a line start.
_BLOCK_START = re.compile(
    rf"\n[ >]{{0,3}}+<(?:(?P<raw>(?i:{_RAW_TEXT}))(?=[ \t>]|\n|$)"
    rf"|(?P<processing>\?)|(?P<declaration>![A-Za-z])|(?P<cdata>!\[CDATA\[)"
    rf"|/?(?i:{_BLOCK_NAMES})(?=[ \t]|/?>|\n|$))"
)
_WHOLE_TAG_LINE = re.compile(rf"\n[ >]{{0,3}}+(?:{_OPEN_TAG}|{_CLOSE_TAG})[ \t]*+(?=\n|$)")
_INLINE_TAG = re.compile(rf"{_OPEN_TAG}|{_CLOSE_TAG}")
_BLANK_LINE = re.compile(r"\n[ \t]*+(?=\n|$)")
_ENDS = {
    "processing": re.compile(r"\?>"),
    "declaration": re.compile(">"),
    "cdata": re.compile(r"\]\]>"),
}
FILL = "\x00"


def mask_html(text: str) -> str:
    """`text` with its HTML blocks and inline HTML markup overwritten (newlines kept)."""
    if "<" not in text:
        return text
    spans: list[tuple[int, int, str]] = []
    pos = 0
    for start, end in _blocks("\n" + text):
        spans += _inline_markup(text, pos, start)
        spans.append((start, end, FILL))
        pos = end
    spans += _inline_markup(text, pos, len(text))
    return fill(text, spans)


def _inline_markup(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), FILL) for m in _INLINE_TAG.finditer(text, start, end)]


def _blocks(scan: str) -> list[tuple[int, int]]:
    """(start, end) in the text of each HTML block, in order; `scan` is "\n" + the text, so
    a block found at `scan[s:e]` (from the newline before its line) is `text[s : e - 1]`."""
    found: list[tuple[int, int]] = []
    pos = 0
    # The next named opener is looked for again only once passed: searching from every
    # block would read the rest of a big note once per block.
    opener = _BLOCK_START.search(scan)
    while True:
        if opener is not None and opener.start() < pos:
            opener = _BLOCK_START.search(scan, pos)
        match = _whole_tag_line(scan, pos, len(scan) if opener is None else opener.start())
        match = match or opener
        if match is None:
            return found
        end = _block_end(scan, match)
        found.append((match.start(), end - 1))
        pos = max(end, match.end())


def _whole_tag_line(scan: str, pos: int, limit: int) -> re.Match[str] | None:
    """The first whole tag on a line of its own between `pos` and `limit` that follows a blank
    line (a block of kind 7, which cannot interrupt a paragraph)."""
    whole = _WHOLE_TAG_LINE.search(scan, pos, limit)
    while whole is not None and not _after_blank(scan, whole.start()):
        whole = _WHOLE_TAG_LINE.search(scan, whole.end(), limit)
    return whole


def _after_blank(scan: str, newline: int) -> bool:
    """Whether the line starting after `scan[newline]` follows a blank line or the start."""
    if newline == 0:
        return True
    previous = scan.rfind("\n", 0, newline)
    return scan[previous + 1 : newline].strip() == ""


def _block_end(scan: str, match: re.Match[str]) -> int:
    """Where the block `match` opens ends, in `scan`: the end of its closing line, else the
    next blank line, else the end."""
    kind = match.lastgroup
    if kind == "raw":
        closing = re.compile(rf"</{re.escape(match.group('raw'))}>", re.IGNORECASE)
        return _line_end_after(scan, closing.search(scan, match.end()))
    if kind in _ENDS:
        return _line_end_after(scan, _ENDS[kind].search(scan, match.end()))
    blank = _BLANK_LINE.search(scan, match.end())
    return len(scan) if blank is None else blank.start()


def _line_end_after(scan: str, match: re.Match[str] | None) -> int:
    if match is None:
        return len(scan)
    end = scan.find("\n", match.end())
    return len(scan) if end < 0 else end
