"""The Tasks plugin's recurrence rules (`🔁 every week on Monday`): read, and the next dates.

A rule starts with `every` and may end with `when done`. It is either a plain interval
(`every 3 days`, `every month`, `every year`), which moves the reference date by that much, or a
calendar rule that names days (`every weekday`, `every week on Tuesday, Friday`, `every month on
the last Friday`, `every January on the 15th`), whose next date is the first one after the
reference date that fits it.

As the plugin: the reference date is the due date, else the scheduled one, else the start one
(today with `when done`); the task's other dates keep their distance to it. A plain monthly or
yearly interval landing on a day the month lacks moves back to its last day (Jan 31 + 1 month is
Feb 28); a rule naming the day skips the months that lack it (`on the 31st` goes Jan 31 -> Mar
31), as the iCalendar rules the plugin follows say. dateutil does the calendar arithmetic; the
text is read here, since its grammar is the plugin's, not dateutil's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal, cast

from dateutil.relativedelta import relativedelta
from dateutil.rrule import (
    DAILY,
    FR,
    MO,
    MONTHLY,
    SA,
    SU,
    TH,
    TU,
    WE,
    WEEKLY,
    YEARLY,
    rrule,
    weekday,
)

from weaver.errors import WeaverError
from weaver.markdown.tasks import TaskDates

__all__ = ["Recurrence", "RecurrenceError", "next_dates", "parse_recurrence"]

Unit = Literal["day", "week", "month", "year"]

_FREQUENCIES: dict[str, Literal[0, 1, 2, 3, 4, 5, 6]] = {
    "day": DAILY,
    "week": WEEKLY,
    "month": MONTHLY,
    "year": YEARLY,
}
_WEEKDAYS: dict[str, weekday] = dict(
    zip(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        (MO, TU, WE, TH, FR, SA, SU),
        strict=True,
    )
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_INTERVALS: dict[str, Callable[[int], relativedelta]] = {
    "day": lambda n: relativedelta(days=n),
    "week": lambda n: relativedelta(weeks=n),
    "month": lambda n: relativedelta(months=n),
    "year": lambda n: relativedelta(years=n),
}
_ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
_ORDINAL = re.compile(
    r"(?:(\d{1,2})(?:st|nd|rd|th)|(first|second|third|fourth|fifth))(?: last)?|last"
)
_LIST_SEPARATOR = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+)")
_WHEN_DONE = re.compile(r"\s+when done$")
_INTERVAL = re.compile(r"(?:(\d+)\s+)?(day|week|month|year)s?(?:\s+on\s+(.+))?")


class RecurrenceError(WeaverError):
    """A recurrence rule Weaver cannot read, or one that never happens again."""


@dataclass(frozen=True, slots=True)
class Recurrence:
    """A rule read from its text. No weekdays, month days or months: a plain interval."""

    text: str  # as written, e.g. "every 2 weeks on Friday when done"
    unit: Unit
    interval: int
    when_done: bool
    weekdays: tuple[weekday, ...] = ()  # MO, or FR(-1) for "the last Friday" of a month
    monthdays: tuple[int, ...] = ()  # 1..31, -1 for "the last"
    months: tuple[int, ...] = ()  # 1..12

    @property
    def is_interval(self) -> bool:
        return not (self.weekdays or self.monthdays or self.months)


def parse_recurrence(text: str) -> Recurrence:
    """The rule `text` says (`every ...`, any case, `when done` last).

    Raises RecurrenceError naming the rule when it is not one the plugin reads.
    """
    words = " ".join(text.split()).lower()
    when_done = _WHEN_DONE.search(words) is not None
    body = _WHEN_DONE.sub("", words)
    if not body.startswith("every "):
        raise RecurrenceError(f"recurrence rule {text!r} does not start with 'every'")
    try:
        return _read_body(text.strip(), body.removeprefix("every ").strip(), when_done)
    except ValueError as exc:
        raise RecurrenceError(f"recurrence rule {text!r} cannot be read: {exc}") from None


def _read_body(text: str, body: str, when_done: bool) -> Recurrence:
    if body == "weekday":
        return Recurrence(text, "week", 1, when_done, weekdays=(MO, TU, WE, TH, FR))
    interval = _INTERVAL.fullmatch(body)
    if interval is not None:
        count, unit_word, on = interval.groups()
        unit = cast(Unit, unit_word)
        if count is not None and int(count) < 1:
            raise ValueError("the interval must be at least 1")
        return _with_days(Recurrence(text, unit, int(count or 1), when_done), on)
    months, _, on = body.partition(" on ")
    if all(name in _MONTHS for name in _items(months)):
        return _with_days(Recurrence(text, "year", 1, when_done), on or None, months)
    if all(name.removesuffix("s") in _WEEKDAYS for name in _items(body)):
        days = tuple(_WEEKDAYS[name.removesuffix("s")] for name in _items(body))
        return Recurrence(text, "week", 1, when_done, weekdays=days)
    raise ValueError(f"{body!r} is not a number of days, weeks, months or years, nor days named")


def _with_days(rule: Recurrence, on: str | None, months: str = "") -> Recurrence:
    """`rule` with its `on ...` clause (and the months it names) read into dateutil's terms."""
    month_numbers = tuple(_MONTHS[name] for name in _items(months)) if months else ()
    if on is None:
        if rule.unit == "year" and month_numbers:
            raise ValueError("a rule naming months needs the days: 'on the 1st'")
        return rule
    if rule.unit == "week":
        days = tuple(_weekday(name) for name in _items(on))
        return Recurrence(rule.text, "week", rule.interval, rule.when_done, weekdays=days)
    if rule.unit not in ("month", "year") or not on.startswith("the "):
        raise ValueError(f"'on {on}' does not fit a rule every {rule.unit}")
    return _with_month_days(rule, on.removeprefix("the "), month_numbers)


