"""The syntax of a note body in one place: link, tag, heading and task patterns, and the masking of
the spans that hold none of them (code, comments, math, escapes).

The parser and the link rewriter (`weaver.markdown.relink`) both read links through these, so a
rewrite skips exactly what the parse that filled the cache skipped.

How a body is read: one left-to-right scan (`mask_code`) finds the spans that cannot hold links or
tags (fenced and inline code, HTML and %% comments, math, backslash escapes) and masks them,
keeping every newline so offsets and line numbers survive. The link, tag, heading and task
patterns then run over the masked text, and link text is read back from the original at the same
offsets. Every pattern runs in linear time (possessive quantifiers, disjoint alternatives), so no
note backtracks badly, however large.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "BRACKET",
    "BRACKET_FIELD",
    "CLOSING_HASHES",
    "DIGITS",
    "FILL",
    "HEADING",
    "INLINE_TAG_RUN",
    "LINE_FIELD",
    "MD_LINK",
    "MD_SUFFIX",
    "SCHEME",
    "TASK",
    "TYPED_LINK",
    "WIKILINK",
    "WORD_BYTES",
    "code_spans",
    "fill",
    "is_valid_tag",
    "mask_code",
    "normalize_tag",
    "split_subpath",
    "split_wikilink",
]

# ---------------------------------------------------------------- masking

# Every pattern below starts with a literal character or set, which lets the regex engine skip
# ahead in C; a pattern starting with ^, a lookbehind or an optional group is tried at every
# offset, which makes a very large note slow.
_OPENER = re.compile(
    r"[`~\\<%$](?:(?<=`)(?P<ticks>`*+)|(?<=~)(?P<tildes>~~++)|(?<=\\)(?P<escape>[\[!#`$%<\\])"
    r"|(?<=<)(?P<html>!--)|(?<=%)(?P<percent>%)|(?<=\$)(?P<math>\$?))"
)
_FENCE_CLOSE = re.compile(r"\n[ \t>]*+(`{3,}+|~{3,}+)[ \t]*+(?=\n|$)")
_BLANK_LINE = re.compile(r"\n[ \t]*+\n")
_INLINE_MATH_CLOSE = re.compile(r"\$(?<![\s\\]\$)(?!\d)")
FILL = "\x00"  # masks code and comments; not whitespace, so `x`#tag stays no tag


@lru_cache(maxsize=64)
def _backtick_run(length: int) -> re.Pattern[str]:
    return re.compile(rf"`{{{length}}}(?<!`{{{length + 1}}})(?!`)")


def mask_code(text: str) -> str:
    """text with code, comments, math and escapes overwritten (newlines kept): what is left is
    where links and tags can be. Escapes become spaces, everything else FILL."""
    return fill(text, _Masker(text).spans())


def code_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans `mask_code` masks, in order: a fenced block's span starts at its
    line's start (indent and `>` included) and ends after its closing fence (or at the end)."""
    return [(start, end) for start, end, _ in _Masker(text).spans()]


