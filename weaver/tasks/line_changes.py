"""The text changes the Tasks plugin makes on a task line: a new status, with the dates it brings
or takes away, a date or priority set, and the next occurrence of a recurring task.

Each change edits the line in place and leaves the rest as the user wrote it (the plugin
rewrites the whole line in its own field order; we only touch the fields concerned). A field is
added in the line's own format: emoji (`✅ 2026-11-28`, one space before it) or Dataview
(`[completion:: 2026-11-28]`, two spaces before it, as the plugin writes them), before a
trailing block id. The fields are found through the parsed task (`ParsedTask`), so text in the
description that merely looks like a field is left alone.

When a status of type DONE replaces one that is not, the done date is added and, for a
recurring task, the next occurrence is written above the line (below with the plugin's
`recurrenceOnNextLine`): same indentation and description, the status the DONE status toggles to,
its dates moved by the rule (`recurrence.next_dates`), no done, cancelled, id or dependsOn field
and no block id (each would then name two tasks), a created date of today when the vault's
`setCreatedDate` asks for one. A task with the On Completion action `delete` (`🏁 delete`)
leaves only its next occurrence, if any: the completed line is removed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from weaver.errors import WeaverError
from weaver.markdown.tasks import CHECKBOX, PRIORITY_NAMES, ParsedTask
from weaver.tasks.recurrence import next_dates, parse_recurrence
from weaver.tasks.statuses import SETTINGS_FILE, StatusRegistry

__all__ = [
    "DateName",
    "LineChange",
    "TaskLineError",
    "WriteSettings",
    "change_status",
    "read_write_settings",
    "set_fields",
]

DateName = Literal["due", "scheduled", "start", "created", "done", "cancelled"]

_SIGNS: dict[str, str] = {
    "due": "📅📆🗓",
    "scheduled": "⏳⌛",
    "start": "🛫",
    "created": "➕",
    "done": "✅",
    "cancelled": "❌",
}
_KEYS = {name: name for name in _SIGNS} | {"done": "completion"}
_PRIORITY_SIGNS = ("🔺", "⏫", "🔼", "", "🔽", "⏬")  # by PRIORITY_NAMES index; none has none
_VS = "\ufe0f?"  # an emoji may carry a variation selector
_TASK_KEY = re.compile(
    r"[\[(][ \t]*(?:due|scheduled|start|created|completion|cancelled|priority|repeat|id"
    r"|dependsOn|onCompletion)[ \t]*::",
    re.IGNORECASE,
)
_IDS = r"[A-Za-z0-9_-]+(?:[ \t]*,[ \t]*[A-Za-z0-9_-]+)*"


class TaskLineError(WeaverError):
    """A task line cannot be changed as asked: not a task, or already in that state."""


@dataclass(frozen=True, slots=True)
class WriteSettings:
    """The Tasks plugin's settings (data.json) that decide what a change writes; defaults as
    the plugin's own."""

    set_done_date: bool = True
    set_cancelled_date: bool = True
    set_created_date: bool = False
    recurrence_on_next_line: bool = False
    remove_scheduled_date_on_recurrence: bool = False


@dataclass(frozen=True, slots=True)
class LineChange:
    """A task line's change: `old` became `new`; `inserted` is the next occurrence of a
    recurring task, written above `new` unless `inserted_below`."""

    old: str
    new: str
    inserted: str | None = None
    inserted_below: bool = False
    deleted: bool = False  # `🏁 delete`: the completed line is removed, `new` is not written

    @property
    def lines(self) -> tuple[str, ...]:
        """The lines that replace `old`, in file order."""
        kept = () if self.deleted else (self.new,)
        if self.inserted is None:
            return kept
        if self.inserted_below:
            return (*kept, self.inserted)
        return (self.inserted, *kept)


