"""Evaluating for a row: names and properties, operators on each type, formulas, `this`, the
errors a user sees, and realistic filters over a few notes."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.bases.facts import NOW, Facts, env, value
from weaver.bases import Context, Date, Duration, Link, compile_expression, evaluate, matches
from weaver.bases.values import File
from weaver.errors import BaseExpressionError

BOOK = Facts(
    path="Reading/Dune.md",
    tags=("book", "scifi"),
    mtime=NOW - dt.timedelta(days=2),
    properties={
        "rating": 5,
        "price": 12.5,
        "age": 5,
        "status": "reading",
        "author": "[[Frank Herbert]]",
        "started": "2025-05-01",
        "finished": "2025-05-20T21:30:00",
        "with space": "yes",
        "genres": ["scifi", "classic"],
        "meta": {"pages": 412},
    },
)
OLD_BOOK = Facts(
    path="Reading/Old.md", tags=("book",), mtime=NOW - dt.timedelta(days=30), properties={}
)
PROJECT = Facts(path="Projects/Work/Plan.md", tags=("project",), properties={"rating": 2})


def test_bare_names_dotted_and_bracketed_all_read_note_properties() -> None:
    assert value("rating", BOOK) == 5
    assert value("note.rating", BOOK) == 5
    assert value('note["with space"]', BOOK) == "yes"
    assert value("meta.pages", BOOK) == 412
    assert value('meta["pages"]', BOOK) == 412
    assert value("genres[1]", BOOK) == "classic"
    assert value("genres[5]", BOOK) is None


def test_a_missing_property_is_null_and_so_are_its_fields_and_methods() -> None:
    assert value("note.nothing", BOOK) is None
    assert value("nothing.length", BOOK) is None
    assert value("nothing.lower()", BOOK) is None
    assert value("nothing.isEmpty()", BOOK) is True


def test_frontmatter_links_and_dates_become_links_and_dates() -> None:
    assert value("author", BOOK) == Link("Frank Herbert")
    assert value("started", BOOK) == Date(dt.datetime(2025, 5, 1), has_time=False)
    assert value("finished.hour", BOOK) == 21
    assert value("started < finished", BOOK) is True


def test_file_fields() -> None:
    assert value("file.name", BOOK) == "Dune.md"
    assert value("file.basename", BOOK) == "Dune"
    assert value("file.path", BOOK) == "Reading/Dune.md"
    assert value("file.folder", BOOK) == "Reading"
    assert value("file.ext", BOOK) == "md"
    assert value("file.size", BOOK) == 1234
    assert value("file.tags", BOOK) == ["book", "scifi"]
    assert value("file.links", BOOK) == [Link("Books/Textbook.md"), Link("Missing note")]
    assert value("file.backlinks", BOOK) == [Link("Daily/2025-05-26.md")]
    assert value("file.embeds", BOOK) == [Link("Images/cover.png")]
    assert value("file.properties.rating", BOOK) == 5
    assert value("file.mtime", BOOK) == Date(NOW - dt.timedelta(days=2), has_time=True)
    assert value("file.ctime.year", BOOK) == 2025
    assert value("file.file", BOOK) == File(BOOK)


def test_arithmetic_and_text() -> None:
    assert value("radius * (2 * 3.14)", Facts(properties={"radius": 2})) == 12.56
    assert value("(price / age).toFixed(2)", BOOK) == "2.50"
    assert value("7 % 3", BOOK) == 1
    assert value("-7 % 3", BOOK) == -1
    assert value('file.basename + " - " + status', BOOK) == "Dune - reading"
    assert value('"n" + 1', BOOK) == "n1"
    assert value('"$" + price.toFixed(2)', BOOK) == "$12.50"
    assert value("1 / 0", BOOK) == float("inf")


def test_arithmetic_with_a_missing_value_is_null() -> None:
    assert value("price * quantity", BOOK) is None
    assert value('"by " + nobody', BOOK) == "by "


def test_dates_and_durations() -> None:
    assert value('date("2024-12-01") + "1M" + "4h" + "3m"', BOOK) == Date(
        dt.datetime(2025, 1, 1, 4, 3), has_time=True
    )
    assert value('(now() + "1d") - now()', BOOK) == 86_400_000
    assert value('date("2025-01-31") + "1 month"', BOOK) == Date(
        dt.datetime(2025, 2, 28), has_time=False
    )
    assert value('today() + "7d"', BOOK) == Date(dt.datetime(2025, 6, 3), has_time=False)
    assert value('now() - "2h"', BOOK) == Date(dt.datetime(2025, 5, 27, 10), has_time=True)
    assert value('started + "2w"', BOOK) == Date(dt.datetime(2025, 5, 15), has_time=False)
    assert value("now() + (duration('1d') * 2)", BOOK) == Date(
        dt.datetime(2025, 5, 29, 12), has_time=True
    )
    assert value("duration('1y') + duration('2M')", BOOK) == Duration(months=14)
    assert value('date("2025-05-27") == today()', BOOK) is True
    assert value('file.mtime > "2025-05-01"', BOOK) is True


def test_comparisons_and_truthiness() -> None:
    assert value('status == "reading"', BOOK) is True
    assert value('status != "done"', BOOK) is True
    assert value('1 == "1"', BOOK) is False
    assert value("[1, [2]] == [1, [2]]", BOOK) is True
    assert value('"b" > "a"', BOOK) is True
    assert value("true && 0", BOOK) == 0
    assert value('nothing || "fallback"', BOOK) == "fallback"
    assert value("!genres", BOOK) is False
    assert value("![]", BOOK) is True
    assert value("rating >= 4", OLD_BOOK) is False  # no rating: false, not an error


def test_a_link_equals_the_file_it_names() -> None:
    author = Facts(path="People/Frank Herbert.md")
    environment = env(this=author)
    assert value("author == this", BOOK, environment) is True
    assert value("list(author).contains(this)", BOOK, environment) is True
    assert value("file.hasLink(this.file)", Facts(links=("People/Frank Herbert.md",)), environment)


@pytest.mark.parametrize(
    ("text", "kind", "shown"),
    [
        ('"a"', "string", "a"),
        ("2.50", "number", "2.5"),
        ("false", "boolean", "false"),
        ("null", "null", "null"),
        ('date("2025-05-01")', "date", "2025-05-01"),
        ('date("2025-05-01 09:30")', "date", "2025-05-01 09:30:00"),
        ('duration("1M 2h")', "duration", "1M 7200s"),
        ("[1, 2]", "list", "1, 2"),
        ('{"a": 1}', "object", "{a: 1}"),
        ("author", "link", "Frank Herbert"),
        ("file", "file", "Reading/Dune.md"),
        ("/a+/g", "regexp", "/a+/g"),
        ('icon("plus")', "icon", "plus"),
    ],
)
def test_each_type_knows_its_name_and_reads_as_text(text: str, kind: str, shown: str) -> None:
    assert value(f"({text}).isType({kind!r})", BOOK) is True
    assert value(f"({text}).toString()", BOOK) == shown


def test_a_summary_sees_the_column_as_values() -> None:
    summary = compile_expression("values.mean().round(3)")
    row = Context(BOOK, env())
    assert evaluate(summary, row, {"values": [1, 2, 2]}) == 1.667


def test_links_naming_one_note_are_equal() -> None:
    assert value('link("Frank Herbert") == author', BOOK) is True
    assert value('link("People/Frank Herbert.md") == author', BOOK) is True
    assert value('link("Other") == author', BOOK) is False


def test_this_is_the_file_showing_the_base() -> None:
    base = Facts(path="Bases/Reading.base")
    assert value("this.file.folder", BOOK, env(this=base)) == "Bases"
    assert value("this.file.ext", BOOK, env(this=base)) == "base"


def test_formulas_use_each_other_and_run_once_per_row() -> None:
    environment = env({"ppu": "price / age", "label": 'formula.ppu.toFixed(1) + " each"'})
    context = Context(BOOK, environment)
    assert matches(compile_expression("formula.ppu > 2"), context)
    assert value('formula["label"]', BOOK, environment) == "2.5 each"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ('"a" - 1', 4, "cannot use '-' on string and number"),
        ("rating + [1]", 7, "cannot use '+' on number and list"),
        ("(1).lower()", 4, "a number has no function 'lower'"),
        ("status.round()", 7, "a string has no function 'round'"),
        ("frobnicate(status)", 0, "unknown function 'frobnicate'"),
        ("status.frobnicate()", 7, "unknown function 'frobnicate'"),
        ("contains(status)", 0, "'contains' is a method"),
        ("rating.round(1, 2)", 7, "round() takes 0 to 1 arguments, got 2"),
        ("now(1)", 0, "now() takes 0 arguments, got 1"),
        ("status > 3", 7, "cannot compare string with number"),
        ('date("tomorrow")', 0, "not a date: 'tomorrow'"),
        ('now() + "1 fortnight"', 6, "unknown unit 'fortnight'"),
        ("formula.nope", 8, "unknown formula 'nope'"),
        ("rating.nothing", 7, "a number has no field 'nothing'"),
        ("file.hasTag(1)", 5, "hasTag()'s tags must be a string, not number"),
        ('number("twelve")', 0, "not a number: 'twelve'"),
        ("this.file", 0, "'this' is not known here"),
        ("formula", 0, "'formula' needs a formula's name"),
    ],
)
def test_an_error_names_the_node_that_caused_it(text: str, position: int, message: str) -> None:
    with pytest.raises(BaseExpressionError) as caught:
        value(text, BOOK)
    assert (caught.value.expression, caught.value.position) == (text, position)
    assert message in caught.value.message


def test_an_error_deep_inside_points_at_its_own_node() -> None:
    with pytest.raises(BaseExpressionError) as caught:
        value('file.hasTag("book") && status.round() > 1', BOOK)
    assert caught.value.position == 30


def test_formulas_reaching_themselves_are_an_error_naming_the_loop() -> None:
    environment = env({"a": "formula.b + 1", "b": "formula.c * 2", "c": "formula.a"})
    with pytest.raises(BaseExpressionError) as caught:
        value("formula.a", BOOK, environment)
    assert str(caught.value) == (
        "expression 'formula.a' at 8: formulas refer to each other: a -> b -> c -> a"
    )


def test_a_formula_error_names_the_formula_text() -> None:
    environment = env({"bad": 'status - "x"'})
    with pytest.raises(BaseExpressionError) as caught:
        value("formula.bad", BOOK, environment)
    assert caught.value.expression == 'status - "x"'
    assert caught.value.position == 7


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('file.hasTag("book") && note.rating >= 4', ["Reading/Dune.md"]),
        ('file.mtime > now() - "1 week"', ["Reading/Dune.md", "Projects/Work/Plan.md"]),
        ('file.inFolder("Projects")', ["Projects/Work/Plan.md"]),
        ('!file.hasTag("book") || rating < 3', ["Projects/Work/Plan.md"]),
        ('genres.contains("classic") && status != "done"', ["Reading/Dune.md"]),
        ('file.ext == "md" && file.name.startsWith("D")', ["Reading/Dune.md"]),
    ],
)
def test_realistic_filters_keep_the_right_notes(text: str, kept: list[str]) -> None:
    notes = (BOOK, OLD_BOOK, PROJECT)
    expression = compile_expression(text)
    assert [n.path for n in notes if matches(expression, Context(n, env()))] == kept


def test_a_formula_using_itself_is_an_error() -> None:
    with pytest.raises(BaseExpressionError, match="refer to each other: a -> a"):
        value("formula.a", BOOK, env({"a": "formula.a + 1"}))


def test_an_unknown_function_is_reported_before_any_row() -> None:
    with pytest.raises(BaseExpressionError, match="at 17: unknown function 'frobnicate'"):
        compile_expression('status == "a" && frobnicate()')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('date("9999-12-31") + "1y"', "out of range"),
        ('"a".replace(/(a)/, "$5")', "invalid group reference"),
        ('"ab".repeat(100000000)', "too long"),
        ("(2.5).round(400)", "round\\(\\)'s digits must be between 0 and 100"),
    ],
)
def test_a_value_out_of_range_is_an_error_too(text: str, message: str) -> None:
    with pytest.raises(BaseExpressionError, match=message):
        value(text, BOOK)


def test_infinity_stays_infinity_as_in_javascript() -> None:
    assert value("(1 / 0).ceil()", BOOK) == float("inf")
    assert value("(-1 / 0).round()", BOOK) == float("-inf")
    assert value("(1 / 0).toFixed(2)", BOOK) == "Infinity"


def test_an_expression_nested_too_deeply_is_a_syntax_error() -> None:
    with pytest.raises(BaseExpressionError, match="nested too deeply"):
        compile_expression("(" * 5000 + "1" + ")" * 5000)
