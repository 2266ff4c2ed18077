"""What the MCP server knows while it runs, shared by the lifespan, the tools and `/health`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import anyio

from weaver.cache.browse import BrokenCount
from weaver.cache.graph import (
    ByVersion,
    broken_cache,
    folder_prefixes_cache,
    names_cache,
    orphans_cache,
    path_prefixes_cache,
    stats_cache,
    tag_index_cache,
)
from weaver.cache.read import VaultStats
from weaver.index.attachment_text import AttachmentTextWorker
from weaver.runtime.app import App
from weaver.runtime.gil import QuickSwitch
from weaver.runtime.locks import DEFAULT_RETRY_SECONDS, CacheWriterLock
from weaver.runtime.rate_limits import RateLimiter
from weaver.search import SearchSources
from weaver.semantic.worker import EmbeddingWorker
from weaver.vault.watcher import VaultWatcher
from weaver.views.names import NameIndex
from weaver.views.prefixes import PrefixIndex
from weaver.views.tag_tree import TagIndex


class WorkflowEngineStatus(Protocol):
    """What `health_check` asks of the workflow engine (filled in by the engine's issue).

    `running` is False when the engine stopped; `plugin_errors` names workflow plugins that
    failed to load. Either one makes the server `degraded`.
    """

    @property
    def running(self) -> bool: ...

    @property
    def plugin_errors(self) -> Sequence[str]: ...

    @property
    def faults(self) -> Sequence[str]: ...


# How recent a tool call keeps the server "answering" (`ServerState.answering`).
ANSWERING_S = 0.5
# Cache reads running at once in worker threads (see `ServerState.read_threads`).
READ_THREADS = 4


@dataclass
class ServerState:
    """One server's view of its cache.

    `watch`: keep the cache fresh with the watcher while this process holds the writer lock.
    `engine` is the workflow engine, absent until that feature lands: while it is None,
    `workflowEngine` reports false but does not by itself make the server degraded, since a
    server without the engine is complete for the tools it offers.
    """

    app: App
    watch: bool = True
    # False for a reader process, which never takes the writer lock (`weaver serve --no-vault`,
    # the daemon's extra HTTP processes): it follows the writer's changes (`runtime.follow`).
    may_write: bool = True
    lock_retry_seconds: float = DEFAULT_RETRY_SECONDS
    engine: WorkflowEngineStatus | None = None
    watcher: VaultWatcher | None = None
    writer: bool = False  # this process holds the writer lock right now
    # A writer lock the host took before serving (the daemon on PostgreSQL, which refuses to
    # start beside another writer); None: the lifespan makes its own.
    writer_lock: CacheWriterLock | None = None
    reconcile_error: str | None = None
    cache_fault: str | None = None  # a corrupt cache being rebuilt (`runtime.rebuild`)
    embedding: EmbeddingWorker | None = None  # the embedding worker, while this is the writer
    pdf_text: AttachmentTextWorker | None = None  # the PDF text extractor, likewise
    started_at: float = field(default_factory=time.monotonic)
    request_count: int = 0
    last_call_at: float = -ANSWERING_S
    # `health_check`'s slower probes of the cache's folder, and when they ran (system_tools).
    health_probes: tuple[float, tuple[str, ...]] | None = field(default=None, repr=False)
    # Which notes carry each tag, kept per cache version: tag tools of every module share it.
    tag_index: ByVersion[TagIndex] = field(default_factory=tag_index_cache, repr=False)
    # The notes' names, for `resolve_names` and the "did you mean" of a path not found.
    name_index: ByVersion[NameIndex] = field(default_factory=names_cache, repr=False)
    # `get_stats`'s counts, kept per cache version.
    stats: ByVersion[VaultStats] = field(default_factory=stats_cache, repr=False)
    broken: ByVersion[list[BrokenCount]] = field(default_factory=broken_cache, repr=False)
    orphans: ByVersion[list[str]] = field(default_factory=orphans_cache, repr=False)
    # Note paths and folders by prefix ignoring case, for completions.
    path_prefixes: ByVersion[PrefixIndex] = field(default_factory=path_prefixes_cache, repr=False)
    folder_prefixes: ByVersion[PrefixIndex] = field(
        default_factory=folder_prefixes_cache, repr=False
    )
    # The per-client rate limits of expensive calls (made from the settings on first use; a
    # test sets one with its own clock).
    rate_limiter: RateLimiter | None = field(default=None, repr=False)
    # The short GIL switch interval while calls are served (`runtime.gil`); None (the
    # default, for tests and CLI commands) leaves the interval alone.
    quick_switch: QuickSwitch | None = field(default=None, repr=False)
    _ready: anyio.Event | None = field(default=None, repr=False)
    _read_threads: anyio.CapacityLimiter | None = field(default=None, repr=False)

    def begin(self) -> None:
        """Start a serving session (the lifespan calls this): nothing is ready yet."""
        self._ready = anyio.Event()
        self._read_threads = None
        self.watcher = None
        self.writer = False
        self.reconcile_error = None

    def rate_limits(self) -> RateLimiter:
        if self.rate_limiter is None:
            self.rate_limiter = RateLimiter(self.app.settings)
        return self.rate_limiter

    def read_threads(self) -> anyio.CapacityLimiter:
        """The worker threads cache reads share (made on first use, in the event loop).

        Few, on purpose: the reads hold the GIL for most of their work, so forty of them at
        once (anyio's default) finish no sooner than a handful, while every one of them makes
        a write's indexing pass, and the event loop serving HTTP, wait their turns for the GIL.
        Writes, file reads and workflow calls keep anyio's default threads."""
        if self._read_threads is None:
            self._read_threads = anyio.CapacityLimiter(READ_THREADS)
        return self._read_threads

    @property
    def ready(self) -> bool:
        """True once the initial reconcile is done (or another process owns the cache)."""
        return self._ready is not None and self._ready.is_set()

    def mark_ready(self) -> None:
        if self._ready is not None:
            self._ready.set()

    async def wait_ready(self) -> None:
        if self._ready is not None:
            await self._ready.wait()

    def count_request(self) -> None:
        # Called from the event loop only (tool dispatch), so a plain increment is safe.
        self.request_count += 1
        self.last_call_at = time.monotonic()

    def answering(self) -> bool:
        """True while tool calls come in (one began in the last `ANSWERING_S`): the embedding
        worker holds its next batch back meanwhile."""
        return time.monotonic() - self.last_call_at < ANSWERING_S

    @property
    def role(self) -> Literal["writer", "reader", "unwatched"]:
        """writer: keeps the cache fresh; reader: another process does; unwatched: nobody here
        does (`--no-watch`, after the initial reconcile)."""
        if self.writer:
            return "writer"
        return "reader" if self.watch or not self.may_write else "unwatched"

    @property
    def search_sources(self) -> SearchSources:
        """What `weaver.search` reads in this process: its cache, kept name index and vectors."""
        app = self.app
        return SearchSources(app.db, self.name_index.get, app.semantic, app.settings.semantic)

    @property
    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started_at) * 1000)
