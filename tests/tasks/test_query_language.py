"""The Tasks plugin's query language read into a TaskQuery: what each line means, and that a
line Weaver cannot read is an error naming it, never a filter quietly dropped."""

from __future__ import annotations

from datetime import date

import pytest

from weaver.errors import TaskQueryError
from weaver.tasks.dates import DateRange
from weaver.tasks.query import (
    DEFAULT_SORTS,
    AllOf,
    AnyOf,
    DateMatches,
    DatePresence,
    DoneIs,
    Group,
    Not,
    PriorityIs,
    Recurring,
    Sort,
    StatusTypeIs,
    TagMatches,
    TagPresence,
    TextMatches,
)
from weaver.tasks.query_language import parse_filter, parse_task_query

TODAY = date(2026, 5, 13)


def one_day(text: str) -> DateRange:
    return DateRange(date.fromisoformat(text), date.fromisoformat(text))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("not done", DoneIs(False)),
        ("DONE", DoneIs(True)),
        ("status.type is IN_PROGRESS", StatusTypeIs(("IN_PROGRESS",))),
        ("status.type is not cancelled", StatusTypeIs(("CANCELLED",), negate=True)),
        ("due before tomorrow", DateMatches("due", "before", one_day("2026-05-14"))),
        ("due on or before today", DateMatches("due", "in or before", one_day("2026-05-13"))),
        ("due 2026-06-01", DateMatches("due", "in", one_day("2026-06-01"))),
        (
            "scheduled in this week",
            DateMatches("scheduled", "in", DateRange(date(2026, 5, 11), date(2026, 5, 17))),
        ),
        ("starts after yesterday", DateMatches("start", "after", one_day("2026-05-12"))),
        ("done last friday", DateMatches("done", "in", one_day("2026-05-08"))),
        ("happens before next monday", DateMatches("happens", "before", one_day("2026-05-18"))),
        ("no due date", DatePresence("due", present=False)),
        ("has start date", DatePresence("start", present=True)),
        ("has happens date", DatePresence("happens", present=True)),
        ("is recurring", Recurring(True)),
        ("is not recurring", Recurring(False)),
        ("priority is above medium", PriorityIs("above", 2)),
        ("priority is none", PriorityIs("is", 3)),
        ("path includes Projects/", TextMatches("path", "Projects/")),
        ("folder does not include archive", TextMatches("folder", "archive", negate=True)),
        ("filename includes plan", TextMatches("filename", "plan")),
        ("heading includes Today", TextMatches("heading", "Today")),
        ("status.name includes progress", TextMatches("status.name", "progress")),
        (
            "description regex matches /^call \\w+/i",
            TextMatches("description", "^call \\w+", regex=True, ignore_case=True),
        ),
        (
            "path regex does not match /Daily/",
            TextMatches("path", "Daily", regex=True, ignore_case=False, negate=True),
        ),
        ("tags include #work", TagMatches("#work")),
        ("tag does not include #someday", TagMatches("#someday", negate=True)),
        ("tags do not include #x", TagMatches("#x", negate=True)),
        ("no tags", TagPresence(False)),
    ],
)
def test_a_filter_line_means_what_the_plugin_says(line: str, expected: object) -> None:
    assert parse_filter(line, TODAY) == expected


def test_boolean_combinations_nest_with_not_binding_tightest() -> None:
    found = parse_filter("(not done) AND (due before today) OR NOT (tags include #x)", TODAY)
    assert found == AnyOf(
        (
            AllOf((DoneIs(False), DateMatches("due", "before", one_day("2026-05-13")))),
            Not(TagMatches("#x")),
        )
    )


def test_brackets_nest() -> None:
    found = parse_filter("NOT ((done) OR ((no due date) AND (is recurring)))", TODAY)
    assert found == Not(AnyOf((DoneIs(True), AllOf((DatePresence("due", False), Recurring(True))))))


def test_a_whole_query_with_comments_continuations_sorts_groups_and_limits() -> None:
    query = parse_task_query(
        "# what is open\nnot done\n\n(due before tomorrow) OR \\\n  (no due date)\n"
        "sort by priority reverse\nsort by due\ngroup by folder\nlimit 25\nlimit groups 3\n"
        "hide backlinks\nexplain\n",
        TODAY,
    )
    assert query.filters == (
        DoneIs(False),
        AnyOf((DateMatches("due", "before", one_day("2026-05-14")), DatePresence("due", False))),
    )
    assert query.sorts == (Sort("priority", reverse=True), Sort("due"))
    assert query.all_sorts() == query.sorts + DEFAULT_SORTS
    assert query.groups == (Group("folder"),)
    assert (query.limit, query.group_limit) == (25, 3)
    assert query.layout == ("hide backlinks",)
    assert query.explain


def test_an_empty_query_has_no_filter_and_the_default_sort() -> None:
    query = parse_task_query("# nothing but a comment\n\n", TODAY)
    assert query.filters == ()
    assert query.all_sorts() == DEFAULT_SORTS


@pytest.mark.parametrize(
    ("text", "number", "line"),
    [
        ("not done\nfilter by function task.urgency > 5", 2, "filter by function task.urgency > 5"),
        ("due before someday", 1, "due before someday"),
        ("not done\n\npriority is urgent", 3, "priority is urgent"),
        ("sort by colour", 1, "sort by colour"),
        ("(done) AND (nonsense here)", 1, "(done) AND (nonsense here)"),
        ("(done) AND (not done", 1, "(done) AND (not done"),
        ("description regex matches /x/g", 1, "description regex matches /x/g"),
        ("status.type is WAITING", 1, "status.type is WAITING"),
        ("due date is invalid", 1, "due date is invalid"),
    ],
)
def test_an_unsupported_line_is_an_error_naming_it(text: str, number: int, line: str) -> None:
    with pytest.raises(TaskQueryError) as caught:
        parse_task_query(text, TODAY)
    assert caught.value.number == number
    assert caught.value.line == line
    assert f"line {number}" in str(caught.value)
