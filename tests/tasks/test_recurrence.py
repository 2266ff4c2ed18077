"""Recurrence rules give the next dates the Tasks plugin gives: the examples of its "Recurring
Tasks" page with their documented results, the month-end rules, `when done`, and rules it does
not read refused by name."""

from __future__ import annotations

from datetime import date

import pytest

from weaver.markdown.tasks import TaskDates
from weaver.tasks.recurrence import RecurrenceError, next_dates, parse_recurrence

TODAY = date(2026, 11, 28)


def following(rule: str, due: str, today: date = TODAY) -> str | None:
    return next_dates(parse_recurrence(rule), TaskDates(due=due), today).due


def chain(rule: str, due: str, count: int) -> list[str]:
    dates = [due]
    for _ in range(count):
        nxt = following(rule, dates[-1])
        assert nxt is not None
        dates.append(nxt)
    return dates


def test_every_sunday_moves_to_the_next_sunday() -> None:
    assert following("every Sunday", "2021-04-25") == "2021-05-02"


def test_every_month_on_the_last_is_each_months_last_day() -> None:
    assert chain("every month on the last", "2022-01-31", 5) == [
        "2022-01-31",
        "2022-02-28",
        "2022-03-31",
        "2022-04-30",
        "2022-05-31",
        "2022-06-30",
    ]


def test_every_month_moves_back_to_a_shorter_months_last_day_and_stays_there() -> None:
    assert chain("every month", "2021-10-31", 5) == [
        "2021-10-31",
        "2021-11-30",
        "2021-12-30",
        "2022-01-30",
        "2022-02-28",
        "2022-03-28",
    ]


def test_every_month_on_the_31st_skips_months_without_one() -> None:
    assert chain("every month on the 31st", "2022-01-31", 4) == [
        "2022-01-31",
        "2022-03-31",
        "2022-05-31",
        "2022-07-31",
        "2022-08-31",
    ]


def test_every_3_months_from_the_31st_moves_back_then_keeps_the_30th() -> None:
    assert chain("every 3 months", "2022-01-31", 2) == ["2022-01-31", "2022-04-30", "2022-07-30"]


def test_other_dates_keep_their_distance_to_the_due_date() -> None:
    rule = parse_recurrence("every 2 weeks")
    dates = TaskDates(due="2021-10-30", scheduled="2021-10-28")
    assert next_dates(rule, dates, TODAY) == TaskDates(due="2021-11-13", scheduled="2021-11-11")


def test_scheduled_is_the_reference_without_a_due_date_and_not_today() -> None:
    rule = parse_recurrence("every week")
    late = date(2022, 2, 13)
    assert next_dates(rule, TaskDates(scheduled="2021-02-06"), late).scheduled == "2021-02-13"


def test_when_done_counts_from_the_completion_day() -> None:
    rule = parse_recurrence("every week when done")
    assert rule.when_done
    nxt = next_dates(rule, TaskDates(scheduled="2021-02-06"), date(2022, 2, 13))
    assert nxt == TaskDates(scheduled="2022-02-20")


def test_start_date_is_the_last_reference_and_created_done_are_not_carried() -> None:
    rule = parse_recurrence("every 3 days")
    dates = TaskDates(start="2026-01-01", created="2025-12-01", done="2026-01-02")
    assert next_dates(rule, dates, TODAY) == TaskDates(start="2026-01-04")


def test_a_task_without_dates_recurs_without_dates() -> None:
    assert next_dates(parse_recurrence("every day"), TaskDates(), TODAY) == TaskDates()


def test_remove_scheduled_prefers_start_and_drops_scheduled() -> None:
    rule = parse_recurrence("every week")
    dates = TaskDates(scheduled="2026-01-10", start="2026-01-05")
    assert next_dates(rule, dates, TODAY, remove_scheduled=True) == TaskDates(start="2026-01-12")


@pytest.mark.parametrize(
    ("rule", "due", "expected"),
    [
        ("every 10 days", "2026-01-25", "2026-02-04"),
        ("every weekday", "2026-11-27", "2026-11-30"),  # Friday -> Monday
        ("every weekday", "2026-11-24", "2026-11-25"),
        ("every week on Tuesday, Friday", "2026-11-24", "2026-11-27"),
        ("every week on Tuesday and Friday", "2026-11-27", "2026-12-01"),
        ("every 3 weeks on Friday", "2026-11-27", "2026-12-18"),
        ("every 2 months", "2026-12-31", "2027-02-28"),
        ("every month on the 1st", "2026-11-15", "2026-12-01"),
        ("every month on the last Friday", "2026-11-27", "2026-12-25"),
        ("every month on the 2nd last Friday", "2026-11-20", "2026-12-18"),
        ("every 6 months on the 2nd Wednesday", "2026-01-14", "2026-07-08"),
        ("every January on the 15th", "2026-01-15", "2027-01-15"),
        ("every February on the last", "2027-02-28", "2028-02-29"),
        ("every April and December on the 1st and 24th", "2026-04-24", "2026-12-01"),
        ("every April and December on the 1st and 24th", "2026-12-01", "2026-12-24"),
        ("every year", "2024-02-29", "2025-02-28"),
        ("Every  Week", "2026-11-28", "2026-12-05"),
    ],
)
def test_the_plugins_example_rules(rule: str, due: str, expected: str) -> None:
    assert following(rule, due) == expected


@pytest.mark.parametrize(
    "rule",
    [
        "each week",
        "every fortnight",
        "every 0 days",
        "every week on the 1st",
        "every month on Funday",
        "every month on the 32nd",
        "every day for 3 times",
        "every January",
    ],
)
def test_a_rule_the_plugin_does_not_read_is_an_error_naming_it(rule: str) -> None:
    with pytest.raises(RecurrenceError, match=repr(rule).replace("(", r"\(")):
        parse_recurrence(rule)


def test_a_rule_that_never_happens_again_is_an_error() -> None:
    with pytest.raises(RecurrenceError, match="no date after"):
        following("every February on the 30th", "2026-01-01")
