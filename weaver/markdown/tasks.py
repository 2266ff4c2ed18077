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
    "HeadingLine",
    "ParsedTask",
    "StatusType",
    "TaskDates",
    "find_tasks",
    "parse_task_line",
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
    """One task line. Parse workers send it on as a plain `weaver.cache.rows.TaskRow` (a named
    tuple costs the indexer far more to unpickle and keep: see there)."""

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
_FIELD_START_CHARS = frozenset("📅📆🗓⏳⌛🛫➕✅❌🔺⏫🔼🔽⏬🔁🆔⛔🏁^#[(")
# A superset of where a field can start, filtered by `_FIELD_START_CHARS`: a class of ranges
# scans a line about twice as fast as the class of those twenty characters.
_FIELD_START = re.compile(r"[#^\[(\u2300-\U0010ffff]")
_SIGNS = {"📅": "due", "📆": "due", "🗓": "due", "⏳": "scheduled", "⌛": "scheduled"}
_SIGNS |= {"🛫": "start", "➕": "created", "✅": "done", "❌": "cancelled"}
_PRIORITY_SIGNS = {"🔺": 0, "⏫": 1, "🔼": 2, "🔽": 4, "⏬": 5}
# The Dataview format's keys (case-folded) for the dates, by `TaskDates` name.
_DATE_KEYS = {"due": "due", "scheduled": "scheduled", "start": "start", "created": "created"}
_DATE_KEYS |= {"completion": "done", "cancelled": "cancelled"}
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NONE = PRIORITY_NAMES.index("none")
_NO_DATES = TaskDates()  # shared by the tasks without dates, as `()` is


class _Fields:
    """What the backwards read of one line found, filled field by field (rightmost first)."""

    __slots__ = (
        "block_id",
        "dates",
        "depends_on",
        "others",
        "priority",
        "recurrence",
        "task_id",
        "trailing_tags",
        "warnings",
    )

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
            found.trailing_tags.append(raw[match.start("tag") : match.end("tag")])
        case _:
            if (match.group("open") == "[") != (match.group("close") == "]"):
                return False
            key, value = match.span("key"), match.span("value")
            found.add_field(raw[key[0] : key[1]].strip(), raw[value[0] : value[1]].strip())
    return True


def _read_trailing(raw: str, masked: str, start: int) -> tuple[_Fields, int]:
    """The fields at the end of the line after `start`, and where the description ends."""
    found = _Fields()
    # Only where a field can start is a match tried, right to left: a search for "a field, then
    # the end" would try every offset of a long description, again for every field.
    # A field's match takes the blanks and comma after it, so `end` needs no trimming.
    candidates = [
        m.start() for m in _FIELD_START.finditer(masked, start) if m[0] in _FIELD_START_CHARS
    ]
    end = len(masked)
    while (match := _field_ending_at(masked, candidates, end)) and _take(found, match, raw):
        end = match.start()
    found.others.reverse()  # read backwards, kept as written
    found.warnings.reverse()
    found.trailing_tags.reverse()
    return found, end


def _field_ending_at(masked: str, candidates: list[int], end: int) -> re.Match[str] | None:
    """The field that ends at `end`, trying `candidates` (offsets, ascending) from the right and
    dropping each one tried: the next field ends left of this one, so no candidate is tried
    twice and a line costs what its length does."""
    while candidates:
        pos = candidates.pop()
        if pos < end and (match := _FIELD_AT_END.match(masked, pos, end)):
            return match
    return None


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
    if masked.find("#", start) < 0:  # most task lines: no search, no generator to run
        return ()
    runs = INLINE_TAG_RUN.findall(masked, start)
    tags = (f"#{tag}" for run in runs for tag in run.split("#")[1:] if not DIGITS.fullmatch(tag))
    return tuple(dict.fromkeys(tags))


