"""A view of a base run over a set of files: `run_view(document, view, files, env)` gives the
rows that pass the base's and the view's filters, sorted, cut to the view's limit, grouped, with
the view's columns and summaries. `plain` turns any value into JSON for an answer.

The order of a run follows the app's own (Obsidian's `BasesQueryResult`: its `data` is sorted
and limited, its `groupedData` is that data grouped): filter, sort, limit, then group. So a
limit keeps the first rows of the sorted whole, and the groups share them out; summaries are
over the rows shown.

Sorting: empty values (null, "", [], {}) go last in either direction; values of different
types order by type (booleans, numbers, dates, durations, text, links, files, anything else),
text ignores case; ties keep the files in path order. Each row's sort and group values are read
once, and each formula runs at most once per row (the row's `Context` keeps them)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TypeAlias

from weaver.bases import fields
from weaver.bases.compiler import compile_expression
from weaver.bases.document import BaseDocument, SortKey, ViewSpec
from weaver.bases.environment import Environment
from weaver.bases.evaluate import Context, evaluate
from weaver.bases.filters import all_of, compile_filter
from weaver.bases.summaries import BUILTIN_SUMMARIES, identity
from weaver.bases.values import (
    Date,
    Duration,
    File,
    FileFacts,
    Link,
    Value,
    format_number,
    is_empty,
    to_text,
)

DEFAULT_COLUMNS = ("file.name",)
Plain: TypeAlias = str | int | float | bool | list["Plain"] | dict[str, "Plain"] | None


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One file's row: its path and its cells, in the order of the view's columns."""

    path: str
    cells: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class GroupResult:
    """One group: `rows[start:start + count]` of the result are its rows; `key` is null for the
    rows with no value to group by."""

    key: Value
    start: int
    count: int
    summaries: Mapping[str, Value]


@dataclass(frozen=True, slots=True)
class ViewResult:
    """A view's answer. `matched` counts the rows that passed the filters, before `limit`;
    `groups` is None when the view is not grouped; `summaries` maps a column key to its value."""

    view: ViewSpec
    columns: tuple[Column, ...]
    rows: tuple[ResultRow, ...]
    groups: tuple[GroupResult, ...] | None
    summaries: Mapping[str, Value]
    matched: int


def run_view(
    document: BaseDocument, view: ViewSpec, files: Iterable[FileFacts], env: Environment
) -> ViewResult:
    """The view over `files`. Any expression's error is the whole view's error: a row is never
    dropped, kept or left blank in its place."""
    env = dataclasses.replace(env, formulas=document.formulas)
    keep = all_of(document.filters, view.filters)
    contexts = [Context(facts, env) for facts in files]
    if keep is not None:
        test = compile_filter(keep)
        contexts = [context for context in contexts if test(context)]
    contexts.sort(key=_path)  # ties of the sort keep path order
    shown = _sorted(contexts, view.sort)[: view.limit]
    columns = tuple(Column(key, _label(document, key)) for key in view.order or DEFAULT_COLUMNS)
    summarise = _Summariser(document, view, env)
    groups = None
    if view.group_by is not None:
        shown, groups = _grouped(shown, view.group_by, summarise)
    readers = [reader(column.key) for column in columns]
    return ViewResult(
        view=view,
        columns=columns,
        rows=tuple(_row(context, readers) for context in shown),
        groups=groups,
        summaries=summarise(shown),
        matched=len(contexts),
    )


def _path(context: Context) -> str:
    return context.file.facts.path


Reader = Callable[[Context], Value]
_NO_BINDINGS: Mapping[str, Value] = {}


def reader(key: str) -> Reader:
    """What reads a property key for a row. A note property or file field is read directly
    (a view reads one per cell); a formula, or a file field that is none, through an
    expression, so its errors are the language's own."""
    scope, _, name = key.partition(".")
    if scope == "note":
        return lambda context: fields.note_property(context.file.facts, name)
    if scope == "file" and name in fields.FILE_FIELDS:
        return lambda context: fields.file_field(context.file, name)
    program = compile_expression(f"{scope}[{json.dumps(name)}]")
    return lambda context: program.run(context, _NO_BINDINGS)


def _label(document: BaseDocument, key: str) -> str:
    """The column's header: its display name, else the property's name (`file name` for
    `file.name`, so file fields read apart from note properties of the same name)."""
    if key in document.display_names:
        return document.display_names[key]
    scope, _, name = key.partition(".")
    return f"file {name}" if scope == "file" else name


def _row(context: Context, readers: Sequence[Reader]) -> ResultRow:
    return ResultRow(context.file.facts.path, tuple([read(context) for read in readers]))


# ---------------------------------------------------------------- ordering


def _sorted(contexts: list[Context], keys: Sequence[SortKey]) -> list[Context]:
    """Stable passes from the last key to the first: the first key decides, the next breaks
    its ties, and so on."""
    ordered = contexts
    for key in reversed(keys):
        read = reader(key.property)
        decorated = [(order_key(read(context), key.descending), context) for context in ordered]
        decorated.sort(key=itemgetter(0), reverse=key.descending)
        ordered = [context for _, context in decorated]
    return ordered