def _with_month_days(rule: Recurrence, days: str, months: tuple[int, ...]) -> Recurrence:
    """`the 1st and 24th`, `the last`, `the 2nd last Friday`, `the 2nd Wednesday`."""
    *ordinals, last_word = days.rsplit(" ", 1) if days.count(" ") else ("", days)
    if last_word.removesuffix("s") in _WEEKDAYS:
        day = _WEEKDAYS[last_word.removesuffix("s")]
        nths = tuple(day(n) for n in (_ordinal(o) for o in _items(ordinals[0])))
        return Recurrence(rule.text, rule.unit, rule.interval, rule.when_done, nths, (), months)
    monthdays = tuple(_ordinal(o) for o in _items(days))
    if any(not 1 <= abs(n) <= 31 for n in monthdays):
        raise ValueError(f"'the {days}' names a day no month has")
    return Recurrence(rule.text, rule.unit, rule.interval, rule.when_done, (), monthdays, months)


def _items(text: str) -> list[str]:
    """`a, b and c` -> [a, b, c]."""
    return [item for item in _LIST_SEPARATOR.split(text.strip()) if item]


def _weekday(name: str) -> weekday:
    day = _WEEKDAYS.get(name.removesuffix("s"))
    if day is None:
        raise ValueError(f"{name!r} is not a day of the week")
    return day


def _ordinal(text: str) -> int:
    """`1st` -> 1, `last` -> -1, `2nd last` -> -2."""
    match = _ORDINAL.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not an ordinal such as 1st, 2nd, last or 2nd last")
    if match.group(0) == "last":
        return -1
    number = int(match.group(1)) if match.group(1) else _ORDINAL_WORDS[match.group(2)]
    if number == 0:
        raise ValueError("there is no 0th day")
    return -number if match.group(0).endswith(" last") else number


def next_dates(
    rule: Recurrence, dates: TaskDates, today: date, *, remove_scheduled: bool = False
) -> TaskDates:
    """The due, scheduled and start dates of the next occurrence of a task with `dates`
    (created, done and cancelled are for the caller to set). A task without any of the three
    gets none. `remove_scheduled` is the plugin's setting of that name: the next occurrence has
    no scheduled date when it has a due or start one, so the start date is preferred as the
    reference.

    Raises RecurrenceError when the rule has no date after the reference date.
    """
    order = ("due", "start", "scheduled") if remove_scheduled else ("due", "scheduled", "start")
    reference = next((getattr(dates, name) for name in order if getattr(dates, name)), None)
    if reference is None:
        return TaskDates()
    old = date.fromisoformat(reference)
    new = next_date(rule, today if rule.when_done else old)
    moved = {
        name: (new + (date.fromisoformat(value) - old)).isoformat()
        for name in ("due", "scheduled", "start")
        if (value := getattr(dates, name)) is not None
    }
    if remove_scheduled and ("due" in moved or "start" in moved):
        moved.pop("scheduled", None)
    return TaskDates(**moved)


def next_date(rule: Recurrence, after: date) -> date:
    """The first date of `rule` after `after`, counting its intervals from `after`."""
    if rule.is_interval:
        return after + _INTERVALS[rule.unit](rule.interval)
    start = datetime(after.year, after.month, after.day)
    dates = rrule(
        _FREQUENCIES[rule.unit],
        dtstart=start,
        interval=rule.interval,
        wkst=MO,
        byweekday=rule.weekdays or None,
        bymonthday=rule.monthdays or None,
        bymonth=rule.months or None,
    )
    found = dates.after(start + timedelta(hours=12))
    if found is None:
        raise RecurrenceError(f"recurrence rule {rule.text!r} has no date after {after}")
    return found.date()
