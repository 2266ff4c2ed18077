"""A corrupt cache found while running is rebuilt by the writer, without a restart.

At start, `cache.db.open_cache_engine` checks the file and replaces a corrupt one. While
running, any query of this process that SQLite answers with a corruption error ("file is not
a database", "database disk image is malformed") is seen here, whichever thread ran it: a
`handle_error` listener on the cache's engine (`CorruptionWatch`). The writer then, once:

(A reader process cannot replace the file: it leaves the cause beside the cache,
`cache.recovery.mark_corrupt`, which the writer looks for as often.)

1. reports the cache `degraded` with the cause in `health_check` and `/health`;
2. confirms it with SQLite's `quick_check` (a stray error from a connection still open on an
   already replaced file must not start another rebuild);
3. moves the file aside with a one-line explanation, makes a new cache and salvages the
   workflow history into it, as at start (`cache.db.replace_corrupt_cache`);
4. fills it from the notes (`Indexer.refill`: the watcher's batches wait meanwhile, then
   apply to the new file), and clears the fault.

Reader processes reopen the new file by themselves (`host.follow`). A cache on another
database than SQLite is not a file to move: there the fault is only reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import structlog
from sqlalchemy import Engine, event
from sqlalchemy.exc import SQLAlchemyError

from weaver.cache import recovery
from weaver.cache.db import replace_corrupt_cache
from weaver.errors import WeaverError
from weaver.host.app import App

log = structlog.get_logger(__name__)

# How often the writer looks whether a corruption error was seen.
WATCH_S = 0.2
# After a rebuild that failed, the pause before trying again.
RETRY_S = 5.0


class CorruptionWatch:
    """The first corruption error seen on `db`'s connections since the last `take`."""

    def __init__(self, db: Engine) -> None:
        self._seen = threading.Event()
        self._cause = ""
        self._db = db
        event.listen(db, "handle_error", self._on_error)

    def close(self) -> None:
        event.remove(self._db, "handle_error", self._on_error)

    def _on_error(self, context: Any) -> None:
        exc = context.original_exception
        if recovery.is_corruption(exc) and not self._seen.is_set():
            self._cause = str(exc).partition("\n")[0]
            self._seen.set()

    def take(self) -> str | None:
        """The cause seen, if any (and forget it)."""
        if not self._seen.is_set():
            return None
        self._seen.clear()
        return self._cause


def rebuild_corrupt_cache(app: App, cause: str) -> bool:
    """Replace the cache if SQLite confirms it corrupt, and fill the new one; True if it did.
    Blocking: call it in a worker thread."""
    path = recovery.sqlite_file(app.settings.db_url)
    if path is None:
        return False
    try:
        problem = recovery.check_cache(app.db)
    except SQLAlchemyError as exc:
        problem = str(exc).partition("\n")[0]
    if problem is None:
        log.info("a corruption error was seen but the cache file is sound now", cause=cause)
        return False
    report = app.indexer.refill(lambda: replace_corrupt_cache(app.db, path, problem))
    log.info("the cache was rebuilt from the notes", notes=report.added)
    return True


async def heal_corruption(app: App, report: Callable[[str | None], None]) -> None:
    """The writer's watch (until cancelled): rebuild on a corruption error, again after a
    pause while rebuilding fails. `report(cause)` sets what health says meanwhile (None once
    it is over)."""
    watch = CorruptionWatch(app.db)
    try:
        await _heal(app, report, watch)
    finally:
        watch.close()


async def _heal(app: App, report: Callable[[str | None], None], watch: CorruptionWatch) -> None:
    path = recovery.sqlite_file(app.settings.db_url)
    while True:
        await anyio.sleep(WATCH_S)
        cause = watch.take() or (recovery.take_corrupt_mark(path) if path else None)
        while cause is not None:
            report(f"the cache is corrupt ({cause}): moved aside, being rebuilt from the notes")
            try:
                await anyio.to_thread.run_sync(rebuild_corrupt_cache, app, cause)
            except (WeaverError, SQLAlchemyError, OSError) as exc:
                error = str(exc).partition("\n")[0]
                log.error("rebuilding the corrupt cache failed; trying again", error=error)
                report(f"the cache is corrupt ({cause}) and rebuilding it failed: {error}")
                await anyio.sleep(RETRY_S)
                continue
            watch.take()  # errors of connections to the old file, seen while it was replaced
            if path is not None:
                recovery.take_corrupt_mark(path)  # and the readers' notes of them
            report(None)
            cause = None