def _read_task(
    raw: str, masked: str, tagged: str, line: int, parent: int | None, heading: str | None
) -> ParsedTask | None:
    """The task on `raw`, given the same line as long with its code, comments and links blanked
    (`masked`: where the checkbox and fields are read) and its HTML markup too (`tagged`: where
    tags are read, as the note's tags are). None when the line is not a checkbox list item."""
    checkbox = CHECKBOX.match(masked)
    if checkbox is None:
        return None
    start = checkbox.end()
    found, end = _read_trailing(raw, masked, start)
    description = raw[start:end].strip()
    if found.trailing_tags:
        description = " ".join([description, *found.trailing_tags]).strip()
    inner = _inner_fields(raw, masked, start, end) if "::" in raw else []
    return ParsedTask(
        line=line,
        parent_line=parent,
        heading=heading,
        block_id=found.block_id,
        status_char=checkbox.group(1),
        description=description,
        raw=raw,
        tags=_line_tags(tagged, start),
        dates=TaskDates(**found.dates) if found.dates else _NO_DATES,
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
    _, linkless = find_body_links(text, mask_code(text))
    return _read_task(text, linkless, mask_html(linkless), line, None, None)


# ---------------------------------------------------------------- a note's tasks

# What shapes a note's lists, found in one pass over "\n" + body: a list item (its indentation,
# quote markers included, its marker and the gap after it), and a blank line before a line at
# the left margin, which ends every list above it (a line right after an item, without a blank,
# continues that item).
_LIST_EVENT = re.compile(
    r"\n(?:(?P<indent>[ \t>]*+)(?P<marker>[-*+]|[0-9]{1,9}+[.)])(?P<gap>[ \t]++|(?=\n)|$)"
    r"|[ \t>]*+(?=\n[^ \t\n>]))"
)


class HeadingLine(NamedTuple):
    line: int  # 0-based line in the file, as `weaver.markdown.parser.Heading`
    level: int
    text: str


class _Outline:
    """The headings above the current line, outermost first."""

    def __init__(self, headings: list[HeadingLine]) -> None:
        self._pending = headings[::-1]  # next heading last, popped as lines pass it
        self._open: list[HeadingLine] = []
        self.path: str | None = None

    def advance(self, line: int) -> bool:
        """Move to `line`; True when a heading came in between (it ends every list)."""
        moved = False
        while self._pending and self._pending[-1].line < line:
            heading = self._pending.pop()
            while self._open and self._open[-1].level >= heading.level:
                self._open.pop()
            self._open.append(heading)
            moved = True
        if moved:
            self.path = " > ".join(h.text for h in self._open) or None
        return moved


def _content_column(indent: int, item: re.Match[str]) -> int:
    """Where a list item's text starts, which a nested item must reach (CommonMark: one to four
    spaces after the marker count, more make an indented code block, so then just one)."""
    gap = len(item.group("gap").expandtabs(4))
    return indent + len(item.group("marker")) + (gap if 1 <= gap <= 4 else 1)


def find_tasks(
    text: str, masked: str, tagged: str, headings: list[HeadingLine], first_line: int
) -> tuple[ParsedTask, ...]:
    """Every task in a note body, in order, with the task it is nested under and its heading path.

    `masked` is the body with code, comments and links blanked, `tagged` with HTML markup blanked
    too (both as `parse_note` computes them); `first_line` is the 0-based file line the body
    starts at. One pass over the list items; a task's parent is the nearest task among the items
    it is indented under, through plain items too.
    """
    if _NESTED_TASK.search("\n" + masked) is None:
        return _unnested_tasks(text, masked, tagged, headings, first_line)
    tasks: list[ParsedTask] = []
    outline = _Outline(headings)
    # The open list items: the column their text starts at, the nearest task at or above them.
    items: list[tuple[int, int | None]] = []
    quotes = 0  # the quote depth the open items are in
    index, counted = 0, 0
    for event in _LIST_EVENT.finditer("\n" + masked):
        start = event.start()  # the "\n" prefix shifts offsets by one: start is the line start
        index += masked.count("\n", counted, start)
        counted = start
        if outline.advance(first_line + index) or event.group("indent") is None:
            items.clear()
            if event.group("indent") is None:
                continue
        indent = event.group("indent")
        width = len(indent.expandtabs(4))
        if indent.count(">") != quotes:  # into or out of a quote: its lists are others
            items.clear()
            quotes = indent.count(">")
        while items and items[-1][0] > width:  # not indented to the item's text: not inside it
            items.pop()
        parent = items[-1][1] if items else None
        end = masked.find("\n", start)
        end = len(masked) if end < 0 else end
        line = first_line + index + 1
        raw, heading = text[start:end], outline.path
        task = _read_task(raw, masked[start:end], tagged[start:end], line, parent, heading)
        if task is not None:
            tasks.append(task)
        items.append((_content_column(width, event), line if task else parent))
    return tuple(tasks)


# A task line that starts indented or in a quote: only such a task can have a parent.
_NESTED_TASK = re.compile(r"\n[ \t>]++(?:[-*+]|[0-9]{1,9}+[.)])[ \t]++\[[^\]\n]\](?=[ \t]|\n|$)")
_UNNESTED_TASK = re.compile(r"^(?:[-*+]|[0-9]{1,9}+[.)])[ \t]++\[[^\]\n]\](?=[ \t]|$)", re.M)


def _unnested_tasks(
    text: str, masked: str, tagged: str, headings: list[HeadingLine], first_line: int
) -> tuple[ParsedTask, ...]:
    """`find_tasks` for a note whose tasks all start at the left margin, most notes with tasks:
    none can be nested, so the list items between them need no walk."""
    tasks: list[ParsedTask] = []
    outline = _Outline(headings)
    index, counted = 0, 0
    for found in _UNNESTED_TASK.finditer(masked):
        start = found.start()
        index += masked.count("\n", counted, start)
        counted = start
        outline.advance(first_line + index)
        end = masked.find("\n", start)
        end = len(masked) if end < 0 else end
        line = first_line + index + 1
        task = _read_task(
            text[start:end], masked[start:end], tagged[start:end], line, None, outline.path
        )
        if task is not None:
            tasks.append(task)
    return tuple(tasks)
