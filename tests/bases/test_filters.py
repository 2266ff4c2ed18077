"""A base's `filters` read into and/or/not groups: which notes pass, what a malformed filter
says and where, and which expressions a cache may use to narrow the notes it loads."""

from __future__ import annotations

import pytest

from tests.bases.facts import Facts, env
from weaver.bases import Context
from weaver.bases.filters import (
    AllOf,
    AnyOf,
    Condition,
    NoneOf,
    conjuncts,
    filter_matches,
    parse_filter,
)
from weaver.errors import BaseExpressionError, BaseFileError

# The "Bases syntax" page's complex filter.
COMPLEX = {
    "or": [
        'file.hasTag("tag")',
        {"and": ['file.hasTag("book")', 'file.hasLink("Textbook")']},
        {"not": ['file.hasTag("book")', 'file.inFolder("Required Reading")']},
    ]
}


def passing(raw: object, files: tuple[Facts, ...]) -> list[str]:
    parsed = parse_filter(raw, "filters")
    return [f.path for f in files if filter_matches(parsed, Context(f, env()))]


def test_the_syntax_pages_complex_filter_picks_its_notes(library: tuple[Facts, ...]) -> None:
    assert passing(COMPLEX, library) == [
        "Books/Dune.md",  # a book linking the textbook
        "Books/Emma.md",
        "Books/Hamlet.md",
        "Books/Free.md",
        "Notes/Tagged.md",  # tagged
        "Notes/Cheap.md",
        "Notes/Loose.md",  # neither a book nor in Required Reading
    ]


def test_not_keeps_only_the_notes_that_pass_none_of_its_items(
    library: tuple[Facts, ...],
) -> None:
    kept = passing({"not": ['file.hasTag("book")', "price > 10"]}, library)
    assert kept == ["Notes/Tagged.md", "Notes/Cheap.md"]


def test_a_simple_and_and_a_bare_string_filter_alike(library: tuple[Facts, ...]) -> None:
    assert passing({"and": ['file.hasTag("tag")']}, library) == passing(
        'file.hasTag("tag")', library
    )


def test_empty_groups_filter_nothing(library: tuple[Facts, ...]) -> None:
    everything = [f.path for f in library]
    assert passing({"and": []}, library) == everything
    assert passing({"or": []}, library) == everything
    assert passing({"not": []}, library) == everything


def test_the_tree_keeps_the_groups_as_written() -> None:
    parsed = parse_filter(COMPLEX, "filters")
    assert isinstance(parsed, AnyOf)
    kinds = [type(item) for item in parsed.items]
    assert kinds == [Condition, AllOf, NoneOf]


@pytest.mark.parametrize(
    ("raw", "where", "message"),
    [
        (5, "filters", "an expression in a string"),
        (["a > 1"], "filters", "an expression in a string"),
        ({"xor": ["a"]}, "filters", "one key, and/or/not (here: 'xor')"),
        ({"and": ["a"], "or": ["b"]}, "filters", "(here: 'and', 'or')"),
        ({"and": "a > 1"}, "filters.and", "'and' holds a list of filters"),
        ({"or": ["a", "b", {"nor": []}]}, "filters.or[2]", "one key"),
        ({"and": ["a", {"not": [True]}]}, "filters.and[1].not[0]", "in a string"),
    ],
)
def test_a_malformed_filter_names_its_place(raw: object, where: str, message: str) -> None:
    with pytest.raises(BaseFileError) as caught:
        parse_filter(raw, "filters")
    assert caught.value.where == where
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"base file, {where}: ")


def test_an_unreadable_expression_inside_a_group_is_an_expression_error() -> None:
    with pytest.raises(BaseExpressionError, match=r"'file.hasTag\(' at 12"):
        parse_filter({"and": ["a > 1", {"or": ["file.hasTag("]}]}, "filters")


def test_conjuncts_are_the_expressions_every_passing_row_makes_true() -> None:
    parsed = parse_filter(
        {"and": ["a > 1", {"and": ["b", {"or": ["c", "d"]}]}, {"not": ["e"]}, {"or": ["f"]}]},
        "filters",
    )
    assert [program.source for program in conjuncts(parsed)] == ["a > 1", "b"]
    assert [p.source for p in conjuncts(parse_filter("a > 1", "filters"))] == ["a > 1"]
    assert conjuncts(parse_filter({"or": ["a", "b"]}, "filters")) == []
    assert conjuncts(parse_filter({"not": ["a"]}, "filters")) == []
    assert conjuncts(None) == []
