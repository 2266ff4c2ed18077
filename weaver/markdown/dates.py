"""Dates written as Obsidian writes them: moment.js format tokens (the Daily notes and
Templates plugins' settings) and the Templates plugin's `{{title}}`, `{{date}}`, `{{time}}`
variables. Pure; English names, as Obsidian's default locale.

Tokens: YYYY YY Q Qo MMMM MMM MM Mo M DDDD DDDo DDD DD Do D dddd ddd dd do d E e GGGG GG
gggg gg WW Wo W ww wo w HH H hh h kk k mm m ss s SSS SS S A a X x ZZ Z; `[text]` is literal.
`w`/`gggg`/`e` are locale weeks, by default the English locale's (Sunday first, week 1 holds
January 1st); a `WeekRule` gives another start day, as moment's `week.dow`/`week.doy` do. `W`
and `GGGG` are ISO weeks whatever the rule.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

_TOKEN = re.compile(
    r"\[[^\]]*\]|YYYYYY|YYYY|YY|Qo|Q|MMMM|MMM|MM|Mo|M|DDDD|DDDo|DDD|DD|Do|D|dddd|ddd|dd|do|d"
    r"|E|e|GGGG|GG|gggg|gg|WW|Wo|W|ww|wo|w|HH|H|hh|h|kk|k|mm|m|ss|s|SSS|SS|S|A|a|X|x|ZZ|Z"
)
_TEMPLATE_VAR = re.compile(r"\{\{\s*(title|date|time)\s*(?::([^}]*))?\}\}", re.IGNORECASE)
# Day names in moment's numbering (`d`: 0 Sunday .. 6 Saturday).
WEEK_DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
_WEEKDAY_VAR = re.compile(r"\{\{\s*(" + "|".join(WEEK_DAYS) + r")\s*:([^}]*)\}\}", re.IGNORECASE)
DEFAULT_DATE_FORMAT = "YYYY-MM-DD"
DEFAULT_TIME_FORMAT = "HH:mm"


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


@dataclass(frozen=True, slots=True)
class WeekRule:
    """A locale's weeks as moment describes them: `dow` the first day of a week (0 Sunday ..
    6 Saturday), `doy` such that January `7 + dow - doy` always lies in week 1."""

    dow: int = 0
    doy: int = 6

    def week_start(self, day: dt.date) -> dt.date:
        """The first day of the week holding `day`."""
        return day - dt.timedelta(days=(_js_weekday(day) - self.dow) % 7)

    def first_week_start(self, year: int) -> dt.date:
        return self.week_start(dt.date(year, 1, 7 + self.dow - self.doy))

    def week_of(self, day: dt.date) -> tuple[int, int]:
        """(week-year, week number) of `day`, as moment's `gggg` and `ww` give them."""
        year = day.year
        if day < self.first_week_start(year):
            year -= 1
        elif day >= self.first_week_start(year + 1):
            year += 1
        return year, (day - self.first_week_start(year)).days // 7 + 1


# moment's bundled English locale, which Obsidian uses unless told otherwise.
ENGLISH_WEEK = WeekRule(dow=0, doy=6)


def _js_weekday(day: dt.date) -> int:
    """0 Sunday .. 6 Saturday, as moment's `d`."""
    return (day.weekday() + 1) % 7


def _offset(when: dt.datetime, colon: bool) -> str:
    delta = when.utcoffset() or dt.timedelta(0)
    minutes = int(delta.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}" if colon else f"{sign}{hours:02d}{mins:02d}"


def _hour12(when: dt.datetime) -> int:
    return when.hour % 12 or 12


_MONTHS: tuple[str, ...] = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS: tuple[str, ...] = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)

