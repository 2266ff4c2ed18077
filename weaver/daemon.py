"""`weaver daemon`: the long-running service that keeps the cache fresh.

At this stage it reconciles and watches. It holds the vault's daemon lock, so that a second
daemon on the same vault refuses to start instead of fighting the first, and the cache's writer
lock (`weaver.locks`), which it waits for while a `weaver serve` is writing.
"""

from __future__ import annotations

import signal

import anyio
import structlog

from weaver.app import open_app
from weaver.config import Settings
from weaver.locks import WriterLock, daemon_lock
from weaver.watcher import VaultWatcher

log = structlog.get_logger(__name__)


def run_daemon(settings: Settings) -> None:
    """Run until SIGINT or SIGTERM, then stop cleanly."""
    with daemon_lock(settings.vault):
        app = open_app(settings)
        watcher = VaultWatcher(app.indexer, settings.debounce_ms)
        try:
            with WriterLock.for_settings(settings) as lock:
                anyio.run(_serve_forever, watcher, lock)
        finally:
            app.close()
    log.info("daemon stopped")


async def _serve_forever(watcher: VaultWatcher, lock: WriterLock) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_write_when_allowed, watcher, lock)
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                log.info("stopping", signal=signal.Signals(signum).name)
                tg.cancel_scope.cancel()
                return


async def _write_when_allowed(watcher: VaultWatcher, lock: WriterLock) -> None:
    """Wait for the writer lock (a `weaver serve` may hold it), then reconcile and watch."""
    await lock.acquire(on_wait=lambda pid: log.info("waiting for the cache writer", pid=pid))
    await watcher.run()
