"""Dates as the Tasks plugin's queries say them, read against a given `today`.

A phrase is one day (`today`, `next monday`, `in 3 days`, `2026-05-01`) or a range of days
(`this week`, `next month`, `2026-05-01 2026-05-31`, `2026-W18`); both become a `DateRange`, a
day being a range of one. Weeks are ISO weeks, Monday to Sunday, as the plugin defines them.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import NamedTuple

__all__ = ["DateRange", "named_day", "parse_date_phrase"]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def named_day(iso: str) -> str:
    """`Friday 2026-11-27`: how a day heads a list of tasks (English whatever the locale)."""
    return f"{WEEKDAYS[date.fromisoformat(iso).weekday()].capitalize()} {iso}"


NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_ISO = r"\d{4}-\d{2}-\d{2}"
_COUNT = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"
_UNIT = r"(day|week|month|year)s?"


class DateRange(NamedTuple):
    """The days from `start` to `end`, both included; one day when they are equal."""

    start: date
    end: date

    @property
    def is_day(self) -> bool:
        return self.start == self.end

    def __str__(self) -> str:
        if self.is_day:
            return self.start.isoformat()
        return f"{self.start.isoformat()} {self.end.isoformat()}"


def parse_date_phrase(phrase: str, today: date) -> DateRange | None:
    """The day or range `phrase` names, None when it names none (the caller says so)."""
    text = " ".join(phrase.lower().split())
    for reader in (_absolute, _named_day, _weekday, _counted, _relative_range, _numbered_range):
        found = reader(text, today)
        if found is not None:
            return found
    return None


def _day(day: date) -> DateRange:
    return DateRange(day, day)


def _iso(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _absolute(text: str, _today: date) -> DateRange | None:
    """`YYYY-MM-DD`, or two of them; as the plugin does, an invalid second date is ignored."""
    match = re.fullmatch(rf"({_ISO})(?: ({_ISO}))?", text)
    if match is None:
        return None
    first = _iso(match[1])
    second = _iso(match[2]) if match[2] else None
    if first is None:
        return None
    if second is None:
        return _day(first)
    return DateRange(min(first, second), max(first, second))


def _named_day(text: str, today: date) -> DateRange | None:
    offsets = {"today": 0, "tomorrow": 1, "yesterday": -1}
    return _day(today + timedelta(days=offsets[text])) if text in offsets else None


def _weekday(text: str, today: date) -> DateRange | None:
    """`monday` and `next monday`: the first one after today; `last monday`: the last one
    before it; `this monday`: the one in this ISO week."""
    match = re.fullmatch(r"(?:(next|last|this) )?(" + "|".join(WEEKDAYS) + ")", text)
    if match is None:
        return None
    wanted = WEEKDAYS.index(match[2])
    if match[1] == "last":
        return _day(today - timedelta(days=(today.weekday() - wanted - 1) % 7 + 1))
    if match[1] == "this":
        return _day(today + timedelta(days=wanted - today.weekday()))
    return _day(today + timedelta(days=(wanted - today.weekday() - 1) % 7 + 1))


def _counted(text: str, today: date) -> DateRange | None:
    """`in 3 days`, `in two weeks`, `3 days ago`, `a month ago`."""
    ahead = re.fullmatch(rf"in {_COUNT} {_UNIT}", text)
    behind = re.fullmatch(rf"{_COUNT} {_UNIT} ago", text)
    match = ahead or behind
    if match is None:
        return None
    count = int(match[1]) if match[1].isdigit() else NUMBER_WORDS[match[1]]
    return _day(_shift(today, count if ahead else -count, match[2]))


def _shift(day: date, count: int, unit: str) -> date:
    if unit == "day":
        return day + timedelta(days=count)
    if unit == "week":
        return day + timedelta(weeks=count)
    months = count * (12 if unit == "year" else 1)
    return _add_months(day, months)


def _add_months(day: date, months: int) -> date:
    """`day` moved by whole months, kept within the month it lands in (Jan 31 + 1 -> Feb 28)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, _month_length(year, month + 1)))


def _month_length(year: int, month: int) -> int:
    following = date(year + month // 12, month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def _relative_range(text: str, today: date) -> DateRange | None:
    """`last|this|next week|month|quarter|year`, the plugin's only relative ranges."""
    match = re.fullmatch(r"(last|this|next) (week|month|quarter|year)", text)
    if match is None:
        return None
    step = {"last": -1, "this": 0, "next": 1}[match[1]]
    unit = match[2]
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        return DateRange(monday, monday + timedelta(days=6))
    months = {"month": 1, "quarter": 3, "year": 12}[unit]
    first_of_this = date(today.year, 1 if unit == "year" else today.month, 1)
    if unit == "quarter":
        first_of_this = date(today.year, (today.month - 1) // 3 * 3 + 1, 1)
    start = _add_months(first_of_this, step * months)
    return DateRange(start, _add_months(start, months) - timedelta(days=1))


def _numbered_range(text: str, _today: date) -> DateRange | None:
    """`2026-W18` (an ISO week), `2026-05`, `2026-Q2`, `2026`: ranges independent of today."""
    if match := re.fullmatch(r"(\d{4})-w(\d{2})", text):
        try:
            monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
        except ValueError:
            return None
        return DateRange(monday, monday + timedelta(days=6))
    if match := re.fullmatch(r"(\d{4})-(\d{2})", text):
        if not 1 <= int(match[2]) <= 12:
            return None
        start = date(int(match[1]), int(match[2]), 1)
        return DateRange(start, _add_months(start, 1) - timedelta(days=1))
    if match := re.fullmatch(r"(\d{4})-q([1-4])", text):
        start = date(int(match[1]), (int(match[2]) - 1) * 3 + 1, 1)
        return DateRange(start, _add_months(start, 3) - timedelta(days=1))
    if match := re.fullmatch(r"\d{4}", text):
        year = int(match[0])
        return DateRange(date(year, 1, 1), date(year, 12, 31))
    return None
