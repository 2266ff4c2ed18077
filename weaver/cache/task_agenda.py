"""The task lists people look at first: what is overdue, due or scheduled today, in progress,
and the days ahead. Each section is a query in the Tasks plugin's own language, so that the
resource, the agenda prompt, the dashboard and the digest can all say which `query_tasks` call
gives the rest of a section they cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from sqlalchemy import Connection

from weaver.cache.task_queries import FoundTask, run_task_query
from weaver.paging import Page
from weaver.tasks.query_language import parse_task_query

__all__ = [
    "SectionQuery",
    "TaskSection",
    "agenda_queries",
    "digest_queries",
    "read_sections",
    "today_queries",
]


@dataclass(frozen=True)
class SectionQuery:
    title: str
    query: str  # in the plugin's language


@dataclass(frozen=True)
class TaskSection:
    title: str
    query: str
    page: Page[FoundTask]


def today_queries() -> tuple[SectionQuery, ...]:
    return (
        SectionQuery("Overdue", "not done\ndue before today\nsort by due"),
        SectionQuery("Due today", "not done\ndue today"),
        SectionQuery("Scheduled today", "not done\nscheduled today"),
        SectionQuery("In progress", "status.type is IN_PROGRESS"),
    )


def agenda_queries(today: date, days: int) -> tuple[SectionQuery, ...]:
    """Overdue, then due and scheduled within `days` days from `today` (today included); the
    range is written as dates so that the query still means the same days tomorrow."""
    span = f"{today.isoformat()} {(today + timedelta(days=max(days, 1) - 1)).isoformat()}"
    return (
        SectionQuery("Overdue", f"not done\ndue before {today.isoformat()}\nsort by due"),
        SectionQuery("Due", f"not done\ndue in {span}\nsort by due"),
        SectionQuery("Scheduled", f"not done\nscheduled in {span}\nsort by scheduled"),
    )


def digest_queries(day: date) -> tuple[SectionQuery, ...]:
    """What was open and late, and open and due, on `day` (by what the tasks say now)."""
    return (
        SectionQuery("Overdue", f"not done\ndue before {day.isoformat()}\nsort by due"),
        SectionQuery("Due today", f"not done\ndue on {day.isoformat()}"),
    )


def read_sections(
    conn: Connection, queries: tuple[SectionQuery, ...], today: date, limit: int
) -> list[TaskSection]:
    """The first `limit` tasks of each section, with each section's true total."""
    sections = []
    for section in queries:
        query = parse_task_query(section.query, today)
        found = run_task_query(conn, query, today, 0, limit)
        sections.append(TaskSection(section.title, section.query, found.page))
    return sections
