"""A burst of workflow runs in a lasting process, run in a short-lived child process.

A first index of a big vault (or any change of thousands of notes at once) queues the file
workflows on every note it found: each built-in reads, analyses or records thousands of notes,
in the engine's threads, side by side. Their objects, rows and statements are freed when the
runs end, but the few that outlive them (pooled connections' page caches, caches filled on the
way) pin the memory around them, in CPython's small-object arenas and in each engine thread's
glibc arena alike, and neither `gc.collect()` nor `malloc_trim` gives that back: the daemon
would keep the peak of its first minute all day. A child that runs the burst and exits takes
all of it with it, as `index.apart` does for the index itself. Why and the figures:
docs/architecture.md, "engine/apart.py".

The child consumes the change feed as the engine would (`FeedRuns`, under the engine's cursor)
and runs what it queues with `Runs.drive`, on the same cache, vault and settings (its registry
loaded as this process loads it): each run is queued, claimed, run and recorded exactly as it
would be here, only by another process.

- While the child has the feed, the caller's engine neither consumes it nor takes up pending
  rows (`ThreadDispatch.consuming_apart`); once the child has ended, it takes up whatever is
  left: rows a child that died left running are queued again, the feed's rest and the pending
  rows are run here, as they always were.
- A run the child has under way cannot be cancelled from here (`cancel` says which process
  runs it); a row still pending can.
- When the engine stops, the child is told (its stdin ends): its runs stop as this process's
  own do, queued again as interrupted, and it exits. Should this process be killed, the child
  ends too (the kernel sees to it on Linux), and the next start queues its runs again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import structlog
from sqlalchemy import Connection

from weaver.cache.db import open_engine
from weaver.config import Settings
from weaver.engine.definition import Workflow
from weaver.engine.feed_runs import FeedRuns
from weaver.engine.live_runs import LiveRuns
from weaver.engine.loader import load_registry
from weaver.engine.processes import process_label
from weaver.engine.runs import Runs
from weaver.index.child_order import answer_order, ask_child, dismiss_child
from weaver.index.workers import start_child
from weaver.log import configure_logging
from weaver.vault.fs import Vault

log = structlog.get_logger(__name__)

_CHILD_CODE = "from weaver.engine.apart import serve_runs; serve_runs()"
# How long a child told to stop waits for its runs to record themselves interrupted before it
# exits anyway (a run notices a stop within `runner.STOP_CHECK_SECONDS`), as a job worker's
# (`host.job_worker.SHUTDOWN_GRACE_S`): the daemon's stop waits for the child, and the whole
# stop must end within `host.signals.STOP_GRACE_S` (7 s) or its watchdog cuts it short.
STOP_GRACE_S = 4.0
# How long the parent waits for a child to exit once its pipes are closed.
REAP_S = STOP_GRACE_S + 1.5


@dataclass(frozen=True)
class ApartRuns:
    """What a child needs to run this engine's runs as it would: its settings (the cache's URL,
    the plugins, each workflow's settings, the logging) and its vault.

    `min_events`: events waiting in the change feed from which they are a burst, consumed and
    run apart (a child costs an interpreter's start and the engine's imports, about a second:
    worth it for thousands of notes, not for an edit's few). As `ApartPasses.min_notes`."""

    settings: Settings
    vault: Vault
    min_events: int = 2000


class ApartBursts:
    """The children running bursts for one engine, so that its stop can stop them."""

    def __init__(self, apart: ApartRuns) -> None:
        self.apart = apart
        self._lock = threading.Lock()
        self._children: set[subprocess.Popen[bytes]] = set()
        self._stopped = False

    def run(self) -> bool:
        """Have a child consume the change feed and run the runs it queues; return once it
        has ended. True when it ran through; False when it could not (it failed to start,
        died, or was stopped), having logged why: the caller then takes up what is left."""
        try:
            child = start_child(_CHILD_CODE)  # as the index's child is started
        except OSError as exc:  # no interpreter to run (embedded Python), out of processes
            log.warning("workflow runs in this process: no child process", error=str(exc))
            return False
        with self._lock:
            self._children.add(child)
            stopped = self._stopped
        try:
            if stopped:
                dismiss_child(child, REAP_S)
                return False
            order = (self.apart.settings, self.apart.vault)
            queued = ask_child(child, order, "workflow runs", REAP_S)
        finally:
            with self._lock:
                self._children.discard(child)
        if queued is None:
            return False
        log.info("workflow runs of a burst done in a child process", runs=queued)
        return True

    def stop(self) -> None:
        """Tell the children running now to stop their runs and exit (without waiting)."""
        with self._lock:
            self._stopped = True
            children = list(self._children)
        for child in children:
            if child.stdin is not None:
                with contextlib.suppress(OSError):  # the child has gone
                    child.stdin.close()


def serve_runs() -> None:
    """The child: the feed's runs for the order it is given (settings, vault; `child_order`).
    When its stdin ends first (the parent stops or died), its runs stop as an engine's do on
    its stop: queued again as interrupted."""

    def handle(order: tuple[Settings, Vault], stdin: int) -> int:
        settings, vault = order
        configure_logging(settings.log_level, settings.log_format)
        return run_here(settings, vault, stdin)

    answer_order(handle, "workflow runs")


def run_here(settings: Settings, vault: Vault, stdin: int) -> int:
    """The child's work: the feed consumed as the parent's engine consumes it (`FeedRuns`),
    each run driven as its dispatch drives them (then the next pending rows of its
    workflow), in as many threads as it has, until the feed is empty. How many it queued."""
    db = open_engine(settings.db_url)
    try:
        registry = load_registry(settings)
        live = LiveRuns()
        runs = Runs(
            registry=registry,
            db=db,
            vault=vault,
            settings=settings,
            process=process_label(),
            deferral=_RowsAreTheQueue(),
            live=live,
        )
        threading.Thread(target=_stop_when_orphaned, args=(stdin, live), daemon=True).start()
        feed_runs = FeedRuns(registry, db, runs)
        queued = 0
        with ThreadPoolExecutor(settings.workflow_workers, "weaver-engine") as pool:
            while not live.stopping.is_set() and (taken := feed_runs.take_batch()) is not None:
                queued += len(taken)
                for execution_id in taken:
                    pool.submit(runs.drive, execution_id)
        return queued
    finally:
        db.dispose()


class _RowsAreTheQueue:
    """The child's deferral: as the thread dispatch's, a pending row is found by whoever
    polls (the parent, for one the child queues again on its stop)."""

    def defer(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """Nothing to do."""

    def requeued(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """Nothing to do."""


def _stop_when_orphaned(stdin: int, live: LiveRuns) -> None:
    """The parent keeps our stdin open until it has our answer: its end means it stops (or
    died). The runs under way notice `stopping` and record themselves interrupted; should one
    not within `STOP_GRACE_S`, exit anyway: the next engine to start queues it again."""
    try:
        while os.read(stdin, 4096):
            pass
    except OSError:
        pass
    live.stop()
    threading.Timer(STOP_GRACE_S, os._exit, args=(0,)).start()
