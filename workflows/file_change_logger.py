"""`file-change-logger`: an audit log of every change to the vault's notes.

Each file event becomes one record (kind `change`, keyed by the note's path): what happened
(add, modify, delete, move), the path and for a move the old path, the note's size and content
hash, and when. The notes a first index finds are logged as adds with `"initial": true`: they
were in the vault before Weaver, and the daily digest does not count them as created. A deleted
note is gone from the cache by the time the log is written, so its size and hash are those this
log last recorded for it. Read the log back with `get_workflow_records {"workflowId":
"file-change-logger"}` or `weaver records file-change-logger`; the daily digest builds its lists
of notes from it.
"""

from __future__ import annotations

import time
from typing import Any

from weaver.engine import (
    FileTrigger,
    NewRecord,
    NoteAdded,
    NoteMoved,
    OnFile,
    VaultEvent,
    WorkflowContext,
    workflow,
)

KIND = "change"
# Every save of every note is a record: a change superseded by a newer one of the same note goes
# after this many days (the newest of each note stays).
RETENTION_DAYS = 90


@workflow(
    id="file-change-logger",
    name="File change logger",
    triggers=[OnFile("**")],
    timeout=60,
    records_retention_days=RETENTION_DAYS,
)
def log_changes(ctx: WorkflowContext[Any]) -> dict[str, Any]:
    """Keep an audit log of vault changes (kind, path, old path, size, hash, time)."""
    events = ctx.trigger.events if isinstance(ctx.trigger, FileTrigger) else ()
    now = time.time_ns() // 1_000_000
    entries = describe_events(ctx, events, now)
    ctx.records.extend(NewRecord(entry["path"], entry, KIND, now) for entry in entries)
    return {"logged": entries}


def describe_events(
    ctx: WorkflowContext[Any], events: tuple[VaultEvent, ...], now: int
) -> list[dict[str, Any]]:
    present = [event.path for event in events if event.kind != "delete"]
    deleted = [event.path for event in events if event.kind == "delete"]
    facts = ctx.note_facts(present)
    last_logged = ctx.records.latest_many(deleted, kind=KIND)
    entries = []
    for event in events:
        entry: dict[str, Any] = {"kind": event.kind, "path": event.path}
        if isinstance(event, NoteMoved):
            entry["oldPath"] = event.old_path
        elif isinstance(event, NoteAdded) and event.initial:
            entry["initial"] = True
        if (fact := facts.get(event.path)) is not None:
            entry.update(size=fact.size, hash=fact.content_hash)
        elif (previous := last_logged.get(event.path)) is not None:
            entry.update(size=previous.data.get("size"), hash=previous.data.get("hash"))
        else:
            entry.update(size=None, hash=None)
        entry["time"] = now
        entries.append(entry)
    return entries
