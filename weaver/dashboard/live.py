"""Live updates: `GET /events`, a server-sent event stream.

The stream looks at the cache twice a second (two index lookups: the pending and running runs
with their progress, the newest run's time, and the cache's version) and sends `runs` when
runs moved and `notes` when notes changed. The page's script then reloads the parts of the
page marked `data-live`. Polling the cache, rather than listening inside the engine, sees runs
of every process sharing the cache (a `weaver trigger` in a shell included).

A stream ends after `STREAM_SECONDS` (the browser reconnects by itself, `retry`), and at once
when the dashboard closes, so that stopping the daemon never waits on an open page.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread
from sqlalchemy import Engine

from weaver.cache import executions, read

POLL_SECONDS = 0.5
STREAM_SECONDS = 60.0
RETRY_MS = 1000


@dataclass(frozen=True, slots=True)
class Snapshot:
    runs: tuple[object, ...]
    notes: int | None


def take_snapshot(db: Engine) -> Snapshot:
    with read.read_snapshot(db) as conn:
        active = executions.list_active(conn)
        newest = executions.newest_created(conn)
        version = read.last_updated(conn)
    return Snapshot(runs=(newest, *active), notes=version)


async def stream_events(
    db: Engine, closing: threading.Event, is_disconnected: Callable[[], Awaitable[bool]]
) -> AsyncIterator[str]:
    """The event stream; `is_disconnected` is the request's async check."""
    yield f"retry: {RETRY_MS}\n\n"
    last = await anyio.to_thread.run_sync(take_snapshot, db)
    ended_at = time.monotonic() + STREAM_SECONDS
    while time.monotonic() < ended_at and not closing.is_set():
        await anyio.sleep(POLL_SECONDS)
        if await is_disconnected():
            return
        current = await anyio.to_thread.run_sync(take_snapshot, db)
        if current.runs != last.runs:
            yield _event("runs", {"active": len(current.runs) - 1})
        if current.notes != last.notes:
            yield _event("notes", {"version": current.notes})
        last = current
    yield _event("bye", {})


def _event(name: str, data: dict[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"
