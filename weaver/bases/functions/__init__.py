"""The documented Bases functions, one module per type they are called on, in one registry."""

from __future__ import annotations

from weaver.bases.functions import (
    any_value,
    dates,
    files,
    global_functions,
    lists,
    numbers,
    objects,
    strings,
)
from weaver.bases.functions.registry import Registry

REGISTRY = Registry(
    [
        *global_functions.FUNCTIONS,
        *any_value.FUNCTIONS,
        *dates.FUNCTIONS,
        *strings.FUNCTIONS,
        *numbers.FUNCTIONS,
        *lists.FUNCTIONS,
        *files.FUNCTIONS,
        *objects.FUNCTIONS,
    ]
)

# Every function the docs list, as `receiver.name` (`global` for a function of no receiver),
# and whether Weaver evaluates it. docs/bases.md says why each unsupported one is not.
DOCUMENTED_FUNCTIONS: tuple[str, ...] = (
    "global.escapeHTML", "global.date", "global.duration", "global.file", "global.html",
    "global.if", "global.image", "global.icon", "global.link", "global.list", "global.max",
    "global.min", "global.now", "global.number", "global.today", "global.random",
    "any.isTruthy", "any.isType", "any.toString",
    "date.date", "date.format", "date.time", "date.relative", "date.isEmpty",
    "string.contains", "string.containsAll", "string.containsAny", "string.endsWith",
    "string.isEmpty", "string.lower", "string.replace", "string.repeat", "string.reverse",
    "string.slice", "string.split", "string.startsWith", "string.title", "string.trim",
    "number.abs", "number.ceil", "number.floor", "number.isEmpty", "number.round",
    "number.toFixed",
    "list.contains", "list.containsAll", "list.containsAny", "list.filter", "list.flat",
    "list.isEmpty", "list.join", "list.map", "list.reduce", "list.reverse", "list.slice",
    "list.sort", "list.unique",
    "list.mean",  # not on the Functions page; the syntax page's summaries example uses it
    "link.asFile", "link.linksTo",
    "file.asLink", "file.hasLink", "file.hasProperty", "file.hasTag", "file.inFolder",
    "object.isEmpty", "object.keys", "object.values",
    "regexp.matches",
)  # fmt: skip


def _supported(qualified: str) -> bool:
    receiver, name = qualified.split(".")
    keys = REGISTRY.keys()
    return (receiver, name) in keys or (receiver != "global" and ("any", name) in keys)


SUPPORTED_FUNCTIONS: frozenset[str] = frozenset(filter(_supported, DOCUMENTED_FUNCTIONS))
UNSUPPORTED_FUNCTIONS: frozenset[str] = frozenset(DOCUMENTED_FUNCTIONS) - SUPPORTED_FUNCTIONS
