"""One table of the language's functions, keyed by the type they are called on (`global` for
`f(x)`, `any` for a method every value has) and their name, with their arity. Lazy functions
(`if`, `filter`, `map`, `reduce`) get their arguments unevaluated, as thunks that evaluate them
with extra names bound (`value`, `index`, `acc`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from weaver.bases.values import FileFacts, Value, ValueTypeError, type_name

Thunk = Callable[[Mapping[str, Value]], Value]


class Services(Protocol):
    """What functions may ask of the evaluation's environment (`bases.Environment`)."""

    @property
    def now(self) -> dt.datetime: ...
    @property
    def today(self) -> dt.datetime: ...
    @property
    def find_file(self) -> Callable[[str], FileFacts | None]: ...
    @property
    def random(self) -> Callable[[], float]: ...


@dataclass(slots=True)  # not frozen: one is made per call per row, and frozen ones cost more
class Invocation:
    """One call: the receiver (None for a global function), the evaluated arguments (for a
    lazy function: `thunks` instead), and the environment."""

    receiver: Value
    args: tuple[Value, ...]
    thunks: tuple[Thunk, ...]
    env: Services


@dataclass(frozen=True, slots=True)
class Function:
    receiver: str
    name: str
    min_args: int
    max_args: int | None  # None: any number more
    run: Callable[[Invocation], Value]
    lazy: bool = False

    @property
    def signature(self) -> str:
        owner = "" if self.receiver == "global" else f"{self.receiver}."
        return f"{owner}{self.name}()"


def fn(
    receiver: str,
    name: str,
    run: Callable[[Invocation], Value],
    args: tuple[int, int | None] = (0, 0),
    lazy: bool = False,
) -> Function:
    return Function(receiver, name, args[0], args[1], run, lazy)


class Registry:
    """The functions by (receiver type, name); a second function of the same key is refused."""

    def __init__(self, functions: Iterable[Function]) -> None:
        self._table: dict[tuple[str, str], Function] = {}
        for function in functions:
            key = (function.receiver, function.name)
            if key in self._table:
                raise ValueError(f"function registered twice: {function.signature}")
            self._table[key] = function

    def keys(self) -> frozenset[tuple[str, str]]:
        return frozenset(self._table)

    def knows(self, name: str) -> bool:
        return any(key[1] == name for key in self._table)

    def get_global(self, name: str) -> Function | None:
        return self._table.get(("global", name))

    def get_method(self, receiver: Value, name: str) -> Function | None:
        found = self._table.get((type_name(receiver), name))
        return found or self._table.get(("any", name))


def check_arity(function: Function, count: int) -> None:
    low, high = function.min_args, function.max_args
    if count < low or (high is not None and count > high):
        wanted = str(low) if low == high else f"{low} to {high}" if high else f"at least {low}"
        raise ValueTypeError(f"{function.signature} takes {wanted} arguments, got {count}")


def expect(value: Value, kind: type | tuple[type, ...], what: str) -> None:
    """A type error unless `value` is of `kind` (a bool is never taken for a number)."""
    number_wanted = kind in (int, float) or (isinstance(kind, tuple) and float in kind)
    if not isinstance(value, kind) or (isinstance(value, bool) and number_wanted):
        raise ValueTypeError(f"{what} must be a {_kind_name(kind)}, not {type_name(value)}")


def number_arg(value: Value, what: str) -> float:
    """`value` as a number, or a type error naming `what`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueTypeError(f"{what} must be a number, not {type_name(value)}")
    return value


def text_arg(value: Value, what: str) -> str:
    """`value` as a string, or a type error naming `what`."""
    if not isinstance(value, str):
        raise ValueTypeError(f"{what} must be a string, not {type_name(value)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "number", float: "number", str: "string", list: "list", dict: "object"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__.lower()) for k in kinds))
