"""Methods every value has: `isTruthy()`, `isType()`, `toString()`, `isEmpty()`."""

from __future__ import annotations

from weaver.bases.functions.registry import Function, Invocation, expect, fn
from weaver.bases.values import Value, is_empty, is_truthy, to_text, type_name


def _is_truthy(call: Invocation) -> Value:
    return is_truthy(call.receiver)


def _is_type(call: Invocation) -> Value:
    expect(call.args[0], str, "isType()'s type")
    return type_name(call.receiver) == call.args[0]


def _to_string(call: Invocation) -> Value:
    return to_text(call.receiver)


def _is_empty(call: Invocation) -> Value:
    return is_empty(call.receiver)


FUNCTIONS: tuple[Function, ...] = (
    fn("any", "isTruthy", _is_truthy),
    fn("any", "isType", _is_type, (1, 1)),
    fn("any", "toString", _to_string),
    fn("any", "isEmpty", _is_empty),
)
