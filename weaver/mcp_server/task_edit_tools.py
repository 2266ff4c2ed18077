"""update_task: change one task line as the Tasks plugin does (toolset `tasks`). A thin edge
over `weaver.edits.task_lines`; not registered when the settings say `read_only = true`."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import Field

from weaver.edits import task_lines
from weaver.edits.steps import NoteEditError
from weaver.mcp_server.arguments import NotePath
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.edit_tools import ExpectedHash, clip
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.write_tools import cache_sync
from weaver.runtime.state import ServerState
from weaver.tasks.line_changes import DateName

UPDATE_TASK = """Complete, cancel, reopen or toggle a task line, or set its dates or priority,
as the Obsidian Tasks plugin does.

Change one task (a `- [ ]` line) as the Obsidian Tasks plugin would: `complete` checks it and
adds its done date (✅ or [completion:: ...], in the line's own format); a recurring task (🔁
every week ...) gets its next occurrence on a new line above, with its dates moved by the rule
(a task with 🏁 delete is then removed);
`cancel` adds the cancelled date; `reopen` unchecks it and drops those dates; `toggle` moves to
the status's next one in the vault's Tasks settings; `set` sets `due`, `scheduled`, `start`
(YYYY-MM-DD, "" removes) or `priority` (highest, high, medium, low, lowest, none). Name the task
by `line` with `expectedText`, the line exactly as you read it (a line that changed since is
refused, showing what is there now), or by `blockId`. `date` is the done or cancelled date
(default today). The answer shows the line before and after and any new occurrence; the edit
is journalled (list_edits, restore_edit). Example: {"path": "Projects/Home.md", "line": 12,
"expectedText": "- [ ] pay rent 🔁 every month 📅 2026-12-01", "action": "complete"}."""

DateArgument = Annotated[
    str | None, Field(description="YYYY-MM-DD for action 'set'; '' removes the date")
]


class TaskUpdateData(WireModel):
    path: str
    line: int = Field(description="1-based line of the changed task now (where it was if deleted)")
    before: str = Field(description="The task line before (long lines clipped with …)")
    after: str = Field(description="The task line now")
    inserted: str | None = Field(
        default=None, description="The next occurrence written for a recurring task"
    )
    inserted_line: int | None = Field(default=None, description="1-based line of `inserted`")
    deleted: bool = Field(
        default=False, description="The completed line was removed (its '🏁 delete' action)"
    )
    content_hash: str = Field(description="sha256 of the note now: the next expectedHash")
    changed: bool = Field(description="False when the line already read exactly so")
    cache_synced: bool


@tool(
    "Update a task",
    UPDATE_TASK,
    toolset="tasks",
    writes=True,
    destructive=True,
    idempotent=False,
)
def update_task(
    state: ServerState,
    path: NotePath,
    action: Annotated[
        Literal["complete", "cancel", "reopen", "toggle", "set"],
        Field(description="What to do to the task (see the tool's description)"),
    ],
    line: Annotated[int | None, Field(ge=1, description="1-based line of the task")] = None,
    expectedText: Annotated[
        str | None, Field(description="The task line exactly as read; required with `line`")
    ] = None,
    blockId: Annotated[str | None, Field(description="The task's block id, e.g. '^rent'")] = None,
    due: DateArgument = None,
    scheduled: DateArgument = None,
    start: DateArgument = None,
    priority: Annotated[
        Literal["highest", "high", "medium", "none", "low", "lowest"] | None,
        Field(description="For action 'set'; 'none' removes the priority"),
    ] = None,
    date: Annotated[
        dt.date | None, Field(description="The done or cancelled date; default today")
    ] = None,
    expectedHash: ExpectedHash = None,
) -> TaskUpdateData:
    if blockId is None and expectedText is None:
        # A line number alone may point at another task after any edit since the caller read.
        raise NoteEditError("give expectedText (the task line as you read it) with line")
    target = task_lines.TaskTarget(line, expectedText, blockId)
    given: dict[DateName, str | None] = {"due": due, "scheduled": scheduled, "start": start}
    # '' removes a date; None (the argument left out) leaves it as it is.
    dates = {name: value or None for name, value in given.items() if value is not None}
    update = task_lines.TaskUpdate(action, date or dt.date.today(), dates, priority)
    result = task_lines.update_task(
        state.app,
        path,
        target,
        update,
        expected_hash=expectedHash,
        sync=cache_sync(state),
    )
    return _data(result)


def _data(result: task_lines.UpdatedTask) -> TaskUpdateData:
    change, patched = result.change, result.patched
    return TaskUpdateData(
        path=patched.path,
        line=result.line,
        before=clip(change.old),
        after=clip(change.new),
        inserted=None if change.inserted is None else clip(change.inserted),
        inserted_line=result.inserted_line,
        deleted=change.deleted,
        content_hash=patched.content_hash,
        changed=patched.changed,
        cache_synced=patched.cache_synced,
    )
