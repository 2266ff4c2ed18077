"""Date phrases of the Tasks plugin's queries, read against a fixed Wednesday."""

from __future__ import annotations

from datetime import date

import pytest

from weaver.tasks.dates import DateRange, parse_date_phrase

WEDNESDAY = date(2026, 5, 13)


def day(text: str) -> DateRange:
    found = date.fromisoformat(text)
    return DateRange(found, found)


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("today", day("2026-05-13")),
        ("Tomorrow", day("2026-05-14")),
        ("yesterday", day("2026-05-12")),
        ("next monday", day("2026-05-18")),
        ("friday", day("2026-05-15")),
        ("next wednesday", day("2026-05-20")),  # never today itself
        ("last friday", day("2026-05-08")),
        ("last wednesday", day("2026-05-06")),
        ("in 3 days", day("2026-05-16")),
        ("in two weeks", day("2026-05-27")),
        ("3 days ago", day("2026-05-10")),
        ("a month ago", day("2026-04-13")),
        ("in 1 year", day("2027-05-13")),
        ("2026-02-28", day("2026-02-28")),
    ],
)
def test_a_phrase_names_one_day(phrase: str, expected: DateRange) -> None:
    assert parse_date_phrase(phrase, WEDNESDAY) == expected


@pytest.mark.parametrize(
    ("phrase", "start", "end"),
    [
        ("this week", "2026-05-11", "2026-05-17"),  # ISO weeks: Monday to Sunday
        ("next week", "2026-05-18", "2026-05-24"),
        ("last week", "2026-05-04", "2026-05-10"),
        ("this month", "2026-05-01", "2026-05-31"),
        ("last month", "2026-04-01", "2026-04-30"),
        ("next quarter", "2026-07-01", "2026-09-30"),
        ("next year", "2027-01-01", "2027-12-31"),
        ("2026-03-01 2026-03-10", "2026-03-01", "2026-03-10"),
        ("2026-W01", "2025-12-29", "2026-01-04"),
        ("2026-02", "2026-02-01", "2026-02-28"),
        ("2026-Q4", "2026-10-01", "2026-12-31"),
        ("2025", "2025-01-01", "2025-12-31"),
    ],
)
def test_a_phrase_names_a_range(phrase: str, start: str, end: str) -> None:
    found = parse_date_phrase(phrase, WEDNESDAY)
    assert found == DateRange(date.fromisoformat(start), date.fromisoformat(end))
    assert not found.is_day


def test_an_invalid_second_date_leaves_the_first_as_a_day() -> None:
    assert parse_date_phrase("2026-03-01 2026-02-30", WEDNESDAY) == day("2026-03-01")


@pytest.mark.parametrize("phrase", ["someday", "2026-13-01", "next fortnight", "in three", ""])
def test_what_names_no_date_is_none(phrase: str) -> None:
    assert parse_date_phrase(phrase, WEDNESDAY) is None


def test_a_range_prints_as_the_plugin_writes_it() -> None:
    found = parse_date_phrase("this week", WEDNESDAY)
    assert str(found) == "2026-05-11 2026-05-17"
