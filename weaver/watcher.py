"""The file watcher: keeps the cache in step with the disk while Weaver runs.

`VaultWatcher.run()` reconciles first (whatever changed while nothing watched), then applies
each batch of changes watchfiles reports. A burst is coalesced by watchfiles' `step` (quiet time
before a batch is yielded, the configurable debounce) and capped by `MAX_BATCH_MS`. The batch
handler, `handle_changes`, is a plain function of a change set so tests can drive it directly.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio
import structlog
from watchfiles import Change, awatch

from weaver.indexer import Indexer, IndexReport

log = structlog.get_logger(__name__)

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

    async def run(self, reconcile_first: bool = True) -> None:
        """Reconcile, then watch until cancelled. A failing batch is logged, never fatal."""
        if reconcile_first:
            await anyio.to_thread.run_sync(self.indexer.reconcile)
        self.running = True
        log.info("watching vault", vault=str(self.indexer.vault.root))
        try:
            async for changes in awatch(
                self.indexer.vault.root,
                watch_filter=self._accept,
                debounce=MAX_BATCH_MS,
                step=self.debounce_ms,
                rust_timeout=WAKE_MS,
            ):
                await self._apply(changes)
        except Exception as exc:  # the vault folder vanished, inotify limits, ...
            self.last_error = str(exc)
            log.exception("watcher stopped")
        finally:
            self.running = False

    async def _apply(self, changes: set[tuple[Change, str]]) -> None:
        try:
            await anyio.to_thread.run_sync(self.handle_changes, changes)
        except Exception as exc:
            self.last_error = str(exc)
            log.exception("applying changes failed; will retry with a full reconcile")
            await self._recover()

    async def _recover(self) -> None:
        try:
            await anyio.to_thread.run_sync(self.indexer.reconcile)
        except Exception:
            log.exception("reconcile after a failed batch failed too")
