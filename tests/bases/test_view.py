"""Whole bases run over small vaults: the rows, their order, the groups and the summaries a
person would see in the app's table, from the help's example bases."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from tests.bases.examples import READING, SYNTAX_EXAMPLE
from tests.bases.facts import NOW, Facts, env, groups, table, value
from weaver.bases import Date, Duration, Environment, Link
from weaver.bases.document import parse_base, view_of
from weaver.bases.values import File, Markup, Value
from weaver.bases.view import ViewResult, plain, run_view
from weaver.errors import BaseExpressionError


def run(text: str, files: Sequence[Facts], view: str | None = None) -> ViewResult:
    document = parse_base(text)
    return run_view(document, view_of(document, view), files, env())


def test_the_syntax_pages_example_base_gives_its_rows_grouped_by_age(
    library: tuple[Facts, ...],
) -> None:
    result = run(SYNTAX_EXAMPLE, library)

    assert [column.label for column in result.columns] == [
        "file name",
        "Extension",
        "age",
        "ppu",
        "Price",
    ]
    assert table(result) == [
        ("Notes/Loose.md", ["Loose.md", "md", 3, 20 / 3, "20.00 dollars"]),
        ("Books/Dune.md", ["Dune.md", "md", 2, 6, "12.00 dollars"]),
        ("Books/Hamlet.md", ["Hamlet.md", "md", 2, 2, "4.00 dollars"]),
        ("Notes/Cheap.md", ["Cheap.md", "md", None, None, "2.50 dollars"]),
    ]
    # Descending ages, the rows without an age last; each group summarises its own rows.
    assert groups(result) == [
        (3, 0, 1, {"formula.ppu": 20 / 3}),
        (2, 1, 2, {"formula.ppu": 4}),
        (None, 3, 1, {"formula.ppu": None}),
    ]
    assert result.summaries == {"formula.ppu": pytest.approx((20 / 3 + 6 + 2) / 3)}
    assert result.matched == 4


def test_the_syntax_pages_exact_example_is_an_error_not_a_silent_filter(
    library: tuple[Facts, ...],
) -> None:
    text = SYNTAX_EXAMPLE.replace('"price / age"', '"(price / age).toFixed(2)"')
    with pytest.raises(BaseExpressionError, match=r"'formula.ppu > 5' at 12: cannot compare"):
        run(text, library)


def test_a_summary_formula_of_the_base_runs_over_the_columns_values(
    library: tuple[Facts, ...],
) -> None:
    result = run(SYNTAX_EXAMPLE, library, "Prices")

    assert [path for path, _ in table(result)] == [
        "Notes/Loose.md",
        "Books/Dune.md",
        "Books/Hamlet.md",
        "Books/Emma.md",
        "Notes/Cheap.md",
        "Notes/Tagged.md",
        "Books/Free.md",
    ]
    assert [column.label for column in result.columns] == ["file name", "Status", "price"]
    assert result.summaries == {"note.price": 6.214, "note.status": 3}
    assert result.groups is None


def test_the_views_pages_reading_list_and_recently_finished(reading: tuple[Facts, ...]) -> None:
    assert table(run(READING, reading)) == [
        ("Books/A Wizard of Earthsea.md", ["A Wizard of Earthsea.md", "to read"]),
        ("Books/Emma.md", ["Emma.md", "reading"]),
    ]
    finished = run(READING, reading, "Recently finished")
    # Newest first; the limit keeps two of the three finished books.
    assert table(finished) == [
        ("Books/Circe.md", ["Circe.md", "2025-05-20"]),
        ("Books/Beloved.md", ["Beloved.md", "2025-04-10"]),
    ]
    assert finished.matched == 3


def test_a_book_without_a_finished_date_sorts_last_in_either_direction(
    reading: tuple[Facts, ...],
) -> None:
    oldest = run(READING, reading, "Finished, oldest first")
    assert [path for path, _ in table(oldest)] == [
        "Books/Beloved.md",
        "Books/Circe.md",
        "Books/Dracula.md",
    ]
    newest = run(READING.replace("    limit: 2\n", ""), reading, "Recently finished")
    assert [path for path, _ in table(newest)][-1] == "Books/Dracula.md"


def test_values_of_different_types_sort_by_type_then_value_empty_last(
    mixed: tuple[Facts, ...],
) -> None:
    base = "views:\n  - type: table\n    name: t\n    order: [value]\n    sort:\n"
    ascending = run(base + "      - property: value\n", mixed)
    assert [cells[0] for _, cells in table(ascending)] == [
        True,
        3,
        3,
        10,
        "2025-01-02",
        "apple",
        "Banana",
        None,
        "",
    ]
    # Equal values keep path order (g before i), in either direction.
    assert [path for path, _ in table(ascending)][1:3] == ["g.md", "i.md"]
    descending = run(base + "      - property: value\n        direction: DESC\n", mixed)
    assert [cells[0] for _, cells in table(descending)] == [
        "Banana",
        "apple",
        "2025-01-02",
        10,
        3,
        3,
        True,
        None,
        "",
    ]
    assert [path for path, _ in table(descending)][4:6] == ["g.md", "i.md"]


def test_a_second_sort_key_breaks_the_firsts_ties(reading: tuple[Facts, ...]) -> None:
    text = """
