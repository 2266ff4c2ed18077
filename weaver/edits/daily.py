"""Daily notes: the `day` period of `weaver.edits.periodic`, found where Obsidian finds them.

The core Daily notes settings (`.obsidian/daily-notes.json`: `folder`, `format` in moment.js
tokens, `template`; Obsidian's defaults when absent: the vault root, `YYYY-MM-DD`, no
template), unless the Periodic Notes plugin is enabled with its daily notes on, whose settings
then win as they do in Obsidian. A daily note made from its template gets `{{date}}` as the
note's own date in the daily format and `{{time}}` as now, as the Daily notes plugin does.
"""

from __future__ import annotations

import datetime as dt

from weaver.edits.notes import CacheSync
from weaver.edits.periodic import (
    PeriodicAppend,
    PeriodicNote,
    append_to_periodic_note,
    get_periodic_note,
)
from weaver.edits.steps import Notes


def get_daily_note(app: Notes, day: str | None, today: dt.date | None = None) -> PeriodicNote:
    """The daily note of a day (today by default): where it is, and its text if it exists."""
    return get_periodic_note(app, "day", day, today)


def append_to_daily_note(
    app: Notes, text: str, day: str | None, sync: CacheSync, now: dt.datetime | None = None
) -> PeriodicAppend:
    """Append `text` to a day's daily note, making the note (from its template) if missing."""
    return append_to_periodic_note(app, "day", text, day, sync, now)
