"""Daily notes by the vault's settings (and Obsidian's defaults), made from their template."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import WriteNotes
from weaver.edits import daily, periodic
from weaver.edits.notes import NoteEditError
from weaver.runtime.app import App

NOW = dt.datetime(2026, 11, 26, 9, 30, tzinfo=dt.UTC)


def test_defaults_without_settings(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"Home.md": "home\n"})
    note = daily.get_daily_note(app, None, today=dt.date(2026, 11, 26))
    assert (note.path, note.exists) == ("2026-11-26.md", False)
    result = daily.append_to_daily_note(app, "- first", None, lambda _: True, now=NOW)
    assert result.created and (root / "2026-11-26.md").read_text() == "- first\n"
    again = daily.append_to_daily_note(app, "- second", "2026-11-26", lambda _: True, now=NOW)
    assert not again.created
    assert (root / "2026-11-26.md").read_text() == "- first\n- second\n"
    assert daily.get_daily_note(app, "2026-11-26").content == "- first\n- second\n"


def test_template_with_the_notes_own_date(app: App, write_notes: WriteNotes) -> None:
    root = write_notes(
        {
            ".obsidian/daily-notes.json": '{"folder": "Daily/", "format": "DD-MM-YYYY", '
            '"template": "tpl/Day"}',
            ".obsidian/templates.json": '{"folder": "tpl", "timeFormat": "h:mm A"}',
            "tpl/Day.md": "---\ncreated: {{date:YYYY-MM-DD}}\n---\n# {{title}} {{time}}\n",
        }
    )
    daily.append_to_daily_note(app, "x", "2026-01-02", lambda _: True, now=NOW)
    text = (root / "Daily/02-01-2026.md").read_text()
    assert text == "---\ncreated: 2026-01-02\n---\n# 02-01-2026 9:30 AM\nx\n"


def test_bad_settings_and_dates_are_named(app: App, write_notes: WriteNotes) -> None:
    write_notes({".obsidian/daily-notes.json": "{not json"})
    with pytest.raises(NoteEditError, match=r"daily-notes.json is not valid JSON \(line 1"):
        daily.get_daily_note(app, None)
    with pytest.raises(NoteEditError, match="not a date"):
        periodic.parse_day("26/11/2026", dt.date.today())


def test_missing_template_is_named(app: App, write_notes: WriteNotes) -> None:
    write_notes({".obsidian/daily-notes.json": '{"template": "Templates/Gone"}'})
    with pytest.raises(NoteEditError, match=r"template 'Templates/Gone\.md' does not exist"):
        daily.append_to_daily_note(app, "x", None, lambda _: True, now=NOW)
