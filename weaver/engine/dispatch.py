"""Where queued runs are run: one strategy per run mode behind `Dispatch`, chosen once when
the engine is built (`make_dispatch`).

- `threads` (daemon, server): a thread pool runs them; with `poll`, the engine also claims rows
  queued by other processes every `workflow_poll_ms`; in a lasting process, a burst of the
  change feed is queued and run by a child process instead (`engine.apart`).
- `inline` (tests): in the caller's thread before the call returns, like huey's immediate mode,
  so a test sees a file event's workflow finished when `publish` returns.
- `queue` (the CLI, readers): they stay `pending` for the daemon.
- `jobs` (on PostgreSQL, every process): `JobDispatch`, each row deferred as a job for the
  `weaver worker` processes (`engine.job_dispatch`).

Sync triggers run in the caller's thread in every mode but `jobs`, where they wait on the row.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, Protocol

import structlog
from sqlalchemy import Connection

from weaver.cache.executions import ExecutionRecord
from weaver.engine.apart import ApartBursts, ApartRuns
from weaver.engine.definition import Workflow
from weaver.engine.job_dispatch import JobDispatch
from weaver.engine.jobs import JobQueue
from weaver.engine.runs import Deferral, Runs
from weaver.memory_trim import trim_heap

log = structlog.get_logger("weaver.engine")

Background = Literal["threads", "inline", "queue", "jobs"]

# A spell of runs at least this long is a burst whose freed memory is given back when it ends
# (`ThreadDispatch`); shorter ones, an edit's runs, are not worth a trim each.
BURST_S = 1.0

STARTED_MESSAGE = "Workflow execution started"
QUEUED_MESSAGE = "Workflow execution queued for the daemon"


class Dispatch(Deferral, Protocol):
    """One run mode. `polls`: whether the engine's poll loop (the feed, queued rows,
    retention) runs when asked for; `quiet`: a short-lived process's engine, logged at debug."""

    @property
    def name(self) -> Background: ...

    @property
    def queued_message(self) -> str: ...

    @property
    def polls(self) -> bool: ...

    @property
    def quiet(self) -> bool: ...

    @property
    def burst_events(self) -> int | None:
        """A backlog of the change feed this long or longer is handed to a child process
        (`consume_apart`); None: never."""

    @property
    def consuming_apart(self) -> bool:
        """Whether a child has the feed now (this process then takes none of it)."""

    def consume_apart(self, runs: Runs, after: Callable[[bool], None]) -> bool:
        """Hand the feed to a child that queues and runs its runs; `after(done)` once it has
        ended (`done`: it ran through). False when it cannot be handed over now."""

    def start(self, runs: Runs) -> None: ...

    def stop(self) -> None:
        """Stop taking work; return once the runs under way here have ended."""

    def submit(self, runs: Runs, execution_id: str) -> None:
        """A pending row to run, as this mode runs them."""

    def submit_pending(self, runs: Runs) -> int:
        """Take up the pending rows (those queued elsewhere included); how many were taken."""

    def run_sync(self, runs: Runs, queued: ExecutionRecord, workflow: Workflow) -> ExecutionRecord:
        """The row once it ended, or as it is when the caller stops waiting."""


