"""Prompts that do work with the vault: each one's text is built from the cache (and the note
itself, for `connect_note`) when it is asked for, never canned.

review_changes(period)   the notes added or changed in the last day or week
connect_note(path)       a note, its neighbours, its unresolved links, and the notes that name
                         it without linking to it
summarize_folder(folder) a folder's notes with tags and the start of each
triage_broken_links()    the broken link targets, the notes holding them, likely targets
agenda(days)             open tasks overdue, then due and scheduled in the coming days, by day

Every prompt stays within the answer-size bound (`sizing`): lists are cut, and say so.

On a server of several vaults each prompt also takes `vault`: `WeaverServer.get_prompt` takes
it out of the arguments and names the vault's state in `PROMPT_STATE` while the prompt runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextvars import ContextVar
from datetime import date
from typing import Annotated, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field
from sqlalchemy import Connection

from weaver.cache import browse, fts, read
from weaver.cache.read import FileFilters, FileOrder
from weaver.cache.task_agenda import TaskSection, agenda_queries, read_sections
from weaver.cache.task_queries import FoundTask
from weaver.errors import NoteNotFoundError, SemanticUnavailableError
from weaver.mcp_server.access import reading_refusal
from weaver.mcp_server.content import decode
from weaver.mcp_server.hints import check_folder
from weaver.mcp_server.sizing import fit_text
from weaver.runtime.state import ServerState
from weaver.tasks.dates import named_day

LISTED = 60
NOTE_CHARS = 12_000
EXCERPT = 240
DAY_MS = 86_400_000
TASKS_LISTED = 40  # per section of the agenda
TASK_TOKENS = 60  # of a task's description: a line reads at a glance, and 120 lines fit
# The vault a prompt is asked of, on a server of several (unset: the server's own state).
PROMPT_STATE: ContextVar[ServerState | None] = ContextVar("prompt_state", default=None)


def _lines(items: list[str], total: int, what: str) -> str:
    more = f"\n(and {total - len(items)} more {what})" if total > len(items) else ""
    return ("\n".join(items) or "(none)") + more


def review_changes_text(state: ServerState, period: str) -> str:
    since = int(time.time() * 1000) - (DAY_MS if period == "day" else 7 * DAY_MS)
    with read.read_snapshot(state.app.db) as conn:
        page = read.query_files(
            conn, FileFilters(modified_since=since), LISTED, 0, FileOrder("modified", True)
        )
    rows = [
        f"- {f.path} — {f.title}" + (f" [{', '.join(f.tags)}]" if f.tags else "")
        for f in page.items
    ]
    return (
        f"Review what changed in my vault over the last {period}. "
        f"{page.total} notes were added or edited, newest first:\n\n"
        f"{_lines(rows, page.total, 'notes')}\n\n"
        "Summarise the themes, point out unfinished work and notes that should link to each "
        "other, and suggest what to follow up. Read a note with get_file_content when needed."
    )


def _opening(state: ServerState, path: str) -> str:
    """The note's text, as much as the prompt quotes; a reader (`serve --no-vault`), which
    never opens the files, says so instead and the rest of the prompt stands."""
    if not state.app.vault.has_files:
        return (
            "(not quoted: this server is a reader that answers from the cache alone; "
            "read the note with get_file_content on the writer)"
        )
    text = decode(path, state.app.vault.read_note(path))[:NOTE_CHARS]
    return text[: fit_text(text, NOTE_CHARS // 2)]


def connect_note_text(state: ServerState, path: str) -> str:
    app = state.app
    clean = app.vault.check_note_path(path)
    with read.read_snapshot(app.db) as conn:
        detail = read.get_file(conn, clean, LISTED)
        if detail is None:
            raise NoteNotFoundError(clean)
        linked = {clean, *detail.incoming, *(t.target for t in detail.outgoing)}
        expression = fts.fts_query(f'"{detail.summary.title}"')
        mentions: list[str] = []
        if expression is not None:
            hits = fts.search(conn, expression, LISTED, 0).hits
            mentions = [h.path for h in hits if h.path not in linked]
            linking = read.linking_to(conn, clean, mentions)
            mentions = [m for m in mentions if m not in linking]
        related = _related_by_meaning(state, conn, clean, linked)
    text = _opening(state, clean)
    outgoing = [f"- {t.target}" + (" (unresolved)" if t.broken else "") for t in detail.outgoing]
    incoming = [f"- {source}" for source in detail.incoming]
    return (
        f'Help me connect the note {clean} ("{detail.summary.title}") to the rest of my vault.'
        f"\n\n## Its text\n\n{text}\n\n## It links to\n\n"
        f"{_lines(outgoing, detail.outgoing_total, 'targets')}\n\n## Linked from\n\n"
        f"{_lines(incoming, detail.incoming_total, 'notes')}\n\n"
        "## Notes that mention its title without linking to it\n\n"
        f"{_lines([f'- {m}' for m in mentions], len(mentions), 'notes')}\n\n"
        f"## Related by meaning, not linked yet\n\n{related}\n\n"
        "Suggest links to add (in this note and in the notes that mention it), what to do "
        "about its unresolved links, and related notes it should point to."
    )


def _related_by_meaning(state: ServerState, conn: Connection, path: str, linked: set[str]) -> str:
    """The notes nearest in meaning that the note neither links to nor is linked from, or why
    there are none to show (semantic search off, not installed, or the note not embedded)."""
    app = state.app
    if not app.settings.semantic:
        return "(semantic search is turned off: `semantic = true` in the config)"
    try:
        page = app.semantic.similar(conn, path, LISTED, linked)
    except SemanticUnavailableError as exc:
        return f"({exc})"
    found = [f"- {hit.path}" for hit in page.hits]
    return _lines(found, len(found), "notes")


def summarize_folder_text(state: ServerState, folder: str) -> str:
    app = state.app
    clean = "/".join(p for p in folder.replace("\\", "/").split("/") if p not in ("", "."))
    with read.read_snapshot(app.db) as conn:
        check_folder(state, conn, clean or None)
        page = read.query_files(conn, FileFilters(directory=clean or None), LISTED, 0)
        bodies = fts.note_bodies(conn, [f.path for f in page.items])
    rows = []
    for f in page.items:
        excerpt = " ".join(bodies.get(f.path, "").split())[:EXCERPT]
        tags = f" [{', '.join(f.tags)}]" if f.tags else ""
        rows.append(f"- {f.path} — {f.title}{tags}: {excerpt}")
    return (
        f"Summarise the folder {clean or '(vault root)'} of my vault: {page.total} notes.\n\n"
        f"{_lines(rows, page.total, 'notes')}\n\n"
        "Describe what the folder is for, its main topics, notes that overlap or are stale, "
        "and a structure (index note, sub-folders, tags) that would make it easier to use."
    )


def triage_broken_links_text(state: ServerState) -> str:
    with read.read_snapshot(state.app.db) as conn:
        page = browse.broken_links(conn, LISTED, 0)
        names = state.name_index.get(conn)
    matches = names.resolve([b.target for b in page.items], "fuzzy", 0.6)
    rows = []
    for broken, match in zip(page.items, matches, strict=True):
        guess = f"; maybe {match.path}" if match.path else ""
        rows.append(
            f"- [[{broken.target}]] ×{broken.occurrences} in {broken.source_count} notes "
            f"({', '.join(broken.sources)}){guess}"
        )
    return (
        f"Triage the broken links of my vault: {page.total} link targets resolve to no note, "
        "most linked first.\n\n"
        f"{_lines(rows, page.total, 'targets')}\n\n"
        "For each, say whether to create the note, fix the link (to the likely target) or "
        "remove it, most valuable first."
    )


def agenda_text(state: ServerState, days: int, today: date | None = None) -> str:
    day = today or date.today()
    with read.read_snapshot(state.app.db) as conn:
        sections = read_sections(conn, agenda_queries(day, days), day, TASKS_LISTED)
    overdue, due, scheduled = sections
    return (
        f"Help me plan my next {days} days from today, {named_day(day.isoformat())}. "
        "These are my open tasks (note path and line after each).\n\n"
        f"## Overdue ({overdue.page.total})\n\n{_task_lines(overdue, 'due')}\n\n"
        f"## Due in the next {days} days ({due.page.total})\n\n{_by_day(due, 'due')}\n\n"
        f"## Scheduled in the next {days} days ({scheduled.page.total})\n\n"
        f"{_by_day(scheduled, 'scheduled')}\n\n"
        "Help me plan: what to do first and on which day, what to reschedule or drop from the "
        "overdue list, and days that hold too much. Use query_tasks for more tasks or details, "
        "and ask me before changing a task."
    )


def _task_line(task: FoundTask, date_field: str | None = None) -> str:
    text = task.description[: fit_text(task.description, TASK_TOKENS)]
    text += "…" if len(text) < len(task.description) else ""
    when = f" ({date_field} {task.dates[date_field]})" if date_field in task.dates else ""
    priority = f" [{task.priority} priority]" if task.priority != "none" else ""
    return f"- [{task.status_char}] {text}{priority}{when} — {task.path}:{task.line}"


def _more_tasks(section: TaskSection) -> str:
    shown, total = len(section.page.items), section.page.total
    if shown >= total:
        return ""
    return f"\n(and {total - shown} more: query_tasks with query {json.dumps(section.query)})"


def _task_lines(section: TaskSection, date_field: str) -> str:
    lines = [_task_line(task, date_field) for task in section.page.items]
    return ("\n".join(lines) or "(none)") + _more_tasks(section)


def _by_day(section: TaskSection, date_field: str) -> str:
    """The section's tasks under a heading per day (they come sorted by that date)."""
    parts: list[str] = []
    current = ""
    for task in section.page.items:
        day = task.dates.get(date_field, "")
        if day != current:
            parts += ["", f"### {named_day(day)}"] if parts else [f"### {named_day(day)}"]
            current = day
        parts.append(_task_line(task))
    return ("\n".join(parts) or "(none)") + _more_tasks(section)


