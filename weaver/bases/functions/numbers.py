"""Methods of numbers, rounding as JavaScript does: halves up (`(2.5).round()` is 3,
`(-2.5).round()` is -2), and `toFixed` choosing the larger of two equally near results."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from weaver.bases.functions.registry import Function, Invocation, fn, number_arg
from weaver.bases.values import Value


def _number(call: Invocation) -> float:
    assert isinstance(call.receiver, int | float)
    return call.receiver


def _whole(number: float) -> int | float:
    return int(number) if math.isfinite(number) else number


def _round(call: Invocation) -> Value:
    digits = int(number_arg(call.args[0], "round()'s digits")) if call.args else 0
    scale = 10**digits
    rounded = math.floor(_number(call) * scale + 0.5) / scale
    return _whole(rounded) if not digits else rounded


def _to_fixed(call: Invocation) -> Value:
    digits = int(number_arg(call.args[0], "toFixed()'s precision"))
    places = Decimal(1).scaleb(-digits)
    return str(Decimal(_number(call)).quantize(places, rounding=ROUND_HALF_UP))


FUNCTIONS: tuple[Function, ...] = (
    fn("number", "abs", lambda call: abs(_number(call))),
    fn("number", "ceil", lambda call: _whole(math.ceil(_number(call)))),
    fn("number", "floor", lambda call: _whole(math.floor(_number(call)))),
    fn("number", "round", _round, (0, 1)),
    fn("number", "toFixed", _to_fixed, (1, 1)),
)
