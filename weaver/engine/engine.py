"""The workflow engine: queues executions, has them run, and answers questions about them.

Every run starts as a `pending` row in the cache's `executions` table, whatever asked for it (a
manual trigger, a file event, the scheduler); then whoever has a free slot claims the row and
runs it (`engine.runs`). The table is the queue, so a row queued by `weaver trigger --async` in
a shell is run by the daemon, and a workflow's `max_concurrent` holds across processes. Where
queued work runs is the engine's run mode, its `Dispatch` (`engine.dispatch`: a thread pool,
inline, left queued, or jobs for the workers on PostgreSQL).

`trigger`, `list_workflows`, `get_status` and `get_history` are the core behind both the MCP
tools and the CLI. A failing workflow, a timeout, a broken plugin or a database hiccup while
recording never stops the engine: each is logged and recorded on its execution.

A run its engine stopped under (stdin closed, SIGTERM, a crash) is no failure of its own: it
goes back to the queue as it was asked for and the next engine to start runs it again, as its
next attempt (`recover_interrupted`, `cache.executions.requeue_interrupted`).

How a host builds its engine (daemon, server, reader, CLI) is `weaver.runtime.engines`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions
from weaver.cache.db import commit_stamp
from weaver.cache.executions import PENDING, RUNNING, ExecutionRecord
from weaver.config import Settings
from weaver.engine.apart import ApartRuns
from weaver.engine.context import ManualTrigger, ScheduleTrigger
from weaver.engine.definition import Workflow
from weaver.engine.dispatch import Background, make_dispatch
from weaver.engine.execution import CANCELLED_MESSAGE
from weaver.engine.feed_runs import FEED_BATCH, FEED_CONSUMER, FeedRuns, defaults
from weaver.engine.job_dispatch import run_job
from weaver.engine.jobs import JobQueue
from weaver.engine.live_runs import LiveRuns, ProgressListener
from weaver.engine.payloads import (
    ExecutionSummary,
    ListWorkflowsData,
    PluginErrorInfo,
    TriggerWorkflowData,
    WorkflowHistoryData,
    WorkflowInfo,
    WorkflowStatusData,
)
from weaver.engine.processes import process_label
from weaver.engine.registry import Registry
from weaver.engine.retention import Retention
from weaver.engine.runs import Runs
from weaver.engine.workflow_errors import NotCancellableError, WorkflowDisabledError
from weaver.vault.events import EventBus, VaultEvent
from weaver.vault.fs import Vault

if TYPE_CHECKING:
    from weaver.engine.scheduler import WorkflowScheduler

__all__ = ["FEED_BATCH", "FEED_CONSUMER", "WorkflowEngine"]

HISTORY_MAX_LIMIT = 100
# The longest pause of the poll for work queued by other processes, reached by doubling
# `workflow_poll_ms` while polls find nothing: how late such a run may start on an idle engine.
IDLE_POLL_SECONDS = 15.0


class WorkflowEngine:
    """Runs the workflows of one registry against one cache and vault. One per process.

    `background` is the run mode (`engine.dispatch`); `jobs` is the job queue of the `jobs`
    mode, and only its; `poll` makes a started engine claim rows queued elsewhere, follow the
    change feed and prune, every `workflow_poll_ms` (in the modes that poll); `apart`, for a
    lasting process in the `threads` mode, hands a burst of the feed (a first index's) to a
    child process, which queues and runs its runs (`engine.apart`)."""

    def __init__(
        self,
        registry: Registry,
        *,
        db: Engine,
        vault: Vault,
        settings: Settings,
        bus: EventBus | None = None,
        background: Background = "threads",
        poll: bool = False,
        jobs: JobQueue | None = None,
        apart: ApartRuns | None = None,
    ) -> None:
        self._dispatch = make_dispatch(background, settings.workflow_workers, jobs, apart)
        self.registry = registry
        self.db = db
        self.settings = settings
        self.bus = bus
        self.process = process_label()
        self._live = LiveRuns()
        self.runs = Runs(
            registry=registry,
            db=db,
            vault=vault,
            settings=settings,
            process=self.process,
            deferral=self._dispatch,
            live=self._live,
        )
        self.retention = Retention(db, settings, registry)
        self._feed = FeedRuns(registry, db, self.runs)
        # The scheduler firing this engine's schedules, when this process runs one (the daemon).
        self.scheduler: WorkflowScheduler | None = None
        self._poll = poll
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")
        self._poller: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._started = False
        self._consuming = False
        self._feed_lock = threading.Lock()

    @property
    def background(self) -> Background:
        return self._dispatch.name

    # -- health (what the MCP server's `health_check` asks) -----------------------------------

    @property
    def running(self) -> bool:
        return self._started and not self._live.stopping.is_set()

    @property
    def plugin_errors(self) -> list[str]:
        return [str(error) for error in self.registry.errors]

    @property
    def faults(self) -> list[str]:
        """What is wrong now, for `health_check` (empty when nothing)."""
        return self.runs.ends.faults

    @property
    def degraded(self) -> bool:
        return bool(self.registry.errors) or not self.running

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, subscribe: bool = True) -> None:
        """Recover interrupted runs, prune history, listen to vault events, start the workers."""
        self._dispatch.start(self.runs)
        try:
            self.retention.prune()
        except SQLAlchemyError as exc:  # housekeeping: the poll loop prunes again within the hour
            self._log.warning("pruning history at start failed", error=str(exc).partition("\n")[0])
        self._consuming = subscribe
        if subscribe and self.bus is not None:
            self._unsubscribe = self.bus.subscribe(self._on_events)
        if self._poll and self._dispatch.polls:
            self._poller = threading.Thread(
                target=self._poll_loop, name="weaver-engine-poll", daemon=True
            )
            self._poller.start()
        self._started = True
        if subscribe:  # changes applied while no engine ran (`weaver index`, a crash)
            self._consume_safely()
        # Info for a long-lived host; a CLI command's engine need not announce itself.
        announce = self._log.debug if self._dispatch.quiet else self._log.info
        announce(
            "workflow engine started",
            workflows=len(self.registry),
            plugin_errors=len(self.registry.errors),
            background=self.background,
        )

    def start_reading(self) -> None:
        """Answer questions about runs (workflows, status, history) without running any nor
        writing the cache: the engine of a reader process (`weaver serve --no-vault`)."""
        self._started = True

    def stop(self) -> None:
        """Stop taking work and end the runs under way (queued again, as interrupted)."""
        if self._live.stopping.is_set():
            return
        self._live.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._poller is not None:
            self._poller.join()
        self._dispatch.stop()
        (self._log.debug if self._dispatch.quiet else self._log.info)("workflow engine stopped")

    def __enter__(self) -> WorkflowEngine:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- the core behind MCP and CLI ----------------------------------------------------------

    def trigger(
        self,
        workflow_id: str,
        input: object = None,
        *,
        async_: bool = False,
        via: str = "api",
        on_queued: Callable[[str], None] | None = None,
        on_progress: ProgressListener | None = None,
    ) -> TriggerWorkflowData:
        """Start a workflow by hand. Sync: run it and answer with the final status. Async:
        answer at once with the execution id. Raises `WorkflowRequestError` (recording
        nothing) for an unknown or disabled workflow or invalid input.

        `on_queued` is called with the execution id once it is recorded (before a sync run
        starts: the caller may `cancel` it from then on); `on_progress` with each progress
        report of a sync run made in this process (from the workflow's thread)."""
        workflow = self.get_runnable(workflow_id)
        data = workflow.validate_input(input).model_dump(mode="json")
        queued = self.runs.enqueue(workflow, ManualTrigger(via), data)
        if on_queued is not None:
            on_queued(queued.id)
        if not async_:
            return TriggerWorkflowData.finished(self._run_sync(queued, workflow, on_progress))
        self._dispatch.submit(self.runs, queued.id)
        message = self._dispatch.queued_message
        return TriggerWorkflowData.started(self.runs.get(queued.id), message)

    def _run_sync(
        self, queued: ExecutionRecord, workflow: Workflow, on_progress: ProgressListener | None
    ) -> ExecutionRecord:
        try:
            with self._live.listening(queued.id, on_progress):
                return self._dispatch.run_sync(self.runs, queued, workflow)
        except BaseException:  # Ctrl-C in `weaver trigger`: nobody waits for it any more
            self.runs.cancel_pending(queued.id, "cancelled: the caller stopped waiting")
            raise

    def list_workflows(self, enabled: bool | None = None) -> ListWorkflowsData:
        with self.db.connect() as conn:
            stats = executions.workflow_stats(conn)
        infos = []
        for workflow in self.registry:
            if enabled is not None and workflow.enabled != enabled:
                continue
            stat = stats.get(workflow.id)
            count, last = (stat.count, stat.last_executed) if stat else (0, None)
            infos.append(WorkflowInfo.of(workflow, last, count))
        errors = [PluginErrorInfo.model_validate(error) for error in self.registry.errors]
        return ListWorkflowsData(workflows=infos, count=len(infos), errors=errors)

    def get_status(self, execution_id: str) -> WorkflowStatusData:
        return WorkflowStatusData.of(self.runs.get(execution_id))

    def get_history(
        self,
        workflow_id: str | None = None,
        limit: int = 20,
        offset: int = 0,
        status: str | None = None,
        *,
        since: int | None = None,
        until: int | None = None,
    ) -> WorkflowHistoryData:
        """Newest first, of one workflow, in one status, asked for within [since, until) when
        given; `limit` is brought into 1..100 and `offset` to at least 0."""
        limit = min(max(limit, 1), HISTORY_MAX_LIMIT)
        offset = max(offset, 0)
        with self.db.connect() as conn:
            records, total = executions.list_executions(
                conn, workflow_id, limit, offset, status, since=since, until=until
            )
            if workflow_id is not None and total == 0:
                self._check_known(conn, workflow_id, filtered=status is not None)
        return WorkflowHistoryData(
            executions=[ExecutionSummary.of(r) for r in records],
            total=total,
            limit=limit,
            offset=offset,
            has_more=offset + len(records) < total,
        )

    def rerun(self, execution_id: str, via: str = "api") -> TriggerWorkflowData:
        """Queue the workflow of a past run again with the same input (async)."""
        record = self.runs.get(execution_id)
        return self.trigger(record.workflow_id, record.input, async_=True, via=via)

    def cancel(self, execution_id: str) -> WorkflowStatusData:
        """Cancel a pending run, or one running in this process (its workflow sees
        `ctx.cancelled`; its writes are refused from then on; it ends `cancelled`).

        Raises `NotCancellableError` for a run that has ended or that another process runs."""
        record = self.runs.get(execution_id)
        if record.status == PENDING:
            if self.runs.cancel_pending(execution_id, CANCELLED_MESSAGE):
                return self.get_status(execution_id)
            record = self.runs.get(execution_id)  # claimed meanwhile: cancel it running
        switch = None
        if record.status == RUNNING:
            switch = self._live.switch_of(execution_id, record.process == self.process)
        if switch is None or record.status != RUNNING:
            raise NotCancellableError(_not_cancellable(record, self.process))
        self._live.request_cancel(execution_id, switch)
        self._live.wait_until_done(execution_id)
        return self.get_status(execution_id)

    def _check_known(self, conn: Connection, workflow_id: str, filtered: bool) -> None:
        """No history under an id no workflow has is a misspelling, most likely, which an
        empty page would pass off as "never ran": `WorkflowNotFoundError`. A removed
        workflow's history is still read; with no plugins loaded this cannot tell."""
        if not len(self.registry) or workflow_id in self.registry:
            return
        if filtered and executions.list_executions(conn, workflow_id, 1, 0)[1]:
            return  # it has history, in other states
        self.registry.require(workflow_id)

    def get_runnable(self, workflow_id: str) -> Workflow:
        workflow = self.registry.require(workflow_id)
        if not workflow.enabled:
            raise WorkflowDisabledError(workflow_id)
        return workflow

    # -- other ways in: file events, schedules, rows queued elsewhere -------------------------

    def handle_events(self, events: Sequence[VaultEvent]) -> list[str]:
        """Queue one execution per matching workflow for this batch (outside the feed: the
        feed's consumer goes through `consume_feed`)."""
        with self.db.begin() as conn:
            queued = self._feed.queue_events(conn, events)
        for execution_id in queued:
            self._dispatch.submit(self.runs, execution_id)
        return queued

    def consume_feed(self, apart: bool = True) -> list[str]:
        """Queue the runs for every event of the change feed after this engine's cursor.

        The runs are queued and the cursor moved in one transaction, so an event starts its
        workflows exactly once whichever process (and however many) consume, across crashes.
        Returns the ids of the executions queued here: none when a burst of the feed is, or
        now goes, to a child process (`engine.apart`; not with `apart=False`)."""
        queued: list[str] = []
        while not self._live.stopping.is_set():
            with self._feed_lock:
                taken = None if apart and self._handed_over() else self._feed.take_batch()
            if taken is None:
                break
            queued += taken
            for execution_id in taken:
                self._dispatch.submit(self.runs, execution_id)
        return queued

    def _handed_over(self) -> bool:
        """Under the feed lock: whether the feed is a child's to consume, because one has it
        now or because its backlog is a burst (`burst_events` or more), handed to one here."""
        at_least = self._dispatch.burst_events
        if at_least is None:
            return False
        if self._dispatch.consuming_apart:
            return True
        if self._feed.backlog(at_least) < at_least:
            return False
        return self._dispatch.consume_apart(self.runs, self._after_apart)

    def _after_apart(self, done: bool) -> None:
        """Once the child has ended: the runs it left running (it died) queued again, and
        what it left of the feed (all of it, when it could not run: then in this process)."""
        self.runs.recover_interrupted()
        try:
            self.consume_feed(apart=done)
        except SQLAlchemyError as exc:  # busy or failing cache: the poll loop tries again
            self._log.warning("reading the change feed failed", error=str(exc).partition("\n")[0])
        self.run_pending()

    def _consume_safely(self) -> None:
        try:
            self.consume_feed()
        except SQLAlchemyError as exc:  # busy or failing cache: the poll loop tries again
            self._log.warning("reading the change feed failed", error=str(exc).partition("\n")[0])

    def _on_events(self, _events: Sequence[VaultEvent]) -> None:
        """The EventBus handler: the events are in the feed by now; take them from there."""
        self._consume_safely()

    def enqueue_scheduled(self, workflow_id: str, scheduled_time: datetime) -> str | None:
        """Queue the run the scheduler planned for `scheduled_time` (the scheduler only
        enqueues; the engine's workers execute)."""
        workflow = self.registry.get(workflow_id)
        if workflow is None or not workflow.enabled or not workflow.schedules:
            self._log.warning(
                "scheduled run skipped: no such enabled schedule", workflow_id=workflow_id
            )
            return None
        trigger = ScheduleTrigger(scheduled_time)
        queued = self.runs.enqueue(workflow, trigger, defaults(workflow))
        self._dispatch.submit(self.runs, queued.id)
        return queued.id

    def run_pending(self) -> int:
        """Take up pending rows of enabled workflows, oldest first (those queued by other
        processes included); returns how many were handed to the workers."""
        return self._dispatch.submit_pending(self.runs)

    def run_job(self, execution_id: str) -> str:
        """Run an execution the job system handed to this worker (`job_dispatch.run_job`)."""
        return run_job(self.runs, execution_id)

    # -- maintenance ---------------------------------------------------------------------------

    def recover_interrupted(self) -> list[str]:
        """Queue again the running rows whose process is gone; returns their ids."""
        return self.runs.recover_interrupted()

    def record_interrupted(self) -> int:
        """Queue again every run this process has under way (`host.signals`); how many."""
        return self.runs.record_interrupted()

    def prune(self, now: int | None = None) -> int:
        """Apply the retention settings (`engine.retention`); how many rows went."""
        return self.retention.prune(now)

    def _poll_loop(self) -> None:
        """Look for work queued elsewhere (another process's trigger, feed events this
        process's bus did not carry) every `workflow_poll_ms` while there is some, backing
        off to `IDLE_POLL_SECONDS` while there is none: an idle daemon need not query the
        cache every second all day. This process's own events and triggers need no poll (the
        bus handler and `trigger` hand them to the workers at once)."""
        busy = self.settings.workflow_poll_ms / 1000
        interval = busy
        while True:
            found = self._poll_once()
            interval = busy if found else min(interval * 2, max(busy, IDLE_POLL_SECONDS))
            if self._pause(interval, busy):
                return

    def _pause(self, interval: float, busy: float) -> bool:
        """Wait `interval` between looks, cut short when another process commits to a SQLite
        cache (`weaver trigger --async` from a shell queues its run there): a stat of the
        cache's files every `busy` seconds costs next to nothing, so the backed-off poll
        still starts such a run within `workflow_poll_ms`. True: the engine is stopping."""
        stamp = commit_stamp(self.db)
        if stamp is None:
            return self._live.stopping.wait(interval)
        deadline = time.monotonic() + interval
        while (left := deadline - time.monotonic()) > 0:
            if self._live.stopping.wait(min(busy, left)):
                return True
            if commit_stamp(self.db) != stamp:
                return False
        return False

    def _poll_once(self) -> bool:
        """One look for work; True if any was found (or the look failed: look again soon)."""
        try:
            queued = self.consume_feed() if self._consuming else []
            taken = self.run_pending()
            self.retention.prune_if_due()
        except Exception:
            self._log.exception("polling for queued executions failed")
            return True
        return bool(queued) or taken > 0


def _not_cancellable(record: ExecutionRecord, process: str) -> str:
    if record.done:
        return f"Execution {record.id!r} has already ended ({record.status})"
    return (
        f"Execution {record.id!r} runs in process {record.process or 'unknown'}, not in this "
        f"one ({process}): only that process can cancel it"
    )
