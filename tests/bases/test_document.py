"""`.base` files and ```base blocks read into a base: what each section becomes, property keys
made one, every fault with its place in the YAML, and the blocks of a note."""

from __future__ import annotations

import pytest

from tests.bases.examples import SYNTAX_EXAMPLE
from weaver.bases.document import (
    BaseBlock,
    SortKey,
    ViewSpec,
    base_blocks,
    document_from_query,
    parse_base,
    property_key,
    view_of,
)
from weaver.bases.filters import AllOf, AnyOf
from weaver.errors import BaseExpressionError, BaseFileError


def test_the_syntax_pages_example_reads_into_every_section() -> None:
    document = parse_base(SYNTAX_EXAMPLE)

    assert isinstance(document.filters, AnyOf)
    assert {name: p.source for name, p in document.formulas.items()} == {
        "formatted_price": 'if(price, price.toFixed(2) + " dollars")',
        "ppu": "price / age",
    }
    assert document.display_names == {
        "note.status": "Status",
        "formula.formatted_price": "Price",
        "file.ext": "Extension",
    }
    assert document.summaries["customAverage"].source == "values.mean().round(3)"
    table, prices = document.views
    assert (table.name, table.type, table.limit) == ("My table", "table", 10)
    assert table.group_by == SortKey("note.age", descending=True)
    assert isinstance(table.filters, AllOf)
    assert table.order == (
        "file.name",
        "file.ext",
        "note.age",
        "formula.ppu",
        "formula.formatted_price",
    )
    assert table.summaries == {"formula.ppu": "Average"}
    assert prices.sort == (SortKey("note.price", descending=True),)
    assert prices.order == ("file.name", "note.status", "note.price")


def test_bare_and_note_prefixed_names_are_one_property_key() -> None:
    document = parse_base(
        """
properties:
  note.status: {displayName: State}
views:
  - type: table
    name: t
    order: [status, note.status]
    sort: [{property: status}, {property: note.status, direction: desc}]
    summaries: {status: Unique}
"""
    )
    (view,) = document.views
    assert document.display_names == {"note.status": "State"}
    assert view.order == ("note.status", "note.status")
    assert view.sort == (SortKey("note.status", False), SortKey("note.status", True))
    assert view.summaries == {"note.status": "Unique"}
    assert [property_key(k) for k in ("a", "note.a", "file.a", "formula.a")] == [
        "note.a",
        "note.a",
        "file.a",
        "formula.a",
    ]


@pytest.mark.parametrize("text", ["", "\n", "# just a comment\n"])
def test_an_empty_base_has_no_views_and_a_default_table(text: str) -> None:
    document = parse_base(text)
    assert document.views == ()
    assert document.filters is None
    assert view_of(document, None) == ViewSpec("Table", "table")


def test_view_of_picks_by_name_first_by_default_and_lists_names_when_unknown() -> None:
    document = parse_base(SYNTAX_EXAMPLE)
    assert view_of(document, None).name == "My table"
    assert view_of(document, "Prices").name == "Prices"
    with pytest.raises(
        BaseFileError, match=r"no view named 'Cards' \(views: 'My table', 'Prices'\)"
    ):
        view_of(document, "Cards")


def test_a_views_layout_settings_are_left_alone() -> None:
    text = "views:\n  - type: cards\n    name: Covers\n    image: note.cover\n    rowHeight: tall\n"
    (view,) = parse_base(text).views
    assert (view.name, view.type) == ("Covers", "cards")


def test_a_view_without_a_name_is_called_by_its_type() -> None:
    assert parse_base("views:\n  - type: list\n").views[0].name == "List"


VIEW = "views:\n  - type: table\n    name: a\n  - type: table\n    name: b\n"


def read_every_view(text: str) -> None:
    """The base read and each of its views asked for: a view's own fault is raised then."""
    document = parse_base(text)
    for view in document.views:
        view_of(document, view.name)


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("filters: [\n", "line 2", "invalid YAML"),
        ("- a\n- b\n", "the file", "a base is a YAML mapping"),
        ("filter: 'a > 1'\n", "filter", "did you mean 'filters'?"),
        ("colour: red\n", "colour", "not a key of a base (keys: filters"),
        ("filters: 3\n", "filters", "an expression in a string"),
        ("filters:\n  and: [a, b, {or: x}]\n", "filters.and[2].or", "holds a list"),
        ("formulas: [a]\n", "formulas", "a mapping"),
        ("formulas:\n  ppu: [1]\n", "formulas.ppu", "an expression in a string"),
        ("properties:\n  status: Status\n", "properties.status", "displayName"),
        ("properties:\n  status: {displayName: [a]}\n", "properties.status.displayName", "text"),
        ("summaries:\n  avg: price.mean()\n", "summaries.avg", "not 'price'"),
        ("summaries:\n  f: file.size\n", "summaries.f", "not 'file'"),
        ("views: {name: a}\n", "views", "a list of views"),
        ("views:\n  - table\n", "views[0]", "a view is a mapping"),
        (VIEW + "    filter: 'a > 1'\n", "views[1].filter", "did you mean 'filters'?"),
        (VIEW + "    name: [x]\n", "views[1].name", "expected text"),
        (VIEW + "    order: file.name\n", "views[1].order", "a list of property names"),
        (VIEW + "    order: [file.name, formula.ppu]\n", "views[1].order[1]", "no formula 'ppu'"),
        (VIEW + "    order: [file.colour]\n", "views[1].order[0]", "no property 'colour'"),
        (VIEW + "    order: [3]\n", "views[1].order[0]", "a property name"),
        (VIEW + "    sort: {property: a}\n", "views[1].sort", "a list of"),
        (VIEW + "    sort: [a]\n", "views[1].sort[0]", "{property: ..."),
        (VIEW + "    sort: [{direction: ASC}]\n", "views[1].sort[0].property", "a property name"),
        (VIEW + "    sort: [{property: a, direction: UP}]\n", "views[1].sort[0].direction", "ASC"),
        (VIEW + "    groupBy: status\n", "views[1].groupBy", "{property: ..."),
        (VIEW + "    limit: 0\n", "views[1].limit", "1 or more"),
        (VIEW + "    limit: ten\n", "views[1].limit", "a whole number"),
        (VIEW + "    limit: true\n", "views[1].limit", "a whole number"),
        (VIEW + "    summaries: {price: Mean}\n", "views[1].summaries.price", "no summary 'Mean'"),
        (VIEW + "    filters: {and: [x, {or: 1}]}\n", "views[1].filters.and[1].or", "a list"),
    ],
)
def test_every_fault_names_its_place_in_the_yaml(text: str, where: str, message: str) -> None:
    with pytest.raises(BaseFileError) as caught:
        read_every_view(text)
    assert caught.value.where == where
    assert message in caught.value.message