class _LocalDispatch:
    """What the modes running in this process share: the row itself is the queue (nothing to
    defer), a sync run is run by its caller, and runs a dead process left are taken up."""

    queued_message = STARTED_MESSAGE
    polls = False
    quiet = False
    burst_events: int | None = None
    consuming_apart = False

    def consume_apart(self, runs: Runs, after: Callable[[bool], None]) -> bool:
        return False  # the feed is consumed in process

    def defer(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """Nothing: a pending row is found by whoever polls."""

    def requeued(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """Nothing, as for a new row."""

    def start(self, runs: Runs) -> None:
        runs.recover_interrupted()

    def stop(self) -> None:
        """Nothing runs but in its caller's thread."""

    def submit(self, runs: Runs, execution_id: str) -> None:
        """Nothing: it stays pending for whoever polls."""

    def submit_pending(self, runs: Runs) -> int:
        pending = runs.list_pending()
        for execution_id in pending:
            self.submit(runs, execution_id)
        return len(pending)

    def run_sync(self, runs: Runs, queued: ExecutionRecord, workflow: Workflow) -> ExecutionRecord:
        return runs.run_to_end(queued)


class InlineDispatch(_LocalDispatch):
    name: Literal["inline"] = "inline"

    def submit(self, runs: Runs, execution_id: str) -> None:
        runs.drive(execution_id)


class QueueDispatch(_LocalDispatch):
    name: Literal["queue"] = "queue"
    queued_message = QUEUED_MESSAGE
    quiet = True


class ThreadDispatch(_LocalDispatch):
    """Runs in a thread pool. When the last run under way ends a spell of runs that lasted
    `BURST_S` or more, the heap they freed is given back (`memory_trim`): a daemon rests after.

    With `apart` (a lasting process: the daemon, `weaver serve`), a burst of the change feed
    (`ApartRuns.min_events` events or more waiting: the workflows a first index sets off,
    thousands of notes read, analysed and recorded) is queued and run by a child process
    instead (`engine.apart`), whose memory goes with it; meanwhile this process neither
    consumes the feed nor takes up pending rows, and takes up what is left once it ends."""

    name: Literal["threads"] = "threads"
    polls = True

    def __init__(self, workers: int, apart: ApartRuns | None = None) -> None:
        self._workers = workers
        self._bursts = ApartBursts(apart) if apart is not None else None
        self.burst_events = apart.min_events if apart is not None else None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._submitted: set[str] = set()
        self._busy_since = 0.0  # when the runs under way began to be under way
        self._apart = threading.Event()  # a child has the feed

    @property
    def consuming_apart(self) -> bool:  # type: ignore[override]
        return self._apart.is_set()

    def start(self, runs: Runs) -> None:
        super().start(runs)
        self._pool = ThreadPoolExecutor(
            max_workers=self._workers, thread_name_prefix="weaver-engine"
        )

    def stop(self) -> None:
        if self._bursts is not None:
            self._bursts.stop()  # a child's runs record themselves as this pool's do
        if self._pool is not None:
            # Runs notice the stop within runner.STOP_CHECK_SECONDS and record themselves.
            self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, runs: Runs, execution_id: str) -> None:
        if self._pool is None or runs.live.stopping.is_set():
            return  # stays pending: a worker process (or this one, once started) takes it
        with self._lock:
            if execution_id in self._submitted:
                return
            if not self._submitted:
                self._busy_since = time.monotonic()
            self._submitted.add(execution_id)
        self._pool.submit(self._drive, runs, execution_id)

    def submit_pending(self, runs: Runs) -> int:
        if self._apart.is_set():
            return 0  # the child runs the rows it queues: not taken from under it
        return super().submit_pending(runs)

    def _drive(self, runs: Runs, execution_id: str) -> None:
        try:
            runs.drive(execution_id)
        finally:
            with self._lock:
                self._submitted.discard(execution_id)
                burst_over = not self._submitted and self._busy_for() >= BURST_S
            if burst_over:
                trim_heap()

    def _busy_for(self) -> float:
        return time.monotonic() - self._busy_since

    def consume_apart(self, runs: Runs, after: Callable[[bool], None]) -> bool:
        if self._bursts is None or self._pool is None or runs.live.stopping.is_set():
            return False
        self._apart.set()
        try:
            # From one of the pool's threads: the engine's stop waits for it as for a run.
            self._pool.submit(self._run_apart, self._bursts, runs, after)
        except RuntimeError:  # the pool shut down meanwhile: the engine stops
            self._apart.clear()
            return False
        return True

    def _run_apart(self, bursts: ApartBursts, runs: Runs, after: Callable[[bool], None]) -> None:
        try:
            done = bursts.run()
        finally:
            self._apart.clear()
        try:
            if not runs.live.stopping.is_set():
                after(done)
        except Exception:  # the poll loop takes it up again
            log.exception("taking up what a child left of a burst failed")
        finally:
            trim_heap()  # what this process read meanwhile, and what it took up after


def make_dispatch(
    background: Background,
    workers: int,
    jobs: JobQueue | None,
    apart: ApartRuns | None = None,
) -> Dispatch:
    """The strategy of a run mode; `jobs` is the job queue of the `jobs` mode, and only its;
    `apart`: where the `threads` mode hands a burst of the feed (elsewhere: not used)."""
    if (background == "jobs") != (jobs is not None):
        raise ValueError("the jobs background needs a job queue, and only it does")
    if jobs is not None:
        return JobDispatch(jobs)
    strategies: dict[Background, Dispatch] = {
        "threads": ThreadDispatch(workers, apart),
        "inline": InlineDispatch(),
        "queue": QueueDispatch(),
    }
    return strategies[background]
