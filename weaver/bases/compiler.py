"""An expression's tree turned, once, into nested Python closures: a view evaluates its filters
and formulas for thousands of rows, and a closure per node is several times faster than walking
the tree for each row. Each closure that can fail turns a `ValueTypeError` into a
`BaseExpressionError` at its own node's position, so the innermost fault is the one reported.

Names: `file` is the row's file, `note` its frontmatter, `formula.x` another formula of the view,
`this` the file the base is shown for; any other bare name is a note property (`status` is
`note.status`), unless a list method binds it (`value`, `index`, `acc`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from weaver.bases import fields, operators
from weaver.bases.functions import REGISTRY
from weaver.bases.functions.registry import Function, Invocation, Services, check_arity
from weaver.bases.syntax import (
    Binary,
    Call,
    Index,
    ListNode,
    Literal,
    Member,
    Name,
    Node,
    ObjectNode,
    Unary,
    parse_expression,
)
from weaver.bases.values import File, FileFacts, Value, ValueTypeError, is_truthy, type_name
from weaver.errors import BaseExpressionError


class RowEnvironment(Services, Protocol):
    @property
    def this(self) -> FileFacts | None: ...


class Row(Protocol):
    """One row being evaluated (`bases.Context`)."""

    @property
    def file(self) -> File: ...
    @property
    def env(self) -> RowEnvironment: ...
    def formula(self, name: str) -> Value: ...


Bound = Mapping[str, Value]
Run = Callable[[Row, Bound], Value]
# What a function or operator may raise for a value it cannot take: a date past year 9999, a
# replacement naming a group the pattern lacks. Reported like a type error, never let through.
_FAULTS = (ValueTypeError, ArithmeticError, ValueError, re.error)
_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">="})


@dataclass(frozen=True, slots=True)
class Program:
    """A filter or formula ready to run for any row: its text (for errors), its tree, and the
    compiled closure."""

    source: str
    root: Node
    run: Run


def compile_expression(text: str) -> Program:
    """Parse and compile `text`; a syntax error raises `BaseExpressionError`."""
    expression = parse_expression(text)
    return Program(text, expression.root, _Compiler(text).node(expression.root))


class _Compiler:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, pos: int, exc: Exception) -> BaseExpressionError:
        return BaseExpressionError(self.source, pos, str(exc))

    def node(self, node: Node) -> Run:
        match node:
            case Literal():
                constant = node.value
                return lambda row, bound: constant
            case Name():
                return self.name(node)
            case Member():
                return self.member(node)
            case Index():
                return self.index(node)
            case Call():
                return self.call(node)
            case Binary():
                return self.binary(node)
            case Unary():
                return self.unary(node)
            case ListNode():
                items = [self.node(item) for item in node.items]
                return lambda row, bound: [item(row, bound) for item in items]
            case ObjectNode():
                entries = [(key, self.node(item)) for key, item in node.entries]
                return lambda row, bound: {key: item(row, bound) for key, item in entries}

    def name(self, node: Name) -> Run:
        name = node.name
        match name:
            case "file":
                return lambda row, bound: row.file
            case "note":
                return lambda row, bound: _note(row)
            case "this":
                return self.this(node)
            case "formula":  # never readable alone: an error before any row is seen
                message = "'formula' needs a formula's name: formula.x"
                raise BaseExpressionError(self.source, node.pos, message)

        def run(row: Row, bound: Bound) -> Value:
            if name in bound:
                return bound[name]
            return fields.property_value(row.file.facts.properties.get(name))

        return run

    def this(self, node: Name) -> Run:
        def run(row: Row, bound: Bound) -> Value:
            this = row.env.this
            if this is None:
                message = "'this' is not known here (no file shows this base)"
                raise BaseExpressionError(self.source, node.pos, message)
            return File(this)

        return run

    def member(self, node: Member) -> Run:
        return self.named(node.pos, node.target, lambda row, bound: node.name)

    def index(self, node: Index) -> Run:
        return self.named(node.pos, node.target, self.node(node.index), node.index.pos)

    def named(self, pos: int, target: Node, key: Run, key_pos: int | None = None) -> Run:
        """`target.key` or `target[key]`; `note.x` and `formula.x` read a property or formula."""
        scope = target.name if isinstance(target, Name) else None
        value = self.node(target) if scope not in ("note", "formula") else None

        def run(row: Row, bound: Bound) -> Value:
            name = key(row, bound)
            try:
                if scope in ("note", "formula"):
                    if not isinstance(name, str):
                        message = f"{scope}[...] needs a name, not a {type_name(name)}"
                        raise BaseExpressionError(self.source, key_pos or pos, message)
                    if scope == "note":
                        return fields.property_value(row.file.facts.properties.get(name))
                    return row.formula(name)
                assert value is not None
                if key_pos is None:
                    assert isinstance(name, str)
                    return fields.member(value(row, bound), name)
                return fields.item(value(row, bound), name)
            except _FAULTS as exc:
                raise self.error(pos, exc) from None

        return run

    def unary(self, node: Unary) -> Run:
        operand = self.node(node.operand)
        if node.op == "!":
            return lambda row, bound: not is_truthy(operand(row, bound))

        def run(row: Row, bound: Bound) -> Value:
            try:
                return operators.negate(operand(row, bound))
            except _FAULTS as exc:
                raise self.error(node.pos, exc) from None

        return run

    def binary(self, node: Binary) -> Run:
        left, right, op = self.node(node.left), self.node(node.right), node.op
        if op == "&&":
            return lambda row, bound: (
                right(row, bound) if is_truthy(value := left(row, bound)) else value
            )
        if op == "||":
            return lambda row, bound: (
                value if is_truthy(value := left(row, bound)) else right(row, bound)
            )
        apply = operators.comparison if op in _COMPARISONS else operators.arithmetic

        def run(row: Row, bound: Bound) -> Value:
            a, b = left(row, bound), right(row, bound)
            try:
                return apply(op, a, b)
            except _FAULTS as exc:
                raise self.error(node.pos, exc) from None

        return run

    def call(self, node: Call) -> Run:
        args = [self.node(arg) for arg in node.args]
        if node.target is None:
            function = REGISTRY.get_global(node.name)
            if function is None:
                message = self.unknown(node.name)
                raise BaseExpressionError(self.source, node.pos, message)
            return self.invoke(node, function, None, args)
        return self.method(node, self.node(node.target), args)

    def unknown(self, name: str) -> str:
        if REGISTRY.knows(name):
            return f"{name!r} is a method: call it on a value, as x.{name}()"
        return f"unknown function {name!r}"

    def method(self, node: Call, target: Run, args: list[Run]) -> Run:
        name, known = node.name, REGISTRY.knows(node.name)
        if not known:  # no type has it: an error even before any row is seen
            raise BaseExpressionError(self.source, node.pos, f"unknown function {name!r}")

        def run(row: Row, bound: Bound) -> Value:
            receiver = target(row, bound)
            function = REGISTRY.get_method(receiver, name)
            if function is None:
                if receiver is None:
                    return None  # a missing property's methods give nothing, like its fields
                message = f"a {type_name(receiver)} has no function {name!r}"
                raise BaseExpressionError(self.source, node.pos, message)
            return self.run_function(node, function, receiver, args, row, bound)

        return run

    def invoke(self, node: Call, function: Function, receiver: Value, args: list[Run]) -> Run:
        try:
            check_arity(function, len(args))
        except _FAULTS as exc:
            raise self.error(node.pos, exc) from None
        return lambda row, bound: self.run_function(node, function, receiver, args, row, bound)

    def run_function(
        self,
        node: Call,
        function: Function,
        receiver: Value,
        args: list[Run],
        row: Row,
        bound: Bound,
    ) -> Value:
        try:
            if not function.min_args <= len(args) <= (function.max_args or len(args)):
                check_arity(function, len(args))
            if function.lazy:
                thunks = tuple(_thunk(arg, row, bound) for arg in args)
                call = Invocation(receiver, (), thunks, row.env)
            else:
                call = Invocation(receiver, tuple(arg(row, bound) for arg in args), (), row.env)
            return function.run(call)
        except _FAULTS as exc:
            raise self.error(node.pos, exc) from None


def _note(row: Row) -> Value:
    return fields.property_value(dict(row.file.facts.properties))


def _thunk(arg: Run, row: Row, bound: Bound) -> Callable[[Bound], Value]:
    return lambda extra: arg(row, {**bound, **extra} if extra else bound)
