"""Methods of dates: `date()`, `format()`, `time()`, `relative()` (its fields are in
`weaver.bases.fields`)."""

from __future__ import annotations

from weaver.bases import times
from weaver.bases.functions.registry import Function, Invocation, expect, fn
from weaver.bases.values import Date, Value
from weaver.markdown.dates import format_moment


def _receiver(call: Invocation) -> Date:
    assert isinstance(call.receiver, Date)
    return call.receiver


def _date(call: Invocation) -> Value:
    moment = _receiver(call).moment
    return Date(moment.replace(hour=0, minute=0, second=0, microsecond=0), has_time=False)


def _format(call: Invocation) -> Value:
    expect(call.args[0], str, "format()'s pattern")
    return format_moment(_receiver(call).moment, str(call.args[0]))


def _time(call: Invocation) -> Value:
    return _receiver(call).moment.strftime("%H:%M:%S")


def _relative(call: Invocation) -> Value:
    return times.relative(_receiver(call), call.env.now)


FUNCTIONS: tuple[Function, ...] = (
    fn("date", "date", _date),
    fn("date", "format", _format, (1, 1)),
    fn("date", "time", _time),
    fn("date", "relative", _relative),
)