views:
  - type: table
    name: by rating
    order: [file.name]
    sort:
      - {property: rating, direction: DESC}
      - {property: file.name, direction: DESC}
"""
    assert [path for path, _ in table(run(text, reading))] == [
        "Books/Beloved.md",
        "Books/Dracula.md",
        "Books/Circe.md",
        "Books/Emma.md",
        "Books/A Wizard of Earthsea.md",
        "Journal/2025-05-01.md",
    ]


def test_the_limit_keeps_the_first_sorted_rows_then_groups_share_them(
    reading: tuple[Facts, ...],
) -> None:
    text = """
views:
  - type: table
    name: grouped
    order: [file.name]
    sort: [{property: file.name, direction: DESC}]
    groupBy: {property: status, direction: ASC}
    limit: 4
    summaries: {rating: Sum}
"""
    result = run(text, reading)
    # The first four names from Z to A (Emma, Dracula, Circe, Beloved; "2025-05-01" and
    # "A Wizard" come after), then grouped by status from A to Z, keeping that order inside.
    assert table(result) == [
        ("Books/Dracula.md", ["Dracula.md"]),
        ("Books/Circe.md", ["Circe.md"]),
        ("Books/Beloved.md", ["Beloved.md"]),
        ("Books/Emma.md", ["Emma.md"]),
    ]
    assert groups(result) == [
        ("finished", 0, 3, {"note.rating": 13}),
        ("reading", 3, 1, {"note.rating": 3}),
    ]
    assert result.summaries == {"note.rating": 16}
    assert result.matched == 6


def test_an_empty_base_is_a_table_of_every_files_name_in_path_order(
    reading: tuple[Facts, ...],
) -> None:
    result = run("", reading)
    assert [column.key for column in result.columns] == ["file.name"]
    assert [path for path, _ in table(result)] == sorted(f.path for f in reading)
    assert result.groups is None
    assert result.summaries == {}


def test_a_formula_failing_for_one_file_fails_the_whole_view(
    library: tuple[Facts, ...],
) -> None:
    text = "formulas:\n  low: 'price.lower()'\nviews:\n  - type: table\n    name: t\n"
    text += "    order: [formula.low]\n"
    with pytest.raises(BaseExpressionError, match="a number has no function 'lower'"):
        run(text, library)
    with pytest.raises(BaseExpressionError, match="cannot use '-'"):
        run("filters: 'status - 1 > 0'", library)


def test_each_formula_runs_once_per_row_however_often_it_is_used(
    library: tuple[Facts, ...],
) -> None:
    calls: list[int] = []

    def counting_random() -> float:
        calls.append(1)
        return 0.5

    text = """
