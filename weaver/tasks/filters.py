"""The task filters the MCP tool and the command line take as separate arguments, made into
one `TaskQuery` (ANDed with a query in the plugin's language when one is given too).

Date arguments take the plugin's own words after the field (`due="before tomorrow"`,
`done="this week"`), so one argument covers before, after, on and ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from weaver.errors import TaskQueryError
from weaver.markdown.tasks import StatusType
from weaver.tasks.dates import DateRange
from weaver.tasks.query import (
    DateMatches,
    DatePresence,
    DoneIs,
    Filter,
    StatusCharIs,
    StatusTypeIs,
    TagMatches,
    TaskQuery,
    TextMatches,
)
from weaver.tasks.query_language import STATUS_TYPES, parse_filter, parse_task_query

__all__ = ["TaskFilters", "build_task_query"]


@dataclass(frozen=True)
class TaskFilters:
    """Each set field narrows the answer; `status` is a status type (TODO, DONE, ...), a
    checkbox character (`x`, `/`), or `open`/`done` as the plugin's `not done`/`done`."""

    status: str | None = None
    due: str | None = None
    scheduled: str | None = None
    start: str | None = None
    done: str | None = None
    overdue: bool = False
    no_due_date: bool = False
    priority: str | None = None
    tag: str | None = None
    path: str | None = None
    folder: str | None = None
    heading: str | None = None
    text: str | None = None
    sort: Sequence[str] = ()
    group_by: Sequence[str] = ()


def build_task_query(filters: TaskFilters, query: str | None, today: date) -> TaskQuery:
    """One query: the language's (if any) ANDed with the arguments'. Errors name the argument
    as a line (`due before someday`), as they would in a tasks block."""
    built = parse_task_query(query, today) if query else TaskQuery()
    lines = [
        *(f"sort by {sort}" for sort in filters.sort),
        *(f"group by {key}" for key in filters.group_by),
    ]
    from_arguments = parse_task_query("\n".join(lines), today) if lines else TaskQuery()
    return built.and_with(from_arguments).and_with(
        TaskQuery(filters=tuple(_filters(filters, today)))
    )


def _filters(filters: TaskFilters, today: date) -> list[Filter]:
    found: list[Filter] = []
    if filters.status:
        found.append(_status(filters.status))
    words = [("due", filters.due), ("scheduled", filters.scheduled)]
    words += [("starts", filters.start), ("done", filters.done)]
    found += [parse_filter(f"{word} {value}", today) for word, value in words if value]
    if filters.overdue:
        yesterday = today - timedelta(days=1)
        found += [DoneIs(False), DateMatches("due", "in or before", DateRange(date.min, yesterday))]
    if filters.no_due_date:
        found.append(DatePresence("due", present=False))
    if filters.priority:
        found.append(parse_filter(f"priority is {filters.priority}", today))
    if filters.tag:
        found.append(TagMatches(filters.tag if filters.tag.startswith("#") else f"#{filters.tag}"))
    texts = [("path", filters.path), ("folder", filters.folder), ("heading", filters.heading)]
    texts += [("description", filters.text)]
    found += [TextMatches(field, value) for field, value in texts if value]  # type: ignore[arg-type]
    return found


def _status(status: str) -> Filter:
    if status.lower() in ("open", "not done", "done"):
        return DoneIs(status.lower() == "done")
    if status.upper() in STATUS_TYPES:
        wanted: StatusType = status.upper()  # type: ignore[assignment]
        return StatusTypeIs((wanted,))
    if len(status) == 1:
        return StatusCharIs((status,))
    raise TaskQueryError(1, f"status {status}", "not a status type, open/done or one character")
