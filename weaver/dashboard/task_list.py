"""The tasks page's data: the vault's open tasks in due-date order, grouped as a person plans
(overdue, today, each later day, no due date), filtered by a query in the Tasks plugin's
language. Run by `cache.task_queries`, as `query_tasks` runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from weaver.cache import read
from weaver.cache.task_queries import FoundTask, run_task_query
from weaver.errors import TaskQueryError
from weaver.paging import Page
from weaver.runtime.state import ServerState
from weaver.tasks.dates import named_day
from weaver.tasks.query import DoneIs, Sort, TaskQuery
from weaver.tasks.query_language import parse_task_query

TASKS_PER_PAGE = 100
# What the page always shows: open tasks, soonest due first (those without a date last).
OPEN_BY_DUE = TaskQuery(filters=(DoneIs(False),), sorts=(Sort("due"),))


@dataclass(frozen=True, slots=True)
class TaskDay:
    label: str
    overdue: bool
    tasks: list[FoundTask] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TaskList:
    query: str
    error: str | None  # the line of `query` that could not be read, and why
    page: Page[FoundTask]
    days: list[TaskDay]


def load_tasks(state: ServerState, text: str, offset: int, today: date | None = None) -> TaskList:
    day = today or date.today()
    try:
        query = OPEN_BY_DUE.and_with(parse_task_query(text, day)) if text.strip() else OPEN_BY_DUE
    except TaskQueryError as exc:
        return TaskList(text, str(exc), Page([], 0, 0, TASKS_PER_PAGE), [])
    with read.read_snapshot(state.app.db) as conn:
        found = run_task_query(conn, query, day, offset, TASKS_PER_PAGE)
    return TaskList(text, None, found.page, group_by_day(found.page.items, day))


def group_by_day(tasks: list[FoundTask], today: date) -> list[TaskDay]:
    """Consecutive tasks under one heading per due day; every overdue one under one."""
    days: list[TaskDay] = []
    for task in tasks:
        label, overdue = day_label(task.dates.get("due"), today)
        if not days or days[-1].label != label:
            days.append(TaskDay(label, overdue))
        days[-1].tasks.append(task)
    return days


def day_label(due: str | None, today: date) -> tuple[str, bool]:
    if due is None:
        return "No due date", False
    if due < today.isoformat():
        return "Overdue", True
    name = named_day(due)
    return (f"Today, {name}" if due == today.isoformat() else name), False
