"""Methods of strings, with JavaScript's meaning where the docs defer to it (`slice` counts
from the end for a negative index, `replace` with a string replaces every occurrence)."""

from __future__ import annotations

import re

from weaver.bases.functions.registry import Function, Invocation, expect, fn, number_arg
from weaver.bases.values import Regex, Value, ValueTypeError

_MAX_LENGTH = 1_000_000  # a formula's text, not a way to fill the memory

# `$1` in a replacement is a capture group, as in JavaScript; `$&` the whole match.
_DOLLAR = re.compile(r"\$(\d+|&|\$)")


def _text(call: Invocation) -> str:
    assert isinstance(call.receiver, str)
    return call.receiver


def _strings(call: Invocation, name: str) -> list[str]:
    for value in call.args:
        expect(value, str, f"{name}()'s arguments")
    return [str(value) for value in call.args]


def _contains(call: Invocation) -> Value:
    return _strings(call, "contains")[0] in _text(call)


def _contains_all(call: Invocation) -> Value:
    return all(part in _text(call) for part in _strings(call, "containsAll"))


def _contains_any(call: Invocation) -> Value:
    return any(part in _text(call) for part in _strings(call, "containsAny"))


def _starts_with(call: Invocation) -> Value:
    return _text(call).startswith(_strings(call, "startsWith")[0])


def _ends_with(call: Invocation) -> Value:
    return _text(call).endswith(_strings(call, "endsWith")[0])


def _replace(call: Invocation) -> Value:
    pattern, replacement = call.args
    expect(replacement, str, "replace()'s replacement")
    if isinstance(pattern, Regex):
        template = _DOLLAR.sub(_python_group, str(replacement))
        count = 0 if pattern.is_global else 1
        return pattern.compiled.sub(template, _text(call), count=count)
    expect(pattern, str, "replace()'s pattern")
    return _text(call).replace(str(pattern), str(replacement))


def _python_group(match: re.Match[str]) -> str:
    group = match.group(1)
    return "$" if group == "$" else r"\g<0>" if group == "&" else rf"\g<{group}>"


def _split(call: Invocation) -> Value:
    separator = call.args[0]
    if isinstance(separator, Regex):
        parts: list[str] = separator.compiled.split(_text(call))
    else:
        expect(separator, str, "split()'s separator")
        parts = list(_text(call)) if separator == "" else _text(call).split(str(separator))
    limit = call.args[1] if len(call.args) > 1 else None
    if limit is not None:
        parts = parts[: int(number_arg(limit, "split()'s count"))]
    return list[Value](parts)


def _slice(call: Invocation) -> Value:
    bounds = [int(number_arg(value, "slice()'s indexes")) for value in call.args]
    return _text(call)[bounds[0] : bounds[1] if len(bounds) > 1 else None]


def _repeat(call: Invocation) -> Value:
    text, count = _text(call), int(number_arg(call.args[0], "repeat()'s count"))
    if len(text) * count > _MAX_LENGTH:
        raise ValueTypeError(f"repeat() would make a string too long (over {_MAX_LENGTH:,})")
    return text * count


def _title(call: Invocation) -> Value:
    return re.sub(r"\S+", lambda word: word.group()[0].upper() + word.group()[1:], _text(call))


FUNCTIONS: tuple[Function, ...] = (
    fn("string", "contains", _contains, (1, 1)),
    fn("string", "containsAll", _contains_all, (1, None)),
    fn("string", "containsAny", _contains_any, (1, None)),
    fn("string", "startsWith", _starts_with, (1, 1)),
    fn("string", "endsWith", _ends_with, (1, 1)),
    fn("string", "lower", lambda call: _text(call).lower()),
    fn("string", "title", _title),
    fn("string", "trim", lambda call: _text(call).strip()),
    fn("string", "reverse", lambda call: _text(call)[::-1]),
    fn("string", "replace", _replace, (2, 2)),
    fn("string", "split", _split, (1, 2)),
    fn("string", "slice", _slice, (1, 2)),
    fn("string", "repeat", _repeat, (1, 1)),
)