def read_write_settings(vault_root: Path) -> WriteSettings:
    """The vault's settings; the plugin's defaults when its data.json is missing or broken (the
    status registry reports a broken file, once)."""
    try:
        data = json.loads((vault_root / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return WriteSettings()
    return _write_settings(data) if isinstance(data, dict) else WriteSettings()


def _write_settings(data: dict[str, Any]) -> WriteSettings:
    def flag(key: str, default: bool) -> bool:
        value = data.get(key, default)
        return value if isinstance(value, bool) else default

    return WriteSettings(
        set_done_date=flag("setDoneDate", True),
        set_cancelled_date=flag("setCancelledDate", True),
        set_created_date=flag("setCreatedDate", False),
        recurrence_on_next_line=flag("recurrenceOnNextLine", False),
        remove_scheduled_date_on_recurrence=flag("removeScheduledDateOnRecurrence", False),
    )


def change_status(
    task: ParsedTask,
    symbol: str,
    registry: StatusRegistry,
    today: date,
    settings: WriteSettings = WriteSettings(),
) -> LineChange:
    """`task`'s line with status `symbol`, and the dates (and next occurrence) that brings.

    Raises TaskLineError when the task already has that status, RecurrenceError when it recurs
    by a rule that cannot be read.
    """
    if symbol == task.status_char:
        status = registry.get(symbol)
        raise TaskLineError(f"the task is already [{symbol}] ({status.name or status.type})")
    old_type, new_type = registry.type_of(task.status_char), registry.type_of(symbol)
    line = _with_status(task.raw, symbol)
    if old_type == "DONE" and new_type != "DONE":
        line = _without(line, task, "done")
    if old_type == "CANCELLED" and new_type != "CANCELLED":
        line = _without(line, task, "cancelled")
    stamp = today.isoformat()
    if new_type == "DONE" and old_type != "DONE":
        if settings.set_done_date and task.dates.done is None:
            line = _with_new_field(line, task, "done", stamp)
        following = _next_occurrence(task, registry, today, settings) if task.recurrence else None
        below, deleted = settings.recurrence_on_next_line, _deleted_on_completion(task)
        return LineChange(task.raw, line, following, below, deleted)
    cancelling = new_type == "CANCELLED" and old_type != "CANCELLED"
    if cancelling and settings.set_cancelled_date and task.dates.cancelled is None:
        line = _with_new_field(line, task, "cancelled", stamp)
    return LineChange(task.raw, line)


def _deleted_on_completion(task: ParsedTask) -> bool:
    """The plugin's On Completion action `delete` (`🏁 delete`, `[onCompletion:: delete]`)."""
    return any(
        key.casefold() == "oncompletion" and value.strip().casefold() == "delete"
        for key, value in task.fields
    )


def set_fields(
    task: ParsedTask,
    dates: dict[DateName, str | None],
    priority: str | None = None,
) -> LineChange:
    """`task`'s line with each date of `dates` set (None removes it) and, when given, the
    priority (a name of PRIORITY_NAMES; "none" removes it).

    Raises TaskLineError for a date that is not ISO `YYYY-MM-DD` or an unknown priority.
    """
    line = task.raw
    for name, value in dates.items():
        if value is not None:
            _check_date(name, value)
        line = _with_date(line, task, name, value)
    if priority is not None:
        line = _with_priority(line, task, priority)
    return LineChange(task.raw, line)


def _check_date(name: str, value: str) -> None:
    try:
        date.fromisoformat(value)
        valid = len(value) == 10
    except ValueError:
        valid = False
    if not valid:
        raise TaskLineError(f"{name} date {value!r} is not a date as YYYY-MM-DD")


def _next_occurrence(
    task: ParsedTask, registry: StatusRegistry, today: date, settings: WriteSettings
) -> str:
    rule = parse_recurrence(task.recurrence or "")
    # The parser keeps a malformed date as a plain field; the next dates would then be counted
    # from another one (the plugin drops the rule instead): the user should fix it first.
    for key, value in task.fields:
        if key.casefold() in ("due", "scheduled", "start"):
            raise TaskLineError(
                f"its {key.casefold()} date {value!r} is not a date: the next occurrence would"
                " be counted from the wrong date; correct it first"
            )
    moved = next_dates(
        rule, task.dates, today, remove_scheduled=settings.remove_scheduled_date_on_recurrence
    )
    created = today.isoformat() if settings.set_created_date else None
    line = task.raw
    line = _without(_without(line, task, "done"), task, "cancelled")
    line = _with_date(line, task, "created", created)
    moving: tuple[DateName, ...] = ("start", "scheduled", "due")
    for name in moving:
        line = _with_date(line, task, name, getattr(moved, name))
    line = _without_dependencies(line, task)
    if task.block_id is not None:
        line = _last_removed(line, rf"[ \t]+\^{re.escape(task.block_id)}(?=[ \t]*$)")
    return _with_status(line, _todo_after_done(registry))


def _todo_after_done(registry: StatusRegistry) -> str:
    """The status a new occurrence starts with: what the DONE status toggles to when that is a
    TODO or IN_PROGRESS status, else the first TODO status (the plugin's rule)."""
    done = next((s for s in registry.statuses if s.type == "DONE"), registry.get("x"))
    if registry.type_of(done.next_symbol) in ("TODO", "IN_PROGRESS"):
        return done.next_symbol
    return next((s.symbol for s in registry.statuses if s.type == "TODO"), " ")


def _with_status(line: str, symbol: str) -> str:
    checkbox = CHECKBOX.match(line)
    if checkbox is None:
        raise TaskLineError(f"{line!r} is not a task line")
    return line[: checkbox.start(1)] + symbol + line[checkbox.end(1) :]


def _with_date(line: str, task: ParsedTask, name: DateName, value: str | None) -> str:
    """`line` with date `name` set to `value` where it stands, added if absent, or removed."""
    current: str | None = getattr(task.dates, name)
    if value is None:
        return _without(line, task, name)
    if current is None:
        return _with_new_field(line, task, name, value)
    match = _last(line, _date_pattern(name, current))
    if match is None:
        return line
    group = "emoji" if match.group("emoji") is not None else "dataview"
    return line[: match.start(group)] + value + line[match.end(group) :]


def _without(line: str, task: ParsedTask, name: DateName) -> str:
    current: str | None = getattr(task.dates, name)
    if current is None:
        return line
    return _last_removed(line, _date_pattern(name, current))


def _date_pattern(name: DateName, value: str) -> str:
    """The field `name` with `value`, either format; its value in group `emoji` or `dataview`."""
    text = re.escape(value)
    emoji = rf"[{_SIGNS[name]}]{_VS}[ \t]*(?P<emoji>{text})"
    key = rf"(?i:{_KEYS[name]})"
    dataview = rf"[\[(][ \t]*{key}[ \t]*::[ \t]*(?P<dataview>{text})[ \t]*[\])]"
    return rf"[ \t]*(?:{emoji}|{dataview})"


def _with_new_field(line: str, task: ParsedTask, name: DateName, value: str) -> str:
    if _is_dataview(task.raw):
        return _inserted(line, task, f"  [{_KEYS[name]}:: {value}]")
    return _inserted(line, task, f" {_SIGNS[name][0]} {value}")


def _with_priority(line: str, task: ParsedTask, name: str) -> str:
    folded = name.casefold()
    if folded not in PRIORITY_NAMES:
        raise TaskLineError(f"priority {name!r} is not one of {', '.join(PRIORITY_NAMES)}")
    if task.priority != PRIORITY_NAMES.index("none"):
        current = PRIORITY_NAMES[task.priority]
        sign = re.escape(_PRIORITY_SIGNS[task.priority])
        dataview = rf"[\[(][ \t]*(?i:priority)[ \t]*::[ \t]*(?i:{current})[ \t]*[\])]"
        line = _last_removed(line, rf"[ \t]*(?:{sign}{_VS}|{dataview})")
    if folded == "none":
        return line
    if _is_dataview(task.raw):
        return _inserted(line, task, f"  [priority:: {folded}]")
    return _inserted(line, task, f" {_PRIORITY_SIGNS[PRIORITY_NAMES.index(folded)]}")


def _without_dependencies(line: str, task: ParsedTask) -> str:
    if task.task_id is not None:
        text = re.escape(task.task_id)
        dataview = rf"[\[(][ \t]*(?i:id)[ \t]*::[ \t]*{text}[ \t]*[\])]"
        line = _last_removed(line, rf"[ \t]*(?:🆔{_VS}[ \t]*{text}|{dataview})")
    if task.depends_on:
        dataview = r"[\[(][ \t]*(?i:dependsOn)[ \t]*::[^\[\]()\n]*[\])]"
        line = _last_removed(line, rf"[ \t]*(?:⛔{_VS}[ \t]*{_IDS}|{dataview})")
    return line


def _is_dataview(line: str) -> bool:
    return _TASK_KEY.search(line) is not None


def _inserted(line: str, task: ParsedTask, field: str) -> str:
    """`field` added at the end of `line`, before its block id."""
    body = line.rstrip(" \t")
    if task.block_id is not None:
        block = _last(body, rf"[ \t]+\^{re.escape(task.block_id)}$")
        if block is not None:
            return body[: block.start()] + field + body[block.start() :]
    return body + field


def _last(line: str, pattern: str) -> re.Match[str] | None:
    """The last match: fields stand at the end of a task line, after any look-alike text."""
    found = None
    for found in re.finditer(pattern, line):  # noqa: B007 (the last one is wanted)
        pass
    return found


def _last_removed(line: str, pattern: str) -> str:
    match = _last(line, pattern)
    return line if match is None else line[: match.start()] + line[match.end() :]
