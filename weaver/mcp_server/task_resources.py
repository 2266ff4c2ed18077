"""`weaver://tasks/today`: the open tasks overdue, due today, scheduled today, and those in
progress, in sections, each cut to what fits and saying which `query_tasks` call gives the rest.

Its subscribers hear `notifications/resources/updated` when what the resource reads changed. A
batch's events name the notes changed, not whether their task lines did (the rows of before are
gone when the event arrives), so after a batch the resource is read again and compared with
what was read last: a few indexed queries, run only while someone is subscribed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime, time, timedelta
from typing import Any

from mcp_types import Resource

from weaver.cache import read
from weaver.cache.task_agenda import TaskSection, read_sections, today_queries
from weaver.cache.task_queries import FoundTask
from weaver.mcp_server.sizing import TEXT_TOKEN_BUDGET, estimate_tokens
from weaver.runtime.state import ServerState

TODAY_URI = "weaver://tasks/today"
SECTION_TASKS = 25
DESCRIPTION_CHARS = 300

TODAY_RESOURCE = Resource(
    uri=TODAY_URI,
    name="tasks-today",
    title="Tasks for today",
    description="Open tasks overdue, due today, scheduled today, and in progress",
    mime_type="application/json",
)


def read_today(state: ServerState, today: date | None = None) -> str:
    """The resource's JSON text for `today` (default: the machine's date)."""
    day = today or date.today()
    with read.read_snapshot(state.app.db) as conn:
        sections = read_sections(conn, today_queries(), day, SECTION_TASKS)
    body = {"today": day.isoformat(), "sections": [_section(s) for s in sections]}
    _fit(body)
    return json.dumps(body, ensure_ascii=False)


def seconds_until_tomorrow() -> float:
    """From now to just past the machine's next midnight, when `read_today` reads a new day."""
    now = datetime.now()
    midnight = datetime.combine(now.date() + timedelta(days=1), time.min)
    return (midnight - now).total_seconds() + 1.0


def fingerprint(state: ServerState) -> str:
    """What subscribers are told changed: a digest of the resource as it reads now."""
    return hashlib.sha256(read_today(state).encode()).hexdigest()


def _section(section: TaskSection) -> dict[str, Any]:
    page = section.page
    return {
        "title": section.title,
        "total": page.total,
        "tasks": [_task(t) for t in page.items],
        "query": section.query,
        "more": _more(page.total, len(page.items), section.query),
    }


def _task(task: FoundTask) -> dict[str, Any]:
    text = task.description
    short = text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"
    return {
        "path": task.path,
        "line": task.line,
        "status": task.status_char,
        "statusType": task.status_type,
        "description": short,
        "dates": task.dates,
        "priority": task.priority,
        "tags": task.tags,
    }


def _more(total: int, shown: int, query: str) -> str | None:
    if shown >= total:
        return None
    return (
        f"{total - shown} more: call query_tasks (tasks toolset) with "
        f"query {json.dumps(query)} and offset {shown}"
    )


def _fit(body: dict[str, Any]) -> None:
    """Drop tasks from the end of the longest section until the text fits the budget, each
    cut section saying how many more there are."""
    sections: list[dict[str, Any]] = body["sections"]
    while estimate_tokens(json.dumps(body, ensure_ascii=False)) > TEXT_TOKEN_BUDGET:
        longest = max(sections, key=lambda s: len(s["tasks"]))
        if not longest["tasks"]:
            return
        longest["tasks"].pop()
        longest["more"] = _more(longest["total"], len(longest["tasks"]), longest["query"])
