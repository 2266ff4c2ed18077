"""A `TaskQuery` run on the cache's `tasks` table: its filter tree compiled to one WHERE, its
sorts (the plugin's default appended) to one ORDER BY, its groups counted in SQL, paged.

Totals are counted by the database over the whole match, never over the page; grouping orders
the tasks by their groups first, as the plugin shows them. Dates are ISO text, so they compare
and sort as text; the plugin's urgency is worked out in SQL from `today`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Date,
    Select,
    SQLColumnExpression,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.sql.elements import KeyedColumnElement

from weaver.cache.dialect import is_postgres
from weaver.cache.models import Task
from weaver.cache.read import like_folded
from weaver.markdown.tasks import PRIORITY_NAMES
from weaver.paging import Page
from weaver.tasks.query import (
    DONE_TYPES,
    AllOf,
    AnyOf,
    DateField,
    DateMatches,
    DatePresence,
    DoneIs,
    Filter,
    Group,
    GroupKey,
    Not,
    PriorityIs,
    Recurring,
    Sort,
    SortKey,
    StatusCharIs,
    StatusTypeIs,
    TagMatches,
    TagPresence,
    TaskQuery,
    TextField,
    TextMatches,
)
from weaver.vault.fs import path_folder, path_name

__all__ = ["FoundTask", "TaskGroup", "TaskPage", "run_task_query"]

# The plugin's names of its core and default statuses, by checkbox character.
STATUS_NAMES = {" ": "Todo", "x": "Done", "/": "In Progress", "-": "Cancelled"}
# `sort by status.type` order (docs/Queries/Sorting.md): actionable first.
STATUS_TYPE_ORDER = ("IN_PROGRESS", "TODO", "ON_HOLD", "DONE", "CANCELLED", "NON_TASK")
# Urgency (docs/Advanced/Urgency.md): priority's share, by index into PRIORITY_NAMES.
PRIORITY_URGENCY = (9.0, 6.0, 3.9, 1.95, 0.0, -1.8)
OPEN_TYPES = tuple(t for t in STATUS_TYPE_ORDER if t not in DONE_TYPES)
HAPPENS: tuple[DateField, ...] = ("start", "scheduled", "due")
NO_GROUP = "(none)"


@dataclass(frozen=True)
class FoundTask:
    path: str
    line: int
    status_char: str
    status_type: str
    description: str
    raw: str  # the whole line as written
    tags: list[str]
    dates: dict[str, str]  # only the dates the task sets
    recurrence: str | None
    priority: str  # a PRIORITY_NAMES name
    heading: str | None
    group: tuple[str, ...]  # its group at each `group by` level; () when not grouped


@dataclass(frozen=True, slots=True)
class TaskGroup:
    names: tuple[str, ...]
    count: int  # tasks in the group over the whole match (after `limit groups`)


@dataclass(frozen=True)
class TaskPage:
    page: Page[FoundTask]
    groups: list[TaskGroup]


def run_task_query(
    conn: Connection, query: TaskQuery, today: date, offset: int = 0, limit: int = 50
) -> TaskPage:
    """The page of tasks `query` finds from `offset`, with the true total and group counts;
    the query's own `limit` caps the total, as it caps what the plugin shows."""
    compiler = _Compiler(conn, today)
    base = _ranked(compiler, query)
    groups, paths = _group_counts(conn, query, base) if query.groups else ([], {})
    if query.groups:  # the groups hold every matching row once: no second count
        total = sum(g.count for g in groups)
        total = total if query.limit is None else min(total, query.limit)
    else:
        matching = base.order_by(None)
        if query.limit is not None:  # counting stops at the query's own limit
            matching = matching.limit(query.limit)
        total = conn.execute(select(func.count()).select_from(matching.subquery())).scalar_one()
    wanted = max(0, min(limit, total - offset))
    page_base, page_offset = _narrowed(query, base, groups, paths, offset, wanted)
    rows = _page_rows(conn, compiler, query, page_base, page_offset, wanted)
    return TaskPage(Page(rows, total, offset, limit), groups)


# Notes a narrowed page may name (`_narrowed`); a folder group can hold thousands.
MAX_NARROWED_PATHS = 500


