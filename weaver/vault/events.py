"""Typed vault events, published by the indexer after each applied batch.

The durable record of every event is the change feed in the cache (`weaver.cache.feed`),
written in the transaction that applied it; the bus only tells this process's subscribers at
once. The workflow engine takes its events from the feed (so it also sees changes applied by
other processes, or before it started) and uses the bus as a prompt to look; anything else may
subscribe. Handlers run in the publishing
thread and must be quick: a handler that raises is logged and never stops the indexer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class NoteAdded:
    """A note new to the cache. `initial` marks one found by the first index of an empty cache:
    it was already in the vault, nobody just created it (a workflow may take it as a baseline
    but should not report it as new, as Obsidian plugins wait for the vault's initial load)."""

    path: str
    kind: str = "add"
    initial: bool = False


@dataclass(frozen=True, slots=True)
class NoteModified:
    path: str
    kind: str = "modify"


@dataclass(frozen=True, slots=True)
class NoteDeleted:
    path: str
    kind: str = "delete"


@dataclass(frozen=True, slots=True)
class NoteMoved:
    old_path: str
    path: str
    kind: str = "move"


VaultEvent = NoteAdded | NoteModified | NoteDeleted | NoteMoved
EventHandler = Callable[[Sequence[VaultEvent]], None]


class EventBus:
    """Fan-out of event batches to subscribers."""

    def __init__(self) -> None:
        self._handlers: list[EventHandler] = []
        self._lock = threading.Lock()

    def subscribe(self, handler: EventHandler) -> Callable[[], None]:
        """Register `handler`; returns a function that unsubscribes it."""
        with self._lock:
            self._handlers.append(handler)

        def unsubscribe() -> None:
            with self._lock:
                if handler in self._handlers:
                    self._handlers.remove(handler)

        return unsubscribe

    def publish(self, events: Sequence[VaultEvent]) -> None:
        if not events:
            return
        with self._lock:
            handlers = list(self._handlers)
        for handler in handlers:
            try:
                handler(events)
            except Exception:
                log.exception("event handler failed", handler=getattr(handler, "__name__", "?"))
