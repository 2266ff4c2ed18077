"""The task tools: query_tasks (structured arguments and/or the Tasks plugin's query language)
and run_tasks_block (a note's ```tasks block, answered as the plugin would show it). Thin edges
over `weaver.tasks` (the query) and `weaver.cache.task_queries` (running it)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import Field

from weaver.cache import read
from weaver.cache.task_queries import FoundTask, TaskGroup, TaskPage, run_task_query
from weaver.mcp_server.arguments import Filter, Limit, NotePath, Offset
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.content import decode
from weaver.mcp_server.envelope import ArgumentError
from weaver.mcp_server.sizing import TEXT_TOKEN_BUDGET, estimate_tokens
from weaver.mcp_server.task_schemas import QueryTasksData, TaskGroupInfo, TaskInfo, TasksBlockData
from weaver.runtime.state import ServerState
from weaver.tasks.blocks import find_tasks_blocks
from weaver.tasks.filters import TaskFilters, build_task_query
from weaver.tasks.query import TaskQuery
from weaver.tasks.query_language import parse_task_query

QUERY_TASKS = """Find tasks (checkbox items) across the vault, as the Obsidian Tasks plugin
does: by status, dates, priority, tags, place or text, sorted, grouped and paged.

Structured arguments combine with AND: `status` (a type: TODO, DONE, IN_PROGRESS, ON_HOLD,
CANCELLED, NON_TASK; a checkbox character such as 'x' or '/'; or 'open'/'done'); `due`,
`scheduled`, `start`, `done` take the plugin's words after the field ('before tomorrow', 'after
2026-05-01', 'on today', 'in this week', '2026-05-01 2026-05-31', 'next month'); `overdue` (open
and due before today), `noDueDate`, `priority` ('high', 'above medium', 'not none'), `tag`,
`path`, `folder`, `heading`, `text` (each a case-insensitive substring). `query` takes a query in
the plugin's language, one instruction per line (`not done`, `due before tomorrow`, `(a) OR
(b)`, `sort by due`, `group by folder`, `limit 20`); the structured arguments then also apply.
A line Weaver does not support is an error naming it. Sorting follows `sort` (e.g. ["due",
"priority reverse"]) then the plugin's default (status type, urgency, due, priority, path);
`groupBy` (due, folder, path, filename, heading, priority, status, status.type, tags) orders by
group and counts every group. Returns `tasks` (path, line, status, statusType, description, text,
dates, priority, recurrence, tags, heading, group), `total` over all pages, `groups`, `hasMore`
and a `hint`. Dates are ISO; relative words are read against today. Examples:
{"overdue": true, "sort": ["due"]}; {"query": "not done\\ndue before next week\\ngroup by folder"};
{"tag": "#work", "status": "open", "due": "in this week"}."""

RUN_TASKS_BLOCK = """Evaluate the n-th ```tasks block of a note, as the Tasks plugin would
show it there. Use it to see what a dashboard or project note's task list holds.

