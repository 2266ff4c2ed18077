"""Bases expressions read into a tree: `parse_expression(text)` once, then evaluate it for every
row. Each node keeps the 0-based character where it starts (`pos`), so an error found while
evaluating points at the part of the text that caused it.

Precedence, loosest first (as JavaScript's): `||`, `&&`, `==` `!=`, `<` `>` `<=` `>=`,
`+` `-`, `*` `/` `%`, unary `!` `-`, then calls, `.field`, `[index]`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

from weaver.bases.values import Regex, Value
from weaver.errors import BaseExpressionError


@dataclass(frozen=True, slots=True)
class Literal:
    pos: int
    value: Value


@dataclass(frozen=True, slots=True)
class ListNode:
    pos: int
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class ObjectNode:
    pos: int
    entries: tuple[tuple[str, Node], ...]


@dataclass(frozen=True, slots=True)
class Name:
    pos: int
    name: str


@dataclass(frozen=True, slots=True)
class Member:
    """`target.name`: a field, a property, or (with `Call` around it) a method's receiver."""

    pos: int
    target: Node
    name: str


@dataclass(frozen=True, slots=True)
class Index:
    pos: int
    target: Node
    index: Node


@dataclass(frozen=True, slots=True)
class Call:
    """`name(args)` when `target` is None, else the method call `target.name(args)`; `pos` is
    where the function's name starts."""

    pos: int
    target: Node | None
    name: str
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Unary:
    pos: int
    op: str
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    """An operator between two operands; `pos` is the operator's own position."""

    pos: int
    op: str
    left: Node
    right: Node


Node = Literal | ListNode | ObjectNode | Name | Member | Index | Call | Unary | Binary


