"""Tasks as the Obsidian Tasks plugin reads them: the types a parsed task line becomes.

A task is a list item with a checkbox (`- [ ] text`, `1. [x] text`, also inside a quote). Its
fields come in the plugin's two formats, emoji (`📅 2026-12-01`, `⏫`, `🔁 every week`) and
Dataview (`[due:: 2026-12-01]`, `[priority:: high]`); both end up in the same `ParsedTask`.

Status *types* (todo, done, in progress, ...) are not decided here: they depend on the vault's
Tasks plugin settings, which the cache applies when it writes a task (`status_char` is what the
line says). That keeps parsing pure and a settings change a matter of re-labelling rows.

How a line is read, as the plugin reads it: the fields are taken from the END of the line,
backwards, one at a time, and reading stops at the first thing that is not a field. Tags and a
block id may stand among them (a trailing tag goes back to the description, which keeps tags;
the block id is dropped). So `Buy 📅 calendar ⏫` has priority high and keeps its 📅 as text.
We read both formats on every line, where the plugin reads one chosen in its settings: a vault
that switched formats keeps its older tasks readable.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal, NamedTuple

from weaver.markdown.html_mask import mask_html
from weaver.markdown.links import find_body_links
from weaver.markdown.patterns import BRACKET, BRACKET_FIELD, DIGITS, INLINE_TAG_RUN, mask_code

__all__ = [
    "PRIORITY_NAMES",
    "ParsedTask",
    "StatusType",
    "TaskDates",
    "parse_task_line",
    "read_task_line",
]

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


# ---------------------------------------------------------------- one line

# A list item with a checkbox, as `weaver.markdown.patterns.TASK` finds one, read from a line start.
CHECKBOX = re.compile(r"[ \t>]*+(?:[-*+]|[0-9]{1,9}+[.)])[ \t]++\[([^\]\n])\](?=[ \t]|$)")

_VS = "\ufe0f?"  # an emoji may carry a variation selector: ⏳️ is ⏳ + U+FE0F
_ID = r"[A-Za-z0-9_-]++"
# One field standing at the end of what is left of the line (searched with `endpos`).
_FIELD_AT_END = re.compile(
    rf"(?:(?P<sign>[📅📆🗓⏳⌛🛫➕✅❌]){_VS}[ \t]*+(?P<date>[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})"
    rf"|(?P<priority>[🔺⏫🔼🔽⏬]){_VS}"
    rf"|🔁{_VS}[ \t]*+(?P<recurrence>[A-Za-z0-9, !]++)"
    rf"|🆔{_VS}[ \t]*+(?P<id>{_ID})"
    rf"|⛔{_VS}[ \t]*+(?P<depends>{_ID}(?:[ \t]*+,[ \t]*+{_ID})*+)"
    rf"|🏁{_VS}[ \t]*+(?P<on_completion>[A-Za-z]++)"
    rf"|(?<!\S)\^(?P<block>[A-Za-z0-9-]++)"
    rf"|(?P<tag>{INLINE_TAG_RUN.pattern})"
    r"|(?P<open>[\[(])(?P<key>[^\s:\[\]()][^:\[\]()\n]*+)::(?P<value>[^\[\]()\n]*+)(?P<close>[\])])"
    r")[ \t]*+,?[ \t]*+$"
)
_SIGNS = {"📅": "due", "📆": "due", "🗓": "due", "⏳": "scheduled", "⌛": "scheduled"}
_SIGNS |= {"🛫": "start", "➕": "created", "✅": "done", "❌": "cancelled"}
_PRIORITY_SIGNS = {"🔺": 0, "⏫": 1, "🔼": 2, "🔽": 4, "⏬": 5}
# The Dataview format's keys (case-folded) for the dates, by `TaskDates` name.
_DATE_KEYS = {"due": "due", "scheduled": "scheduled", "start": "start", "created": "created"}
_DATE_KEYS |= {"completion": "done", "cancelled": "cancelled"}
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NONE = PRIORITY_NAMES.index("none")


class _Fields:
    """What the backwards read of one line found, filled field by field (rightmost first)."""

    def __init__(self) -> None:
        self.dates: dict[str, str] = {}
        self.priority: int | None = None
        self.recurrence: str | None = None
        self.task_id: str | None = None
        self.depends_on: tuple[str, ...] = ()
        self.block_id: str | None = None
        self.trailing_tags: list[str] = []
        self.others: list[tuple[str, str]] = []
        self.warnings: list[str] = []

    def add_date(self, name: str, key: str, value: str) -> None:
        if _ISO_DATE.fullmatch(value) and _is_date(value):
            self.dates.setdefault(name, value)
        else:  # kept, so nothing written on the line is lost; the warning says why it is unused
            self.others.append((key, value))
            self.warnings.append(f"{name} date '{value}' is not a date")

    def add_field(self, key: str, value: str) -> None:
        """A Dataview-format field: a Tasks field by its key, else one of `fields`."""
        folded = key.casefold()
        if folded in _DATE_KEYS:
            self.add_date(_DATE_KEYS[folded], key, value)
        elif folded == "priority" and value.casefold() in PRIORITY_NAMES:
            if self.priority is None:
                self.priority = _priority(value)
        elif folded == "priority":
            self.others.append((key, value))
            self.warnings.append(f"priority '{value}' is not one of {', '.join(PRIORITY_NAMES)}")
        elif folded == "repeat":
            self.recurrence = self.recurrence or value
        elif folded == "id":
            self.task_id = self.task_id or value
        elif folded == "dependson":
            self.depends_on = self.depends_on or _split_ids(value)
        else:
            self.others.append((key, value))


def _is_date(value: str) -> bool:
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _priority(name: str) -> int:
    return PRIORITY_NAMES.index(name.casefold())


def _split_ids(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _take(found: _Fields, match: re.Match[str], raw: str) -> bool:
    """Record the field `match` found at the end of the line; False when it ends the read (a
    Dataview field whose brackets do not pair)."""
    text = raw[match.start() : match.end()].strip()
    match match.lastgroup:
        case "date":
            name = _SIGNS[match.group("sign")]
            found.add_date(name, name, match.group("date"))
        case "priority":
            if found.priority is None:
                found.priority = _PRIORITY_SIGNS[match.group("priority")]
        case "recurrence":
            found.recurrence = found.recurrence or match.group("recurrence").strip()
        case "id":
            found.task_id = found.task_id or match.group("id")
        case "depends":
            found.depends_on = found.depends_on or _split_ids(match.group("depends"))
        case "on_completion":
            found.others.append(("onCompletion", match.group("on_completion")))
        case "block":
            found.block_id = found.block_id or match.group("block")
        case "tag":
            found.trailing_tags.append(text.rstrip(", \t"))
        case _:
            if (match.group("open") == "[") != (match.group("close") == "]"):
                return False
            key, value = match.span("key"), match.span("value")
            found.add_field(raw[key[0] : key[1]].strip(), raw[value[0] : value[1]].strip())
    return True


def _read_trailing(raw: str, masked: str, start: int) -> tuple[_Fields, int]:
    """The fields at the end of the line after `start`, and where the description ends."""
    found = _Fields()
    end = _strip_end(masked, start, len(masked))
    while (match := _FIELD_AT_END.search(masked, start, end)) and _take(found, match, raw):
        end = _strip_end(masked, start, match.start())
    found.others.reverse()  # read backwards, kept as written
    found.warnings.reverse()
    found.trailing_tags.reverse()
    return found, end


def _strip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in " \t":
        end -= 1
    return end


def _inner_fields(raw: str, masked: str, start: int, end: int) -> list[tuple[str, str]]:
    """`[key:: value]` / `(key:: value)` inside the description: Dataview reads them, the Tasks
    plugin does not (whatever the key), so they stay in the text and are listed as fields."""
    fields = []
    for match in BRACKET_FIELD.finditer(masked, start, end):
        close = BRACKET.search(masked, match.end(), end)
        if close and close.group() == ("]" if match.group(1) == "[" else ")"):
            value = raw[match.end() : close.start()].strip()
            fields.append((raw[match.start(2) : match.end(2)].strip(), value))
    return fields


def _line_tags(masked: str, start: int) -> tuple[str, ...]:
    runs = INLINE_TAG_RUN.findall(masked, start)
    tags = (f"#{tag}" for run in runs for tag in run.split("#")[1:] if not DIGITS.fullmatch(tag))
    return tuple(dict.fromkeys(tags))


def read_task_line(raw: str, masked: str, line: int) -> ParsedTask | None:
    """The task on `raw`, given `masked`: the same line, as long, with its code, comments, links
    and HTML markup blanked as the parser blanks them (what `parse_task_line` computes, and
    `parse_note` already has). None when the line is not a checkbox list item."""
    checkbox = CHECKBOX.match(masked)
    if checkbox is None:
        return None
    start = checkbox.end()
    found, end = _read_trailing(raw, masked, start)
    description = " ".join([raw[start:end].strip(), *found.trailing_tags]).strip()
    inner = _inner_fields(raw, masked, start, end) if "::" in raw else []
    return ParsedTask(
        line=line,
        parent_line=None,
        heading=None,
        block_id=found.block_id,
        status_char=checkbox.group(1),
        description=description,
        raw=raw,
        tags=_line_tags(masked, start),
        dates=TaskDates(**found.dates),
        recurrence=found.recurrence,
        priority=_NONE if found.priority is None else found.priority,
        task_id=found.task_id,
        depends_on=found.depends_on,
        fields=(*inner, *found.others),
        warnings=tuple(found.warnings),
    )


def parse_task_line(text: str, line: int) -> ParsedTask | None:
    """The task on one line of a file (`text` without its line break; `line` 1-based), read alone:
    None when it is not a checkbox list item. `parent_line` and `heading` are None (they need the
    note around the line, see `find_tasks`)."""
    masked = mask_code(text)
    _, linkless = find_body_links(text, masked)
    return read_task_line(text, mask_html(linkless), line)
