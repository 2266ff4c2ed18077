"""Parse one note into a ParsedNote: frontmatter, links, tags, headings, tasks, word count.

Pure: no I/O. The contract is the README's "How a vault is read"; where it is
silent we follow what Obsidian computed for the tasks-demo corpus
(tests/markdown/test_obsidian_parity.py holds the evidence).

How the body is read: one left-to-right scan finds the spans that cannot hold links or tags (fenced
and inline code, HTML and %% comments, math, backslash escapes) and masks them, keeping every
newline so offsets and line numbers survive. The link, tag, heading and task regexes then run over
the masked text, and link text is read back from the original at the same offsets. Every pattern
runs in linear time (possessive quantifiers, disjoint alternatives), so no note backtracks badly;
the cost is about 1 s per 20 MB of prose, plus ~10 µs per link, tag or masked span found.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import count
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import unquote

import yaml
from frontmatter.default_handlers import YAMLHandler
from yaml.constructor import ConstructorError

__all__ = [
    "Heading",
    "LinkKind",
    "ObsidianYAMLHandler",
    "ParsedLink",
    "ParsedNote",
    "decode_note",
    "frontmatter_aliases",
    "frontmatter_tags",
    "is_valid_tag",
    "normalize_tag",
    "parse_note",
]

LinkKind = Literal["wikilink", "embed", "markdown", "frontmatter"]


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


# ---------------------------------------------------------------- frontmatter

_FM_OPEN = re.compile(r"---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"\n---[ \t]*\r?(?=\n|\Z)")  # starts with "\n": a fast scan
_STR_TAG = "tag:yaml.org,2002:str"
_MAX_FM_VALUES = 100_000  # an alias bomb (&a [*b, *b, ...]) must not expand into gigabytes
_INT64 = 2**63

if TYPE_CHECKING:
    _LoaderBase = yaml.SafeLoader
else:  # libyaml's parser when present: ten times faster, same nodes and error marks
    _LoaderBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ObsidianYamlLoader(_LoaderBase):
    """A safe loader with YAML 1.2 core scalars, as JavaScript parsers read them.

    Obsidian keeps `2024-07-21` a string (see yaml_all_property_types_populated in the dumps), so
    there is no timestamp resolver; likewise `yes`/`on` stay strings and `010` is ten.
    """

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012  (PyYAML's class-level registry)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # JavaScript object keys are strings: `1:` and `true:` must stay two keys, not collide.
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                mark = key_node.start_mark
                raise ConstructorError(None, None, "found unhashable key", mark)
            mapping[_json_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


for _tag, _pattern, _first in (
    ("bool", r"(?:true|True|TRUE|false|False|FALSE)", "tTfF"),
    ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))",
        "-+0123456789.",
    ),
    ("null", r"(?:~|null|Null|NULL|)", ["~", "n", "N", ""]),
    ("merge", r"<<", "<"),
):
    _ObsidianYamlLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(rf"^{_pattern}$"), list(_first)
    )
_ObsidianYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _frontmatter_span(text: str) -> tuple[int, int, int] | None:
    """(yaml start, yaml end, body start): `---` on line 1 up to the next line that is `---`."""
    opening = _FM_OPEN.match(text)
    closing = _FM_CLOSE.search(text, opening.end() - 1) if opening else None
    if opening is None or closing is None:
        return None
    body = closing.end() + text.startswith("\n", closing.end())
    return opening.end(), closing.start() + 1, body


def _load_yaml(source: str) -> tuple[Any, yaml.Node | None]:
    """Compose and construct in one pass, keeping the node tree for line numbers."""
    loader = _ObsidianYamlLoader(source)
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), node
    finally:
        loader.dispose()


class ObsidianYAMLHandler(YAMLHandler):
    """python-frontmatter handler with Obsidian's block rules and scalar types.

    frontmatter.loads() strips the text before splitting, which accepts a block after blank lines
    and shifts line numbers, so parse_note calls split() on the raw text itself.
    """

    def detect(self, text: str) -> bool:
        return _frontmatter_span(text) is not None

    def split(self, text: str) -> tuple[str, str]:
        span = _frontmatter_span(text)
        if span is None:
            raise ValueError("no frontmatter block starting on line 1")
        return text[span[0] : span[1]], text[span[2] :]

    def load(self, fm: str, **kwargs: object) -> Any:
        return _to_json(_load_yaml(fm)[0], count())


_HANDLER = ObsidianYAMLHandler()


class _TooLargeError(Exception):
    """The frontmatter expands (through YAML aliases) to more values than we store."""


def _json_key(key: object) -> str:
    """Keys become strings the way JavaScript spells them: 1 -> "1", true -> "true"."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return key.isoformat() if isinstance(key, dt.date | dt.time) else str(key)


