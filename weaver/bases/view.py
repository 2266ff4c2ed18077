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
once, and each formula runs at most once per row (the row's `Context` keeps them).

`evaluate_rows` and `assemble_view` split a run in two: each file's row, every expression run,
then the rows sorted, limited, grouped and summarised. Rows evaluated once can then be kept and
assembled again (`runtime.kept_rows`); `run_view` does both at once, reading only the cells
of the rows it shows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

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
    return _assemble(document, view, env, contexts, _FromContexts())


@dataclass(frozen=True, slots=True)
class EvaluatedRow:
    """A row that passed the filters, its expressions run: what a view needs of it to be
    assembled again without them. `values` are those of `keys_read(view)`, in that order (the
    columns first, so `row.cells` are the first of them); `order` is its `order_key` for each
    of the view's sort keys."""

    row: ResultRow
    values: tuple[Value, ...]
    order: tuple[tuple[object, ...], ...]


def keys_read(view: ViewSpec) -> tuple[str, ...]:
    """Every property key a view reads of its rows: its columns first, then its sort keys,
    grouping and summaries."""
    keys = [*_column_keys(view), *(key.property for key in view.sort)]
    if view.group_by is not None:
        keys.append(view.group_by.property)
    keys += view.summaries
    return tuple(dict.fromkeys(keys))


def evaluate_rows(
    document: BaseDocument, view: ViewSpec, files: Iterable[FileFacts], env: Environment
) -> Iterator[tuple[str, EvaluatedRow | None]]:
    """Each file's row of the view (None: the filters drop it). Unlike `run_view`, which reads
    the cells of the rows it shows only, this reads every key of every row kept: an error here
    may be in a row `run_view` would not show, so a caller that gets one runs the view with
    `run_view` for the view's true answer."""
    env = dataclasses.replace(env, formulas=document.formulas)
    keep = all_of(document.filters, view.filters)
    test = compile_filter(keep) if keep is not None else None
    keys = keys_read(view)
    readers = [reader(key) for key in keys]
    columns = len(_column_keys(view))
    sorts = [(keys.index(key.property), key.descending) for key in view.sort]
    for facts in files:
        context = Context(facts, env)
        if test is not None and not test(context):
            yield facts.path, None
            continue
        values = tuple([read(context) for read in readers])
        order = tuple([order_key(values[at], descending) for at, descending in sorts])
        yield facts.path, EvaluatedRow(ResultRow(facts.path, values[:columns]), values, order)


def assemble_view(
    document: BaseDocument, view: ViewSpec, env: Environment, rows: Iterable[EvaluatedRow]
) -> ViewResult:
    """The view's answer from its rows evaluated before (`evaluate_rows`), in any order: the
    same as `run_view` gives when no expression fails."""
    return _assemble(document, view, env, list(rows), _FromEvaluated(keys_read(view)))


def _column_keys(view: ViewSpec) -> tuple[str, ...]:
    return view.order or DEFAULT_COLUMNS


_Row = TypeVar("_Row")


class _Reading(ABC, Generic[_Row]):
    """How the assembly of a view reads its rows."""

    @abstractmethod
    def path(self, row: _Row) -> str: ...

    @abstractmethod
    def value(self, key: str) -> Callable[[_Row], Value]:
        """What reads a property key's value of a row."""

    @abstractmethod
    def order(self, position: int, key: SortKey) -> Callable[[_Row], tuple[object, ...]]:
        """What reads a row's `order_key` for the view's `position`-th sort key, `key`."""

    @abstractmethod
    def results(self, rows: Sequence[_Row], columns: Sequence[str]) -> tuple[ResultRow, ...]:
        """The rows with their cells, the `columns`' values."""


class _FromContexts(_Reading[Context]):
    """Rows as contexts: every value read when asked for, from the row's file."""

    def path(self, row: Context) -> str:
        return row.file.facts.path

    def value(self, key: str) -> Callable[[Context], Value]:
        return reader(key)

    def order(self, position: int, key: SortKey) -> Callable[[Context], tuple[object, ...]]:
        read = reader(key.property)
        return lambda row: order_key(read(row), key.descending)

    def results(self, rows: Sequence[Context], columns: Sequence[str]) -> tuple[ResultRow, ...]:
        readers = [reader(key) for key in columns]
        return tuple(
            ResultRow(self.path(row), tuple([read(row) for read in readers])) for row in rows
        )


class _FromEvaluated(_Reading[EvaluatedRow]):
    """Rows evaluated before: every value is there already."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.at = {key: position for position, key in enumerate(keys)}

    def path(self, row: EvaluatedRow) -> str:
        return row.row.path

    def value(self, key: str) -> Callable[[EvaluatedRow], Value]:
        at = self.at[key]
        return lambda row: row.values[at]

    def order(self, position: int, key: SortKey) -> Callable[[EvaluatedRow], tuple[object, ...]]:
        return lambda row: row.order[position]

    def results(
        self, rows: Sequence[EvaluatedRow], columns: Sequence[str]
    ) -> tuple[ResultRow, ...]:
        return tuple([row.row for row in rows])


def _assemble(
    document: BaseDocument,
    view: ViewSpec,
    env: Environment,
    kept: list[_Row],
    reading: _Reading[_Row],
) -> ViewResult:
    """The kept rows sorted, limited, grouped and summarised, with their cells."""
    kept.sort(key=reading.path)  # ties of the sort keep path order
    shown = _sorted(kept, view.sort, reading)[: view.limit]
    keys = _column_keys(view)
    summarise = _Summariser(document, view, env, reading)
    groups = None
    if view.group_by is not None:
        shown, groups = _grouped(shown, view.group_by, summarise, reading)
    return ViewResult(
        view=view,
        columns=tuple(Column(key, _label(document, key)) for key in keys),
        rows=reading.results(shown, keys),
        groups=groups,
        summaries=summarise(shown),
        matched=len(kept),
    )


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


# ---------------------------------------------------------------- ordering


def _sorted(rows: list[_Row], keys: Sequence[SortKey], reading: _Reading[_Row]) -> list[_Row]:
    """Stable passes from the last key to the first: the first key decides, the next breaks
    its ties, and so on."""
    ordered = rows
    for position, key in reversed(list(enumerate(keys))):
        # Python's sort is stable reversed too, and reads each row's key once.
        ordered = sorted(ordered, key=reading.order(position, key), reverse=key.descending)
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
    rows: list[_Row], group_by: SortKey, summarise: _Summariser[_Row], reading: _Reading[_Row]
) -> tuple[list[_Row], tuple[GroupResult, ...]]:
    """The rows regrouped (sort order kept within a group) and the groups, ordered by their key
    in the group's direction, the group of rows with no value last."""
    read = reading.value(group_by.property)
    buckets: dict[Hashable, tuple[Value, list[_Row]]] = {}
    for row in rows:
        key = read(row)
        key = None if is_empty(key) else key
        buckets.setdefault(identity(key), (key, []))[1].append(row)
    ordered = sorted(
        buckets.values(),
        key=lambda bucket: order_key(bucket[0], group_by.descending),
        reverse=group_by.descending,
    )
    regrouped: list[_Row] = []
    groups = []
    for key, members in ordered:
        groups.append(GroupResult(key, len(regrouped), len(members), summarise(members)))
        regrouped.extend(members)
    return regrouped, tuple(groups)


class _Summariser(Generic[_Row]):
    """A view's summaries over some of its rows (all shown, or one group's)."""

    def __init__(
        self, document: BaseDocument, view: ViewSpec, env: Environment, reading: _Reading[_Row]
    ) -> None:
        self.env = env
        self.formulas = document.summaries
        self.chosen = [(key, reading.value(key), name) for key, name in view.summaries.items()]

    def __call__(self, rows: Sequence[_Row]) -> dict[str, Value]:
        summaries = {}
        for key, read, name in self.chosen:
            values = [read(row) for row in rows]
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
