"""Result models of the task tools (their `outputSchema`)."""

from __future__ import annotations

from pydantic import Field

from weaver.mcp_server.schemas import WireModel


class TaskInfo(WireModel):
    path: str
    line: int = Field(description="1-based line of the task in the note")
    status: str = Field(description="The character between the brackets: ' ', 'x', '/', ...")
    status_type: str = Field(description="TODO, DONE, IN_PROGRESS, ON_HOLD, CANCELLED, NON_TASK")
    description: str
    text: str = Field(description="The whole line, as update_task's expectedText wants it")
    dates: dict[str, str] = Field(
        description="The dates the task sets (due, scheduled, start, created, done, cancelled)"
    )
    priority: str = Field(description="highest, high, medium, none, low or lowest")
    recurrence: str | None
    tags: list[str]
    heading: str | None = Field(description="The headings it sits under, joined with ' > '")
    group: list[str] = Field(description="Its group at each groupBy level; empty when ungrouped")


class TaskGroupInfo(WireModel):
    names: list[str]
    count: int = Field(description="Tasks in the group over all pages")


class QueryTasksData(WireModel):
    tasks: list[TaskInfo]
    total: int = Field(description="Tasks matching, over all pages (capped by a `limit N` line)")
    limit: int
    offset: int
    has_more: bool
    groups: list[TaskGroupInfo] = Field(
        description="The groups in order with their counts: every one, or when there are more "
        "than 100, the 100 from the page's first task's group on"
    )
    groups_total: int = Field(description="Groups over all pages")
    layout: list[str] = Field(description="The query's show/hide lines, which change no match")
    hint: str = Field(description="How to change a task, and how to get the next page")


class TasksBlockData(QueryTasksData):
    block_line: int = Field(description="1-based line of the block's opening fence")
    blocks: int = Field(description="Tasks blocks in the note")
