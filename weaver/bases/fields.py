"""Reading into values: `x.field` and `x[index]`, a file's fields (`file.name`, `file.mtime`,
...) and a note's frontmatter turned into values (a `[[link]]` is a link, an ISO date a date,
as Obsidian's property types make them)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable

from weaver.bases import times
from weaver.bases.values import Date, File, FileFacts, Link, Value, ValueTypeError, type_name

_DATE_FIELDS: dict[str, Callable[[dt.datetime], int]] = {
    "year": lambda m: m.year,
    "month": lambda m: m.month,
    "day": lambda m: m.day,
    "hour": lambda m: m.hour,
    "minute": lambda m: m.minute,
    "second": lambda m: m.second,
    "millisecond": lambda m: m.microsecond // 1000,
}


def property_value(raw: object) -> Value:
    """A frontmatter value as the language sees it."""
    match raw:
        case None | bool() | int() | float():
            return raw
        case str():
            return _text_value(raw)
        case list() | tuple():
            return [property_value(item) for item in raw]
        case dict():
            return {str(key): property_value(item) for key, item in raw.items()}
        case dt.datetime():
            return Date(raw, has_time=True)
        case dt.date():
            return Date(dt.datetime(raw.year, raw.month, raw.day), has_time=False)
    return str(raw)


# Remembered: a vault repeats its property texts (dates, statuses) across thousands of notes,
# and a view reads one per row; the values made are immutable.
@functools.lru_cache(maxsize=1 << 16)
def _text_value(text: str) -> Value:
    stripped = text.strip()
    if stripped.startswith("[[") and stripped.endswith("]]") and "]]" not in stripped[2:-2]:
        target, _, alias = stripped[2:-2].partition("|")
        return Link(target.strip(), alias.strip() or None)
    if times.looks_like_date(stripped):
        return times.parse_date(stripped)
    return text


def note_property(facts: FileFacts, name: str) -> Value:
    """`note.name` (or a bare `name`): the property, null when the note has none."""
    return property_value(facts.properties.get(name))


# What `file.x` can name: the columns a view may show of a file.
FILE_FIELDS = frozenset(
    {"name", "basename", "path", "folder", "ext", "size", "properties", "tags", "links"}
    | {"backlinks", "embeds", "ctime", "mtime", "file"}
)


def file_field(file: File, name: str) -> Value:
    facts = file.facts
    match name:
        case "name" | "path" | "folder" | "ext" | "size":
            value: Value = getattr(facts, name)
            return value
        case "basename":
            return facts.name[: -len(facts.ext) - 1] if facts.ext else facts.name
        case "properties":
            return property_value(dict(facts.properties))
        case "tags":
            return list[Value](facts.tags)
        case "links" | "backlinks" | "embeds":
            return [Link(target) for target in getattr(facts, name)]
        case "ctime" | "mtime":
            return Date(getattr(facts, name), has_time=True)
        case "file":
            return file
    raise ValueTypeError(f"a file has no field {name!r}")


def member(value: Value, name: str) -> Value:
    """`value.name` for a field that is not a method call."""
    match value:
        case None:
            return None  # a missing property's fields are missing too
        case dict():
            return value.get(name)
        case File():
            return file_field(value, name)
        case Date() if name in _DATE_FIELDS:
            return _DATE_FIELDS[name](value.moment)
        case str() | list() if name == "length":
            return len(value)
    raise ValueTypeError(f"a {type_name(value)} has no field {name!r}")


def item(value: Value, index: Value) -> Value:
    """`value[index]`: a list's element (0-based; past the end: null), an object's key."""
    match value, index:
        case (None, _):
            return None
        case (list() | str(), int() | float()) if not isinstance(index, bool):
            position = int(index)
            return value[position] if 0 <= position < len(value) else None
        case (dict(), str()):
            return value.get(index)
        case (File(), str()):
            return file_field(value, index)
    raise ValueTypeError(f"a {type_name(value)} cannot be indexed by a {type_name(index)}")
