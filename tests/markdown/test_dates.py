"""moment.js format tokens and the Templates plugin's variables."""

from __future__ import annotations

import datetime as dt

from weaver.markdown.dates import format_moment, ordinal, render_template

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