def _to_json(value: Any, budget: Iterator[int]) -> Any:
    """A JSON-serialisable copy: NaN/inf -> None, bytes -> str, keys -> str, 64-bit ints."""
    if next(budget) > _MAX_FM_VALUES:
        raise _TooLargeError
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_json_key(k): _to_json(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_to_json(v, budget) for v in items]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value.isoformat() if isinstance(value, dt.date | dt.time) else str(value)


@dataclass(frozen=True, slots=True)
class _Frontmatter:
    data: dict[str, Any]
    links: tuple[ParsedLink, ...]
    error: str | None
    body_start: int


def _yaml_error(path: str, exc: Exception) -> str:
    mark = exc.problem_mark or exc.context_mark if isinstance(exc, yaml.MarkedYAMLError) else None
    # mark.line counts from the first YAML line, which is file line 2 (1-based).
    where = f" at line {mark.line + 2}" if mark is not None else ""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        detail = exc.problem
    elif isinstance(exc, _TooLargeError | RecursionError):
        detail = "too many or too deeply nested values"
    else:
        detail = str(exc).split("\n", 1)[0] or type(exc).__name__
    return f"invalid YAML frontmatter{where}: {detail} ({path})"


def _read_frontmatter(path: str, text: str) -> _Frontmatter:
    try:
        source, body = _HANDLER.split(text)
    except ValueError:
        return _Frontmatter({}, (), None, 0)
    body_start = len(text) - len(body)
    try:
        data, node = _load_yaml(source)
        clean = _to_json(data, count())
    except (yaml.YAMLError, ValueError, RecursionError, _TooLargeError) as exc:
        return _Frontmatter({}, (), _yaml_error(path, exc), body_start)
    if clean is None:  # an empty block
        return _Frontmatter({}, (), None, body_start)
    if not isinstance(clean, dict) or not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(clean, list) else "a scalar"
        error = f"invalid YAML frontmatter at line 2: expected a mapping, found {kind} ({path})"
        return _Frontmatter({}, (), error, body_start)
    return _Frontmatter(clean, tuple(_frontmatter_links(node)), None, body_start)