`index` counts the note's tasks blocks from 0. A block without filters shows every task, done
ones included; its order is the block's `sort by` lines then the plugin's default (status type,
urgency, due, priority, path). Returns what query_tasks returns, plus `blockLine` (the block's
opening line) and `blocks` (how many the note holds); a line the block holds that Weaver does
not support is an error naming the line and its number. Example: {"path": "Home.md"}."""

DEFAULT_TASKS = 50
# Groups an answer lists at most: more than any overview needs (`_groups_shown`).
MAX_GROUPS = 100


@tool("Query tasks", QUERY_TASKS, toolset="tasks")
def query_tasks(
    state: ServerState,
    query: Annotated[
        Filter, Field(description="A query in the Tasks plugin's language, one line each")
    ] = None,
    status: Annotated[
        Filter, Field(description="Status type (TODO, DONE, ...), a checkbox char, open or done")
    ] = None,
    due: Annotated[Filter, Field(description="e.g. 'before tomorrow', 'in this week'")] = None,
    scheduled: Annotated[Filter, Field(description="As `due`, for the scheduled date")] = None,
    start: Annotated[Filter, Field(description="As `due`, for the start date")] = None,
    done: Annotated[Filter, Field(description="As `due`, for the done date")] = None,
    overdue: Annotated[bool, Field(description="Open and due before today")] = False,
    noDueDate: Annotated[bool, Field(description="Only tasks without a due date")] = False,
    priority: Annotated[Filter, Field(description="e.g. 'high', 'above medium'")] = None,
    tag: Annotated[Filter, Field(description="A tag on the task line, '#' optional")] = None,
    path: Annotated[Filter, Field(description="Substring of the note's path")] = None,
    folder: Annotated[Filter, Field(description="Substring of the note's folder")] = None,
    heading: Annotated[Filter, Field(description="Substring of the headings above it")] = None,
    text: Annotated[Filter, Field(description="Substring of the description")] = None,
    sort: Annotated[list[str] | None, Field(description="e.g. ['due', 'priority reverse']")] = None,
    groupBy: Annotated[list[str] | None, Field(description="e.g. ['folder']")] = None,
    limit: Limit = DEFAULT_TASKS,
    offset: Offset = 0,
) -> QueryTasksData:
    filters = TaskFilters(
        status=status,
        due=due,
        scheduled=scheduled,
        start=start,
        done=done,
        overdue=overdue,
        no_due_date=noDueDate,
        priority=priority,
        tag=tag,
        path=path,
        folder=folder,
        heading=heading,
        text=text,
        sort=sort or (),
        group_by=groupBy or (),
    )
    today = date.today()
    built = build_task_query(filters, query, today)
    with read.read_snapshot(state.app.db) as conn:
        found = run_task_query(conn, built, today, offset, limit)
    return QueryTasksData(**_answer(found, built, "query_tasks"))


@tool("Run a tasks block", RUN_TASKS_BLOCK, toolset="tasks", cache_hit=False)
def run_tasks_block(
    state: ServerState,
    path: NotePath,
    index: Annotated[int, Field(ge=0, description="Which tasks block, from 0")] = 0,
    limit: Limit = DEFAULT_TASKS,
    offset: Offset = 0,
) -> TasksBlockData:
    clean = state.app.vault.check_note_path(path)
    blocks = find_tasks_blocks(decode(clean, state.app.vault.read_note(clean)))
    if index >= len(blocks):
        raise ArgumentError("index", f"{clean} holds {len(blocks)} tasks block(s)")
    block = blocks[index]
    today = date.today()
    built = parse_task_query(block.query, today)
    with read.read_snapshot(state.app.db) as conn:
        found = run_task_query(conn, built, today, offset, limit)
    data = _answer(found, built, "run_tasks_block")
    return TasksBlockData(**data, block_line=block.line, blocks=len(blocks))


def _task_info(found: FoundTask) -> TaskInfo:
    return TaskInfo(
        path=found.path,
        line=found.line,
        status=found.status_char,
        status_type=found.status_type,
        description=found.description,
        text=found.raw,
        dates=found.dates,
        priority=found.priority,
        recurrence=found.recurrence,
        tags=found.tags,
        heading=found.heading,
        group=list(found.group),
    )


def _answer(found: TaskPage, query: TaskQuery, tool_name: str) -> dict[str, object]:
    page = found.page
    tasks = _within_budget([_task_info(t) for t in page.items])
    has_more = page.has_more or len(tasks) < len(page.items)
    groups = _groups_shown(found)
    hint = "To change a task: update_task with its path, line and text (as expectedText)."
    if len(groups) < len(found.groups):
        hint += (
            f" {len(found.groups):,} groups: those from this page's first task's group on are "
            "listed; later pages list the later ones."
        )
    if has_more:
        hint += f" More tasks: call {tool_name} again with offset {page.offset + len(tasks)}."
    return {
        "tasks": tasks,
        "total": page.total,
        "limit": page.limit or len(page.items),
        "offset": page.offset,
        "has_more": has_more,
        "groups": [TaskGroupInfo(names=list(g.names), count=g.count) for g in groups],
        "groups_total": len(found.groups),
        "layout": list(query.layout),
        "hint": hint,
    }


def _groups_shown(found: TaskPage) -> list[TaskGroup]:
    """Every group, or `MAX_GROUPS` of them from the group of the page's first task: grouped by
    file, a backlog has thousands of groups, which would crowd the tasks out of the answer."""
    if len(found.groups) <= MAX_GROUPS:
        return found.groups
    first = found.page.items[0].group if found.page.items else None
    start = next((i for i, g in enumerate(found.groups) if g.names == first), 0)
    return found.groups[start : start + MAX_GROUPS]


def _within_budget(tasks: list[TaskInfo]) -> list[TaskInfo]:
    """The page's first tasks whose text fits a context window's budget: a page of very long
    task lines is cut short (the answer then says to go on from the first one left out)."""
    used = 0
    for kept, task in enumerate(tasks):
        used += estimate_tokens(task.model_dump_json())
        if used > TEXT_TOKEN_BUDGET and kept > 0:
            return tasks[:kept]
    return tasks
