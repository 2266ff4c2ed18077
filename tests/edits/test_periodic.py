"""Periodic notes where Obsidian puts them: the Periodic Notes plugin's settings (both of its
formats) when it is enabled, the core Daily notes and Calendar settings otherwise, the
plugin's defaults last; made from their templates."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.helpers import WriteNotes
from weaver.edits import daily, periodic
from weaver.edits.notes import NoteEditError
from weaver.runtime.app import App

NOW = dt.datetime(2026, 11, 26, 9, 30, tzinfo=dt.UTC)  # a Thursday
THURSDAY = dt.date(2026, 11, 26)
ENABLED = '["calendar", "periodic-notes"]'
PLUGIN = ".obsidian/plugins/periodic-notes/data.json"


def legacy(**periods: dict[str, object]) -> str:
    """The plugin's 0.x data.json: one object per period."""
    return json.dumps({"showGettingStartedBanner": False, **periods})


def where(app: App, period: periodic.Period, day: dt.date = THURSDAY) -> tuple[str, str, str]:
    note = periodic.get_periodic_note(app, period, None, today=day)
    return note.path, note.date, note.source


def test_defaults_without_settings(app: App, write_notes: WriteNotes) -> None:
    write_notes({"Home.md": "home\n"})
    assert where(app, "day") == ("2026-11-26.md", "2026-11-26", "daily-notes")
    assert where(app, "week") == ("2026-W48.md", "2026-11-22", "defaults")
    assert where(app, "month") == ("2026-11.md", "2026-11-01", "defaults")
    assert where(app, "quarter") == ("2026-Q4.md", "2026-10-01", "defaults")
    assert where(app, "year") == ("2026.md", "2026-01-01", "defaults")


def test_weekly_notes_across_the_year_end(app: App, write_notes: WriteNotes) -> None:
    write_notes({"Home.md": "home\n"})
    # 2027-01-01 is a Friday: in moment's English weeks, the week from Sunday 2026-12-27 is
    # week 1 of 2027 (ISO would say 2026-W53).
    assert where(app, "week", dt.date(2027, 1, 1)) == ("2027-W01.md", "2026-12-27", "defaults")
    assert where(app, "week", dt.date(2026, 12, 26))[0] == "2026-W52.md"
    assert where(app, "quarter", dt.date(2027, 1, 1))[0] == "2027-Q1.md"


def test_the_plugins_legacy_settings_and_a_weekly_template(
    app: App, write_notes: WriteNotes
) -> None:
    weekly = {"enabled": True, "folder": "Weeks/", "format": "gggg-[W]ww", "template": "T/Week"}
    monthly = {"enabled": False, "folder": "Months", "format": "MMMM YYYY"}
    root = write_notes(
        {
            ".obsidian/community-plugins.json": ENABLED,
            PLUGIN: legacy(weekly=weekly, monthly=monthly),
            "T/Week.md": "# {{title}}\nFrom {{monday:ddd D MMM}} to {{sunday:ddd D MMM}}\n",
        }
    )
    made = periodic.append_to_periodic_note(app, "week", "- plan", "2027-01-01", lambda _: True)
    assert made.created and made.patched.path == "Weeks/2027-W01.md"
    text = (root / "Weeks/2027-W01.md").read_text()
    # The English week holding Friday 2027-01-01 runs from Sunday 27 December.
    assert text == "# 2027-W01\nFrom Mon 28 Dec to Sun 27 Dec\n- plan\n"
    again = periodic.append_to_periodic_note(app, "week", "- more", "2027-01-02", lambda _: True)
    assert not again.created and (root / "Weeks/2027-W01.md").read_text().endswith("plan\n- more\n")
    # A period the plugin leaves disabled is where the plugin's defaults would put it.
    assert where(app, "month") == ("2026-11.md", "2026-11-01", "defaults")


