"""Methods of objects (`keys()`, `values()`) and regular expressions (`matches()`)."""

from __future__ import annotations

from weaver.bases.functions.registry import Function, Invocation, expect, fn
from weaver.bases.values import Regex, Value


def _object(call: Invocation) -> dict[str, Value]:
    assert isinstance(call.receiver, dict)
    return call.receiver


def _matches(call: Invocation) -> Value:
    assert isinstance(call.receiver, Regex)
    expect(call.args[0], str, "matches()'s text")
    return call.receiver.compiled.search(str(call.args[0])) is not None


FUNCTIONS: tuple[Function, ...] = (
    fn("object", "keys", lambda call: list[Value](_object(call))),
    fn("object", "values", lambda call: list(_object(call).values())),
    fn("regexp", "matches", _matches, (1, 1)),
)
