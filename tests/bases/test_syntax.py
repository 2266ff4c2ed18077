"""Reading expressions: the tree's shape and positions, precedence, and syntax errors that name
the expression, the character and what was expected."""

from __future__ import annotations

import pytest

from weaver.bases.syntax import Binary, Call, Index, Literal, Member, Name, Unary, parse_expression
from weaver.bases.values import Regex
from weaver.errors import BaseExpressionError


def test_a_method_call_on_a_property_keeps_each_position() -> None:
    root = parse_expression('file.hasTag("book")').root
    assert root == Call(5, Name(0, "file"), "hasTag", (Literal(12, "book"),))


def test_multiplication_binds_tighter_than_addition_and_and_than_or() -> None:
    assert parse_expression("1 + 2 * 3").root == Binary(
        2, "+", Literal(0, 1), Binary(6, "*", Literal(4, 2), Literal(8, 3))
    )
    root = parse_expression("a || b && c").root
    assert isinstance(root, Binary) and root.op == "||"
    assert isinstance(root.right, Binary) and root.right.op == "&&"


def test_comparison_binds_tighter_than_logic() -> None:
    root = parse_expression("price > 0 && quantity > 0").root
    assert isinstance(root, Binary) and root.op == "&&"
    assert [root.left.op, root.right.op] == [">", ">"]  # type: ignore[union-attr]


def test_unary_minus_and_not() -> None:
    assert parse_expression("-2").root == Unary(0, "-", Literal(1, 2))
    assert parse_expression("!done").root == Unary(0, "!", Name(1, "done"))


def test_strings_in_either_quote_with_escapes() -> None:
    assert parse_expression("'it\\'s'").root == Literal(0, "it's")
    assert parse_expression('"a\\"b\\n"').root == Literal(0, 'a"b\n')


def test_bracket_access_by_name_and_by_index() -> None:
    assert parse_expression('note["with space"]').root == Index(
        4, Name(0, "note"), Literal(5, "with space")
    )
    assert parse_expression("tags[0]").root == Index(4, Name(0, "tags"), Literal(5, 0))


def test_a_number_then_a_method() -> None:
    assert parse_expression("123.toString()").root == Call(4, Literal(0, 123), "toString", ())
    assert parse_expression("(2.5).round()").root == Call(6, Literal(1, 2.5), "round", ())


def test_a_slash_after_an_operand_divides_and_elsewhere_starts_a_regex() -> None:
    assert parse_expression("price / age").root == Binary(6, "/", Name(0, "price"), Name(8, "age"))
    root = parse_expression('"a:b".replace(/:/g, "-")').root
    assert isinstance(root, Call)
    regex = root.args[0]
    assert isinstance(regex, Literal) and isinstance(regex.value, Regex)
    assert regex.value.is_global and regex.value.source == ":"


def test_member_access_through_formula_and_this() -> None:
    assert parse_expression("formula.ppu").root == Member(8, Name(0, "formula"), "ppu")
    assert parse_expression("this.file.name").root == Member(
        10, Member(5, Name(0, "this"), "file"), "name"
    )


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ('file.hasTag("a"', 15, "expected ')'"),
        ("file.hasTag(", 12, "expected ')'"),
        ("1 +", 3, "unexpected end of expression"),
        ("price >> 2", 7, "unexpected '>'"),
        ("[1, 2", 5, "expected ']'"),
        ("a ? b : c", 2, "unexpected character '?'"),
        ('"open', 0, "unterminated string"),
        ("x.", 2, "expected a name after '.'"),
        ('"a".replace(/(/, "b")', 12, "bad regular expression"),
        ("(1) 2", 4, "unexpected '2'"),
    ],
)
def test_a_syntax_error_names_the_expression_and_the_character(
    text: str, position: int, message: str
) -> None:
    with pytest.raises(BaseExpressionError) as caught:
        parse_expression(text)
    assert caught.value.position == position
    assert caught.value.expression == text
    assert message in caught.value.message


def test_the_error_reads_expression_at_position_message() -> None:
    with pytest.raises(BaseExpressionError) as caught:
        parse_expression("file.hasTag(")
    assert str(caught.value) == "expression 'file.hasTag(' at 12: expected ')'"