def test_the_plugins_calendar_sets(app: App, write_notes: WriteNotes) -> None:
    quarter = {"enabled": True, "folder": "Q", "format": "YYYY [Q]Q", "templatePath": "T/Q.md"}
    settings = {
        "activeCalendarSet": "Work",
        "calendarSets": [
            {"id": "Default", "quarter": {"enabled": True, "folder": "Elsewhere"}},
            {"id": "Work", "ctime": "2026-01-01T00:00:00Z", "quarter": quarter},
        ],
    }
    root = write_notes(
        {
            ".obsidian/community-plugins.json": ENABLED,
            PLUGIN: json.dumps(settings),
            "T/Q.md": "Quarter {{date}} ({{date:MMMM}}), made {{time}}\n",
        }
    )
    assert where(app, "quarter") == ("Q/2026 Q4.md", "2026-10-01", "periodic-notes")
    periodic.append_to_periodic_note(app, "quarter", "- review", None, lambda _: True, now=NOW)
    assert (
        root / "Q/2026 Q4.md"
    ).read_text() == "Quarter 2026 Q4 (October), made 09:30\n- review\n"


def test_daily_notes_follow_the_plugin_only_when_it_enables_them(
    app: App, write_notes: WriteNotes
) -> None:
    files = {
        ".obsidian/daily-notes.json": '{"folder": "Core", "format": "DD.MM.YYYY"}',
        ".obsidian/community-plugins.json": ENABLED,
        PLUGIN: legacy(daily={"enabled": False, "folder": "Plugin", "format": "YYYY-MM-DD"}),
    }
    write_notes(files)
    assert daily.get_daily_note(app, "2026-11-26").path == "Core/26.11.2026.md"
    write_notes({PLUGIN: legacy(daily={"enabled": True, "folder": "Plugin", "format": ""})})
    note = daily.get_daily_note(app, "2026-11-26")
    assert (note.path, note.source) == ("Plugin/2026-11-26.md", "periodic-notes")
    # A disabled plugin's data.json is ignored, as Obsidian ignores it.
    write_notes({".obsidian/community-plugins.json": '["calendar"]'})
    assert daily.get_daily_note(app, "2026-11-26").path == "Core/26.11.2026.md"


def test_week_start_and_the_calendar_plugins_weekly_notes(
    app: App, write_notes: WriteNotes
) -> None:
    calendar = {"weekStart": "monday", "weeklyNoteFolder": "W", "weeklyNoteFormat": "gggg-ww"}
    write_notes(
        {
            ".obsidian/community-plugins.json": ENABLED,
            ".obsidian/plugins/calendar/data.json": json.dumps(calendar),
        }
    )
    # Monday-first English weeks: Sunday 2021-01-03 ends week 1 of 2021, begun on 2020-12-28.
    assert where(app, "week", dt.date(2021, 1, 3)) == ("W/2021-01.md", "2020-12-28", "calendar")
    write_notes({PLUGIN: json.dumps({"weekStart": "saturday", "weekly": {"enabled": True}})})
    assert where(app, "week", dt.date(2021, 1, 3)) == (
        "2021-W01.md",
        "2021-01-02",
        "periodic-notes",
    )


def test_bad_settings_and_arguments_are_named(app: App, write_notes: WriteNotes) -> None:
    write_notes({".obsidian/community-plugins.json": '["periodic-notes"', "Home.md": "x\n"})
    with pytest.raises(NoteEditError, match=r"community-plugins.json is not valid JSON"):
        periodic.get_periodic_note(app, "week", None)
    write_notes({".obsidian/community-plugins.json": ENABLED, PLUGIN: '{"weekStart": "funday"}'})
    with pytest.raises(NoteEditError, match=r"weekStart 'funday' in .*periodic-notes.* not a day"):
        periodic.get_periodic_note(app, "week", None)
    write_notes({PLUGIN: legacy(yearly={"enabled": True, "template": "Gone"})})
    with pytest.raises(NoteEditError, match=r"template 'Gone\.md' does not exist"):
        periodic.append_to_periodic_note(app, "year", "x", None, lambda _: True, now=NOW)
    assert not (app.vault.root / "2026.md").exists()
