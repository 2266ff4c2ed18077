"""A Tasks query as data: a filter tree, sorts, groups and limits.

`weaver.tasks.query_language` reads the plugin's text into a `TaskQuery`, the MCP tool's
structured arguments build one directly, and `weaver.cache.task_queries` runs it as SQL. Dates
are already resolved against a `today` here, so running a query needs no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from weaver.markdown.tasks import StatusType
from weaver.tasks.dates import DateRange

__all__ = [
    "DEFAULT_SORTS",
    "DONE_TYPES",
    "AllOf",
    "AnyOf",
    "DateMatches",
    "DatePresence",
    "DoneIs",
    "Filter",
    "Group",
    "Not",
    "PriorityIs",
    "Recurring",
    "Sort",
    "StatusCharIs",
    "StatusTypeIs",
    "TagMatches",
    "TagPresence",
    "TaskQuery",
    "TextMatches",
]

DateField = Literal["due", "scheduled", "start", "created", "done", "cancelled", "happens"]
DateRelation = Literal["before", "after", "in", "in or before", "in or after"]
TextField = Literal["path", "folder", "filename", "heading", "description", "status.name"]
SortKey = Literal[
    "status",
    "status.type",
    "urgency",
    "due",
    "scheduled",
    "start",
    "created",
    "done",
    "cancelled",
    "happens",
    "priority",
    "path",
    "filename",
    "heading",
    "description",
    "line",
]
GroupKey = Literal[
    "due",
    "scheduled",
    "start",
    "created",
    "done",
    "cancelled",
    "happens",
    "folder",
    "path",
    "filename",
    "heading",
    "priority",
    "status",
    "status.type",
    "tags",
]

# `done` is true of these types, `not done` of the others (TODO, IN_PROGRESS, ON_HOLD).
DONE_TYPES: tuple[StatusType, ...] = ("DONE", "CANCELLED", "NON_TASK")


@dataclass(frozen=True)
class DoneIs:
    done: bool


@dataclass(frozen=True)
class StatusTypeIs:
    types: tuple[StatusType, ...]
    negate: bool = False


@dataclass(frozen=True)
class StatusCharIs:
    """The character between the brackets, whatever type the settings give it."""

    chars: tuple[str, ...]


@dataclass(frozen=True)
class DateMatches:
    """`due before 2026-05-01`; a task without that date never matches."""

    field: DateField
    relation: DateRelation
    dates: DateRange


@dataclass(frozen=True)
class DatePresence:
    field: DateField
    present: bool


@dataclass(frozen=True)
class Recurring:
    recurring: bool


@dataclass(frozen=True)
class PriorityIs:
    """`priority is above medium`: above means more urgent, a lower index of PRIORITY_NAMES."""

    relation: Literal["is", "above", "below", "not"]
    priority: int


@dataclass(frozen=True)
class TextMatches:
    """`includes` ignores case; a regex follows its own flags (JavaScript's `i` only)."""

    field: TextField
    pattern: str
    regex: bool = False
    ignore_case: bool = True
    negate: bool = False


@dataclass(frozen=True)
class TagMatches:
    """True when one of the task's tags contains `pattern` (or matches it as a regex)."""

    pattern: str
    regex: bool = False
    ignore_case: bool = True
    negate: bool = False


@dataclass(frozen=True)
class TagPresence:
    present: bool


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    part: Filter


Filter = (
    DoneIs
    | StatusTypeIs
    | StatusCharIs
    | DateMatches
    | DatePresence
    | Recurring
    | PriorityIs
    | TextMatches
    | TagMatches
    | TagPresence
    | AllOf
    | AnyOf
    | Not
)


@dataclass(frozen=True)
class Sort:
    key: SortKey
    reverse: bool = False


@dataclass(frozen=True)
class Group:
    key: GroupKey
    reverse: bool = False


# What the plugin appends to every query's own sorts (docs/Queries/Sorting.md).
DEFAULT_SORTS = (
    Sort("status.type"),
    Sort("urgency"),
    Sort("due"),
    Sort("priority"),
    Sort("path"),
)


@dataclass(frozen=True)
class TaskQuery:
    """`filters` all hold (a query's lines are ANDed); `sorts` come before `DEFAULT_SORTS`;
    `layout` keeps `show`/`hide` lines, which change how the plugin draws, not what matches."""

    filters: tuple[Filter, ...] = ()
    sorts: tuple[Sort, ...] = ()
    groups: tuple[Group, ...] = ()
    limit: int | None = None
    group_limit: int | None = None
    layout: tuple[str, ...] = field(default=())
    explain: bool = False

    def all_sorts(self) -> tuple[Sort, ...]:
        return self.sorts + DEFAULT_SORTS

    def and_with(self, other: TaskQuery) -> TaskQuery:
        """Both queries' filters, sorts and groups; the smaller of their limits."""
        limits = [limit for limit in (self.limit, other.limit) if limit is not None]
        group_limits = [n for n in (self.group_limit, other.group_limit) if n is not None]
        return replace(
            self,
            filters=self.filters + other.filters,
            sorts=self.sorts + other.sorts,
            groups=self.groups + other.groups,
            limit=min(limits) if limits else None,
            group_limit=min(group_limits) if group_limits else None,
            layout=self.layout + other.layout,
            explain=self.explain or other.explain,
        )
