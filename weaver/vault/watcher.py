"""The file watcher: keeps the cache in step with the disk while Weaver runs.

`VaultWatcher.run()` starts watching, then reconciles (whatever changed while nothing watched),
then applies each batch of changes watchfiles reports. Watching begins before the reconcile so
that a change made while it runs is not lost: it is applied right after. A burst is coalesced
by watchfiles' `step` (quiet time before a batch is yielded, the configurable debounce) and
capped by `MAX_BATCH_MS`. The batch handler, `handle_changes`, is a plain function of a change
set so tests can drive it directly. The watcher is handed what applies the changes (the
indexer, as a `ChangeApplier`) rather than importing it: `index/` sits above `vault/`.

If watching fails while the vault is still there (watchfiles raises on a file name that is not
valid UTF-8, and loses the rest of that batch with it), the watch starts again and a reconcile
catches up with what the lost batch held; a failure once the vault is gone stops the watcher.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from watchfiles import Change, awatch

from weaver.tasks.statuses import SETTINGS_FILE
from weaver.vault.events import VaultEvent
from weaver.vault.fs import Vault

log = structlog.get_logger(__name__)

ChangeSet = set[tuple[Change, str]]
CatchUp = Callable[[], Awaitable[None]]
# What the watch sends its consumer: a batch of changes, or LOST when a failed watch may have
# dropped some (the consumer reconciles).
LOST = None
Delivery = ChangeSet | None

# However long a burst goes on, apply what has arrived at least this often.
MAX_BATCH_MS = 500
# How long the watch thread waits for a change before it hands back to the event loop (which
# calls it again at once). Stopping does not wait for it: `run` sets the watch's stop event,
# which the thread looks at every `step`, so this only bounds an idle watcher's round trips.
WAKE_MS = 60_000
# Pause before watching again after a failure, doubled while failures follow each other.
RESTART_DELAY_S = 0.2
MAX_RESTART_DELAY_S = 30.0


class AppliedBatch(Protocol):
    """What applying a batch reports back: the events it published."""

    @property
    def events(self) -> Sequence[VaultEvent]: ...


class ChangeApplier(Protocol):
    """What the watcher calls (`index.indexer.Indexer` in Weaver): the vault it watches, the
    paths of a batch to apply, and a whole-vault reconcile to catch up."""

    @property
    def vault(self) -> Vault: ...

    def apply_paths(self, paths: Iterable[str]) -> AppliedBatch: ...

    def reconcile(self) -> object: ...


class VaultWatcher:
    """Watches one vault and feeds its changes to a `ChangeApplier` (the indexer)."""

    def __init__(
        self,
        indexer: ChangeApplier,
        debounce_ms: int = 50,
        on_unwatched: Callable[[str], None] | None = None,
    ) -> None:
        self.indexer = indexer
        self.debounce_ms = debounce_ms
        # Told the absolute path of each change the watch leaves out (hidden files, the
        # cache's own folder): the writer hears of its cache file deleted without polling.
        self.on_unwatched = on_unwatched
        self.running = False
        # Set once the watches are in place and the catch-up is done, until `run` ends: a
        # change made on disk after it is set reaches the cache (tests wait on it).
        self.watching = threading.Event()
        # Set once `run` has ended: until then a watcher not yet `running` is starting (its
        # watch set up, its catch-up under way), which is no fault.
        self.stopped = False
        self.restarting = False  # waiting to watch again after a failure (health says so)
        self.batches = 0
        self.last_error: str | None = None
        # Changes failed to reach the cache and a reconcile is being retried (health says so).
        self.healing = False

    def handle_changes(self, changes: Iterable[tuple[Change, str]]) -> AppliedBatch | None:
        """Apply one batch of raw watchfiles changes (absolute paths) to the cache."""
        vault = self.indexer.vault
        paths = {rel for _, absolute in changes if (rel := vault.relative(absolute))}
        paths = {p for p in paths if p and _watched(vault, p)}
        if not paths:
            return None
        self.batches += 1
        return self.indexer.apply_paths(paths)

    def _accept(self, _change: Change, absolute: str) -> bool:
        rel = self.indexer.vault.relative(absolute)
        watched = bool(rel) and _watched(self.indexer.vault, rel or "")
        if not watched and self.on_unwatched is not None:
            self.on_unwatched(absolute)
        return watched

    async def run(self, catch_up: CatchUp | None = None) -> None:
        """Watch, catch up, then apply batches until cancelled or watching fails.

        `catch_up` runs once the watch has begun and before the first batch is applied; by
        default it reconciles the cache with the disk. A failing batch is logged, never fatal.
        """
        send, receive = anyio.create_memory_object_stream[Delivery](max_buffer_size=math.inf)
        # The watch thread cannot be cancelled: it ends when it sees this set (every `step`).
        stop = anyio.Event()
        try:
            async with anyio.create_task_group() as tg, receive:
                tg.start_soon(self._watch, send, stop)
                try:
                    # One turn of the loop lets `awatch` set up its watches before the catch-up.
                    await anyio.sleep(0)
                    await (catch_up or self._reconcile)()
                    self.running = True
                    self.watching.set()
                    log.info("watching vault", vault=str(self.indexer.vault.root))
                    async for changes in receive:
                        if changes is LOST:
                            await self._recover()
                        else:
                            await self._apply(changes)
                finally:
                    stop.set()
        finally:
            self.running = False
            self.watching.clear()
            self.stopped = True

    async def _watch(self, send: MemoryObjectSendStream[Delivery], stop: anyio.Event) -> None:
        """Forward watchfiles' batches, watching again after a failure while the vault is
        there; a vault that is gone ends the stream (and so `run`)."""
        delay = RESTART_DELAY_S
        async with send:
            while True:
                try:
                    async for changes in awatch(
                        self.indexer.vault.root,
                        watch_filter=self._accept,
                        debounce=MAX_BATCH_MS,
                        step=self.debounce_ms,
                        rust_timeout=WAKE_MS,
                        stop_event=stop,
                    ):
                        delay = RESTART_DELAY_S
                        await send.send(changes)
                    return
                except Exception as exc:  # a file name watchfiles cannot decode, inotify limits
                    self.last_error = describe(exc)
                    if not self.indexer.vault.root.is_dir():
                        log.exception("watcher stopped: the vault is gone")
                        return
                    log.warning(
                        "watching failed; watching again", error=self.last_error, delay=delay
                    )
                self.restarting = True
                await anyio.sleep(delay)
                delay = min(delay * 2, MAX_RESTART_DELAY_S)
                self.restarting = False
                # Queued with no await before `awatch` sets up its watches (synchronously, on
                # its first step): they are in place before the consumer's reconcile looks.
                send.send_nowait(LOST)

    async def _reconcile(self) -> None:
        await anyio.to_thread.run_sync(self.indexer.reconcile)

    async def _apply(self, changes: ChangeSet) -> None:
        try:
            await anyio.to_thread.run_sync(self.handle_changes, changes)
        except Exception as exc:
            self.last_error = describe(exc).partition("\n")[0]
            self.healing = True
            log.warning("applying changes failed; reconciling", error=self.last_error)
            await self._recover()

    async def _recover(self) -> None:
        """Reconcile after a batch was lost or failed to apply, again and again with backoff
        until one succeeds (a full disk, a locked cache): the cache must end up matching the
        disk, without a restart. New batches wait meanwhile; the reconcile covers them."""
        delay = RESTART_DELAY_S
        while True:
            try:
                await self._reconcile()
            except Exception as exc:
                self.healing = True
                self.last_error = describe(exc).partition("\n")[0]
                log.warning("reconcile failed; retrying", error=self.last_error, delay=delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, MAX_RESTART_DELAY_S)
                continue
            if self.healing:  # the error was the cache's, and it is over
                log.info("the cache matches the disk again")
                self.healing, self.last_error = False, None
            return


def _watched(vault: Vault, path: str) -> bool:
    """A vault file, or the Tasks plugin's settings: hidden, but its statuses label tasks."""
    return path == SETTINGS_FILE or not vault.is_ignored(path)


def describe(exc: BaseException) -> str:
    """The message of `exc`, or of the errors inside it when `awatch`'s task group wrapped them
    (its own message, "unhandled errors in a TaskGroup", says nothing)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return str(exc) or type(exc).__name__
