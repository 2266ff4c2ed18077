"""Periodic notes (get_periodic_note, append_to_periodic_note): the day, week, month, quarter
or year note of a date, where the vault's Periodic Notes (or core Daily notes, or Calendar)
settings put it. Thin edges over `weaver.edits.periodic`; the appending tool is left out when
the settings say `read_only = true`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from weaver.edits import periodic
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.edit_tools import PatchData, patch_data
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.sizing import fitted
from weaver.mcp_server.write_tools import cache_sync
from weaver.runtime.state import ServerState

PeriodArgument = Annotated[periodic.Period, Field(description="day, week, month, quarter or year")]
DateArgument = Annotated[
    str | None, Field(description="YYYY-MM-DD, any day of the period; default today")
]


class PeriodicNoteData(WireModel):
    path: str
    period: str
    date: str = Field(description="The period's first day (YYYY-MM-DD)")
    exists: bool
    content: str | None = Field(description="The text, within the answer's bound (see truncated)")
    content_hash: str | None
    truncated: bool = Field(description="Longer: read the rest with get_file_content (offset)")
    settings: str = Field(
        description="Whose settings placed the note: periodic-notes, daily-notes, calendar, "
        "or defaults (none configured for this period)"
    )


class PeriodicAppendData(PatchData):
    created: bool = Field(description="The note was made (from its template) first")


GET_PERIODIC_NOTE = """The day, week, month, quarter or year note of a date (default today),
found by the vault's Periodic Notes settings, with its content.

The periodic note of a date (default today): the note of the day, week, month, quarter or
year holding it, located as Obsidian locates it: the Periodic Notes plugin's settings
(.obsidian/plugins/periodic-notes/data.json: folder, moment.js format) for a period it
enables, else the core Daily notes settings for a day and the Calendar plugin's for a week,
else the plugin's defaults (YYYY-MM-DD, gggg-[W]ww, YYYY-MM, YYYY-[Q]Q, YYYY at the vault root).
Answers its path, the period's first day, whether it exists, its content and contentHash when
it does, and whose settings placed it. Example: {"period": "week", "date": "2026-11-26"}."""

APPEND_TO_PERIODIC_NOTE = """Append text to the day, week, month, quarter or year note of a
date (default today), creating it from its template if needed.

Append text to the periodic note of a date (default today; any day of the period), creating
the note first from the template its Periodic Notes settings name ({{date}} the period's first
day in the note's format, {{time}}, {{title}}, and {{monday:FORMAT}}..{{sunday:FORMAT}} in a
weekly note) when it does not exist yet. Example: {"period": "month", "text": "- [ ] taxes"}."""


@tool("Periodic note", GET_PERIODIC_NOTE, toolset="periodic", cache_hit=False)
def get_periodic_note(
    state: ServerState, period: PeriodArgument, date: DateArgument = None
) -> PeriodicNoteData:
    note = periodic.get_periodic_note(state.app, period, date)
    content, truncated = fitted(note.content)
    return PeriodicNoteData(
        path=note.path,
        period=note.period,
        date=note.date,
        exists=note.exists,
        content=content,
        content_hash=note.content_hash,
        truncated=truncated,
        settings=note.source,
    )


@tool(
    "Append to a periodic note",
    APPEND_TO_PERIODIC_NOTE,
    toolset="periodic",
    writes=True,
    idempotent=False,
)
def append_to_periodic_note(
    state: ServerState,
    period: PeriodArgument,
    text: Annotated[str, Field(description="Markdown to append")],
    date: DateArgument = None,
) -> PeriodicAppendData:
    result = periodic.append_to_periodic_note(state.app, period, text, date, cache_sync(state))
    return PeriodicAppendData(**dict(patch_data(result.patched)), created=result.created)
