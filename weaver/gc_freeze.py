"""Short garbage-collection pauses in the processes that keep running (`weaver serve`, `weaver
daemon`).

`gc.freeze()` moves every object alive at that moment out of the cycle collector's sight, so
later collections visit only what was made since. A collection runs first, and freezing happens
only when something that lasts has just been built (start-up, a whole index: at start and after
a big indexing pass), never per call. A frozen object is still freed when its last reference
goes; only garbage in reference cycles among frozen objects is never reclaimed: the odd object
alive at that moment that later ends in a cycle (a few of the connection the index was read
with, per build). Why: docs/architecture.md, "gc_freeze.py".
"""

from __future__ import annotations

import gc

_settling = False


def keep_pauses_short() -> None:
    """For a process that keeps running: freeze what start-up built now, and each whole index
    once it is built (`settle`). One-shot commands and the tests never call it."""
    global _settling
    _settling = True
    settle()


def keep_pauses_short_later() -> None:
    """As `keep_pauses_short`, without the first collection now: for `weaver serve`, whose
    client waits for its first answers meanwhile; the lifespan settles once the cache is
    ready (`runtime.lifespan`), which builds most of what lasts anyway."""
    global _settling
    _settling = True


def settle() -> None:
    """After building something the process keeps: collect, then freeze what is alive. Does
    nothing unless `keep_pauses_short` was called in this process."""
    if _settling:
        gc.collect()
        gc.freeze()