def _narrowed(
    query: TaskQuery,
    base: Select[Any],
    groups: list[TaskGroup],
    paths: dict[str, set[str]],
    offset: int,
    wanted: int,
) -> tuple[Select[Any], int]:
    """A page of a query grouped first by file or folder lies in a few of those groups, which
    the group counts locate: its tasks are then sorted among those groups' notes only, with
    the offset taken from where the first of them starts, rather than the whole match sorted
    for every page. `paths` holds the notes of each first-level group."""
    if not paths or wanted == 0 or query.group_limit is not None:
        return base, offset
    starts: dict[str, int] = {}  # where each first-level group starts, in the whole order
    seen = 0
    chosen: list[str] = []
    for group in groups:
        name = group.names[0]
        starts.setdefault(name, seen)
        if seen < offset + wanted and seen + group.count > offset and name not in chosen:
            chosen.append(name)
        seen += group.count
    notes = sorted(path for name in chosen for path in paths[name])
    if not chosen or len(notes) > MAX_NARROWED_PATHS:
        return base, offset
    return base.where(Task.note_path.in_(notes)), offset - starts[chosen[0]]


class _Compiler:
    """Expressions over `tasks`."""

    def __init__(self, conn: Connection, today: date) -> None:
        self.conn = conn
        self.today = today.isoformat()
        self.postgres = is_postgres(conn)

    def where(self, filters: Sequence[Filter]) -> ColumnElement[bool]:
        return and_(true(), *(self.filter(part) for part in filters))

    def filter(self, part: Filter) -> ColumnElement[bool]:
        match part:
            case AllOf(parts):
                return and_(true(), *(self.filter(p) for p in parts))
            case AnyOf(parts):
                return or_(false(), *(self.filter(p) for p in parts))
            case Not(inner):
                return not_(self.filter(inner))
            case DoneIs(done):
                # IN, never NOT IN: an IN list reads the (status_type, due) index in ranges.
                return Task.status_type.in_(DONE_TYPES if done else OPEN_TYPES)
            case StatusTypeIs(types, negate):
                return Task.status_type.not_in(types) if negate else Task.status_type.in_(types)
            case StatusCharIs(chars):
                return Task.status_char.in_(chars)
            case DateMatches():
                return self.date_matches(part)
            case DatePresence(field, present):
                columns = [_date_column(f) for f in (HAPPENS if field == "happens" else (field,))]
                if present:
                    return or_(*(c.is_not(None) for c in columns))
                return and_(*(c.is_(None) for c in columns))
            case Recurring(recurring):
                return Task.recurrence.is_not(None) if recurring else Task.recurrence.is_(None)
            case PriorityIs():
                return _priority(part)
            case TextMatches():
                return self.text_matches(part)
            case TagMatches():
                return self.tag_matches(part)
            case TagPresence(present):
                length = func.json_array_length(Task.tags)
                return length > 0 if present else func.coalesce(length, 0) == 0

    def date_matches(self, part: DateMatches) -> ColumnElement[bool]:
        start, end = part.dates.start.isoformat(), part.dates.end.isoformat()
        fields = HAPPENS if part.field == "happens" else (part.field,)
        tests = []
        for column in (_date_column(f) for f in fields):
            test = {
                "before": column < start,
                "after": column > end,
                "in": column.between(start, end),
                "in or before": column <= end,
                "in or after": column >= start,
            }[part.relation]
            tests.append(test)
        return or_(*tests)

    def text(self, field: TextField) -> SQLColumnExpression[str]:
        match field:
            case "path":
                return Task.note_path
            case "folder":
                # The plugin's folder ends with a slash; the root's is "/".
                return func.coalesce(self.folder_prefix(), "/")
            case "filename":
                return self.filename()
            case "heading":
                return func.coalesce(Task.heading, "")
            case "description":
                return Task.description
            case "status.name":
                return case(STATUS_NAMES, value=Task.status_char, else_="")

    # Folder and file name come from the task's own path rather than a join to `notes`: the
    # join read a note row per matching task, most of the time of a grouped query. On SQLite
    # they are functions the cache registers (`weaver.cache.db`).
    def folder_prefix(self) -> ColumnElement[str]:
        """The path up to its last "/" included; NULL at the vault's root."""
        if self.postgres:
            return func.substring(Task.note_path, r"^(.*/)")
        return func.path_folder(Task.note_path)

    def filename(self) -> ColumnElement[str]:
        if self.postgres:
            return func.regexp_replace(Task.note_path, r"^.*/", "")
        return func.path_name(Task.note_path)

    def text_matches(self, part: TextMatches) -> ColumnElement[bool]:
        matched = self.matches(self.text(part.field), part.pattern, part.regex, part.ignore_case)
        return not_(matched) if part.negate else matched

    def matches(
        self, column: SQLColumnExpression[Any], pattern: str, regex: bool, ignore_case: bool
    ) -> ColumnElement[bool]:
        if regex and self.postgres:
            return column.regexp_match(pattern, flags="i" if ignore_case else None)
        if regex:  # SQLite's REGEXP is Python's `re` (cache.db), which reads inline flags
            return column.regexp_match(f"(?i){pattern}" if ignore_case else pattern)
        escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return like_folded(self.conn, column, f"%{escaped}%")

    def tag_matches(self, part: TagMatches) -> ColumnElement[bool]:
        tag = self.tag_values()
        found = exists(
            select(1)
            .select_from(tag)
            .where(self.matches(tag.c.value, part.pattern, part.regex, part.ignore_case))
        )
        return not_(found) if part.negate else found

    def tag_values(self) -> Any:
        """The task's tags as a one-column table `value`."""
        if self.postgres:
            return func.json_array_elements_text(Task.tags).table_valued("value")
        return func.json_each(Task.tags).table_valued("value")

    def urgency(self) -> ColumnElement[Any]:
        """The plugin's urgency score (due date, priority, scheduled and start dates summed),
        negated: ascending puts the most urgent first."""
        return _urgency(self.today, self.postgres)


