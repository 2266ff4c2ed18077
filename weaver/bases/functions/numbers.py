"""Methods of numbers, rounding as JavaScript does: halves up (`(2.5).round()` is 3,
`(-2.5).round()` is -2), and `toFixed` choosing the larger of two equally near results."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

from weaver.bases.functions.registry import Function, Invocation, fn, number_arg
from weaver.bases.values import Value, ValueTypeError, format_number

_MAX_DIGITS = 100  # JavaScript's toFixed() allows as many


def _number(call: Invocation) -> float:
    assert isinstance(call.receiver, int | float)
    return call.receiver


def _whole(round_to: Callable[[float], float], number: float) -> float:
    """`round_to(number)` as a whole number; Infinity and NaN stay as they are, as in JS."""
    return int(round_to(number)) if math.isfinite(number) else number


def _digits(call: Invocation, name: str) -> int:
    digits = int(number_arg(call.args[0], f"{name}'s digits")) if call.args else 0
    if not 0 <= digits <= _MAX_DIGITS:
        raise ValueTypeError(f"{name}'s digits must be between 0 and {_MAX_DIGITS}")
    return digits


def _round(call: Invocation) -> Value:
    digits, number = _digits(call, "round()"), _number(call)
    if not digits:
        return _whole(lambda n: math.floor(n + 0.5), number)
    scale = 10**digits
    return math.floor(number * scale + 0.5) / scale if math.isfinite(number) else number


def _to_fixed(call: Invocation) -> Value:
    digits, number = _digits(call, "toFixed()"), _number(call)
    if not math.isfinite(number):
        return format_number(number)
    places = Decimal(1).scaleb(-digits)
    return str(Decimal(number).quantize(places, rounding=ROUND_HALF_UP))


FUNCTIONS: tuple[Function, ...] = (
    fn("number", "abs", lambda call: abs(_number(call))),
    fn("number", "ceil", lambda call: _whole(math.ceil, _number(call))),
    fn("number", "floor", lambda call: _whole(math.floor, _number(call))),
    fn("number", "round", _round, (0, 1)),
    fn("number", "toFixed", _to_fixed, (1, 1)),
)