def order_key(value: Value, descending: bool = False) -> tuple[object, ...]:
    """What a row sorts by for one key: an empty value after every other in either direction
    (Python's sort is reversed for descending, so it ranks first there), then by type, then by
    the value."""
    if is_empty(value) or (isinstance(value, float) and math.isnan(value)):
        return (0,) if descending else (1,)
    rank, inner = _ranked(value)
    return (1 if descending else 0, rank, inner)


def _ranked(value: Value) -> tuple[int, object]:
    match value:
        case bool():
            return 0, int(value)
        case int() | float():
            return 1, float(value)
        case Date():
            return 2, value.moment
        case Duration():
            return 3, (value.months, value.millis)
        case str():
            return 4, (value.casefold(), value)
        case Link():
            text = to_text(value)
            return 5, (text.casefold(), text)
        case File():
            return 6, (value.facts.path.casefold(), value.facts.path)
    text = to_text(value)
    return 7, (text.casefold(), text)


# ---------------------------------------------------------------- groups and summaries


def _grouped(
    contexts: list[Context], group_by: SortKey, summarise: _Summariser
) -> tuple[list[Context], tuple[GroupResult, ...]]:
    """The rows regrouped (sort order kept within a group) and the groups, ordered by their key
    in the group's direction, the group of rows with no value last."""
    read = reader(group_by.property)
    buckets: dict[Hashable, tuple[Value, list[Context]]] = {}
    for context in contexts:
        key = read(context)
        key = None if is_empty(key) else key
        buckets.setdefault(identity(key), (key, []))[1].append(context)
    ordered = sorted(
        buckets.values(),
        key=lambda bucket: order_key(bucket[0], group_by.descending),
        reverse=group_by.descending,
    )
    rows: list[Context] = []
    groups = []
    for key, members in ordered:
        groups.append(GroupResult(key, len(rows), len(members), summarise(members)))
        rows.extend(members)
    return rows, tuple(groups)


class _Summariser:
    """A view's summaries over some of its rows (all shown, or one group's)."""

    def __init__(self, document: BaseDocument, view: ViewSpec, env: Environment) -> None:
        self.env = env
        self.formulas = document.summaries
        self.chosen = [(key, reader(key), name) for key, name in view.summaries.items()]

    def __call__(self, contexts: Sequence[Context]) -> dict[str, Value]:
        summaries = {}
        for key, read, name in self.chosen:
            values = [read(context) for context in contexts]
            summaries[key] = self.summary(name, values)
        return summaries

    def summary(self, name: str, values: list[Value]) -> Value:
        """A summary formula of the base, else the built-in of that name (the base's own wins:
        its author named it)."""
        formula = self.formulas.get(name)
        if formula is None:
            return BUILTIN_SUMMARIES[name](values)
        # A summary formula reads only `values` and `this` (checked when the base was read),
        # so the row it is given is never looked at.
        context = Context(self.env.this or _NO_FILE, self.env)
        return evaluate(formula, context, {"values": values})


@dataclass(frozen=True, slots=True)
class _NoFile:
    """The row a summary formula runs in when no file shows the base."""

    name: str = ""
    path: str = ""
    folder: str = ""
    ext: str = ""
    size: int = 0
    ctime: dt.datetime = dt.datetime(1970, 1, 1)
    mtime: dt.datetime = dt.datetime(1970, 1, 1)
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    backlinks: tuple[str, ...] = ()
    embeds: tuple[str, ...] = ()
    properties: Mapping[str, object] = dataclasses.field(default_factory=dict)


_NO_FILE = _NoFile()


# ---------------------------------------------------------------- answers


def plain(value: Value) -> Plain:
    """A value as JSON: text, numbers (whole ones as integers; NaN and infinities as their
    text), booleans and null as they are; a date as ISO 8601 (`2025-05-01`, or
    `2025-05-01T09:30:00` with its time); a duration as its text (`1M 3600s`); a link as a
    wikilink (`[[Plan]]`, `[[Plan|the plan]]`) or, to a URL, the URL; a file as its path;
    lists and objects item by item; anything else (regexp, html, icon, image) as its text."""
    match value:
        case None | bool() | str():
            return value
        case int() | float():
            return _number(value)
        case Date():
            return _date(value)
        case Link():
            return _link(value)
        case File():
            return value.facts.path
        case list():
            return [plain(item) for item in value]
        case dict():
            return {key: plain(item) for key, item in value.items()}
    return to_text(value)


def _number(number: float) -> Plain:
    if isinstance(number, int):
        return number
    if not math.isfinite(number):
        return format_number(number)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _date(date: Date) -> str:
    if not date.has_time:
        return date.moment.date().isoformat()
    timespec = "milliseconds" if date.moment.microsecond else "seconds"
    return date.moment.isoformat(timespec=timespec)


def _link(link: Link) -> str:
    if "://" in link.target:
        return link.target
    return f"[[{link.target}|{link.display}]]" if link.display else f"[[{link.target}]]"