class _Masker:
    """One pass over a body collecting the spans that hold no links or tags.

    Misses are remembered per search limit: once no closer exists after p within a line or
    paragraph, none exists after any later p either, so unclosed `$` or backticks stay linear.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._misses: dict[str, int] = {}
        self._paragraph = (0, -1)
        self._line = (0, -1)

    def spans(self) -> list[tuple[int, int, str]]:
        spans: list[tuple[int, int, str]] = []
        pos = 0
        while (match := _OPENER.search(self.text, pos)) is not None:
            span = self._span(match)
            if span is None:
                pos = match.end()
                continue
            # Escapes are masked with spaces: Obsidian reads `\[\[#Escaped` as the tag #Escaped.
            spans.append((*span, " " if match.lastgroup == "escape" else FILL))
            pos = span[1]
        return spans

    def _span(self, match: re.Match[str]) -> tuple[int, int] | None:
        start, end, text = match.start(), match.end(), self.text
        match match.lastgroup:
            case "ticks" | "tildes":
                return self._run(start, end)
            case "escape":
                return start, end
            case "html":
                close = text.find("-->", end)
                return start, len(text) if close < 0 else close + 3
            case "percent":  # an unclosed %% comments out the rest, as in Obsidian
                close = text.find("%%", end)
                return start, len(text) if close < 0 else close + 2
            case _:
                return self._math(start, end)

    def _run(self, start: int, end: int) -> tuple[int, int] | None:
        """A run of backticks or tildes: a fence at the start of a line, else maybe code."""
        text, fence = self.text, end - start >= 3
        line_start = start
        while line_start > 0 and text[line_start - 1] in " \t>":
            line_start -= 1
        if fence and (line_start == 0 or text[line_start - 1] == "\n"):
            line_end = self._line_end(end)
            if text[start] == "~" or "`" not in text[end:line_end]:  # else a code span (CommonMark)
                for close in _FENCE_CLOSE.finditer(text, line_end):
                    if close.group(1)[0] == text[start] and len(close.group(1)) >= end - start:
                        return line_start, close.end()
                return line_start, len(text)  # an unclosed fence runs to the end
        return self._code(start, end) if text[start] == "`" else None

    def _code(self, start: int, end: int) -> tuple[int, int] | None:
        limit = self._paragraph_end(end)
        key = f"`{end - start}"
        if self._misses.get(key) == limit:
            return None
        close = _backtick_run(end - start).search(self.text, end, limit)
        if close is None:
            self._misses[key] = limit
            return None
        return start, close.end()

    def _math(self, start: int, end: int) -> tuple[int, int] | None:
        text = self.text
        if end - start == 2:  # $$display$$ may span lines
            display = -1 if "$$" in self._misses else text.find("$$", end)
            if display < 0:
                self._misses["$$"] = 0
                return None
            return start, display + 2
        if end >= len(text) or text[end].isspace():
            return None  # `$ 5` opens nothing (the pandoc rule Obsidian follows)
        line_end = self._line_end(end)
        close = None
        if self._misses.get("$") != line_end:
            close = _INLINE_MATH_CLOSE.search(text, end, line_end)
        if close is None:
            self._misses["$"] = line_end
            return None
        return start, close.end()

    def _line_end(self, pos: int) -> int:
        if not self._line[0] <= pos <= self._line[1]:
            end = self.text.find("\n", pos)
            self._line = (pos, len(self.text) if end < 0 else end)
        return self._line[1]

    def _paragraph_end(self, pos: int) -> int:
        if not self._paragraph[0] <= pos < self._paragraph[1]:
            blank = _BLANK_LINE.search(self.text, pos)
            self._paragraph = (pos, blank.start() if blank else len(self.text))
        return self._paragraph[1]


def fill(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """text with each (start, end, char) span overwritten by char, newlines kept; spans in order
    and disjoint."""
    parts: list[str] = []
    pos = 0
    for start, end, char in spans:
        parts.append(text[pos:start])
        if text.count("\n", start, end):
            parts.append("\n".join(char * len(piece) for piece in text[start:end].split("\n")))
        else:
            parts.append(char * (end - start))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


# ---------------------------------------------------------------- links

# A single "]" does not end a wikilink ([[Sq]uare]] targets "Sq]uare"); "[" and newlines do.
WIKILINK = re.compile(r"\[\[((?:[^\[\]\n]|\](?!\]))++)\]\]")
# Groups: 1 the [text], 2 a <destination>, 3 a bare destination (balanced parentheses allowed).
MD_LINK = re.compile(
    r"\[([^\[\]\n]*+)\]\(\s*+(?:<([^<>\n]*+)>|([^\s()<>]*+(?:\([^\s()<>]*+\)[^\s()<>]*+)*+))"
    r"(?:\s++(?:\"[^\"\n]*+\"|'[^'\n]*+'))?\s*+\)"
)
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*+:|//")  # a destination with one is external
TYPED_LINK = re.compile(r"([^:|#\[\]]+)::(.+)", re.DOTALL)  # [[rel::target]]
# Dataview inline fields: `key:: value` owning a whole line, and `[key:: value]` / `(key:: value)`.
LINE_FIELD = re.compile(
    r"[ \t>]*+(?:(?:[-*+]|[0-9]++[.)])[ \t]++)?(?:\[.\][ \t]++)?"
    r"\**+([^\s:*\[\]()>`\x00][^:*\[\]()`\x00\n]*+)\**+::"
)
BRACKET_FIELD = re.compile(r"([\[(])([^\s:\[\]()\x00][^:\[\]()\x00\n]*+)::")
BRACKET = re.compile(r"[\[\]()]")
MD_SUFFIX = re.compile(r"\.md$", re.IGNORECASE)


def split_subpath(link: str) -> tuple[str, str | None]:
    """("Note", "Heading") of "Note#Heading", both stripped; no "#": (link, None)."""
    target, hash_, subpath = link.partition("#")
    return target.strip(), subpath.strip() if hash_ else None


def split_wikilink(content: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(target, alias, subpath, relation) of the text between [[ and ]]; None for [[]]."""
    if not content.strip():
        return None
    relation = None
    if "::" in content and (typed := TYPED_LINK.fullmatch(content)):
        relation, content = typed.group(1).strip(), typed.group(2)
    alias = None
    bar = content.find("|", 1)  # Obsidian: a leading "|" is part of the target, [[|x]] -> "|x"
    if bar > 0:  # "\|" is how a table escapes the separator: [[Note\|alias]]
        content, alias = content[:bar].removesuffix("\\"), content[bar + 1 :].strip() or None
    target, subpath = split_subpath(content)
    return target, alias, subpath, relation


# ---------------------------------------------------------------- tags, headings, tasks, words

# Tag characters: anything but whitespace and ASCII punctuation other than _ - /.
_TAG_CHARS = r"[^\s\x00-\x2c.\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
# A run of tags: the first after whitespace or a line start, each next one right after the
# last (`#a#b` is two tags in Obsidian; `x#b` none). Split on "#" for the tags.
INLINE_TAG_RUN = re.compile(rf"#(?<!\S#){_TAG_CHARS}++(?:#{_TAG_CHARS}++)*+")
_TAG_BODY = re.compile(rf"{_TAG_CHARS}+")
DIGITS = re.compile(r"[0-9]+")
# Line-anchored patterns run over "\n" + text, so they can start with a literal "\n".
HEADING = re.compile(r"\n[ \t]{0,3}+(#{1,6}+)(?=[ \t\n]|$)")
CLOSING_HASHES = re.compile(r"(?:^|[ \t]++)#++[ \t]*+$")
TASK = re.compile(r"\n[ \t>]*+(?:[-*+]|[0-9]{1,9}+[.)])[ \t]++\[([^\]\n])\](?=[ \t\n]|$)")
# Word count: ASCII punctuation (except ' and _) and the mask become spaces, then split.
WORD_BYTES = bytes(32 if chr(b) in '!"#$%&()*+,-./:;<=>?@[\\]^`{|}~\x00' else b for b in range(256))


def normalize_tag(tag: str) -> str:
    """The comparison key of a tag: without its leading '#', casefolded."""
    return tag.removeprefix("#").casefold()


def is_valid_tag(tag: str) -> bool:
    """Whether tag (without '#') is one Obsidian accepts: tag characters, not all digits."""
    return _TAG_BODY.fullmatch(tag) is not None and DIGITS.fullmatch(tag) is None
