"""`weaver task done|cancel|reopen|toggle|set PATH LINE|^BLOCK`: change one task line as the
Tasks plugin does, kept apart from `weaver.cli` (which registers them) as a thin edge over
`weaver.edits.task_lines`, the same core as the MCP tool update_task."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from weaver.cli.exits import add_command
from weaver.cli.tag_commands import fresh_app

if TYPE_CHECKING:  # imported when a command runs, not to build the parser
    from weaver.config import Settings
    from weaver.edits.task_lines import Action, TaskTarget, TaskUpdate, UpdatedTask
    from weaver.tasks.line_changes import DateName

# The command's words for the actions of `weaver.edits.task_lines`.
ACTIONS: dict[str, Action] = {
    "done": "complete",
    "cancel": "cancel",
    "reopen": "reopen",
    "toggle": "toggle",
    "set": "set",
}
SUMMARIES = {
    "done": "check a task, add its done date and write a recurring task's next occurrence",
    "cancel": "mark a task cancelled, with its cancelled date",
    "reopen": "uncheck a task, dropping its done or cancelled date",
    "toggle": "move a task to its status's next one in the vault's Tasks settings",
    "set": "set a task's due, scheduled or start date, or its priority",
}


def add_task_edit_commands(commands: Any) -> None:
    """`weaver task ...`, registered on `weaver.cli.build_parser`'s subparsers."""
    task_parser = add_command(
        commands,
        "task",
        "complete, cancel, reopen or reschedule a task line",
        "Changes one task (a `- [ ]` line) as the Obsidian Tasks plugin would, in the line's\n"
        "own format, as one journalled edit (`weaver undo PATH` takes it back). Name the task\n"
        "by its line number or its block id (^id); --expect refuses the change when the line\n"
        "no longer reads so.",
    )
    sub = task_parser.add_subparsers(
        title="task commands", required=True, metavar="ACTION", help=", ".join(ACTIONS)
    )
    for name, summary in SUMMARIES.items():
        command = add_command(sub, name, summary, summary[0].upper() + summary[1:] + ".")
        command.add_argument("path", help="the note, relative to the vault")
        command.add_argument("task", help="the task's line number, or its block id (^id)")
        command.add_argument("--expect", help="the line as you read it: refused if it differs")
        command.add_argument("--json", action="store_true", help="print the result as JSON")
        if name == "set":
            for date_name in ("due", "scheduled", "start"):
                command.add_argument(
                    f"--{date_name}", help=f"the {date_name} date, YYYY-MM-DD ('' removes it)"
                )
            command.add_argument(
                "--priority", help="highest, high, medium, low, lowest, or none (removes it)"
            )
        else:
            command.add_argument(
                "--date", type=dt.date.fromisoformat, help="the done date (default today)"
            )
        command.set_defaults(command=cmd_task, action_word=name)


def cmd_task(args: argparse.Namespace, settings: Settings) -> int:
    from weaver.edits import task_lines
    from weaver.edits.interrupted import recover_edits
    from weaver.runtime.cache_sync import sync_cache

    with fresh_app(settings) as (app, holds):

        def sync(expected: Mapping[str, str | None]) -> bool:
            return sync_cache(app, expected, holds_writer=holds)

        if holds:  # else the daemon or server holding the cache finished them at its start
            recover_edits(app, sync)
        result = task_lines.update_task(
            app, args.path, _target(args), _update(args), expected_hash=None, sync=sync
        )
    change = result.change
    if args.json:
        print(json.dumps(_json(result)))
        return 0
    print(f"{result.patched.path}:{result.line}: {change.old}  ->  {change.new}")
    if change.inserted is not None:
        print(f"{result.patched.path}:{result.inserted_line}: {change.inserted}  (next occurrence)")
    return 0


def _target(args: argparse.Namespace) -> TaskTarget:
    from weaver.edits.steps import NoteEditError
    from weaver.edits.task_lines import TaskTarget

    task: str = args.task
    if task.startswith("^"):
        return TaskTarget(None, args.expect, task)
    if not task.isdigit():
        raise NoteEditError(f"{task!r} is neither a line number nor a block id (^id)")
    return TaskTarget(int(task), args.expect, None)


def _update(args: argparse.Namespace) -> TaskUpdate:
    from weaver.edits.task_lines import TaskUpdate

    action = ACTIONS[args.action_word]
    if action != "set":
        return TaskUpdate(action, args.date or dt.date.today())
    given: dict[DateName, str | None] = {
        "due": args.due,
        "scheduled": args.scheduled,
        "start": args.start,
    }
    dates = {name: value or None for name, value in given.items() if value is not None}
    return TaskUpdate(action, dt.date.today(), dates, args.priority)


def _json(result: UpdatedTask) -> dict[str, Any]:
    change = result.change
    return {
        "path": result.patched.path,
        "line": result.line,
        "before": change.old,
        "after": change.new,
        "inserted": change.inserted,
        "insertedLine": result.inserted_line,
        "contentHash": result.patched.content_hash,
    }
