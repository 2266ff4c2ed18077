"""Dates and durations as the Bases syntax page defines them: `date("2025-01-01 12:00:00")`,
durations written `"1d"`, `"2 weeks"`, `"1M 4h"`, and the arithmetic between them (a month
added to January 31st is the last day of February, as moment.js does)."""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import re

from weaver.bases.values import Date, Duration, ValueTypeError

_MILLIS = {
    "w": 7 * 86_400_000,
    "d": 86_400_000,
    "h": 3_600_000,
    "m": 60_000,
    "s": 1000,
}
# Case matters for the one-letter forms only: `M` is a month, `m` a minute.
_UNITS = {
    "y": "y",
    "year": "y",
    "years": "y",
    "M": "M",
    "month": "M",
    "months": "M",
    "w": "w",
    "week": "w",
    "weeks": "w",
    "d": "d",
    "day": "d",
    "days": "d",
    "h": "h",
    "hour": "h",
    "hours": "h",
    "m": "m",
    "minute": "m",
    "minutes": "m",
    "s": "s",
    "second": "s",
    "seconds": "s",
}
_PART = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z]+)")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")


@functools.lru_cache(maxsize=256)  # the same few duration texts, once per row
def parse_duration(text: str) -> Duration:
    """`"1d"`, `"2 weeks"`, `"-3h"`, `"1M 4h"`; anything else is a type error naming it."""
    months, millis, end = 0, 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != end:
            break
        amount, unit = float(match.group(1)), _unit(match.group(2), text)
        if unit in ("y", "M"):
            if not amount.is_integer():
                raise ValueTypeError(f"not a duration: {text!r} (whole months and years only)")
            months += int(amount) * (12 if unit == "y" else 1)
        else:
            millis += amount * _MILLIS[unit]
        end = match.end()
    if end == 0 or text[end:].strip():
        raise ValueTypeError(f"not a duration: {text!r}")
    return Duration(months, millis)


def _unit(word: str, text: str) -> str:
    unit = _UNITS.get(word) if len(word) == 1 else _UNITS.get(word.lower())
    if unit is None:
        raise ValueTypeError(f"not a duration: {text!r} (unknown unit {word!r})")
    return unit


def parse_date(text: str) -> Date:
    """`YYYY-MM-DD`, with an optional ` HH:mm[:ss[.SSS]]` (or `T`), and an optional offset,
    which is turned into local time."""
    text = text.strip()
    if _DATE_ONLY.fullmatch(text):
        return Date(dt.datetime.fromisoformat(text), has_time=False)
    if _DATE_TIME.fullmatch(text):
        moment = dt.datetime.fromisoformat(text)
        if moment.tzinfo is not None:
            moment = moment.astimezone().replace(tzinfo=None)
        return Date(moment, has_time=True)
    raise ValueTypeError(f"not a date: {text!r} (expected YYYY-MM-DD or YYYY-MM-DD HH:mm:ss)")


def looks_like_date(text: str) -> bool:
    """Whether a property's text is a date as Obsidian's Date and Date & time properties
    write it (the YAML reader keeps them as text)."""
    return bool(_DATE_ONLY.fullmatch(text) or _DATE_TIME.fullmatch(text))


def shift(date: Date, span: Duration, sign: int = 1) -> Date:
    """`date + span` (`sign` 1) or `date - span` (-1): months by the calendar, then the rest."""
    moment = _add_months(date.moment, sign * span.months)
    moment += dt.timedelta(milliseconds=sign * span.millis)
    whole_days = span.millis % 86_400_000 == 0
    return Date(moment, has_time=date.has_time or not whole_days)


def _add_months(moment: dt.datetime, months: int) -> dt.datetime:
    if not months:
        return moment
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def millis_between(left: Date, right: Date) -> float:
    """`left - right` in milliseconds, as the docs say a date minus a date is."""
    return (left.moment - right.moment) / dt.timedelta(milliseconds=1)


def epoch_millis(date: Date) -> float:
    """`number(date)`: milliseconds since the Unix epoch (the local time taken as local)."""
    return date.moment.timestamp() * 1000


def scale(span: Duration, factor: float) -> Duration:
    """`duration * n` (and `/ n` as `* 1/n`); months scale only by whole results."""
    months = span.months * factor
    if not float(months).is_integer():
        raise ValueTypeError("a duration of months scales only to whole months")
    return Duration(int(months), span.millis * factor)


_RELATIVE = (  # (below this many seconds, text, divisor): moment.js's fromNow thresholds
    (45, "a few seconds", None),
    (90, "a minute", None),
    (45 * 60, "{} minutes", 60),
    (90 * 60, "an hour", None),
    (22 * 3600, "{} hours", 3600),
    (36 * 3600, "a day", None),
    (26 * 86400, "{} days", 86400),
    (45 * 86400, "a month", None),
    (320 * 86400, "{} months", 30.4375 * 86400),
    (548 * 86400, "a year", None),
)


def relative(date: Date, now: dt.datetime) -> str:
    """`3 days ago`, `in 2 hours`: the date against now, worded as moment.js's `fromNow`."""
    seconds = (now - date.moment).total_seconds()
    span = abs(seconds)
    words = f"{round(span / (365.25 * 86400))} years"
    for limit, text, divisor in _RELATIVE:
        if span < limit:
            words = text.format(round(span / divisor)) if divisor else text
            break
    return f"{words} ago" if seconds >= 0 else f"in {words}"