# Built once a day per backend: every query's default order ends with urgency, and building
# its expression was half the Python time of a query.
@functools.lru_cache(maxsize=4)
def _urgency(today: str, postgres: bool) -> ColumnElement[Any]:
    if postgres:
        days: ColumnElement[Any] = cast(Task.due, Date) - cast(literal(today), Date)
    else:
        days = func.julianday(Task.due) - func.julianday(today)
    due_share = case(
        (Task.due.is_(None), 0.0),
        (days <= -7, 12.0),
        (days >= 14, 2.4),
        else_=8.8 - days * (9.6 / 21),
    )
    priority_share = case(dict(enumerate(PRIORITY_URGENCY)), value=Task.priority, else_=0.0)
    scheduled_share = case((Task.scheduled <= today, 5.0), else_=0.0)
    start_share = case((Task.start > today, -3.0), else_=0.0)
    return -(due_share + priority_share + scheduled_share + start_share)


def _date_column(field: DateField) -> KeyedColumnElement[Any]:
    columns = {
        "due": Task.due,
        "scheduled": Task.scheduled,
        "start": Task.start,
        "created": Task.created,
        "done": Task.done,
        "cancelled": Task.cancelled,
    }
    return columns[field].expression  # type: ignore[return-value]


def _priority(part: PriorityIs) -> ColumnElement[bool]:
    wanted = part.priority
    return {
        "is": Task.priority == wanted,
        "not": Task.priority != wanted,
        "above": Task.priority < wanted,
        "below": Task.priority > wanted,
    }[part.relation]


def _set_dates(filters: Sequence[Filter]) -> set[str]:
    """Dates the filters' top level requires: sorting by them needs no "missing last" term,
    so the database can walk a date's index in order."""
    required: set[str] = set()
    for part in filters:
        if isinstance(part, DateMatches) and part.field != "happens":
            required.add(part.field)
        if isinstance(part, DatePresence) and part.present and part.field != "happens":
            required.add(part.field)
        if isinstance(part, AllOf):
            required |= _set_dates(part.parts)
    return required


def _sort_terms(compiler: _Compiler, sort: Sort, set_dates: set[str]) -> Iterator[Any]:
    """ORDER BY terms for one sort: missing values after present ones (before, reversed)."""
    value, may_be_missing = _sort_value(compiler, sort.key, set_dates)
    if may_be_missing:
        missing = value.is_(None)
        yield missing.desc() if sort.reverse else missing
    yield value.desc() if sort.reverse else value


