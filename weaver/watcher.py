"""The file watcher: keeps the cache in step with the disk while Weaver runs.

`VaultWatcher.run()` starts watching, then reconciles (whatever changed while nothing watched),
then applies each batch of changes watchfiles reports. Watching begins before the reconcile so
that a change made while it runs is not lost: it is applied right after. A burst is coalesced
by watchfiles' `step` (quiet time before a batch is yielded, the configurable debounce) and
capped by `MAX_BATCH_MS`. The batch handler, `handle_changes`, is a plain function of a change
set so tests can drive it directly.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from watchfiles import Change, awatch

from weaver.indexer import Indexer, IndexReport

log = structlog.get_logger(__name__)

ChangeSet = set[tuple[Change, str]]
CatchUp = Callable[[], Awaitable[None]]

# However long a burst goes on, apply what has arrived at least this often.
MAX_BATCH_MS = 500
# How often the watch thread wakes to notice it was cancelled: the watch runs in a thread
# that cancellation cannot interrupt, so this bounds how long shutting down can take.
WAKE_MS = 200


class VaultWatcher:
    """Watches one vault and feeds its changes to an `Indexer`."""

    def __init__(self, indexer: Indexer, debounce_ms: int = 50) -> None:
        self.indexer = indexer
        self.debounce_ms = debounce_ms
        self.running = False
        self.batches = 0
        self.last_error: str | None = None

    def handle_changes(self, changes: Iterable[tuple[Change, str]]) -> IndexReport | None:
        """Apply one batch of raw watchfiles changes (absolute paths) to the cache."""
        vault = self.indexer.vault
        paths = {rel for _, absolute in changes if (rel := vault.relative(absolute))}
        paths = {p for p in paths if p and not vault.is_ignored(p)}
        if not paths:
            return None
        self.batches += 1
        return self.indexer.apply_paths(paths)

    def _accept(self, _change: Change, absolute: str) -> bool:
        rel = self.indexer.vault.relative(absolute)
        return bool(rel) and not self.indexer.vault.is_ignored(rel or "")

    async def run(self, catch_up: CatchUp | None = None) -> None:
        """Watch, catch up, then apply batches until cancelled or watching fails.

        `catch_up` runs once the watch has begun and before the first batch is applied; by
        default it reconciles the cache with the disk. A failing batch is logged, never fatal.
        """
        send, receive = anyio.create_memory_object_stream[ChangeSet](max_buffer_size=math.inf)
        try:
            async with anyio.create_task_group() as tg, receive:
                tg.start_soon(self._watch, send)
                # One turn of the loop lets `awatch` set up its watches before the catch-up.
                await anyio.sleep(0)
                await (catch_up or self._reconcile)()
                self.running = True
                log.info("watching vault", vault=str(self.indexer.vault.root))
                async for changes in receive:
                    await self._apply(changes)
        finally:
            self.running = False

    async def _watch(self, send: MemoryObjectSendStream[ChangeSet]) -> None:
        """Forward watchfiles' batches; a failure ends the stream (and so `run`)."""
        async with send:
            try:
                async for changes in awatch(
                    self.indexer.vault.root,
                    watch_filter=self._accept,
                    debounce=MAX_BATCH_MS,
                    step=self.debounce_ms,
                    rust_timeout=WAKE_MS,
                ):
                    await send.send(changes)
            except Exception as exc:  # the vault folder vanished, inotify limits, ...
                self.last_error = str(exc)
                log.exception("watcher stopped")

    async def _reconcile(self) -> None:
        await anyio.to_thread.run_sync(self.indexer.reconcile)

    async def _apply(self, changes: ChangeSet) -> None:
        try:
            await anyio.to_thread.run_sync(self.handle_changes, changes)
        except Exception as exc:
            self.last_error = str(exc)
            log.exception("applying changes failed; will retry with a full reconcile")
            await self._recover()

    async def _recover(self) -> None:
        try:
            await self._reconcile()
        except Exception:
            log.exception("reconcile after a failed batch failed too")
