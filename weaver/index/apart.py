"""Big indexing passes of a lasting process, run in a short-lived child process.

A first index (or a full re-read) of thousands of notes fills the writer's heap with parsed
notes, rows and statements, then frees them; but the few objects that outlive the pass (the
link resolver, the caches built at its end, the workflows' first runs) pin the memory around
them, in CPython's small-object arenas and in glibc's heap alike, and neither `gc.collect()`
nor `malloc_trim` can give that back. A daemon that stays up all day would keep the peak it
reached in its first minute. A child that runs the pass and exits takes all of it with it; the
process that stays up then holds what a warm start holds. Why and the figures:
docs/architecture.md, "index/apart.py".

The child is `Indexer.reconcile` itself, on the same cache and vault: every write, the change
feed and the resumable first index are those of a pass run here. What the caller keeps:

- its indexer's lock is held while the child runs, so a watcher batch or a write tool waits for
  the pass as it would for one run in process, then applies after it;
- the pass's events (a first index's `NoteAdded(initial=True)`) come back with its report and
  are published on this process's bus, so the workflows they start run as before;
- should this process be killed, the child ends too (the kernel sees to it on Linux; elsewhere
  its stdin ends), leaving the cache as a killed pass would have: resumed by the next start;
- should the child fail to start or die, the pass runs in process instead, as it always did.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from weaver.index.child_order import answer_order, ask_child
from weaver.index.workers import start_child
from weaver.log import configure_logging
from weaver.vault.fs import Vault

log = structlog.get_logger(__name__)

# The child's code: `indexer.serve_pass_apart` runs `serve_pass` with the indexer's reconcile.
_CHILD_CODE = "from weaver.index.indexer import serve_pass_apart; serve_pass_apart()"

# A pass as the child runs it: (passes, vault, parse workers, full) -> its report.
RunPass = Callable[["ApartPasses", Vault, int, bool], object]


@dataclass(frozen=True)
class ApartPasses:
    """What a child needs besides the vault to run a pass like this process's indexer: the
    cache's URL, and this process's logging, so the child's log lines join its own.

    `min_notes`: notes to read from which a pass runs apart (a child costs an interpreter's
    start, about a second: worth it for a burst of thousands of notes, not for a few)."""

    db_url: str
    log_level: str = "info"
    log_format: str = "auto"
    min_notes: int = 2000


def reconcile_apart(passes: ApartPasses, vault: Vault, parse_workers: int, full: bool) -> object:
    """`Indexer.reconcile(full)` run in a child process: its report, events included; None
    when the child could not run it (it failed to start, died, or the pass raised), having
    logged why: the caller then runs the pass itself."""
    try:
        child = start_child(_CHILD_CODE)  # as the parse workers are started
    except OSError as exc:  # no interpreter to run (embedded Python), out of processes
        log.warning("indexing in this process: no child process", error=str(exc))
        return None
    return ask_child(child, (passes, vault, parse_workers, full), "indexing")


def serve_pass(run: RunPass) -> None:
    """The child: `run` on the order it is given (`child_order`). It exits at once, whatever
    it is doing, when its stdin ends (the parent died or gave up)."""

    def handle(order: tuple[ApartPasses, Vault, int, bool], stdin: int) -> object:
        passes, vault, parse_workers, full = order
        threading.Thread(target=_exit_when_orphaned, args=(stdin,), daemon=True).start()
        configure_logging(passes.log_level, passes.log_format)
        return run(passes, vault, parse_workers, full)

    answer_order(handle, "indexing pass")


def _exit_when_orphaned(stdin: int) -> None:
    """The parent keeps our stdin open until it has our answer: its end means nobody waits
    for the pass. Ending abruptly is safe: a pass is resumed, as after kill -9."""
    try:
        while os.read(stdin, 4096):
            pass
    except OSError:
        pass
    os._exit(0)