def _sort_value(
    compiler: _Compiler, key: SortKey | GroupKey, set_dates: set[str]
) -> tuple[SQLColumnExpression[Any], bool]:
    dates = ("due", "scheduled", "start", "created", "done", "cancelled")
    if key in dates:
        return _date_column(key), key not in set_dates  # type: ignore[arg-type]
    match key:
        case "happens":
            # Start, else scheduled, else due: not always the earliest of the three.
            happens = [_date_column(f) for f in HAPPENS]
            return func.coalesce(*happens), True
        case "status":
            return case((Task.status_type.in_(DONE_TYPES), 1), else_=0), False
        case "status.type":
            order = {name: rank for rank, name in enumerate(STATUS_TYPE_ORDER)}
            return case(order, value=Task.status_type, else_=len(order)), False
        case "urgency":
            return compiler.urgency(), False  # negated: the most urgent first
        case "priority":
            return Task.priority, False
        case "path":
            return Task.note_path, False
        case "filename":
            return compiler.filename(), False
        case "folder":
            return func.coalesce(compiler.folder_prefix(), ""), False
        case "heading":
            return func.coalesce(Task.heading, ""), False
        case "description":
            return Task.description, False
        case _:
            return Task.line, False


def _group_value(compiler: _Compiler, group: Group, tag: Any) -> SQLColumnExpression[Any]:
    if group.key == "tags":
        return func.coalesce(tag.c.value, NO_GROUP)
    if group.key == "status":
        return case((Task.status_type.in_(DONE_TYPES), "Done"), else_="Todo")
    if group.key == "status.type":
        return Task.status_type
    if group.key == "folder":
        return compiler.text("folder")
    value, _ = _sort_value(compiler, group.key, set())
    if group.key == "priority":
        return value
    return func.coalesce(value, NO_GROUP)


def _ranked(compiler: _Compiler, query: TaskQuery) -> Select[Any]:
    """Every matching task (once per tag when grouped by tags) with its group values and its
    place in the order; `limit groups N` keeps the first N of each group."""
    from_ = Task.__table__
    tag = compiler.tag_values().alias("tag") if any(g.key == "tags" for g in query.groups) else None
    if tag is not None:
        from_ = from_.join(tag, true(), isouter=True)
    group_values: list[Any] = [
        _group_value(compiler, g, tag).label(f"g{i}") for i, g in enumerate(query.groups)
    ]
    sorts = _sort_order(compiler, query)
    pairs = zip(query.groups, group_values, strict=True)
    order = [*(_group_term(compiler, g, v.element) for g, v in pairs), *sorts]
    columns: list[Any] = [
        Task.id.label("task_id"),
        Task.note_path.label("task_path"),
        *group_values,
    ]
    if query.group_limit is not None and group_values:
        rank = func.row_number().over(
            partition_by=[g.element for g in group_values], order_by=order
        )
        columns.append(rank.label("rank_in_group"))
    where = compiler.where(query.filters)
    if query.limit is not None and group_values:
        # The plugin keeps the first N tasks in sort order, then groups those.
        kept = select(Task.id).where(where).order_by(*sorts).limit(query.limit)
        where = and_(where, Task.id.in_(kept.scalar_subquery()))
    base = select(*columns).select_from(from_).where(where)
    if query.group_limit is not None and group_values:
        inner = base.subquery()
        return select(inner).where(inner.c.rank_in_group <= query.group_limit)
    return base.order_by(*order)


def _sort_order(compiler: _Compiler, query: TaskQuery) -> list[Any]:
    """ORDER BY terms of the query's sorts, the plugin's defaults after them."""
    set_dates = _set_dates(query.filters)
    terms: list[Any] = []
    for sort in query.all_sorts():
        terms.extend(_sort_terms(compiler, sort, set_dates))
    terms.extend([Task.note_path, Task.line])  # a stable order, so pages never overlap
    return terms


def _in_order(compiler: _Compiler, query: TaskQuery, base: Select[Any]) -> Select[Any]:
    """`base` in the order pages show it: with `limit groups N`, the kept tasks of each group
    after the group's order (`_ranked` leaves them unordered)."""
    if query.group_limit is None or not query.groups:
        return base
    inner = base.subquery()
    terms = [_group_term(compiler, g, inner.c[f"g{i}"]) for i, g in enumerate(query.groups)]
    return select(inner).order_by(*terms, inner.c.rank_in_group)


def _group_term(compiler: _Compiler, group: Group, value: Any) -> Any:
    """ORDER BY term for a group's value; by code point on PostgreSQL too, not by the locale,
    as SQLite and `_group_counts` order groups."""
    if compiler.postgres and group.key != "priority":
        value = value.collate("C")
    return value.desc() if group.reverse else value