_FORMATTERS: dict[str, Callable[[dt.datetime], str]] = {
    "YYYYYY": lambda w: f"{w.year:+07d}",
    "YYYY": lambda w: f"{w.year:04d}",
    "YY": lambda w: f"{w.year % 100:02d}",
    "Q": lambda w: str((w.month - 1) // 3 + 1),
    "Qo": lambda w: ordinal((w.month - 1) // 3 + 1),
    "MMMM": lambda w: _MONTHS[w.month - 1],
    "MMM": lambda w: _MONTHS[w.month - 1][:3],
    "MM": lambda w: f"{w.month:02d}",
    "Mo": lambda w: ordinal(w.month),
    "M": lambda w: str(w.month),
    "DDDD": lambda w: f"{w.timetuple().tm_yday:03d}",
    "DDDo": lambda w: ordinal(w.timetuple().tm_yday),
    "DDD": lambda w: str(w.timetuple().tm_yday),
    "DD": lambda w: f"{w.day:02d}",
    "Do": lambda w: ordinal(w.day),
    "D": lambda w: str(w.day),
    "dddd": lambda w: _DAYS[w.weekday()],
    "ddd": lambda w: _DAYS[w.weekday()][:3],
    "dd": lambda w: _DAYS[w.weekday()][:2],
    "do": lambda w: ordinal((w.weekday() + 1) % 7),
    "d": lambda w: str((w.weekday() + 1) % 7),
    "E": lambda w: str(w.isoweekday()),
    "GGGG": lambda w: f"{w.isocalendar()[0]:04d}",
    "GG": lambda w: f"{w.isocalendar()[0] % 100:02d}",
    "WW": lambda w: f"{w.isocalendar()[1]:02d}",
    "Wo": lambda w: ordinal(w.isocalendar()[1]),
    "W": lambda w: str(w.isocalendar()[1]),
    "HH": lambda w: f"{w.hour:02d}",
    "H": lambda w: str(w.hour),
    "hh": lambda w: f"{_hour12(w):02d}",
    "h": lambda w: str(_hour12(w)),
    "kk": lambda w: f"{w.hour or 24:02d}",
    "k": lambda w: str(w.hour or 24),
    "mm": lambda w: f"{w.minute:02d}",
    "m": lambda w: str(w.minute),
    "ss": lambda w: f"{w.second:02d}",
    "s": lambda w: str(w.second),
    "SSS": lambda w: f"{w.microsecond // 1000:03d}",
    "SS": lambda w: f"{w.microsecond // 10000:02d}",
    "S": lambda w: str(w.microsecond // 100000),
    "A": lambda w: "AM" if w.hour < 12 else "PM",
    "a": lambda w: "am" if w.hour < 12 else "pm",
    "X": lambda w: str(int(w.timestamp())),
    "x": lambda w: str(int(w.timestamp() * 1000)),
    "ZZ": lambda w: _offset(w, colon=False),
    "Z": lambda w: _offset(w, colon=True),
}


# The tokens that depend on the locale's weeks: given (week-year, week, day in the week).
_WEEK_FORMATTERS: dict[str, Callable[[tuple[int, int, int]], str]] = {
    "gggg": lambda y: f"{y[0]:04d}",
    "gg": lambda y: f"{y[0] % 100:02d}",
    "ww": lambda y: f"{y[1]:02d}",
    "wo": lambda y: ordinal(y[1]),
    "w": lambda y: str(y[1]),
    "e": lambda y: str(y[2]),
}


def format_moment(when: dt.datetime, fmt: str, week: WeekRule = ENGLISH_WEEK) -> str:
    """`when` formatted with a moment.js format string, locale weeks by `week`."""

    def token(match: re.Match[str]) -> str:
        text = match.group()
        if text.startswith("["):
            return text[1:-1]
        if text in _WEEK_FORMATTERS:
            day = when.date()
            year, number = week.week_of(day)
            return _WEEK_FORMATTERS[text]((year, number, (_js_weekday(day) - week.dow) % 7))
        return _FORMATTERS[text](when)

    return _TOKEN.sub(token, fmt)


def render_template(
    template: str,
    *,
    title: str,
    when: dt.datetime,
    date_format: str = DEFAULT_DATE_FORMAT,
    time_format: str = DEFAULT_TIME_FORMAT,
    week: WeekRule = ENGLISH_WEEK,
    weekdays: bool = False,
) -> str:
    """A template with `{{title}}`, `{{date}}`, `{{time}}` and `{{date:FORMAT}}` /
    `{{time:FORMAT}}` filled in, as the core Templates plugin fills them. With `weekdays` (a
    weekly note), `{{monday:FORMAT}}` .. `{{sunday:FORMAT}}` too: that day of `when`'s week,
    as the Periodic Notes plugin fills a weekly template."""

    def fill(match: re.Match[str]) -> str:
        name, fmt = match.group(1).casefold(), match.group(2)
        if name == "title":
            return title
        default = date_format if name == "date" else time_format
        return format_moment(when, fmt.strip() if fmt and fmt.strip() else default, week)

    def fill_day(match: re.Match[str]) -> str:
        js_day = WEEK_DAYS.index(match.group(1).casefold())
        start = week.week_start(when.date())
        day = start + dt.timedelta(days=(js_day - week.dow) % 7)
        return format_moment(dt.datetime.combine(day, when.timetz()), match.group(2).strip(), week)

    filled = _TEMPLATE_VAR.sub(fill, template)
    return _WEEKDAY_VAR.sub(fill_day, filled) if weekdays else filled
