"""Evaluating a parsed expression for one row: `evaluate(expression, Context(file, env))`.

Names: `file` is the row's file, `note` its frontmatter, `formula.x` another formula of the
view (evaluated once per row, when first asked for; a formula reaching itself is an error),
`this` the file the base is shown for; any other bare name is a note property (`status` is
`note.status`), unless a list method binds it (`value`, `index`, `acc`). Every error is a
`BaseExpressionError` at the position of the node that caused it."""

from __future__ import annotations

from collections.abc import Mapping

from weaver.bases import fields, operators
from weaver.bases.environment import Environment
from weaver.bases.functions import REGISTRY
from weaver.bases.functions.registry import Function, Invocation, Thunk, check_arity
from weaver.bases.syntax import (
    Binary,
    Call,
    Expression,
    Index,
    ListNode,
    Literal,
    Member,
    Name,
    Node,
    ObjectNode,
    Unary,
)
from weaver.bases.values import File, FileFacts, Value, ValueTypeError, is_truthy, type_name
from weaver.errors import BaseExpressionError

_NO_BINDINGS: Mapping[str, Value] = {}


class Context:
    """One row: its file, the view's environment, and the formulas computed for it so far
    (share one Context between a row's filters and formulas, so each formula runs once)."""

    def __init__(self, file: FileFacts, env: Environment) -> None:
        self.file = File(file)
        self.env = env
        self._formulas: dict[str, Value] = {}
        self._running: list[str] = []

    def formula(self, name: str) -> Value:
        if name in self._formulas:
            return self._formulas[name]
        if name in self._running:
            # Raised as a type error, so the error points at the reference that closed the loop.
            chain = " -> ".join([*self._running[self._running.index(name) :], name])
            raise ValueTypeError(f"formulas refer to each other: {chain}")
        self._running.append(name)
        try:
            value = evaluate(self.env.formulas[name], self)
        finally:
            self._running.pop()
        self._formulas[name] = value
        return value


def evaluate(
    expression: Expression, context: Context, bindings: Mapping[str, Value] = _NO_BINDINGS
) -> Value:
    """The value of `expression` for the row of `context` (`bindings`: extra names, such as
    a summary's `values`)."""
    return _Evaluator(expression.source, context).value(expression.root, bindings)


def matches(expression: Expression, context: Context) -> bool:
    """Whether a filter keeps the row: its value, taken as true or false."""
    return is_truthy(evaluate(expression, context))


class _Evaluator:
    def __init__(self, source: str, context: Context) -> None:
        self.source = source
        self.context = context

    def fail(self, node: Node, message: str) -> BaseExpressionError:
        return BaseExpressionError(self.source, node.pos, message)

    def value(self, node: Node, bound: Mapping[str, Value]) -> Value:
        try:
            return self._value(node, bound)
        except ValueTypeError as exc:
            raise self.fail(node, str(exc)) from None

    def _value(self, node: Node, bound: Mapping[str, Value]) -> Value:
        match node:
            case Literal():
                return node.value
            case Name():
                return self.name(node, bound)
            case Member():
                return self.member(node, bound)
            case Call():
                return self.call(node, bound)
            case Binary():
                return self.binary(node, bound)
            case Unary():
                operand = self.value(node.operand, bound)
                return not is_truthy(operand) if node.op == "!" else operators.negate(operand)
            case Index():
                return self.index(node, bound)
            case ListNode():
                return [self.value(item, bound) for item in node.items]
            case ObjectNode():
                return {key: self.value(item, bound) for key, item in node.entries}

    def name(self, node: Name, bound: Mapping[str, Value]) -> Value:
        if node.name in bound:
            return bound[node.name]
        match node.name:
            case "file":
                return self.context.file
            case "note":
                return fields.property_value(dict(self.context.file.facts.properties))
            case "this":
                if self.context.env.this is None:
                    raise self.fail(node, "'this' is not known here (no file shows this base)")
                return File(self.context.env.this)
            case "formula":
                raise self.fail(node, "'formula' needs a formula's name: formula.name")
        return fields.note_property(self.context.file.facts, node.name)

    def scope(self, node: Node, bound: Mapping[str, Value]) -> str | None:
        """`note` or `formula` when `node` is that name (and no list method rebound it)."""
        if isinstance(node, Name) and node.name in ("note", "formula") and node.name not in bound:
            return node.name
        return None

    def member(self, node: Member, bound: Mapping[str, Value]) -> Value:
        return self.named(node, self.scope(node.target, bound), node.name, node.target, bound)

    def index(self, node: Index, bound: Mapping[str, Value]) -> Value:
        key = self.value(node.index, bound)
        scope = self.scope(node.target, bound)
        if scope is not None:
            if not isinstance(key, str):
                raise self.fail(node.index, f"{scope}[...] needs a name, not a {type_name(key)}")
            return self.named(node, scope, key, node.target, bound)
        return fields.item(self.value(node.target, bound), key)

    def named(
        self, node: Node, scope: str | None, name: str, target: Node, bound: Mapping[str, Value]
    ) -> Value:
        if scope == "note":
            return fields.note_property(self.context.file.facts, name)
        if scope == "formula":
            if name not in self.context.env.formulas:
                raise self.fail(node, f"unknown formula {name!r}")
            return self.context.formula(name)
        return fields.member(self.value(target, bound), name)

    def call(self, node: Call, bound: Mapping[str, Value]) -> Value:
        if node.target is None:
            receiver: Value = None
            function = REGISTRY.get_global(node.name)
            if function is None:
                raise self.fail(node, self.unknown(node.name, REGISTRY.knows(node.name)))
        else:
            receiver = self.value(node.target, bound)
            function = REGISTRY.get_method(receiver, node.name)
            if function is None:
                if receiver is None and REGISTRY.knows(node.name):
                    return None  # a missing property's methods give nothing, like its fields
                known = REGISTRY.knows(node.name)
                where = f"a {type_name(receiver)} has no function {node.name!r}"
                raise self.fail(node, where if known else self.unknown(node.name, False))
        check_arity(function, len(node.args))
        return function.run(self.invocation(function, receiver, node.args, bound))

    def unknown(self, name: str, is_method: bool) -> str:
        if is_method:
            return f"{name!r} is a method: call it on a value, as x.{name}()"
        return f"unknown function {name!r}"

    def invocation(
        self,
        function: Function,
        receiver: Value,
        args: tuple[Node, ...],
        bound: Mapping[str, Value],
    ) -> Invocation:
        env = self.context.env
        if function.lazy:
            thunks = tuple(self.thunk(arg, bound) for arg in args)
            return Invocation(receiver, (), thunks, env)
        return Invocation(receiver, tuple(self.value(arg, bound) for arg in args), (), env)

    def thunk(self, node: Node, bound: Mapping[str, Value]) -> Thunk:
        def run(extra: Mapping[str, Value]) -> Value:
            return self.value(node, {**bound, **extra} if extra else bound)

        return run

    def binary(self, node: Binary, bound: Mapping[str, Value]) -> Value:
        left = self.value(node.left, bound)
        if node.op == "&&":
            return self.value(node.right, bound) if is_truthy(left) else left
        if node.op == "||":
            return left if is_truthy(left) else self.value(node.right, bound)
        right = self.value(node.right, bound)
        if node.op in ("==", "!=", "<", ">", "<=", ">="):
            return operators.comparison(node.op, left, right)
        return operators.arithmetic(node.op, left, right)