def _page_rows(
    conn: Connection,
    compiler: _Compiler,
    query: TaskQuery,
    base: Select[Any],
    offset: int,
    wanted: int,
) -> list[FoundTask]:
    if wanted == 0:
        return []
    chosen = _in_order(compiler, query, base).offset(offset).limit(wanted).subquery()
    names = [f"g{i}" for i in range(len(query.groups))]
    # The page's ids in order first, then their rows by primary key: joining the page back to
    # `tasks` lets the planner scan the table.
    picked = conn.execute(select(chosen.c.task_id, *[chosen.c[n] for n in names])).all()
    rows = conn.execute(select(*_SHOWN).where(Task.id.in_([p[0] for p in picked]))).all()
    by_id = {row._mapping["id"]: row._mapping for row in rows}
    return [
        _found(
            by_id[p[0]], tuple(_group_name(g, v) for g, v in zip(query.groups, p[1:], strict=True))
        )
        for p in picked
    ]


# What an answer shows of a task: not its other fields, dependencies and warnings, whose JSON
# would be decoded for nothing.
_SHOWN = (
    Task.id,
    Task.note_path,
    Task.line,
    Task.status_char,
    Task.status_type,
    Task.description,
    Task.raw,
    Task.tags,
    Task.due,
    Task.scheduled,
    Task.start,
    Task.created,
    Task.done,
    Task.cancelled,
    Task.recurrence,
    Task.priority,
    Task.heading,
)


def _found(task: Mapping[Any, Any], group: tuple[str, ...]) -> FoundTask:
    dates = {
        name: value
        for name in ("due", "scheduled", "start", "created", "done", "cancelled")
        if (value := task[name]) is not None
    }
    return FoundTask(
        path=task["note_path"],
        line=task["line"],
        status_char=task["status_char"],
        status_type=task["status_type"],
        description=task["description"],
        raw=task["raw"],
        tags=list(task["tags"] or []),
        dates=dates,
        recurrence=task["recurrence"],
        priority=PRIORITY_NAMES[task["priority"]],
        heading=task["heading"],
        group=group,
    )


def _group_name(group: Group, value: Any) -> str:
    if group.key == "priority":
        return f"Priority {int(value) + 1}: {PRIORITY_NAMES[int(value)]}"
    return str(value)


# Groups named after the task's path: counted per path by the database and folded into their
# names here, which spares it a function call per matching task (most of the counting's time).
_FROM_PATH: dict[str, Callable[[str], str]] = {
    "filename": lambda path: path_name(path) or NO_GROUP,
    "folder": lambda path: path_folder(path) or "/",
}


def _group_counts(
    conn: Connection, query: TaskQuery, base: Select[Any]
) -> tuple[list[TaskGroup], dict[str, set[str]]]:
    """The groups in order with their counts, and when the first level is named after the
    path, the notes in each of its groups."""
    inner = base.order_by(None).subquery()
    levels = list(enumerate(query.groups))
    keys = [inner.c.task_path if g.key in _FROM_PATH else inner.c[f"g{i}"] for i, g in levels]
    folds = [(i, _FROM_PATH.get(g.key)) for i, g in levels]
    counts: dict[tuple[Any, ...], int] = {}
    paths: dict[str, set[str]] = {}
    by_path = query.groups[0].key in _FROM_PATH
    # Fetched whole: iterating the result fetches row by row, a third of the time for
    # thousands of groups (a backlog grouped by file).
    for row in conn.execute(select(*keys, func.count()).group_by(*keys)).all():
        key = tuple([row[i] if fold is None else fold(row[i]) for i, fold in folds])
        counts[key] = counts.get(key, 0) + row[-1]
        if by_path:
            paths.setdefault(key[0], set()).add(row[0])
    ordered = list(counts.items())
    # Level by level from the last, each sort stable: the order the page's ORDER BY gives.
    for i, group in reversed(levels):
        ordered.sort(key=lambda item: item[0][i], reverse=group.reverse)
    if all(g.key != "priority" for g in query.groups):  # every other group value is its name
        return [TaskGroup(key, count) for key, count in ordered], paths
    named = [
        TaskGroup(tuple([_group_name(g, key[i]) for i, g in levels]), count)
        for key, count in ordered
    ]
    return named, paths
