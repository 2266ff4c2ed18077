"""moment.js format tokens and the Templates plugin's variables."""

from __future__ import annotations

import datetime as dt

import pytest

from weaver.markdown.dates import ENGLISH_WEEK, WeekRule, format_moment, ordinal, render_template

WHEN = dt.datetime(2026, 1, 3, 14, 5, 9, 123000, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def test_common_daily_note_formats() -> None:
    assert format_moment(WHEN, "YYYY-MM-DD") == "2026-01-03"
    assert format_moment(WHEN, "YYYY/MM/YYYY-MM-DD") == "2026/01/2026-01-03"
    assert format_moment(WHEN, "dddd, MMMM Do YYYY") == "Saturday, January 3rd 2026"
    assert format_moment(WHEN, "ddd D MMM YY") == "Sat 3 Jan 26"
    assert format_moment(WHEN, "[Week] WW, gggg-[W]ww") == "Week 01, 2026-W01"
    assert format_moment(WHEN, "HH:mm:ss.SSS A h a Z ZZ") == "14:05:09.123 PM 2 pm +01:00 +0100"
    assert format_moment(WHEN, "DDDD Q E d") == "003 1 6 6"
    assert format_moment(WHEN, "[YYYY]") == "YYYY"


def test_weeks_across_the_year_end() -> None:
    # 2027-01-01 is a Friday: ISO week 53 of 2026; the English locale's week 1 of 2027.
    day = dt.datetime(2027, 1, 1)
    assert format_moment(day, "GGGG-[W]WW") == "2026-W53"
    assert format_moment(day, "gggg-[w]ww") == "2027-w01"
    assert format_moment(dt.datetime(2026, 12, 27), "gggg-[w]ww") == "2027-w01"


def test_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]  # fmt: skip


def test_template_variables() -> None:
    template = "# {{title}}\n{{date}} {{time}} {{DATE:YYYY}} {{ time : HH }} {{other}}\n"
    filled = render_template(template, title="Kickoff", when=WHEN)
    assert filled == "# Kickoff\n2026-01-03 14:05 2026 14 {{other}}\n"
    custom = render_template("{{date}}", title="x", when=WHEN, date_format="DD.MM.YYYY")
    assert custom == "03.01.2026"


# moment 2.30.1's answers (`updateLocale("en", {week: {dow}})`, which keeps English's doy 6):
# (first day of the week, date, "gggg-[W]ww e", startOf("week")).
MOMENT_WEEKS = [
    (0, "2020-12-27", "2021-W01 0", "2020-12-27"),
    (0, "2021-01-01", "2021-W01 5", "2020-12-27"),
    (0, "2021-01-03", "2021-W02 0", "2021-01-03"),
    (0, "2022-01-01", "2022-W01 6", "2021-12-26"),
    (0, "2026-12-26", "2026-W52 6", "2026-12-20"),
    (0, "2027-01-02", "2027-W01 6", "2026-12-27"),
    (0, "2027-12-31", "2028-W01 5", "2027-12-26"),
    (1, "2020-12-27", "2020-W52 6", "2020-12-21"),
    (1, "2021-01-01", "2021-W01 4", "2020-12-28"),
    (1, "2021-01-03", "2021-W01 6", "2020-12-28"),
    (1, "2027-01-03", "2027-W01 6", "2026-12-28"),
    (1, "2027-12-31", "2028-W01 4", "2027-12-27"),
    (6, "2021-01-01", "2020-W52 6", "2020-12-26"),
    (6, "2021-01-03", "2021-W01 1", "2021-01-02"),
    (6, "2022-01-01", "2022-W01 0", "2022-01-01"),
    (6, "2027-01-01", "2026-W52 6", "2026-12-26"),
    (6, "2027-12-31", "2027-W52 6", "2027-12-25"),
]


@pytest.mark.parametrize(("dow", "day", "expected", "start"), MOMENT_WEEKS)
def test_locale_weeks_across_year_ends_as_moment_numbers_them(
    dow: int, day: str, expected: str, start: str
) -> None:
    rule = WeekRule(dow=dow, doy=ENGLISH_WEEK.doy)
    date = dt.date.fromisoformat(day)
    assert format_moment(dt.datetime.combine(date, dt.time()), "gggg-[W]ww e", rule) == expected
    assert rule.week_start(date).isoformat() == start


def test_a_monday_week_is_not_an_iso_week_unless_its_doy_says_so() -> None:
    new_year = dt.datetime(2021, 1, 1)  # a Friday
    monday_first = WeekRule(dow=1, doy=6)  # English with the week started on Monday
    assert format_moment(new_year, "gggg-[W]ww|GGGG-[W]WW", monday_first) == "2021-W01|2020-W53"
    iso = WeekRule(dow=1, doy=4)  # en-GB and most of Europe: ISO weeks
    day = dt.date(2015, 1, 1)
    while day < dt.date(2031, 1, 1):
        year, week, _ = day.isocalendar()
        assert iso.week_of(day) == (year, week), day
        day += dt.timedelta(days=1)


def test_weekly_template_days() -> None:
    template = "{{title}} {{monday:ddd D}} .. {{Sunday:ddd D}} {{date}}"
    when = dt.datetime(2026, 12, 27, 9, 0)  # the Sunday starting week 1 of 2027
    filled = render_template(template, title="2027-W01", when=when, weekdays=True)
    assert filled == "2027-W01 Mon 28 .. Sun 27 2026-12-27"
    monday_first = WeekRule(dow=1, doy=6)
    assert (
        render_template("{{sunday:D}}", title="", when=when, week=monday_first, weekdays=True)
        == "27"
    )
    assert render_template("{{monday:D}}", title="", when=when, weekdays=False) == "{{monday:D}}"
