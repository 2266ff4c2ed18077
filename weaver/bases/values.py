"""The values of the Bases language: Python types where they fit (str, int/float, bool, None,
list, dict) and small frozen dataclasses where they do not (dates, durations, links, files,
regular expressions). Also the rules every operator shares: type names, truthiness, equality,
ordering and the text a value reads as."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias


class FileFacts(Protocol):
    """What an evaluation knows of one file: the row's file, or `this`. Paths are vault-relative
    with `/`; `name` keeps the extension; `ext` has no dot; `tags` have no `#`; `links`,
    `backlinks` and `embeds` are the vault paths they resolve to (or the raw target when they
    resolve to nothing); dates are naive local times."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def folder(self) -> str: ...
    @property
    def ext(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def ctime(self) -> dt.datetime: ...
    @property
    def mtime(self) -> dt.datetime: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def links(self) -> Sequence[str]: ...
    @property
    def backlinks(self) -> Sequence[str]: ...
    @property
    def embeds(self) -> Sequence[str]: ...
    @property
    def properties(self) -> Mapping[str, object]: ...


@dataclass(frozen=True, slots=True)
class Date:
    """A date, with a time of day or without one (then `moment` is at midnight)."""

    moment: dt.datetime
    has_time: bool


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time: calendar months (a year is 12) kept apart from exact milliseconds, since
    a month is not a fixed number of days."""

    months: int = 0
    millis: float = 0.0


@dataclass(frozen=True, slots=True)
class Link:
    """A link to a note by its target (`Projects/Plan`, `Plan.md`) or to a URL."""

    target: str
    display: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class File:
    """A file of the vault, as `file`, `this` or `link.asFile()` give it."""

    facts: FileFacts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, File) and other.facts.path == self.facts.path

    def __hash__(self) -> int:
        return hash(self.facts.path)


@dataclass(frozen=True, slots=True)
class Regex:
    """A `/pattern/flags` literal, compiled once when the expression is parsed."""

    source: str
    compiled: re.Pattern[str] = field(compare=False)
    is_global: bool = False


@dataclass(frozen=True, slots=True)
class Markup:
    """What `html()`, `icon()` and `image()` make: text a view renders as HTML, a Lucide icon
    or an image (from a path, a file or a URL)."""

    kind: str  # "html", "icon" or "image"
    source: str


Value: TypeAlias = (
    bool
    | int
    | float
    | str
    | Date
    | Duration
    | Link
    | File
    | Regex
    | Markup
    | list["Value"]
    | dict[str, "Value"]
    | None
)


class ValueTypeError(Exception):
    """A value of the wrong type for an operator or function; the evaluator turns it into a
    `BaseExpressionError` at the offending node's position."""


def type_name(value: Value) -> str:
    """The name `isType()` and error messages use."""
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int() | float():
            return "number"
        case str():
            return "string"
        case Date():
            return "date"
        case Duration():
            return "duration"
        case Link():
            return "link"
        case File():
            return "file"
        case Regex():
            return "regexp"
        case Markup():
            return value.kind
        case list():
            return "list"
        case _:
            return "object"


def is_truthy(value: Value) -> bool:
    """JavaScript's truthiness, except that an empty list or object is false: in a vault an
    empty `tags: []` means "none", as `isEmpty()` says."""
    match value:
        case None:
            return False
        case bool():
            return value
        case int() | float():
            return value != 0 and not math.isnan(value)
        case str() | list() | dict():
            return len(value) > 0
        case _:
            return True


def is_empty(value: Value) -> bool:
    """`isEmpty()`: null, "", [] and {} are empty; a number, date or boolean never is."""
    if value is None:
        return True
    if isinstance(value, str | list | dict):
        return len(value) == 0
    return False


def note_target(target: str) -> str:
    """What a link target names: without `[[ ]]`, then its display text and heading (in that
    order: `[[Note|shown]]` cut at `|` first would keep the `[[`)."""
    target = target.strip()
    if target.startswith("[[") and target.endswith("]]"):
        target = target[2:-2]
    return target.split("|", 1)[0].split("#", 1)[0].strip()


def same_note(target: str, path: str) -> bool:
    """Whether a link target names the note at `path`: the full path, the path without `.md`,
    or (for a bare name) the file name, as Obsidian resolves a link with no folder."""
    target = note_target(target)
    stem = path[:-3] if path.endswith(".md") else path
    if target in (path, stem):
        return True
    return "/" not in target and target in (path.rsplit("/", 1)[-1], stem.rsplit("/", 1)[-1])


def equals(left: Value, right: Value) -> bool:
    """`==`: values of one type compare by content; a link equals a file it resolves to; other
    mixes are unequal (never an error: `==` works on every value)."""
    match left, right:
        case (bool(), _) | (_, bool()):
            return type(left) is type(right) and left == right
        case (int() | float(), int() | float()):
            return left == right
        case (Link(), File()):
            return same_note(left.target, right.facts.path)
        case (File(), Link()):
            return same_note(right.target, left.facts.path)
        case (Link(), Link()):  # `[[Plan]]` and `[[Projects/Plan]]` name the same note
            return same_note(left.target, right.target) or same_note(right.target, left.target)
        case (list(), list()):
            return len(left) == len(right) and all(map(equals, left, right))
        case (dict(), dict()):
            return left.keys() == right.keys() and all(equals(left[k], right[k]) for k in left)
        case (Date(), Date()):
            return left.moment == right.moment
    return type_name(left) == type_name(right) and left == right


def compare(left: Value, right: Value) -> int:
    """-1, 0 or 1 for `<`, `>`, sorting: numbers, strings, dates and booleans among their own
    type; anything else is a type error."""
    keys = (_order_key(left), _order_key(right))
    if keys[0] is None or keys[1] is None or type(keys[0]) is not type(keys[1]):
        raise ValueTypeError(f"cannot compare {type_name(left)} with {type_name(right)}")
    return (keys[0] > keys[1]) - (keys[0] < keys[1])  # type: ignore[operator]


def _order_key(value: Value) -> float | str | dt.datetime | None:
    match value:
        case bool() | int() | float():
            return float(value)
        case str():
            return value
        case Date():
            return value.moment
    return None


def format_number(number: float) -> str:
    """A number as JavaScript writes it: `3`, not `3.0`."""
    if isinstance(number, int):
        return str(number)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return str(int(number)) if number.is_integer() else repr(number)


def to_text(value: Value) -> str:
    """`toString()`, `join()` and `+` with a string: the value as a person would read it."""
    match value:
        case None:
            return "null"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return format_number(value)
        case str():
            return value
        case Date():
            fmt = "%Y-%m-%d %H:%M:%S" if value.has_time else "%Y-%m-%d"
            return value.moment.strftime(fmt)
        case Duration():
            return _duration_text(value)
        case Link():
            return value.display or value.target
        case File():
            return value.facts.path
        case Regex():
            return f"/{value.source}/" + ("g" if value.is_global else "")
        case Markup():
            return value.source
        case list():
            return ", ".join(to_text(item) for item in value)
        case _:
            return "{" + ", ".join(f"{k}: {to_text(v)}" for k, v in value.items()) + "}"


def _duration_text(value: Duration) -> str:
    parts = [f"{value.months}M"] if value.months else []
    if value.millis or not parts:
        parts.append(f"{format_number(value.millis / 1000)}s")
    return " ".join(parts)
