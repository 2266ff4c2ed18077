"""Bringing the cache along after a write, as this process's role allows: apply the touched
paths with the indexer when it may write the cache (it holds the writer lock, or takes it for
the moment), else wait for the writer to show them."""

from __future__ import annotations

import time
from collections.abc import Mapping

from weaver.cache import graph as cache_graph
from weaver.runtime.app import App
from weaver.runtime.locks import writer_lock_for

SYNC_TIMEOUT_S = 5.0
SYNC_POLL_S = 0.05


def sync_cache(
    app: App,
    expected: Mapping[str, str | None],
    *,
    holds_writer: bool,
    timeout: float = SYNC_TIMEOUT_S,
) -> bool:
    """Bring these paths into the cache now if this process may write it (it holds the writer
    lock, or takes it for the moment), else wait for the writer to show `expected`."""
    if holds_writer:
        app.indexer.apply_paths_together(expected)
        return True
    lock = writer_lock_for(app.settings)
    try:
        if lock.try_acquire():
            app.indexer.apply_paths(expected)
            return True
    finally:
        lock.close()
    return wait_for_cache(app, expected, timeout)


def wait_for_cache(app: App, expected: Mapping[str, str | None], timeout: float) -> bool:
    """Poll until the cache holds each path with its expected hash (None: absent)."""
    deadline = time.monotonic() + timeout
    paths = list(expected)
    while True:
        with app.db.connect() as conn:
            current = cache_graph.note_hashes(conn, paths)
        if all(current.get(path) == digest for path, digest in expected.items()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(SYNC_POLL_S)
