"""Methods of lists. `filter`, `map` and `reduce` evaluate their argument once per element,
with `value`, `index` (and `acc`) bound to it."""

from __future__ import annotations

import functools

from weaver.bases.functions.registry import Function, Invocation, expect, fn, number_arg
from weaver.bases.values import Value, compare, equals, is_truthy, to_text


def _items(call: Invocation) -> list[Value]:
    assert isinstance(call.receiver, list)
    return call.receiver


def _contains(call: Invocation) -> Value:
    return any(equals(item, call.args[0]) for item in _items(call))


def _contains_all(call: Invocation) -> Value:
    return all(any(equals(item, wanted) for item in _items(call)) for wanted in call.args)


def _contains_any(call: Invocation) -> Value:
    return any(equals(item, wanted) for item in _items(call) for wanted in call.args)


def _filter(call: Invocation) -> Value:
    test = call.thunks[0]
    return [v for i, v in enumerate(_items(call)) if is_truthy(test({"value": v, "index": i}))]


def _map(call: Invocation) -> Value:
    change = call.thunks[0]
    return [change({"value": v, "index": i}) for i, v in enumerate(_items(call))]


def _reduce(call: Invocation) -> Value:
    step, acc = call.thunks[0], call.thunks[1]({})
    for index, value in enumerate(_items(call)):
        acc = step({"value": value, "index": index, "acc": acc})
    return acc


def _flat(call: Invocation) -> Value:
    flat: list[Value] = []
    for item in _items(call):
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def _join(call: Invocation) -> Value:
    separator = call.args[0] if call.args else ","
    expect(separator, str, "join()'s separator")
    return str(separator).join(to_text(item) for item in _items(call))


def _slice(call: Invocation) -> Value:
    bounds = [int(number_arg(value, "slice()'s indexes")) for value in call.args]
    return _items(call)[bounds[0] : bounds[1] if len(bounds) > 1 else None]


def _sort(call: Invocation) -> Value:
    return sorted(_items(call), key=functools.cmp_to_key(compare))


def _mean(call: Invocation) -> Value:
    """The mean of the numbers (nulls skipped): the syntax page's summaries use it."""
    numbers = [number_arg(item, "mean()'s elements") for item in _items(call) if item is not None]
    return sum(numbers) / len(numbers) if numbers else None


def _unique(call: Invocation) -> Value:
    kept: list[Value] = []
    for item in _items(call):
        if not any(equals(item, seen) for seen in kept):
            kept.append(item)
    return kept


FUNCTIONS: tuple[Function, ...] = (
    fn("list", "contains", _contains, (1, 1)),
    fn("list", "containsAll", _contains_all, (1, None)),
    fn("list", "containsAny", _contains_any, (1, None)),
    fn("list", "filter", _filter, (1, 1), lazy=True),
    fn("list", "map", _map, (1, 1), lazy=True),
    fn("list", "reduce", _reduce, (2, 2), lazy=True),
    fn("list", "flat", _flat),
    fn("list", "join", _join, (0, 1)),
    fn("list", "reverse", lambda call: _items(call)[::-1]),
    fn("list", "slice", _slice, (1, 2)),
    fn("list", "sort", _sort),
    fn("list", "unique", _unique),
    fn("list", "mean", _mean),
)
