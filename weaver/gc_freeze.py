"""Short garbage-collection pauses in the processes that keep running (`weaver serve`,
`weaver daemon`).

CPython's cycle collector runs a full collection whenever the objects that survived into its
oldest generation have grown by a quarter, and a full collection visits every object it tracks.
A server holds a great many for its whole life: its modules and, once a graph tool has been
asked, the graph, name and tag indexes (hundreds of thousands of objects on a big vault). A call
with a big answer then paid a full collection now and then, on most calls of a large
`get_graph`.

`gc.freeze()` moves every object alive at that moment out of the collector's sight, so later
collections visit only what was made since, a small fraction of the work. A frozen object is still
freed when its last reference goes; only garbage in reference cycles among frozen objects is
never reclaimed. So a collection runs first, and freezing happens only when something that
lasts has just been built (start-up, a whole index: at start and after a big indexing pass),
never per call. What stays for good is the odd object alive at that moment that later ends in
a cycle: a few of the connection the index was read with, per build.
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


def settle() -> None:
    """After building something the process keeps: collect, then freeze what is alive. Does
    nothing unless `keep_pauses_short` was called in this process."""
    if _settling:
        gc.collect()
        gc.freeze()