def install_prompts(server: MCPServer[ServerState], default: ServerState) -> None:
    async def run(build: Callable[[ServerState], str]) -> str:
        state = PROMPT_STATE.get() or default
        refusal = reading_refusal(state.app.settings, "this prompt")
        if refusal is not None:  # MCPError: the SDK hides any other error's message
            raise MCPError(code=INVALID_PARAMS, message=refusal)
        await state.wait_ready()
        return await anyio.to_thread.run_sync(build, state)

    @server.prompt(
        title="Review recent changes",
        description="The notes added or changed in the last day or week, for a review",
    )
    async def review_changes(
        period: Annotated[Literal["day", "week"], Field(description="day or week")] = "day",
    ) -> str:
        return await run(lambda state: review_changes_text(state, period))

    @server.prompt(
        title="Connect a note",
        description="A note with its neighbours, unresolved "
        "links and the notes that mention it without linking",
    )
    async def connect_note(
        path: Annotated[str, Field(description="Note path relative to the vault root")],
    ) -> str:
        return await run(lambda state: connect_note_text(state, path))

    @server.prompt(
        title="Summarise a folder",
        description="A folder's notes with their tags and openings, for a summary",
    )
    async def summarize_folder(
        folder: Annotated[str, Field(description="Folder relative to the vault root")],
    ) -> str:
        return await run(lambda state: summarize_folder_text(state, folder))

    @server.prompt(
        title="Triage broken links",
        description="Broken link targets, the notes holding them and likely targets",
    )
    async def triage_broken_links() -> str:
        return await run(triage_broken_links_text)

    @server.prompt(
        title="Plan my tasks",
        description="Open tasks overdue, then due and scheduled in the coming days, by day",
    )
    async def agenda(
        days: Annotated[int, Field(ge=1, le=90, description="How many days ahead (1-90)")] = 7,
    ) -> str:
        return await run(lambda state: agenda_text(state, days))
