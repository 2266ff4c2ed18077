"""Functions called without a receiver: `if()`, `date()`, `now()`, `link()`, `list()`, ..."""

from __future__ import annotations

import html

from weaver.bases import times
from weaver.bases.functions.registry import Function, Invocation, expect, fn, text_arg
from weaver.bases.values import (
    Date,
    File,
    Link,
    Markup,
    Value,
    ValueTypeError,
    is_truthy,
    to_text,
    type_name,
)


def _if(call: Invocation) -> Value:
    condition = call.thunks[0]({})
    if is_truthy(condition):
        return call.thunks[1]({})
    return call.thunks[2]({}) if len(call.thunks) > 2 else None


def _date(call: Invocation) -> Value:
    value = call.args[0]
    if isinstance(value, Date) or value is None:
        return value
    expect(value, str, "date()'s argument")
    assert isinstance(value, str)
    return times.parse_date(value)


def _duration(call: Invocation) -> Value:
    expect(call.args[0], str, "duration()'s argument")
    return times.parse_duration(str(call.args[0]))


def _now(call: Invocation) -> Value:
    return Date(call.env.now, has_time=True)


def _today(call: Invocation) -> Value:
    return Date(call.env.today, has_time=False)


def _link(call: Invocation) -> Value:
    target, display = call.args[0], call.args[1] if len(call.args) > 1 else None
    if isinstance(target, File):
        target = target.facts.path
    elif isinstance(target, Link):
        target = target.target
    expect(target, str, "link()'s path")
    assert isinstance(target, str)
    text = target.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text, _, alias = text[2:-2].partition("|")
        display = display if display is not None else (alias or None)
    return Link(text, None if display is None else _display(display))


def _display(value: Value) -> str:
    return to_text(value)


def _list(call: Invocation) -> Value:
    value = call.args[0]
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _numbers(call: Invocation, name: str) -> list[float]:
    found: list[float] = []
    for value in call.args:
        if value is None:
            continue
        expect(value, (int, float), f"{name}()'s arguments")
        assert isinstance(value, int | float)
        found.append(value)
    return found


def _max(call: Invocation) -> Value:
    numbers = _numbers(call, "max")
    return max(numbers) if numbers else None


def _min(call: Invocation) -> Value:
    numbers = _numbers(call, "min")
    return min(numbers) if numbers else None


def _number(call: Invocation) -> Value:
    value = call.args[0]
    match value:
        case None:
            return None
        case bool():
            return int(value)
        case int() | float():
            return value
        case Date():
            return times.epoch_millis(value)
        case str():
            return _parse_number(value)
    raise ValueTypeError(f"number() cannot turn a {type_name(value)} into a number")


def _parse_number(text: str) -> float:
    try:
        number = float(text.strip())
    except ValueError:
        raise ValueTypeError(f"not a number: {text!r}") from None
    return int(number) if number.is_integer() and "." not in text else number


def _escape_html(call: Invocation) -> Value:
    expect(call.args[0], str, "escapeHTML()'s argument")
    return html.escape(str(call.args[0]))


def _file(call: Invocation) -> Value:
    value = call.args[0]
    if isinstance(value, File):
        return value
    target = value.target if isinstance(value, Link) else value
    expect(target, str, "file()'s argument")
    facts = call.env.find_file(str(target))
    return None if facts is None else File(facts)


def _html(call: Invocation) -> Value:
    return Markup("html", text_arg(call.args[0], "html()'s argument"))


def _icon(call: Invocation) -> Value:
    return Markup("icon", text_arg(call.args[0], "icon()'s name"))


def _image(call: Invocation) -> Value:
    source = call.args[0]
    match source:
        case File():
            return Markup("image", source.facts.path)
        case Link():
            return Markup("image", source.target)
    return Markup("image", text_arg(source, "image()'s path"))


def _random(call: Invocation) -> Value:
    return call.env.random()


FUNCTIONS: tuple[Function, ...] = (
    fn("global", "if", _if, (2, 3), lazy=True),
    fn("global", "date", _date, (1, 1)),
    fn("global", "duration", _duration, (1, 1)),
    fn("global", "now", _now),
    fn("global", "today", _today),
    fn("global", "link", _link, (1, 2)),
    fn("global", "list", _list, (1, 1)),
    fn("global", "max", _max, (1, None)),
    fn("global", "min", _min, (1, None)),
    fn("global", "number", _number, (1, 1)),
    fn("global", "escapeHTML", _escape_html, (1, 1)),
    fn("global", "file", _file, (1, 1)),
    fn("global", "random", _random),
    fn("global", "html", _html, (1, 1)),
    fn("global", "icon", _icon, (1, 1)),
    fn("global", "image", _image, (1, 1)),
)
