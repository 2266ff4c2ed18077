"""Tasks as the Obsidian Tasks plugin reads them: the types a parsed task line becomes.

A task is a list item with a checkbox (`- [ ] text`, `1. [x] text`, also inside a quote). Its
fields come in the plugin's two formats, emoji (`📅 2026-12-01`, `⏫`, `🔁 every week`) and
Dataview (`[due:: 2026-12-01]`, `[priority:: high]`); both end up in the same `ParsedTask`.

Status *types* (todo, done, in progress, ...) are not decided here: they depend on the vault's
Tasks plugin settings, which the cache applies when it writes a task (`status_char` is what the
line says). That keeps parsing pure and a settings change a matter of re-labelling rows.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["PRIORITY_NAMES", "ParsedTask", "StatusType", "TaskDates"]

# The Tasks plugin's status types; NON_TASK marks a checkbox the settings say is not a task.
StatusType = Literal["TODO", "DONE", "IN_PROGRESS", "ON_HOLD", "CANCELLED", "NON_TASK"]

# The plugin's priority order, which `sort by priority` follows: 0 is the most urgent.
PRIORITY_NAMES = ("highest", "high", "medium", "none", "low", "lowest")


class TaskDates(NamedTuple):
    """The task's dates as ISO `YYYY-MM-DD` strings, None when absent or malformed (a malformed
    one is kept as text in `ParsedTask.fields` and named in `ParsedTask.warnings`)."""

    due: str | None = None
    scheduled: str | None = None
    start: str | None = None
    created: str | None = None
    done: str | None = None
    cancelled: str | None = None


class ParsedTask(NamedTuple):
    """One task line. A named tuple, as `ParsedLink`: parsed notes cross a process boundary."""

    line: int  # 1-based line in the file
    parent_line: int | None  # the line of the task this one is nested under, if any
    heading: str | None  # the headings it sits under, outermost first, joined with " > "
    block_id: str | None  # `^id` at the end of the line, without the caret
    status_char: str  # the character between the brackets
    description: str  # the text without the checkbox, fields, tags' markup kept, block id
    raw: str  # the whole line as written in the file, without its line break
    tags: tuple[str, ...]  # inline tags on the line, with their '#'
    dates: TaskDates
    recurrence: str | None  # as written: "every week when done"
    priority: int  # an index into PRIORITY_NAMES; 3 ("none") when the line sets none
    task_id: str | None  # 🆔 / [id:: ...]
    depends_on: tuple[str, ...]  # ⛔ / [dependsOn:: ...], ids of other tasks
    fields: tuple[tuple[str, str], ...]  # every other Dataview field on the line, as written
    warnings: tuple[str, ...]  # what could not be read, e.g. "due date '2026-13-01' is not a date"
