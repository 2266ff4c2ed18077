"""Evaluating a compiled expression for one row: `evaluate(program, Context(file, env))`.

A `Context` is one row: its file, the view's `Environment`, and the formulas computed for it so
far (each runs once per row, when first asked for; a formula reaching itself is an error).
Every error is a `BaseExpressionError` at the position of the node that caused it."""

from __future__ import annotations

from collections.abc import Mapping

from weaver.bases.compiler import Program
from weaver.bases.environment import Environment
from weaver.bases.values import File, FileFacts, Value, ValueTypeError, is_truthy

_NO_BINDINGS: Mapping[str, Value] = {}


class Context:
    """One row (share one Context between a row's filters and formulas, so each formula runs
    once)."""

    def __init__(self, file: FileFacts, env: Environment) -> None:
        self.file = File(file)
        self.env = env
        self._formulas: dict[str, Value] = {}
        self._running: list[str] = []

    def formula(self, name: str) -> Value:
        if name in self._formulas:
            return self._formulas[name]
        program = self.env.formulas.get(name)
        if program is None:
            raise ValueTypeError(f"unknown formula {name!r}")
        if name in self._running:
            # Raised as a type error, so the error points at the reference that closed the loop.
            chain = " -> ".join([*self._running[self._running.index(name) :], name])
            raise ValueTypeError(f"formulas refer to each other: {chain}")
        self._running.append(name)
        try:
            value = program.run(self, _NO_BINDINGS)
        finally:
            self._running.pop()
        self._formulas[name] = value
        return value


def evaluate(
    program: Program, context: Context, bindings: Mapping[str, Value] = _NO_BINDINGS
) -> Value:
    """The value of `program` for the row of `context` (`bindings`: extra names, such as a
    summary's `values`)."""
    return program.run(context, bindings)


def matches(program: Program, context: Context) -> bool:
    """Whether a filter keeps the row: its value, taken as true or false."""
    return is_truthy(program.run(context, _NO_BINDINGS))
