"""A base's `filters` section read into a tree: an expression string is a `Condition`; a mapping
with one key, `and`, `or` or `not`, holding a list, is a group (`AllOf`, `AnyOf`, `NoneOf`).
Groups nest. The help's "Views" page defines `not` as "none of the following are true".

`conjuncts` gives the expressions a row must pass for the whole filter to pass, so a caller (the
cache) may narrow the files it loads before the filter runs on each of them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from weaver.bases.compiler import Program, compile_expression
from weaver.bases.evaluate import Context, matches
from weaver.errors import BaseFileError

_GROUPS = ("and", "or", "not")


@dataclass(frozen=True, slots=True)
class Condition:
    program: Program


@dataclass(frozen=True, slots=True)
class AllOf:
    items: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """True when any item is; an empty `or:` filters nothing, like an empty `and:`."""

    items: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class NoneOf:
    items: tuple[Filter, ...]


Filter: TypeAlias = Condition | AllOf | AnyOf | NoneOf


def parse_filter(raw: object, where: str) -> Filter:
    """A filter from its YAML (or JSON) form; `where` names its place for errors."""
    if isinstance(raw, str):
        return Condition(compile_expression(raw))
    if not isinstance(raw, Mapping):
        raise BaseFileError(where, _SHAPE)
    if len(raw) != 1 or next(iter(raw)) not in _GROUPS:
        keys = ", ".join(repr(str(key)) for key in raw) or "none"
        raise BaseFileError(where, f"a filter group has one key, and/or/not (here: {keys})")
    key, items = next(iter(raw.items()))
    if not isinstance(items, list):
        raise BaseFileError(f"{where}.{key}", f"'{key}' holds a list of filters")
    parsed = tuple(parse_filter(item, f"{where}.{key}[{i}]") for i, item in enumerate(items))
    match key:
        case "and":
            return AllOf(parsed)
        case "or":
            return AnyOf(parsed)
        case _:
            return NoneOf(parsed)


_SHAPE = "a filter is an expression in a string, or a mapping with one key: and, or, not"


def filter_matches(filter: Filter, context: Context) -> bool:
    """Whether the row of `context` passes; an expression's error propagates, never a skip."""
    match filter:
        case Condition():
            return matches(filter.program, context)
        case AllOf():
            return all(filter_matches(item, context) for item in filter.items)
        case AnyOf():
            items = filter.items
            return not items or any(filter_matches(item, context) for item in items)
        case NoneOf():
            return not any(filter_matches(item, context) for item in filter.items)


def compile_filter(filter: Filter) -> Callable[[Context], bool]:
    """`filter_matches` for one filter made once into nested closures: a view asks it of every
    file, and walking the tree for each costs a third more."""
    match filter:
        case Condition():
            return functools.partial(matches, filter.program)
        case AllOf():
            tests = [compile_filter(item) for item in filter.items]
            return lambda context: all(test(context) for test in tests)
        case AnyOf():
            tests = [compile_filter(item) for item in filter.items]
            return lambda context: not tests or any(test(context) for test in tests)
        case NoneOf():
            tests = [compile_filter(item) for item in filter.items]
            return lambda context: not any(test(context) for test in tests)


def conjuncts(filter: Filter | None) -> list[Program]:
    """The expressions every passing row makes true: the filter itself when it is one
    expression, and the expressions directly under `and` groups (nested `and`s included).
    Anything under `or` or `not` is left out: no row has to pass it."""
    match filter:
        case Condition():
            return [filter.program]
        case AllOf():
            return [program for item in filter.items for program in conjuncts(item)]
        case _:
            return []


def all_of(*filters: Filter | None) -> Filter | None:
    """The filters present, joined with `and` (a base's global filters and a view's)."""
    present = tuple(item for item in filters if item is not None)
    if len(present) <= 1:
        return present[0] if present else None
    return AllOf(present)