def children(node: Node) -> Iterator[Node]:
    """The nodes directly under `node`, in the order they are evaluated."""
    match node:
        case ListNode(items=items):
            yield from items
        case ObjectNode(entries=entries):
            yield from (item for _, item in entries)
        case Member(target=target):
            yield target
        case Index(target=target, index=index):
            yield target
            yield index
        case Call(target=target, args=args):
            if target is not None:
                yield target
            yield from args
        case Unary(operand=operand):
            yield operand
        case Binary(left=left, right=right):
            yield left
            yield right


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed expression with the text it came from (for its errors)."""

    source: str
    root: Node


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "num", "str", "name", "regex", "op", "end"
    text: str
    pos: int
    value: Value = None


_BINARY = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"), ("*", "/", "%"))
_OPERATORS = ("||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "!")
_PUNCTUATION = "()[]{},.:"
_NUMBER = re.compile(r"\d+(\.\d+)?([eE][+-]?\d+)?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0}
# After one of these a `/` starts a regular expression, not a division.
_OPERAND_EXPECTED = frozenset(_OPERATORS) | frozenset("([{,:")


def parse_expression(text: str) -> Expression:
    """The tree of a filter or formula; a syntax error raises `BaseExpressionError`."""
    parser = _Parser(text)
    try:
        root = parser.expression(0)
    except RecursionError:
        raise BaseExpressionError(text, 0, "expression nested too deeply") from None
    if parser.peek.kind != "end":
        parser.fail(parser.peek.pos, f"unexpected {parser.peek.text!r}")
    return Expression(text, root)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _Lexer(text).tokens()
        self.at = 0

    @property
    def peek(self) -> _Token:
        return self.tokens[self.at]

    def fail(self, pos: int, message: str) -> NoReturn:
        raise BaseExpressionError(self.text, pos, message)

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def expect(self, text: str) -> _Token:
        if self.peek.text != text or self.peek.kind not in ("op", "punct"):
            self.fail(self.peek.pos, f"expected {text!r}")
        return self.take()

    def expression(self, level: int) -> Node:
        if level == len(_BINARY):
            return self.unary()
        left = self.expression(level + 1)
        while self.peek.kind == "op" and self.peek.text in _BINARY[level]:
            op = self.take()
            left = Binary(op.pos, op.text, left, self.expression(level + 1))
        return left

    def unary(self) -> Node:
        if self.peek.kind == "op" and self.peek.text in ("!", "-"):
            op = self.take()
            return Unary(op.pos, op.text, self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Node) -> Node:
        while self.peek.kind == "punct" and self.peek.text in ".[(":
            token = self.take()
            if token.text == ".":
                name = self.take()
                if name.kind != "name":
                    self.fail(name.pos, "expected a name after '.'")
                node = Member(name.pos, node, name.text)
            elif token.text == "[":
                node = Index(token.pos, node, self.expression(0))
                self.expect("]")
            else:
                node = self.call(node, token)
        return node

    def call(self, callee: Node, paren: _Token) -> Node:
        if isinstance(callee, Name):
            target, name, pos = None, callee.name, callee.pos
        elif isinstance(callee, Member):
            target, name, pos = callee.target, callee.name, callee.pos
        else:
            self.fail(paren.pos, "only a function or a method can be called")
        return Call(pos, target, name, self.sequence(")"))

    def sequence(self, closing: str) -> tuple[Node, ...]:
        items: list[Node] = []
        if self.peek.kind == "end":
            self.fail(self.peek.pos, f"expected {closing!r}")
        while not (self.peek.kind == "punct" and self.peek.text == closing):
            items.append(self.expression(0))
            if self.peek.text != "," or self.peek.kind != "punct":
                break
            self.take()
            if self.peek.kind == "end":
                self.fail(self.peek.pos, f"expected {closing!r}")
        self.expect(closing)
        return tuple(items)

    def primary(self) -> Node:
        token = self.take()
        match token.kind:
            case "num" | "str" | "regex":
                return Literal(token.pos, token.value)
            case "name":
                return self.keyword(token)
            case "punct" if token.text == "(":
                inner = self.expression(0)
                self.expect(")")
                return inner
            case "punct" if token.text == "[":
                return ListNode(token.pos, self.sequence("]"))
            case "punct" if token.text == "{":
                return self.object(token)
            case "end":
                self.fail(token.pos, "unexpected end of expression")
        return self.fail(token.pos, f"unexpected {token.text!r}")

    def keyword(self, token: _Token) -> Node:
        constants: dict[str, Value] = {"true": True, "false": False, "null": None}
        if token.text in constants:
            return Literal(token.pos, constants[token.text])
        return Name(token.pos, token.text)

    def object(self, brace: _Token) -> Node:
        entries: list[tuple[str, Node]] = []
        while not (self.peek.kind == "punct" and self.peek.text == "}"):
            key = self.take()
            if key.kind not in ("str", "name"):
                self.fail(key.pos, "expected a key")
            self.expect(":")
            entries.append((str(key.value if key.kind == "str" else key.text), self.expression(0)))
            if self.peek.text != ",":
                break
            self.take()
        self.expect("}")
        return ObjectNode(brace.pos, tuple(entries))


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, pos: int, message: str) -> NoReturn:
        raise BaseExpressionError(self.text, pos, message)

    def tokens(self) -> list[_Token]:
        found: list[_Token] = []
        while True:
            while self.at < len(self.text) and self.text[self.at].isspace():
                self.at += 1
            if self.at == len(self.text):
                found.append(_Token("end", "end of expression", self.at))
                return found
            previous = found[-1].text if found and found[-1].kind in ("op", "punct") else None
            regex_allowed = not found or previous in _OPERAND_EXPECTED
            found.append(self.token(regex_allowed))

    def token(self, regex_allowed: bool) -> _Token:
        text, start = self.text, self.at
        char = text[start]
        if char.isdigit():
            match = _NUMBER.match(text, start)
            assert match is not None
            self.at = match.end()
            digits = match.group()
            number = float(digits) if match.group(1) or match.group(2) else int(digits)
            return _Token("num", digits, start, number)
        if char in "\"'":
            return self.string(char)
        if char.isalpha() or char in "_$":
            end = start
            while end < len(text) and (text[end].isalnum() or text[end] in "_$"):
                end += 1
            self.at = end
            return _Token("name", text[start:end], start)
        if char == "/" and regex_allowed:
            return self.regex()
        for op in _OPERATORS:
            if text.startswith(op, start):
                self.at += len(op)
                return _Token("op", op, start)
        if char in _PUNCTUATION:
            self.at += 1
            return _Token("punct", char, start)
        return self.fail(start, f"unexpected character {char!r}")

    def string(self, quote: str) -> _Token:
        start, chars = self.at, []
        self.at += 1
        while self.at < len(self.text) and self.text[self.at] != quote:
            char = self.text[self.at]
            if char == "\\":
                char = self.escape()
            chars.append(char)
            self.at += 1
        if self.at >= len(self.text):
            self.fail(start, "unterminated string")
        self.at += 1
        return _Token("str", self.text[start : self.at], start, "".join(chars))

    def escape(self) -> str:
        self.at += 1
        if self.at >= len(self.text):
            return "\\"
        char = self.text[self.at]
        if char == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", self.text[self.at + 1 : self.at + 5]):
            self.at += 4
            return chr(int(self.text[self.at - 3 : self.at + 1], 16))
        return _ESCAPES.get(char, char)

    def regex(self) -> _Token:
        start, end, in_class = self.at, self.at + 1, False
        while end < len(self.text) and (self.text[end] != "/" or in_class):
            char = self.text[end]
            in_class = (in_class or char == "[") and char != "]"
            end += 2 if char == "\\" else 1
        if end >= len(self.text):
            self.fail(start, "unterminated regular expression")
        source, flags_end = self.text[start + 1 : end], end + 1
        while flags_end < len(self.text) and self.text[flags_end].isalpha():
            flags_end += 1
        flags = self.text[end + 1 : flags_end]
        self.at = flags_end
        regex = self.compile(source, flags, start)
        return _Token("regex", self.text[start:flags_end], start, regex)

    def compile(self, source: str, flags: str, start: int) -> Regex:
        bits = 0
        for flag in flags:
            if flag not in _REGEX_FLAGS:
                self.fail(start, f"unknown regular expression flag {flag!r}")
            bits |= _REGEX_FLAGS[flag]
        try:
            compiled = re.compile(source, bits)
        except re.error as exc:
            self.fail(start, f"bad regular expression: {exc}")
        return Regex(source, compiled, "g" in flags)
