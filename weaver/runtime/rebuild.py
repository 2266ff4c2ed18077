"""A corrupt cache found while running is rebuilt by the writer, and a deleted one made again,
without a restart.

Any query of this process that SQLite answers with a corruption error, whichever thread ran it,
is seen by `CorruptionWatch` (a reader leaves the cause beside the cache,
`cache.recovery.mark_corrupt`, for the writer to find). The writer then, once: reports the cache
`degraded` with the cause in `health_check` and `/health`; confirms it with `quick_check`; moves
the file aside, makes a new cache with the workflow history salvaged
(`cache.db.replace_corrupt_cache`); fills it from the notes (`Indexer.refill`) and clears the
fault. On a database other than SQLite the fault is only reported.

A cache file deleted under the writer is seen every `WATCH_S` (`OpenCache`): the writer makes
its lock file again, reports `degraded`, and makes the file again
(`cache.db.remake_deleted_cache`), notes, history and change feed kept when it still had the
deleted file open, empty otherwise; then `Indexer.refill`. How: docs/architecture.md,
"runtime/rebuild.py".
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog
from sqlalchemy import Engine, event
from sqlalchemy.exc import SQLAlchemyError

from weaver.cache import recovery
from weaver.cache.db import remake_deleted_cache, replace_corrupt_cache
from weaver.errors import WeaverError
from weaver.runtime.app import App
from weaver.runtime.locks import CacheWriterLock
from weaver.runtime.ticks import next_tick

log = structlog.get_logger(__name__)

# How often the writer looks whether a corruption error was seen (here or, through the mark
# a reader leaves, in another process) or the cache file was deleted: a stat and an open.
# On the same ticks as the writer lock's check (`runtime.lifespan`), so both wake together.
# A cache file deleted or a reader's mark inside the vault is heard at once (`CacheNudge`);
# this bounds the rest: a corruption error of this process, a cache outside the vault.
WATCH_S = 2.0
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


class OpenCache:
    """A connection the writer keeps open on its cache file, and that file's identity: should
    the file be deleted (or another put in its place), it still reads the one this process
    wrote, for `remake_deleted_cache` to copy."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.identity: tuple[int, int] | None = None
        self.connection: sqlite3.Connection | None = None
        self.reopen()

    def reopen(self) -> None:
        """Keep the file at `path` now (after this process made or replaced it)."""
        self.close()
        self.identity = recovery.file_identity(self.path)
        if self.identity is None:
            return
        try:  # mode=rw: never creates the file
            self.connection = sqlite3.connect(
                f"file:{self.path}?mode=rw", uri=True, check_same_thread=False
            )
            self.connection.execute("PRAGMA query_only=ON")
            # A first read opens the WAL and its index, which SQLite then keeps open: once
            # the folder is gone, they could not be opened any more.
            self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            log.warning("cannot keep the cache file open", error=str(exc))
            self.close()

    def gone(self) -> bool:
        """Whether the file at `path` is missing, or another than the one kept."""
        now = recovery.file_identity(self.path)
        return now is None or now != self.identity

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            connection.close()


def remake_deleted(app: App, kept: OpenCache) -> bool:
    """Make the deleted cache file again and bring it up to date with the notes; True if it
    was copied from the file still open. Blocking: call it in a worker thread."""
    copied = [False]

    def replace() -> None:
        copied[0] = remake_deleted_cache(app.db, kept.path, kept.connection)

    report = app.indexer.refill(replace)
    kept.reopen()
    log.info("the deleted cache was made again", copied=copied[0], notes_added=report.added)
    return copied[0]


class CacheNudge:
    """Wakes the writer's watch at once when the vault watcher sees the cache file deleted
    or a reader's corruption mark appear (`VaultWatcher.on_unwatched`), rather than at the
    next tick. Used on the event loop's thread only."""

    def __init__(self, path: Path | None) -> None:
        names = () if path is None else (path, path.with_name(path.name + recovery.SEEN_SUFFIX))
        self._paths = {os.fspath(name) for name in names}
        self._event = anyio.Event()

    def on_change(self, absolute: str) -> None:
        if absolute in self._paths:
            self._event.set()

    async def wait(self, period: float) -> None:
        """Until nudged or the next tick of `period`, whichever comes first."""
        with anyio.move_on_after(next_tick(period) - anyio.current_time()):
            await self._event.wait()
        if self._event.is_set():
            self._event = anyio.Event()


async def heal_corruption(
    app: App,
    report: Callable[[str | None], None],
    lock: CacheWriterLock | None = None,
    nudge: CacheNudge | None = None,
) -> None:
    """The writer's watch (until cancelled): rebuild on a corruption error, again after a
    pause while rebuilding fails; make the cache file again if it is deleted. `report(cause)`
    sets what health says meanwhile (None once it is over). `lock`, the writer lock, is made
    again first when the cache's folder went with it."""
    watch = CorruptionWatch(app.db)
    path = recovery.sqlite_file(app.settings.db_url)
    kept = await anyio.to_thread.run_sync(OpenCache, path) if path is not None else None
    try:
        await _heal(app, report, watch, kept, lock, nudge or CacheNudge(None))
    finally:
        watch.close()
        if kept is not None:
            kept.close()


async def _heal(
    app: App,
    report: Callable[[str | None], None],
    watch: CorruptionWatch,
    kept: OpenCache | None,
    lock: CacheWriterLock | None,
    nudge: CacheNudge,
) -> None:
    path = recovery.sqlite_file(app.settings.db_url)
    while True:
        await nudge.wait(WATCH_S)
        if kept is not None and kept.gone():
            await _remake(app, report, kept, lock)
            continue
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
            if kept is not None:
                await anyio.to_thread.run_sync(kept.reopen)
            report(None)
            cause = None


async def _remake(
    app: App, report: Callable[[str | None], None], kept: OpenCache, lock: CacheWriterLock | None
) -> None:
    """The cache file was deleted: the lock file first (others must find it taken), then the
    cache; tried again after a pause while that fails."""
    if lock is not None and not await anyio.to_thread.run_sync(lock.reassert):
        return  # another process took the lock: the lifespan stops this writer
    report(f"the cache file is missing ({kept.path} was deleted): being made again")
    while True:
        try:
            await anyio.to_thread.run_sync(remake_deleted, app, kept)
        except (WeaverError, SQLAlchemyError, OSError, sqlite3.Error) as exc:
            error = str(exc).partition("\n")[0]
            log.error("making the deleted cache again failed; trying again", error=error)
            report(
                f"the cache file is missing ({kept.path} was deleted); making it failed: {error}"
            )
            await anyio.sleep(RETRY_S)
            continue
        report(None)
        return
