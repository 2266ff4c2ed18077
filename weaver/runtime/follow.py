"""A reader process follows the writer's changes through the durable change feed.

A process that does not write the cache (`weaver serve --no-vault`, the daemon's extra HTTP
processes, a `serve` waiting for the writer lock) sees no watcher batch of its own: its event
bus would stay silent. `FeedFollower` reads the feed's sealed events after the newest it has
seen, every `FOLLOW_S`, and publishes them on the process's bus, so that what hangs on the bus
works the same in every process: `resources/updated` for subscribed clients, the workflow
engine waking up to take its runs from the feed (through its own cursor, exactly once).

Its kept views (graph, tags, names, stats: `cache.graph.ByVersion`) need no help: they compare
the cache's version stamp at every call. What they need is a connection to the cache file the
writer uses now: should the writer move a corrupt cache aside and rebuild it
(`runtime.rebuild`), this process still holds connections to the old file, so the follower
watches the file's identity and drops its pool when it changes; the next query opens the new
one.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
import structlog
from sqlalchemy.exc import SQLAlchemyError

from weaver.cache import feed
from weaver.cache.recovery import file_identity, mark_corrupt, sqlite_file
from weaver.runtime.app import App
from weaver.runtime.rebuild import CorruptionWatch

log = structlog.get_logger(__name__)

# How often a reader looks for the writer's new events: the bound on how late a subscribed
# client hears of a change made through another process, while changes come. The pause
# doubles with each look that finds nothing, up to `FOLLOW_IDLE_S`: the first change after a
# quiet spell may be heard that late, and an idle reader wakes once a second, not ten times.
FOLLOW_S = 0.1
FOLLOW_IDLE_S = 1.0
FOLLOW_BATCH = 1_000


class FeedFollower:
    """The feed's position this process has published up to, and the cache file it reads."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.position: int | None = None
        self._path = sqlite_file(app.settings.db_url)
        self._identity = file_identity(self._path)

    def poll(self) -> int:
        """Publish the events written since the last poll; returns how many (blocking: call
        it in a worker thread)."""
        self.reopen_if_replaced()
        with self.app.db.connect() as conn:
            newest = feed.newest_id(conn)
            if self.position is None or newest < self.position:
                # First look, or the feed began again (a rebuilt cache): from now on.
                self.position = newest
                return 0
            entries = feed.read_after(conn, self.position, FOLLOW_BATCH)
        if entries:
            self.position = entries[-1].id
            self.app.bus.publish([entry.event for entry in entries])
        return len(entries)

    def reopen_if_replaced(self) -> bool:
        """Drop the connections to a cache file the writer replaced; True if it did."""
        identity = file_identity(self._path)
        if identity is None or identity == self._identity:
            return False
        self._identity = identity
        self.app.db.dispose()
        log.info("the cache file was replaced (rebuilt by the writer): reading the new one")
        return True


async def follow_feed(app: App) -> None:
    """Follow the writer's changes until cancelled. A corruption error met by any query of
    this process is left for the writer to see (`cache.recovery.mark_corrupt`), and the
    connections are dropped: the next ones open the file the writer makes instead."""
    watch = CorruptionWatch(app.db)
    try:
        await _follow(app, FeedFollower(app), watch)
    finally:
        watch.close()


async def _follow(app: App, follower: FeedFollower, watch: CorruptionWatch) -> None:
    path = sqlite_file(app.settings.db_url)
    failing = False
    pause = FOLLOW_S
    while True:
        cause = watch.take()
        if cause is not None:
            log.error("the cache looks corrupt: the writer rebuilds it", cause=cause)
            if path is not None:
                await anyio.to_thread.run_sync(mark_corrupt, path, cause)
            app.db.dispose()
        try:
            published = await anyio.to_thread.run_sync(follower.poll)
        except SQLAlchemyError as exc:
            if not failing:
                log.warning("following the change feed failed", error=str(exc).partition("\n")[0])
            failing, published = True, 0
        else:
            failing = False
        pause = FOLLOW_S if published else min(pause * 2, FOLLOW_IDLE_S)
        await anyio.sleep(0 if published == FOLLOW_BATCH else pause)