def test_an_expression_that_cannot_be_read_is_an_expression_error() -> None:
    with pytest.raises(BaseExpressionError, match=r"expression '\(price / ' at"):
        parse_base("formulas:\n  ppu: '(price / '\n")
    with pytest.raises(BaseExpressionError, match="unknown function 'frobnicate'"):
        read_every_view("views:\n  - type: table\n    filters: frobnicate(x)\n")


def test_a_faulty_view_fails_alone_and_the_others_still_run() -> None:
    text = (
        "views:\n  - type: table\n    name: Good\n"
        "  - type: cards\n    name: Bad\n    filters: frobnicate(x)\n"
        "  - type: table\n    name: Worse\n    limit: ten\n"
    )
    document = parse_base(text)
    assert [(v.name, v.type) for v in document.views] == [
        ("Good", "table"),
        ("Bad", "cards"),
        ("Worse", "table"),
    ]
    assert view_of(document, None).name == "Good"
    with pytest.raises(BaseExpressionError, match="unknown function 'frobnicate'"):
        view_of(document, "Bad")
    with pytest.raises(BaseFileError, match="a whole number"):
        view_of(document, "Worse")
    first_bad = parse_base("views:\n  - type: table\n    filters: frobnicate(x)\n")
    with pytest.raises(BaseExpressionError):
        view_of(first_bad, None)  # the first view is the one asked for


NOTE = """---
title: Reading
---
# Books

```base
filters: file.hasTag("book")
views:
  - type: table
    name: Books
```

A fence in a comment is no base:
%%
```base
views: []
```
%%

````markdown
```base
not a block of this note
```
````

```basement
not a base either
```

> [!note] In a callout
> ```base
> views:
>   - type: list
> ```

~~~base
filters: 'status == "open"'
~~~

```base
```

```base
views: [unclosed]
"""


def test_base_blocks_are_the_notes_base_fences_in_order() -> None:
    assert base_blocks(NOTE) == [
        BaseBlock(0, 6, 'filters: file.hasTag("book")\nviews:\n  - type: table\n    name: Books'),
        BaseBlock(1, 31, "views:\n  - type: list"),
        BaseBlock(2, 36, "filters: 'status == \"open\"'"),
        BaseBlock(3, 40, ""),
        BaseBlock(4, 43, "views: [unclosed]\n"),
    ]
    assert [view.type for view in parse_base(base_blocks(NOTE)[1].text).views] == ["list"]
    assert base_blocks("no code here") == []


def test_a_query_is_a_base_of_one_view_with_the_same_language() -> None:
    document = document_from_query(
        filter={"and": ['file.hasTag("book")', "rating >= 4"]},
        formulas={"stars": '"*".repeat(rating)'},
        sort=[{"property": "rating", "direction": "DESC"}],
        order=["file.name", "formula.stars"],
        group_by={"property": "status"},
        limit=5,
    )
    (view,) = document.views
    assert view == view_of(document, None)
    assert (view.name, view.limit) == ("query", 5)
    assert view.order == ("file.name", "formula.stars")
    assert view.sort == (SortKey("note.rating", True),)
    assert view.group_by == SortKey("note.status", False)
    assert isinstance(document.filters, AllOf)
    assert document_from_query(None, None, None, None, None, None).views[0].order == ()


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"filter": {"and": [3]}}, "filter.and[0]"),
        ({"formulas": {"x": None}}, "formulas.x"),
        ({"sort": [{"property": "a", "direction": "sideways"}]}, "sort[0].direction"),
        ({"order": ["formula.missing"]}, "order[0]"),
        ({"group_by": {"direction": "ASC"}}, "group_by.property"),
        ({"limit": -1}, "limit"),
    ],
)
def test_a_querys_faults_name_the_argument(arguments: dict[str, object], where: str) -> None:
    given: dict[str, object] = dict.fromkeys(
        ("filter", "formulas", "sort", "order", "group_by", "limit")
    )
    with pytest.raises(BaseFileError) as caught:
        document_from_query(**{**given, **arguments})  # type: ignore[arg-type]
    assert caught.value.where == where
