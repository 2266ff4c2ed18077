"""The Tasks plugin's query language (docs/Queries/*) read into a `TaskQuery`.

One instruction per line; `#` starts a comment line, a trailing `\\` continues a line. Filters
are ANDed; `(a) AND (b)`, `(a) OR NOT (b)`, `NOT (a)` combine them. A line that is not one of
the instructions below raises `TaskQueryError` naming it: a skipped filter would widen the
answer without saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date
from typing import cast, get_args

from weaver.errors import TaskQueryError
from weaver.markdown.tasks import PRIORITY_NAMES, StatusType
from weaver.tasks.dates import parse_date_phrase
from weaver.tasks.query import (
    AllOf,
    AnyOf,
    DateField,
    DateMatches,
    DatePresence,
    DateRelation,
    DoneIs,
    Filter,
    Group,
    GroupKey,
    Not,
    PriorityIs,
    Recurring,
    Sort,
    SortKey,
    StatusTypeIs,
    TagMatches,
    TagPresence,
    TaskQuery,
    TextField,
    TextMatches,
)

__all__ = ["parse_filter", "parse_task_query"]

STATUS_TYPES = cast(tuple[StatusType, ...], get_args(StatusType))
# The plugin's date instructions name the start date `starts`; the rest by their field.
DATE_WORDS: dict[str, DateField] = {
    "due": "due",
    "scheduled": "scheduled",
    "starts": "start",
    "created": "created",
    "done": "done",
    "cancelled": "cancelled",
    "happens": "happens",
}
PRESENCE_WORDS: dict[str, DateField] = {**DATE_WORDS, "start": "start"}
RELATIONS: dict[str, DateRelation] = {
    "on or before": "in or before",
    "in or before": "in or before",
    "on or after": "in or after",
    "in or after": "in or after",
    "before": "before",
    "after": "after",
    "on": "in",
    "in": "in",
}
TEXT_FIELDS = cast(tuple[TextField, ...], get_args(TextField))
SORT_KEYS = cast(tuple[SortKey, ...], get_args(SortKey))
GROUP_KEYS = cast(tuple[GroupKey, ...], get_args(GroupKey))
_I = re.IGNORECASE


def parse_task_query(text: str, today: date) -> TaskQuery:
    """The query `text` says, its dates read against `today`."""
    query = TaskQuery()
    for number, line in _instructions(text):
        query = _read_line(query, number, line, today)
    return query


def parse_filter(line: str, today: date, number: int = 1) -> Filter:
    """One filter line (a boolean combination included)."""
    found = _filter(line, today)
    if isinstance(found, str):
        raise TaskQueryError(number, line, found)
    return found


def _instructions(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number of the line it starts on, instruction), continuations joined."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1].strip())
            continue
        whole = " ".join([*pending, line]).strip()
        pending = []
        if whole and not whole.startswith("#"):
            yield start, whole
    if pending:
        yield start, " ".join(pending)


def _read_line(query: TaskQuery, number: int, line: str, today: date) -> TaskQuery:
    for reader in (_sort, _group, _limit, _layout):
        found = reader(query, line)
        if found is not None:
            return found
    return query.and_with(TaskQuery(filters=(parse_filter(line, today, number),)))


def _sort(query: TaskQuery, line: str) -> TaskQuery | None:
    match = re.fullmatch(r"sort by (\S+)( reverse)?", line, _I)
    if match is None or match[1].lower() not in SORT_KEYS:
        return None
    key = cast(SortKey, match[1].lower())
    return query.and_with(TaskQuery(sorts=(Sort(key, bool(match[2])),)))


def _group(query: TaskQuery, line: str) -> TaskQuery | None:
    match = re.fullmatch(r"group by (\S+)( reverse)?", line, _I)
    if match is None or match[1].lower() not in GROUP_KEYS:
        return None
    key = cast(GroupKey, match[1].lower())
    return query.and_with(TaskQuery(groups=(Group(key, bool(match[2])),)))


def _limit(query: TaskQuery, line: str) -> TaskQuery | None:
    match = re.fullmatch(r"limit (groups )?(?:to )?(\d+)(?: tasks?)?", line, _I)
    if match is None:
        return None
    if match[1]:
        return query.and_with(TaskQuery(group_limit=int(match[2])))
    return query.and_with(TaskQuery(limit=int(match[2])))


def _layout(query: TaskQuery, line: str) -> TaskQuery | None:
    """Lines about drawing, not matching: recorded (explain) or accepted as they are."""
    lower = line.lower()
    if lower == "explain":
        return query.and_with(TaskQuery(explain=True))
    if lower == "ignore global query":
        return query
    if re.fullmatch(r"(show|hide) .+|(short|full)( mode)?", lower):
        return query.and_with(TaskQuery(layout=(line,)))
    return None


# --- filters -------------------------------------------------------------------------------

LeafReader = Callable[[str, date], "Filter | str | None"]


def _filter(line: str, today: date) -> Filter | str:
    """The filter `line` says, or why it says none."""
    text = line.strip()
    if text.startswith("(") or re.match(r"not\s*\(", text, _I):
        return _boolean(text, today)
    for reader in LEAF_READERS:
        found = reader(text, today)
        if found is not None:
            return found
    return "not a filter, sort, group or limit instruction Weaver supports"


def _boolean(text: str, today: date) -> Filter | str:
    tokens = _tokens(text)
    if isinstance(tokens, str):
        return tokens
    return _BooleanParser(tokens, today).parse()


def _tokens(text: str) -> list[str] | str:
    """Operators (upper-cased words) and parenthesised operands (kept with their brackets)."""
    tokens: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif char == "(":
            end = _closing(text, index)
            if end < 0:
                return "a '(' is never closed"
            tokens.append(text[index : end + 1])
            index = end + 1
        else:
            word = re.match(r"[A-Za-z]+", text[index:])
            if word is None or word[0].upper() not in ("AND", "OR", "NOT", "XOR"):
                return "expected AND, OR, NOT or a filter in brackets"
            tokens.append(word[0].upper())
            index += len(word[0])
    return tokens


def _closing(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    return -1


class _BooleanParser:
    """NOT binds tightest, then AND, then XOR, then OR, as in the plugin."""

    def __init__(self, tokens: list[str], today: date) -> None:
        self.tokens = tokens
        self.today = today
        self.at = 0

    def parse(self) -> Filter | str:
        try:
            found = self._or()
        except ValueError as exc:
            return str(exc)
        if self.at != len(self.tokens):
            return f"unexpected '{self.tokens[self.at]}'"
        return found

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _or(self) -> Filter:
        parts = [self._xor()]
        while self._peek() == "OR":
            self.at += 1
            parts.append(self._xor())
        return parts[0] if len(parts) == 1 else AnyOf(tuple(parts))

    def _xor(self) -> Filter:
        left = self._and()
        while self._peek() == "XOR":
            self.at += 1
            right = self._and()
            left = AnyOf((AllOf((left, Not(right))), AllOf((Not(left), right))))
        return left

    def _and(self) -> Filter:
        parts = [self._not()]
        while self._peek() == "AND":
            self.at += 1
            parts.append(self._not())
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def _not(self) -> Filter:
        if self._peek() == "NOT":
            self.at += 1
            return Not(self._not())
        token = self._peek()
        if token is None or not token.startswith("("):
            raise ValueError("expected a filter in brackets")
        self.at += 1
        found = _filter(token[1:-1], self.today)
        if isinstance(found, str):
            raise ValueError(f"{found} (in '{token}')")
        return found


def _done(text: str, _today: date) -> Filter | None:
    lower = text.lower()
    if lower in ("done", "not done"):
        return DoneIs(lower == "done")
    return None


def _status_type(text: str, _today: date) -> Filter | str | None:
    match = re.fullmatch(r"status\.type (is|is not) (\S+)", text, _I)
    if match is None:
        return None
    wanted = match[2].upper()
    if wanted not in STATUS_TYPES:
        return f"'{match[2]}' is not a status type ({', '.join(STATUS_TYPES)})"
    return StatusTypeIs((cast(StatusType, wanted),), negate=match[1].lower() == "is not")


def _date_presence(text: str, _today: date) -> Filter | None:
    words = "|".join(PRESENCE_WORDS)
    match = re.fullmatch(rf"(no|has) ({words}) date", text, _I)
    if match is None:
        return None
    return DatePresence(PRESENCE_WORDS[match[2].lower()], present=match[1].lower() == "has")


def _date(text: str, today: date) -> Filter | str | None:
    words = "|".join(DATE_WORDS)
    relations = "|".join(RELATIONS)
    match = re.fullmatch(rf"({words})(?: ({relations}))? (.+)", text, _I)
    if match is None:
        return None
    dates = parse_date_phrase(match[3], today)
    if dates is None:
        return f"'{match[3]}' is not a date or date range Weaver reads"
    relation = RELATIONS[(match[2] or "on").lower()]
    return DateMatches(DATE_WORDS[match[1].lower()], relation, dates)


def _recurring(text: str, _today: date) -> Filter | None:
    lower = text.lower()
    if lower in ("is recurring", "is not recurring"):
        return Recurring(lower == "is recurring")
    return None


def _priority(text: str, _today: date) -> Filter | str | None:
    match = re.fullmatch(r"priority is (?:(above|below|not) )?(\S+)", text, _I)
    if match is None:
        return None
    name = match[2].lower()
    if name not in PRIORITY_NAMES:
        return f"'{match[2]}' is not a priority ({', '.join(PRIORITY_NAMES)})"
    relation = (match[1] or "is").lower()
    return PriorityIs(relation, PRIORITY_NAMES.index(name))  # type: ignore[arg-type]


def _text(text: str, _today: date) -> Filter | str | None:
    fields = "|".join(re.escape(name) for name in TEXT_FIELDS)
    match = re.fullmatch(
        rf"({fields}) (includes|does not include|regex matches|regex does not match) (.+)",
        text,
        _I,
    )
    if match is None:
        return None
    field = cast(TextField, match[1].lower())
    return _matcher(match[2].lower(), match[3], lambda **kw: TextMatches(field, **kw))


def _tags(text: str, _today: date) -> Filter | str | None:
    lower = text.lower()
    if lower in ("no tags", "has tags"):
        return TagPresence(lower == "has tags")
    verbs = "include|includes|do not include|does not include|regex matches|regex does not match"
    match = re.fullmatch(rf"tags? ({verbs}) (.+)", text, _I)
    if match is None:
        return None
    verb = {"include": "includes", "do not include": "does not include"}.get(
        match[1].lower(), match[1].lower()
    )
    return _matcher(verb, match[2], lambda **kw: TagMatches(**kw))


def _matcher(verb: str, operand: str, build: Callable[..., Filter]) -> Filter | str:
    negate = verb in ("does not include", "regex does not match")
    if not verb.startswith("regex"):
        return build(pattern=operand.strip(), negate=negate)
    match = re.fullmatch(r"/(.*)/([a-z]*)", operand.strip())
    if match is None:
        return f"'{operand}' is not a /regular expression/"
    if set(match[2]) - {"i"}:
        return f"regular expression flags '{match[2]}' are not supported (only 'i')"
    try:
        re.compile(match[1])
    except re.error as exc:
        return f"'{match[1]}' is not a regular expression: {exc}"
    return build(pattern=match[1], regex=True, ignore_case="i" in match[2], negate=negate)


LEAF_READERS: tuple[LeafReader, ...] = (
    _done,
    _status_type,
    _date_presence,
    _recurring,
    _priority,
    _text,
    _tags,
    _date,
)
