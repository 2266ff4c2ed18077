"""Changing one task line of a note as the Tasks plugin does: complete, cancel, reopen, toggle,
or set its dates and priority (the text changes are `weaver.tasks.line_changes`).

The task is named by its line and the text the caller saw there, or by its block id; a line
that no longer reads as the caller saw it is refused with what it holds now, since a line
number alone may point at another task after any edit. The write is `patches.patch_note`'s:
the note's lock, `expectedHash`, the journal (so `restore_edit` undoes it), the cache update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from weaver.edits import patches
from weaver.edits.steps import CacheSync, NoteEditError, Notes
from weaver.errors import WeaverError
from weaver.markdown.parser import parse_note
from weaver.markdown.patch import TextEditError
from weaver.markdown.tasks import ParsedTask
from weaver.tasks.line_changes import (
    DateName,
    LineChange,
    WriteSettings,
    change_status,
    read_write_settings,
    set_fields,
)
from weaver.tasks.statuses import StatusRegistry, read_status_registry

__all__ = ["Action", "TaskTarget", "TaskUpdate", "UpdatedTask", "update_task"]

Action = Literal["complete", "cancel", "reopen", "toggle", "set"]


@dataclass(frozen=True, slots=True)
class TaskTarget:
    """Which task: `line` (1-based), or a block id; `expected_text`, the line as the caller saw
    it, guards against a line number that now points elsewhere (the MCP tool requires it)."""

    line: int | None = None
    expected_text: str | None = None
    block_id: str | None = None


@dataclass(frozen=True, slots=True)
class TaskUpdate:
    action: Action
    today: date  # the done or cancelled date written, and `when done`'s reference
    dates: dict[DateName, str | None] = field(default_factory=dict)  # for "set"; None removes
    priority: str | None = None  # for "set"


@dataclass(frozen=True, slots=True)
class UpdatedTask:
    patched: patches.Patched
    line: int  # where the changed task is now (one further down when its next one is above;
    # where it was, when `change.deleted` removed it)
    change: LineChange
    inserted_line: int | None  # where the next occurrence was written


def update_task(
    app: Notes,
    path: str,
    target: TaskTarget,
    update: TaskUpdate,
    *,
    expected_hash: str | None,
    sync: CacheSync,
) -> UpdatedTask:
    """Change the task `target` names in the note at `path`, as one journalled edit.

    Raises NoteEditError when the task is not there as described or the change cannot be made
    (already done, an unreadable recurrence rule, a bad date), and what `patch_note` raises.
    """
    _check_request(target, update)
    registry, _problem = read_status_registry(app.vault.root)
    settings = read_write_settings(app.vault.root)
    found: dict[str, Any] = {}

    def transform(text: str) -> tuple[str, int]:
        lines = text.split("\n")
        task = _find_task(path, text, target)
        try:
            change = _changed(task, update, registry, settings)
        except WeaverError as exc:
            raise TextEditError(f"line {task.line}: {exc}") from None
        lines[task.line - 1 : task.line] = change.lines
        found["task"], found["change"] = task, change
        return "\n".join(lines), int(change.new != change.old)

    arguments = {"line": target.line, "blockId": target.block_id, "action": update.action}
    patched = patches.patch_note(
        app,
        path,
        transform,
        expected_hash=expected_hash,
        sync=sync,
        operation="update_task",
        arguments=arguments,
    )
    return _updated(patched, found["task"], found["change"])


def _check_request(target: TaskTarget, update: TaskUpdate) -> None:
    setting = bool(update.dates) or update.priority is not None
    if update.action == "set" and not setting:
        raise NoteEditError("nothing to set: give due, scheduled, start or priority")
    if update.action != "set" and setting:
        raise NoteEditError(f"dates and priority go with action 'set', not {update.action!r}")
    if target.block_id is None and target.line is None:
        raise NoteEditError("name the task by its line or its block id")


def _find_task(path: str, text: str, target: TaskTarget) -> ParsedTask:
    """The task `target` names, among those the parser finds (never a checkbox in code)."""
    tasks = parse_note(path, text).tasks
    if target.block_id is not None:
        block = target.block_id.removeprefix("^").casefold()
        task = next((t for t in tasks if (t.block_id or "").casefold() == block), None)
        if task is None:
            raise TextEditError(f"no task has the block id ^{target.block_id.removeprefix('^')}")
    else:
        task = next((t for t in tasks if t.line == target.line), None)
        if task is None:
            raise TextEditError(f"line {target.line} is not a task: {_line_at(text, target)}")
    if target.expected_text is not None and task.raw != target.expected_text.rstrip("\r\n"):
        raise TextEditError(
            f"line {task.line} now reads {task.raw!r}, not {target.expected_text!r}; read the"
            " note again"
        )
    return task


def _line_at(text: str, target: TaskTarget) -> str:
    lines = text.split("\n")
    line = target.line or 0
    return repr(lines[line - 1]) if 1 <= line <= len(lines) else f"the note has {len(lines)} lines"


def _changed(
    task: ParsedTask, update: TaskUpdate, registry: StatusRegistry, settings: WriteSettings
) -> LineChange:
    match update.action:
        case "set":
            return set_fields(task, update.dates, update.priority)
        case "toggle":
            symbol = registry.get(task.status_char).next_symbol
        case "complete":
            symbol = _first_of(registry, "DONE", "x")
        case "cancel":
            symbol = _first_of(registry, "CANCELLED", "-")
        case "reopen":
            symbol = _first_of(registry, "TODO", " ")
    return change_status(task, symbol, registry, update.today, settings)


def _first_of(registry: StatusRegistry, status_type: str, default: str) -> str:
    return next((s.symbol for s in registry.statuses if s.type == status_type), default)


def _updated(patched: patches.Patched, task: ParsedTask, change: LineChange) -> UpdatedTask:
    lines = change.lines
    inserted = None if change.inserted is None else task.line + lines.index(change.inserted)
    line = task.line if change.deleted else task.line + lines.index(change.new)
    return UpdatedTask(patched, line, change, inserted)