formulas:
  r: random()
filters: formula.r > 0.1
views:
  - type: table
    name: t
    order: [formula.r, file.name]
    sort: [{property: formula.r}]
    groupBy: {property: formula.r}
    summaries: {formula.r: Average}
"""
    document = parse_base(text)
    environment = Environment(now=NOW, random=counting_random)
    result = run_view(document, view_of(document, None), library, environment)
    assert len(result.rows) == len(library)
    assert len(calls) == len(library)


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("Average", 2.875),
        ("Min", 1),
        ("Max", 4.5),
        ("Sum", 11.5),
        ("Range", 3.5),
        ("Median", 3),
        ("Stddev", pytest.approx(1.2437343)),  # the population standard deviation
        ("Empty", 3),
        ("Filled", 5),
        ("Unique", 4),
    ],
)
def test_each_number_and_any_summary(summary: str, expected: object) -> None:
    # The numbers 1, 3, 3 and 4.5; text that is no number; three empty cells: null, "" and [].
    cells: list[object] = [1, 3, 3, 4.5, "n/a", None, "", []]
    files = [Facts(path=f"{i}.md", properties={"x": v}) for i, v in enumerate(cells)]
    text = f"views:\n  - type: table\n    name: t\n    summaries: {{x: {summary}}}\n"
    assert run(text, files).summaries == {"note.x": expected}


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("Earliest", "2025-01-31"),
        ("Latest", "2025-03-02T08:00:00"),
        ("Range", "2620800s"),
        ("Checked", 2),
        ("Unchecked", 1),
        ("Average", None),
        ("Sum", None),
    ],
)
def test_each_date_and_checkbox_summary(summary: str, expected: object) -> None:
    values: list[object] = ["2025-01-31", "2025-03-02T08:00:00", "2025-02-14", None]
    done: list[object] = [True, False, True, None]
    files = [
        Facts(path=f"{i}.md", properties={"day": day, "done": flag})
        for i, (day, flag) in enumerate(zip(values, done, strict=True))
    ]
    column = "done" if summary in ("Checked", "Unchecked") else "day"
    text = f"views:\n  - type: table\n    name: t\n    summaries: {{{column}: {summary}}}\n"
    summaries = run(text, files).summaries
    assert {key: plain(value) for key, value in summaries.items()} == {f"note.{column}": expected}


def test_a_summary_formula_of_the_base_wins_over_a_built_in_of_its_name(
    library: tuple[Facts, ...],
) -> None:
    text = """
summaries:
  Sum: values.length
views:
  - type: table
    name: t
    summaries: {price: Sum}
"""
    assert run(text, library).summaries == {"note.price": len(library)}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        ("text", "text"),
        (3, 3),
        (6.0, 6),
        (2.5, 2.5),
        (float("nan"), "NaN"),
        (Date(dt.datetime(2025, 5, 1), has_time=False), "2025-05-01"),
        (Date(dt.datetime(2025, 5, 1, 9, 30), has_time=True), "2025-05-01T09:30:00"),
        (Duration(months=1, millis=3_600_000), "1M 3600s"),
        (Link("Projects/Plan"), "[[Projects/Plan]]"),
        (Link("Plan", "the plan"), "[[Plan|the plan]]"),
        (Link("https://obsidian.md", "site"), "https://obsidian.md"),
        (File(Facts(path="Projects/Plan.md")), "Projects/Plan.md"),
        (Markup("icon", "plus"), "plus"),
        ([1, Link("A")], [1, "[[A]]"]),
        ({"when": Date(dt.datetime(2025, 1, 1), has_time=False)}, {"when": "2025-01-01"}),
    ],
)
def test_plain_gives_json_for_every_value(value: Value, expected: object) -> None:
    assert plain(value) == expected


def test_plain_of_a_regexp_is_its_literal() -> None:
    assert plain(value("/a+/g")) == "/a+/g"
