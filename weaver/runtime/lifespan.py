"""The server's lifespan: keep the cache fresh while serving, if this process may write it.

The lifespan returns at once, so `initialize` is answered promptly; the work runs beside it:

1. Try the writer lock. Taken: start watching, reconcile (in a worker thread; a change made
   meanwhile is applied right after), then tools may answer. Not taken: tools answer from the
   cache right away, and the lock is retried every few seconds to take over when the writer
   exits.
2. If the watcher stops (the vault folder vanished, inotify limits), catch up and watch again
   after a pause; `health_check` reports it degraded meanwhile.
3. With `--no-watch`, reconcile once if the lock is free, then let it go.
4. A reader process (`may_write` false) never takes the lock: it answers at once and follows the
   writer's changes through the change feed (`runtime.follow`), as a server waiting for the lock
   does.
5. The writer rebuilds a cache found corrupt while running, and makes its cache file again
   should it be deleted (`runtime.rebuild`).
6. Once the first reconcile is done, the writer starts the embedding worker (when the semantic
   extra is installed and `semantic` is on) and, on SQLite, the PDF text extractor
   (`index.attachment_text`); they stop with the writer role.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import structlog

from weaver import gc_freeze
from weaver.cache.recovery import sqlite_file
from weaver.edits.interrupted import recover_edits
from weaver.index.attachment_text import AttachmentTextWorker
from weaver.memory_trim import trim_heap
from weaver.runtime.cache_sync import sync_cache
from weaver.runtime.follow import follow_feed
from weaver.runtime.locks import CacheWriterLock, writer_lock_for
from weaver.runtime.rebuild import CacheNudge, heal_corruption
from weaver.runtime.state import ServerState
from weaver.runtime.ticks import sleep_to_tick
from weaver.semantic.model import semantic_installed
from weaver.semantic.worker import EmbeddingWorker
from weaver.vault.watcher import VaultWatcher

log = structlog.get_logger(__name__)

Lifespan = Callable[[Any], AbstractAsyncContextManager[ServerState]]


def make_lifespan(state: ServerState) -> Lifespan:
    @asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[ServerState]:
        state.begin()
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_cache_fresh, state)
            tg.start_soon(_settle_when_ready, state)
            try:
                yield state
            finally:
                tg.cancel_scope.cancel()

    return lifespan


async def _settle_when_ready(state: ServerState) -> None:
    """Collect and freeze what start-up built (`gc_freeze`) once the cache is ready: after the
    first answers, not before them."""
    await state.wait_ready()
    gc_freeze.settle()


# How often the writer checks that its lock file is still the one others would find: a
# multiple of `rebuild.WATCH_S`, whose ticks it shares (`runtime.ticks`).
LOCK_CHECK_SECONDS = 2.0


async def keep_cache_fresh(state: ServerState) -> None:
    """Become the cache's writer when possible, and keep it in step with the vault."""
    if not state.may_write:
        state.mark_ready()
        await follow_feed(state.app)
        return
    lock = state.writer_lock or writer_lock_for(state.app.settings)
    try:
        if not await anyio.to_thread.run_sync(lock.try_acquire):
            log.info("another process writes this cache; serving it read-only", pid=lock.holder())
            state.mark_ready()
            if not state.watch:
                return
            async with anyio.create_task_group() as tg:
                tg.start_soon(follow_feed, state.app)
                await lock.acquire(state.lock_retry_seconds)
                tg.cancel_scope.cancel()
            log.info("the other writer is gone; this process now keeps the cache fresh")
        state.writer = True
        await anyio.to_thread.run_sync(_recover_edits, state)
        if state.watch:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_keep_lock, lock, tg.cancel_scope)
                nudge = CacheNudge(sqlite_file(state.app.settings.db_url))
                tg.start_soon(
                    heal_corruption, state.app, partial(_report_fault, state), lock, nudge
                )
                await _watch(state, nudge.on_change)
        else:
            await _catch_up(state)
    finally:
        state.writer = False
        state.cache_fault = None
        await _stop_embedding(state)
        await _stop_pdf_text(state)
        lock.close()


def _report_fault(state: ServerState, fault: str | None) -> None:
    state.cache_fault = fault


def _recover_edits(state: ServerState) -> None:
    """Finish a change to many notes that a killed process left midway (`edits.interrupted`)."""
    app = state.app
    try:
        recover_edits(app, lambda expected: sync_cache(app, expected, holds_writer=True))
    except Exception:  # a broken journal must not stop the server from answering
        log.exception("finishing interrupted edits failed")


async def _keep_lock(lock: CacheWriterLock, scope: anyio.CancelScope) -> None:
    """Re-make the writer lock should its file be deleted (with the cache folder); should
    another process have taken it meanwhile, stop writing: one writer per cache."""
    while True:
        await sleep_to_tick(LOCK_CHECK_SECONDS)
        if not await anyio.to_thread.run_sync(lock.reassert):
            log.error("another process took the writer lock; this one stops writing")
            scope.cancel()
            return


async def _watch(state: ServerState, on_unwatched: Callable[[str], None]) -> None:
    app = state.app
    while True:
        watcher = VaultWatcher(app.indexer, app.settings.debounce_ms, on_unwatched)
        state.watcher = watcher
        await watcher.run(catch_up=partial(_catch_up, state))
        # run() only returns when watching failed: pause, then watch (and catch up) again.
        await anyio.sleep(state.lock_retry_seconds)


async def _catch_up(state: ServerState) -> None:
    """Reconcile with the disk, then let the tools answer."""
    await _reconcile(state)
    state.mark_ready()
    _start_embedding(state)
    _start_pdf_text(state)


def _start_embedding(state: ServerState) -> None:
    app = state.app
    if state.embedding is not None or not app.settings.semantic or not semantic_installed():
        return
    state.embedding = EmbeddingWorker(app.db, app.semantic, app.bus, state.answering)
    state.embedding.start()


async def _stop_embedding(state: ServerState) -> None:
    worker, state.embedding = state.embedding, None
    if worker is not None:
        # Shielded: this runs as the lifespan is cancelled, and the lock must wait for it.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(worker.stop)


def _start_pdf_text(state: ServerState) -> None:
    app = state.app
    if state.pdf_text is not None:
        return
    embedding = state.embedding
    on_text = [embedding.wake] if embedding is not None else []  # new text: embed its pages
    state.pdf_text = AttachmentTextWorker(app.db, app.vault, text_listeners=on_text)
    app.indexer.attachment_listeners.append(state.pdf_text.wake)
    state.pdf_text.start()


async def _stop_pdf_text(state: ServerState) -> None:
    worker, state.pdf_text = state.pdf_text, None
    if worker is not None:
        state.app.indexer.attachment_listeners.remove(worker.wake)
        with anyio.CancelScope(shield=True):  # as `_stop_embedding`
            await anyio.to_thread.run_sync(worker.stop)


async def _reconcile(state: ServerState) -> None:
    try:
        await anyio.to_thread.run_sync(state.app.indexer.reconcile)
    except Exception as exc:  # a broken cache must not stop the server from answering
        state.reconcile_error = str(exc) or type(exc).__name__
        log.exception("reconciling the cache with the vault failed")
        return
    state.reconcile_error = None
    # The whole vault went through the parser: give back what the burst freed.
    await anyio.to_thread.run_sync(trim_heap)