def _string_scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """String scalars below node in document order; each aliased node once (bomb-safe)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode) and current.tag == _STR_TAG:
            yield current
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
        elif isinstance(current, yaml.MappingNode):
            stack.extend(reversed([value for _, value in current.value]))


def _frontmatter_links(root: yaml.MappingNode) -> Iterator[ParsedLink]:
    for key_node, value_node in root.value:
        relation = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
        for scalar in _string_scalars(value_node):
            for match in _WIKILINK.finditer(scalar.value):
                parts = _split_wikilink(match.group(1))
                if parts is not None:
                    target, alias, subpath, _ = parts
                    line = scalar.start_mark.line + 1  # + the opening `---`
                    yield ParsedLink(target, "frontmatter", alias, subpath, relation, line)


# ---------------------------------------------------------------- masking

# Every pattern below starts with a literal character or set, which lets the regex engine skip
# ahead in C; a pattern starting with ^, a lookbehind or an optional group is tried at every
# offset and costs seconds on a 20 MB note.
_OPENER = re.compile(
    r"[`~\\<%$](?:(?<=`)(?P<ticks>`*+)|(?<=~)(?P<tildes>~~++)|(?<=\\)(?P<escape>[\[!#`$%<\\])"
    r"|(?<=<)(?P<html>!--)|(?<=%)(?P<percent>%)|(?<=\$)(?P<math>\$?))"
)
_FENCE_CLOSE = re.compile(r"\n[ \t>]*+(`{3,}+|~{3,}+)[ \t]*+(?=\n|$)")
_BLANK_LINE = re.compile(r"\n[ \t]*+\n")
_INLINE_MATH_CLOSE = re.compile(r"\$(?<![\s\\]\$)(?!\d)")
_FILL = "\x00"  # masks code and comments; not whitespace, so `x`#tag stays no tag


@lru_cache(maxsize=64)
def _backtick_run(length: int) -> re.Pattern[str]:
    return re.compile(rf"`{{{length}}}(?<!`{{{length + 1}}})(?!`)")


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

    def masked(self) -> str:
        spans: list[tuple[int, int, str]] = []
        pos = 0
        while (match := _OPENER.search(self.text, pos)) is not None:
            span = self._span(match)
            if span is None:
                pos = match.end()
                continue
            # Escapes are masked with spaces: Obsidian reads `\[\[#Escaped` as the tag #Escaped.
            spans.append((*span, " " if match.lastgroup == "escape" else _FILL))
            pos = span[1]
        return _fill(self.text, spans)

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


def _fill(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """text with each (start, end, char) span overwritten by char, newlines kept."""
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

# A single "]" does not end a wikilink ([[Sq]uare]] targets "Sq]uare"); "[" and newlines do.
_WIKILINK = re.compile(r"\[\[((?:[^\[\]\n]|\](?!\]))++)\]\]")
_MD_LINK = re.compile(
    r"\[([^\[\]\n]*+)\]\(\s*+(?:<([^<>\n]*+)>|([^\s()<>]*+(?:\([^\s()<>]*+\)[^\s()<>]*+)*+))"
    r"(?:\s++(?:\"[^\"\n]*+\"|'[^'\n]*+'))?\s*+\)"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*+:|//")
_TYPED_LINK = re.compile(r"([^:|#\[\]]+)::(.+)", re.DOTALL)
_LINE_FIELD = re.compile(
    r"[ \t>]*+(?:(?:[-*+]|[0-9]++[.)])[ \t]++)?(?:\[.\][ \t]++)?"
    r"\**+([^\s:*\[\]()>`\x00][^:*\[\]()`\x00\n]*+)\**+::"
)
_BRACKET_FIELD = re.compile(r"([\[(])([^\s:\[\]()\x00][^:\[\]()\x00\n]*+)::")
_BRACKET = re.compile(r"[\[\]()]")

# (start, end, kind, target, alias, subpath, relation) of a link found in the body
_Raw = tuple[int, int, LinkKind, str, str | None, str | None, str | None]


def _split_subpath(link: str) -> tuple[str, str | None]:
    target, hash_, subpath = link.partition("#")
    return target.strip(), subpath.strip() if hash_ else None


def _split_wikilink(content: str) -> tuple[str, str | None, str | None, str | None] | None:
    """(target, alias, subpath, relation) of the text between [[ and ]]; None for [[]]."""
    if not content.strip():
        return None
    relation = None
    if "::" in content and (typed := _TYPED_LINK.fullmatch(content)):
        relation, content = typed.group(1).strip(), typed.group(2)
    alias = None
    bar = content.find("|", 1)  # Obsidian: a leading "|" is part of the target, [[|x]] -> "|x"
    if bar > 0:  # "\|" is how a table escapes the separator: [[Note\|alias]]
        content, alias = content[:bar].removesuffix("\\"), content[bar + 1 :].strip() or None
    target, subpath = _split_subpath(content)
    return target, alias, subpath, relation


def _wikilinks(text: str, masked: str) -> Iterator[_Raw]:
    for match in _WIKILINK.finditer(masked):
        if parts := _split_wikilink(text[match.start(1) : match.end(1)]):
            start = match.start()
            embed = start > 0 and masked[start - 1] == "!"
            yield start - embed, match.end(), "embed" if embed else "wikilink", *parts


def _markdown_links(text: str, masked: str) -> Iterator[_Raw]:
    for match in _MD_LINK.finditer(masked):
        start, end = match.span(2) if match.group(2) is not None else match.span(3)
        destination = text[start:end]
        if not destination or _SCHEME.match(destination):
            continue  # empty, or external (https:, mailto:, obsidian:)
        target, subpath = _split_subpath(unquote(destination))
        alias = text[match.start(1) : match.end(1)] or None
        embed = match.start() > 0 and masked[match.start() - 1] == "!"  # ![alt](img.png)
        kind: LinkKind = "embed" if embed else "markdown"
        yield match.start() - embed, match.end(), kind, target, alias, subpath, None


class _Fields:
    """The Dataview inline fields of one line: `key:: value` and `[key:: value]`."""

    def __init__(self, line: str) -> None:
        self.brackets: list[tuple[int, int, str]] = []  # (value start, value end, key), disjoint
        for match in _BRACKET_FIELD.finditer(line):
            close = _BRACKET.search(line, match.end())
            if close and close.group() == ("]" if match.group(1) == "[" else ")"):
                self.brackets.append((match.end(), close.start(), match.group(2).strip()))
        self.starts = [start for start, _, _ in self.brackets]
        whole = _LINE_FIELD.match(line)
        self.line_field = (whole.end(), whole.group(1).strip()) if whole else None

    def key_at(self, start: int, end: int) -> str | None:
        index = bisect_right(self.starts, start) - 1
        if index >= 0 and end <= self.brackets[index][1]:
            return self.brackets[index][2]
        if self.line_field and start >= self.line_field[0]:
            return self.line_field[1]
        return None


def _finish(raws: list[_Raw], linkless: str, lines: _Lines) -> Iterator[ParsedLink]:
    """Give each link its line, and the inline field it sits in (`rel:: [[X]]`)."""
    if "::" not in linkless:  # no inline field anywhere (most notes): only the lines to find
        offset, index_of = lines.offset, lines.index
        for start, _, kind, target, alias, subpath, relation in raws:
            yield ParsedLink(target, kind, alias, subpath, relation, offset + index_of(start))
        return
    fields: dict[int, tuple[int, _Fields | None]] = {}
    for start, end, kind, target, alias, subpath, relation in raws:
        index = lines.index(start)
        if index not in fields:
            lo, hi = lines.bounds(index)
            line = linkless[lo:hi]
            fields[index] = (lo, _Fields(line) if "::" in line else None)
        lo, found = fields[index]
        if relation is None and found is not None:
            relation = found.key_at(start - lo, end - lo)
        yield ParsedLink(target, kind, alias, subpath, relation, lines.offset + index)


def _body_links(text: str, masked: str, lines: _Lines) -> tuple[tuple[ParsedLink, ...], str]:
    """Links in document order, and the masked text with every link blanked (for tags)."""
    wikilinks = list(_wikilinks(text, masked))
    wikiless = _fill(masked, ((raw[0], raw[1], _FILL) for raw in wikilinks))
    markdown = list(_markdown_links(text, wikiless))
    linkless = _fill(wikiless, ((raw[0], raw[1], _FILL) for raw in markdown))
    raws = sorted(wikilinks + markdown, key=lambda raw: raw[0])
    return tuple(_finish(raws, linkless, lines)), linkless


# ---------------------------------------------------------------- tags, headings, tasks

# Tag characters: anything but whitespace and ASCII punctuation other than _ - /.
_TAG_CHARS = r"[^\s\x00-\x2c.\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
_INLINE_TAG = re.compile(rf"#(?<!\S#)({_TAG_CHARS}++)")  # only after whitespace or line start
_TAG_BODY = re.compile(rf"{_TAG_CHARS}+")
_DIGITS = re.compile(r"[0-9]+")
# Line-anchored patterns run over "\n" + text, so they can start with a literal "\n".
_HEADING = re.compile(r"\n[ \t]{0,3}+(#{1,6}+)(?=[ \t\n]|$)")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]++)#++[ \t]*+$")
_TASK = re.compile(r"\n[ \t>]*+(?:[-*+]|[0-9]{1,9}+[.)])[ \t]++\[([^\]\n])\](?=[ \t\n]|$)")
# Word count: ASCII punctuation (except ' and _) and the mask become spaces, then split.
_WORD_BYTES = bytes(
    32 if chr(b) in '!"#$%&()*+,-./:;<=>?@[\\]^`{|}~\x00' else b for b in range(256)
)
_MD_SUFFIX = re.compile(r"\.md$", re.IGNORECASE)


def normalize_tag(tag: str) -> str:
    """The comparison key of a tag: without its leading '#', casefolded."""
    return tag.removeprefix("#").casefold()


def is_valid_tag(tag: str) -> bool:
    """Whether tag (without '#') is one Obsidian accepts: tag characters, not all digits."""
    return _TAG_BODY.fullmatch(tag) is not None and _DIGITS.fullmatch(tag) is None


def _get(frontmatter: Mapping[str, Any], key: str) -> Any:
    """frontmatter[key], else the first non-null value under a key spelled in another case."""
    if frontmatter.get(key) is not None:
        return frontmatter[key]
    return next((v for k, v in frontmatter.items() if k.casefold() == key and v is not None), None)


def frontmatter_tags(frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """Tags of the `tags` key as Obsidian's parseFrontMatterTags reads them, without '#'.

    A list, or one string holding one tag; never split on commas or spaces, and an invalid tag
    (`a, b`, `two words`, `1984`) is dropped, as Obsidian 1.9 does.
    """
    value = _get(frontmatter, "tags")
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    tags = (item.strip().removeprefix("#") for item in items if isinstance(item, str))
    return tuple(tag for tag in tags if is_valid_tag(tag))


def _scalar_text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def frontmatter_aliases(frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """The `aliases` key: a list or one string (not split on commas), blanks dropped."""
    value = _get(frontmatter, "aliases")
    texts = (_scalar_text(item) for item in (value if isinstance(value, list) else [value]))
    return tuple(dict.fromkeys(t.strip() for t in texts if t is not None and t.strip()))


def _dedupe_tags(tags: Iterable[str]) -> tuple[str, ...]:
    firsts: dict[str, str] = {}
    for tag in tags:
        firsts.setdefault(normalize_tag(tag), tag)
    return tuple(firsts.values())


def _inline_tags(linkless: str) -> list[str]:
    """Distinct inline tags in order; findall and fromkeys keep a tag-dense note fast."""
    unique = dict.fromkeys(_INLINE_TAG.findall(linkless))
    return [tag for tag in unique if _DIGITS.fullmatch(tag) is None]


def _headings(text: str, masked: str, lines: _Lines) -> tuple[Heading, ...]:
    headings = []
    for match in _HEADING.finditer("\n" + masked):
        start, end = match.start(), match.end() - 1  # offsets in text: minus the "\n" prefix
        line_end = text.find("\n", end)
        raw = text[end : len(text) if line_end < 0 else line_end].strip()
        level, line = len(match.group(1)), lines.offset + lines.index(start)
        headings.append(Heading(level, _CLOSING_HASHES.sub("", raw), line))
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
    return _MD_SUFFIX.sub("", path.rsplit("/", 1)[-1])


def _first_h1(headings: Iterable[Heading]) -> str | None:
    return next((plain_text(h.text) for h in headings if h.level == 1 and plain_text(h.text)), None)


# ---------------------------------------------------------------- entry points


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse a note's text; path is vault-relative and used for the title and error messages."""
    text = text.removeprefix("\ufeff")
    fm = _read_frontmatter(path, text)
    body = text[fm.body_start :]
    scan = body.replace("\r\n", "\n")  # same line count, so line numbers still match the file
    masked = _Masker(scan).masked()
    lines = _Lines(scan, text.count("\n", 0, fm.body_start))
    body_links, linkless = _body_links(scan, masked, lines)
    headings = _headings(scan, masked, lines)
    statuses = [m.group(1) for m in _TASK.finditer("\n" + masked)]
    return ParsedNote(
        frontmatter=fm.data,
        title=_title(path, fm.data),
        heading=_first_h1(headings),
        tags=_dedupe_tags([*frontmatter_tags(fm.data), *_inline_tags(linkless)]),
        aliases=frontmatter_aliases(fm.data),
        type=_scalar_text(fm.data.get("type")),
        status=_scalar_text(fm.data.get("status")),
        links=fm.links + body_links,
        headings=headings,
        tasks_open=statuses.count(" "),
        tasks_done=len(statuses) - statuses.count(" "),
        body=body,
        word_count=len(masked.encode().translate(_WORD_BYTES).split()),
        error=fm.error,
    )


def decode_note(data: bytes) -> tuple[str, str | None]:
    """UTF-8 decode, stripping a leading BOM. Not UTF-8: ("", "not valid UTF-8: <detail>")."""
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", f"not valid UTF-8: {exc}"
