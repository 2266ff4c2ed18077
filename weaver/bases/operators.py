"""What the operators do to values. `+` joins text when either side is a string, and moves a
date by a duration (or a duration's text, `"1w"`); a date minus a date is milliseconds. A
missing value (null) makes an arithmetic result null and an ordering comparison false, since a
property most notes lack must not stop a whole view; any other mix of types is a type error."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from weaver.bases import times
from weaver.bases.values import (
    Date,
    Duration,
    Value,
    ValueTypeError,
    compare,
    equals,
    to_text,
    type_name,
)

_NUMBERS = (int, float)
_ORDERED: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}


def _number(value: Value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_duration(value: Value) -> Duration | None:
    if isinstance(value, Duration):
        return value
    return times.parse_duration(value) if isinstance(value, str) else None


def arithmetic(op: str, left: Value, right: Value) -> Value:
    if isinstance(left, Date):
        return _date_arithmetic(op, left, right)
    if op == "+" and (isinstance(left, str) or isinstance(right, str)):
        return ("" if left is None else to_text(left)) + ("" if right is None else to_text(right))
    if left is None or right is None:
        return None
    if isinstance(left, Duration):
        return _duration_arithmetic(op, left, right)
    if _number(left) and _number(right):
        assert isinstance(left, int | float) and isinstance(right, int | float)
        return _numbers(op, left, right)
    raise _mismatch(op, left, right)


def _mismatch(op: str, left: Value, right: Value) -> ValueTypeError:
    return ValueTypeError(f"cannot use {op!r} on {type_name(left)} and {type_name(right)}")


def _date_arithmetic(op: str, left: Date, right: Value) -> Value:
    if op == "-" and isinstance(right, Date):
        return times.millis_between(left, right)
    span = _as_duration(right) if op in "+-" else None
    if span is None:
        if right is None:
            return None
        raise _mismatch(op, left, right)
    return times.shift(left, span, 1 if op == "+" else -1)


def _duration_arithmetic(op: str, left: Duration, right: Value) -> Value:
    if op in "+-" and isinstance(right, Duration):
        sign = 1 if op == "+" else -1
        return Duration(left.months + sign * right.months, left.millis + sign * right.millis)
    if op in "*/" and _number(right):
        assert isinstance(right, int | float)
        if op == "/" and right == 0:
            raise ValueTypeError("a duration divided by zero")
        return times.scale(left, right if op == "*" else 1 / right)
    raise _mismatch(op, left, right)


def _numbers(op: str, left: float, right: float) -> Value:
    match op:
        case "+":
            return left + right
        case "-":
            return left - right
        case "*":
            return left * right
        case "/":
            return _divide(left, right)
    if right == 0:
        return math.nan  # JavaScript: n % 0 is NaN
    remainder = math.fmod(left, right)  # the sign of the left side, as JavaScript's `%`
    return int(remainder) if isinstance(left, int) and isinstance(right, int) else remainder


def _divide(left: float, right: float) -> float:
    if right == 0:  # JavaScript's answer, rather than an exception
        return math.nan if left == 0 or math.isnan(left) else math.copysign(math.inf, left)
    return left / right


def comparison(op: str, left: Value, right: Value) -> bool:
    if op in ("==", "!="):
        return equals(*_dates_aligned(left, right)) == (op == "==")
    if left is None or right is None:
        return False
    if type(left) in _NUMBERS and type(right) in _NUMBERS:  # the common case, without compare()
        assert isinstance(left, int | float) and isinstance(right, int | float)
        return bool(_ORDERED[op](left, right))
    order = compare(*_dates_aligned(left, right))
    match op:
        case "<":
            return order < 0
        case ">":
            return order > 0
        case "<=":
            return order <= 0
    return order >= 0


def _dates_aligned(left: Value, right: Value) -> tuple[Value, Value]:
    """A date compared with a date's text (`file.mtime > "2025-01-01"`) reads the text."""
    if isinstance(left, Date) and isinstance(right, str) and times.looks_like_date(right):
        return left, times.parse_date(right)
    if isinstance(right, Date) and isinstance(left, str) and times.looks_like_date(left):
        return times.parse_date(left), right
    return left, right


def negate(value: Value) -> Value:
    if value is None:
        return None
    if isinstance(value, Duration):
        return Duration(-value.months, -value.millis)
    if _number(value):
        assert isinstance(value, int | float)
        return -value
    raise ValueTypeError(f"cannot negate a {type_name(value)}")
