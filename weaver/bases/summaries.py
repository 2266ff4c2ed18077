"""The built-in summaries of a view's column, as the help's "Bases syntax" and "Table view" pages
list them. Each takes the column's values over the rows it summarises and gives one value.

Where the pages leave a detail open: the number summaries read numbers only (booleans and
numeric text are not numbers) and give null when the column has none; `Range` is a number for
numbers and a duration for dates; `Stddev` is the population standard deviation; `Checked` and
`Unchecked` count `true` and `false` (an empty cell is neither); `Unique` counts the distinct
values that are not empty."""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence

from weaver.bases import times
from weaver.bases.values import Date, Duration, File, Link, Value, is_empty

Summary = Callable[[Sequence[Value]], Value]


def _numbers(values: Sequence[Value]) -> list[float]:
    return [
        value
        for value in values
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ]


def _dates(values: Sequence[Value]) -> list[Date]:
    return [value for value in values if isinstance(value, Date)]


def _of_numbers(reduce: Callable[[list[float]], float]) -> Summary:
    def summary(values: Sequence[Value]) -> Value:
        numbers = _numbers(values)
        return reduce(numbers) if numbers else None

    return summary


def _range(values: Sequence[Value]) -> Value:
    numbers = _numbers(values)
    if numbers:
        return max(numbers) - min(numbers)
    dates = _dates(values)
    if dates:
        earliest, latest = min(dates, key=_moment), max(dates, key=_moment)
        return Duration(millis=times.millis_between(latest, earliest))
    return None


def _moment(date: Date) -> dt.datetime:
    return date.moment


def _earliest(values: Sequence[Value]) -> Value:
    dates = _dates(values)
    return min(dates, key=_moment) if dates else None


def _latest(values: Sequence[Value]) -> Value:
    dates = _dates(values)
    return max(dates, key=_moment) if dates else None


def _count(test: Callable[[Value], bool]) -> Summary:
    return lambda values: sum(1 for value in values if test(value))


def _unique(values: Sequence[Value]) -> Value:
    return len({identity(value) for value in values if not is_empty(value)})


def identity(value: Value) -> Hashable:
    """A hashable stand-in for a value, the same for values of one type that `==` holds equal
    (1 and 1.0; two dates at one moment): what `Unique` counts and what a view groups by. A
    link counts by its target as written (`[[Plan]]` and `[[Plan.md]]` are one)."""
    match value:
        case bool() | None | str():
            return (type(value).__name__, value)
        case int() | float():
            return ("number", float(value))
        case Date():
            return ("date", value.moment)
        case Link():
            target = value.target.removesuffix(".md")
            return ("link", target)
        case File():
            return ("file", value.facts.path)
        case list():
            return ("list", tuple(identity(item) for item in value))
        case dict():
            return ("object", tuple(sorted((key, identity(item)) for key, item in value.items())))
        case _:
            return (type(value).__name__, value)


BUILTIN_SUMMARIES: Mapping[str, Summary] = {
    "Average": _of_numbers(statistics.fmean),
    "Min": _of_numbers(min),
    "Max": _of_numbers(max),
    "Sum": _of_numbers(math.fsum),
    "Range": _range,
    "Median": _of_numbers(statistics.median),
    "Stddev": _of_numbers(statistics.pstdev),
    "Earliest": _earliest,
    "Latest": _latest,
    "Checked": _count(lambda value: value is True),
    "Unchecked": _count(lambda value: value is False),
    "Empty": _count(is_empty),
    "Filled": _count(lambda value: not is_empty(value)),
    "Unique": _unique,
}
