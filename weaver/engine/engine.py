"""The workflow engine: queues executions, runs them, and answers questions about them.

Every run starts as a `pending` row in the cache's `executions` table, whatever asked for it (a
manual trigger, a file event, the scheduler); then whoever has a free slot claims the row and
runs it. The table is the queue, so a row queued by `weaver trigger --async` in a shell is run
by the daemon, and a workflow's `max_concurrent` holds across processes. Where queued work runs
is the engine's `background` mode:

- `threads` (daemon, server): a thread pool runs it; with `poll`, the engine also claims rows
  queued by other processes every `workflow_poll_ms`.
- `inline` (tests): it runs in the caller's thread before the call returns, like huey's
  immediate mode, so a test sees a file event's workflow finished when `publish` returns.
- `queue` (the CLI): it stays `pending` for the daemon. Sync triggers run in the caller's
  thread in every mode.
- `jobs` (on PostgreSQL, every process): each row is deferred as a job of the job system
  (`engine.jobs`) in the transaction that inserts it, and `weaver worker` processes on any
  host run it (`run_job`). Nothing runs in this process; a sync trigger waits on the row.

`trigger`, `list_workflows`, `get_status` and `get_history` are the core behind both the MCP
tools and the CLI. A failing workflow, a timeout, a broken plugin or a database hiccup while
recording never stops the engine: each is logged and recorded on its execution.

A run its engine stopped under (stdin closed, SIGTERM, a crash) is no failure of its own: it
goes back to the queue as it was asked for and the next engine to start runs it again, as its
next attempt (`recover_interrupted`, `cache.executions.requeue_interrupted`).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import structlog
from pydantic import BaseModel
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions, feed
from weaver.cache.executions import COMPLETED, FAILED, PENDING, RUNNING, ExecutionRecord
from weaver.cache.records import WorkflowRecords, prune_superseded
from weaver.config import Settings
from weaver.edits.steps import JournalledWriter, VaultAndCache
from weaver.engine.context import (
    CacheReader,
    FileTrigger,
    ManualTrigger,
    ScheduleTrigger,
    Trigger,
    WorkflowContext,
    trigger_detail,
    trigger_from_row,
    trigger_kind,
)
from weaver.engine.definition import Workflow
from weaver.engine.errors import (
    ExecutionNotFoundError,
    NotCancellableError,
    WorkflowDisabledError,
    WorkflowError,
)
from weaver.engine.payloads import (
    ExecutionSummary,
    ListWorkflowsData,
    PluginErrorInfo,
    TriggerWorkflowData,
    WorkflowHistoryData,
    WorkflowInfo,
    WorkflowStatusData,
)
from weaver.engine.processes import is_gone, process_label
from weaver.engine.registry import Registry
from weaver.engine.runner import Completed, Failed, Outcome, interrupted, run_attempt
from weaver.vault.events import EventBus, VaultEvent
from weaver.vault.fs import Vault

if TYPE_CHECKING:
    from weaver.engine.jobs import JobQueue
    from weaver.engine.scheduler import WorkflowScheduler
    from weaver.runtime.app import App

Background = Literal["threads", "inline", "queue", "jobs"]
# Hears a sync run's progress reports: (percent 0..100, message).
ProgressListener = Callable[[int, str | None], None]

HISTORY_MAX_LIMIT = 100
# A sync caller whose run another process took looks at its row this often, in seconds.
SYNC_POLL_SECONDS = 0.1
DAY_MS = 86_400_000
# History pruning runs at start and then this often while the engine runs.
PRUNE_EVERY_SECONDS = 3600.0
# Superseded workflow records deleted per transaction: short enough not to hold up the writer.
PRUNE_BATCH = 5_000
# How long the engine remembers its own vault writes (for events of a daemon catching up).
WRITE_MEMORY_MS = 7 * DAY_MS
STARTED_MESSAGE = "Workflow execution started"
QUEUED_MESSAGE = "Workflow execution queued for the daemon"
JOB_QUEUED_MESSAGE = "Workflow execution queued for the workers"
# A sync trigger on PostgreSQL waits for a worker this long beyond the workflow's own time
# limits (its attempts' timeouts and retry delays): the time to be picked up.
SYNC_JOB_SLACK_SECONDS = 60.0
# A sync run on PostgreSQL still pending this long with no live worker answers at once, saying
# so, rather than wait out its deadline for a worker nobody started.
NO_WORKER_GRACE_S = 1.0
# What a sync wait assumes of a workflow with no timeout, per attempt.
SYNC_JOB_NO_TIMEOUT_SECONDS = 3600.0
COMPLETED_MESSAGE = "Workflow completed"
CANCELLED_MESSAGE = "Workflow execution cancelled by request"
# A run's end that could not be recorded (a full disk) is tried again after this long, doubled
# after each failure up to the maximum, until it is recorded: the run must not stay `running`.
END_RETRY_SECONDS = 0.5
END_RETRY_MAX_SECONDS = 30.0
# How long `cancel` waits for a run claimed by this process to register its cancel switch.
REGISTER_WAIT_SECONDS = 2.0
# The engine's name as a consumer of the change feed (`weaver.cache.feed`): every engine over
# one cache shares it, so a change starts its workflows once, whichever process queues them.
FEED_CONSUMER = "workflows"
# Events taken from the feed per transaction (and at most per file-triggered run).
FEED_BATCH = 2000
# A run interrupted by its engine stopping is queued again, up to this many times plus its
# workflow's retries; one interrupted more often is given up (recorded failed, saying why).
# Generous: a desktop MCP client starts and closes `weaver serve` per conversation, so a long
# run can be cut short many times before a session lasts long enough; the bound is for a run
# that takes its process down each time (a crash, the OOM killer) and would loop forever.
RESUME_LIMIT = 20


class WorkflowEngine:
    """Runs the workflows of one registry against one cache and vault. One per process."""

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
    ) -> None:
        if (background == "jobs") != (jobs is not None):
            raise ValueError("the jobs background needs a job queue, and only it does")
        self.jobs = jobs
        self.registry = registry
        self.db = db
        self.vault = vault
        self.settings = settings
        self.bus = bus
        self.background = background
        self.process = process_label()
        self._poll = poll
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")
        self._stopping = threading.Event()
        self._changed = threading.Condition()
        self._lock = threading.Lock()
        self._active: dict[str, threading.Event] = {}  # execution id -> its attempt's `cancelled`
        self._submitted: set[str] = set()
        self._cancel_requested: set[str] = set()  # running here; `cancel` was asked
        # Who waits on a sync run and wants its progress as it is reported (an MCP client).
        self._progress_listeners: dict[str, ProgressListener] = {}
        # The scheduler firing this engine's schedules, when this process runs one (the daemon).
        self.scheduler: WorkflowScheduler | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._poller: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._started = False
        self._consuming = False
        self._feed_lock = threading.Lock()
        # Ends of runs not recorded yet: execution id -> (fields, finished at, next try, delay).
        self._unrecorded: dict[str, _UnrecordedEnd] = {}
        self._end_error: str | None = None
        self._end_retrier: threading.Thread | None = None

    @classmethod
    def for_app(
        cls,
        app: App,
        registry: Registry,
        background: Background = "threads",
        poll: bool = False,
        jobs: JobQueue | None = None,
    ) -> WorkflowEngine:
        """`background="jobs"` (see `background_for`) makes the job queue when none is given."""
        if background == "jobs" and jobs is None:
            from weaver.engine.jobs import JobQueue

            jobs = JobQueue(app.settings.db_url)
        return cls(
            registry,
            db=app.db,
            vault=app.vault,
            settings=app.settings,
            bus=app.bus,
            background=background,
            poll=poll,
            jobs=jobs,
        )

    # -- health (what the MCP server's `health_check` asks) -----------------------------------

    @property
    def running(self) -> bool:
        return self._started and not self._stopping.is_set()

    @property
    def plugin_errors(self) -> list[str]:
        return [str(error) for error in self.registry.errors]

    @property
    def faults(self) -> list[str]:
        """What is wrong now, for `health_check` (empty when nothing)."""
        with self._lock:
            waiting = len(self._unrecorded)
        if not waiting:
            return []
        return [f"{waiting} run end(s) not recorded yet, retrying: {self._end_error}"]

    @property
    def degraded(self) -> bool:
        return bool(self.registry.errors) or not self.running

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, subscribe: bool = True) -> None:
        """Recover interrupted runs, prune history, listen to vault events, start the workers."""
        if self.jobs is None:
            self.recover_interrupted()
        else:  # the job system notices dead workers; its tables must exist before deferring
            from weaver.engine.jobs import ensure_job_schema

            ensure_job_schema(self.settings.db_url)
        try:
            self.prune()
        except SQLAlchemyError as exc:  # housekeeping: the poll loop prunes again within the hour
            self._log.warning("pruning history at start failed", error=str(exc).partition("\n")[0])
        self._consuming = subscribe
        if subscribe and self.bus is not None:
            self._unsubscribe = self.bus.subscribe(self._on_events)
        if self.background == "threads":
            self._pool = ThreadPoolExecutor(
                max_workers=self.settings.workflow_workers, thread_name_prefix="weaver-engine"
            )
        if self._poll and self.background in ("threads", "jobs"):
            self._poller = threading.Thread(
                target=self._poll_loop, name="weaver-engine-poll", daemon=True
            )
            self._poller.start()
        self._started = True
        if subscribe:  # changes applied while no engine ran (`weaver index`, a crash)
            self._consume_safely()
        # Info for a long-lived host; a CLI command's engine need not announce itself.
        announce = self._log.debug if self.background == "queue" else self._log.info
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
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
        with self._lock:
            for cancelled in self._active.values():
                cancelled.set()
        if self._poller is not None:
            self._poller.join()
        if self._pool is not None:
            # Runs notice `_stopping` within runner.STOP_CHECK_SECONDS and record themselves.
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self.jobs is not None:
            self.jobs.close()
        (self._log.debug if self.background == "queue" else self._log.info)(
            "workflow engine stopped"
        )

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
        queued = self._enqueue(workflow, ManualTrigger(via), data)
        if on_queued is not None:
            on_queued(queued.id)
        if not async_ and self.jobs is not None:
            return TriggerWorkflowData.finished(self._wait_for_workers(queued.id, workflow))
        if not async_:
            if on_progress is None:
                return TriggerWorkflowData.finished(self._run_to_end(queued))
            self._progress_listeners[queued.id] = on_progress
            try:
                return TriggerWorkflowData.finished(self._run_to_end(queued))
            finally:
                self._progress_listeners.pop(queued.id, None)
        self._submit(queued.id)
        message = {"queue": QUEUED_MESSAGE, "jobs": JOB_QUEUED_MESSAGE}.get(
            self.background, STARTED_MESSAGE
        )
        return TriggerWorkflowData.started(self._record(queued.id), message)

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
        errors = [PluginErrorInfo.of(error) for error in self.registry.errors]
        return ListWorkflowsData(workflows=infos, count=len(infos), errors=errors)

    def get_status(self, execution_id: str) -> WorkflowStatusData:
        return WorkflowStatusData.of(self._record(execution_id))

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
        record = self._record(execution_id)
        return self.trigger(record.workflow_id, record.input, async_=True, via=via)

    def cancel(self, execution_id: str) -> WorkflowStatusData:
        """Cancel a pending run, or one running in this process (its workflow sees
        `ctx.cancelled`; its writes are refused from then on; it ends `cancelled`).

        Raises `NotCancellableError` for a run that has ended or that another process runs."""
        record = self._record(execution_id)
        if record.status == PENDING:
            with self.db.begin() as conn:
                cancelled = executions.finish(
                    conn,
                    execution_id,
                    status=executions.CANCELLED,
                    now=_now_ms(),
                    message=CANCELLED_MESSAGE,
                    from_status=(PENDING,),
                )
            if cancelled:
                return self.get_status(execution_id)
            record = self._record(execution_id)  # claimed meanwhile: cancel it running
        event = self._registered(record) if record.status == executions.RUNNING else None
        if event is not None:
            with self._lock:
                self._cancel_requested.add(execution_id)
                event.set()
        if event is None or record.status != executions.RUNNING:
            raise NotCancellableError(_not_cancellable(record, self.process))
        self._wait_until_done(execution_id)
        return self.get_status(execution_id)

    def _registered(self, record: ExecutionRecord) -> threading.Event | None:
        """The cancel switch of a run this process runs. A run claimed here a moment ago is
        `running` in the cache before its thread has registered it: that moment is waited
        out, so that a cancel right after a trigger is not refused as another process's."""
        deadline = time.monotonic() + REGISTER_WAIT_SECONDS
        while True:
            with self._lock:
                event = self._active.get(record.id)
            if event is not None or record.process != self.process:
                return event
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)

    def _wait_for_workers(self, execution_id: str, workflow: Workflow) -> ExecutionRecord:
        """A sync run on PostgreSQL: wait on the row while the workers run it, for as long as
        its workflow's limits allow and a little more; then answer with the row as it is,
        saying it goes on."""
        started = time.monotonic()
        deadline = started + sync_wait_seconds(workflow)
        looked_for_workers = False
        try:
            while True:
                record = self._record(execution_id)
                if record.done:
                    return record
                if not looked_for_workers and time.monotonic() - started >= NO_WORKER_GRACE_S:
                    looked_for_workers = True
                    if record.status == PENDING and not self._workers_alive():
                        note = (
                            "queued, but no `weaver worker` is running for this database: the "
                            "run starts when one does; follow it with "
                            f"get_workflow_status({execution_id!r})"
                        )
                        return replace(record, message=note)
                if time.monotonic() >= deadline:
                    waited = sync_wait_seconds(workflow)
                    note = (
                        f"no worker finished it within {waited:g}s; it is still {record.status}:"
                        f" follow it with get_workflow_status({execution_id!r})"
                    )
                    return replace(record, message=note)
                with self._changed:
                    self._changed.wait(SYNC_POLL_SECONDS)
        except BaseException:  # Ctrl-C in `weaver trigger`: nobody waits for it any more
            self._cancel_pending(execution_id)
            raise

    def _workers_alive(self) -> bool:
        with self.db.connect() as conn:
            return executions.live_job_workers(conn, self.settings.worker_stalled_s) > 0

    def _wait_until_done(self, execution_id: str, seconds: float = 5.0) -> None:
        deadline = time.monotonic() + seconds
        with self._changed:
            while execution_id in self._active and time.monotonic() < deadline:
                self._changed.wait(SYNC_POLL_SECONDS)

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
            queued = self._queue_events(conn, events)
        for execution_id in queued:
            self._submit(execution_id)
        return queued

    def consume_feed(self) -> list[str]:
        """Queue the runs for every event of the change feed after this engine's cursor.

        The runs are queued and the cursor moved in one transaction, so an event starts its
        workflows exactly once whichever process (and however many) consume, across crashes.
        Returns the ids of the executions queued."""
        queued: list[str] = []
        while not self._stopping.is_set():
            with self._feed_lock:
                taken = self._take_feed_batch()
            if taken is None:
                break
            queued += taken
            for execution_id in taken:
                self._submit(execution_id)
        return queued

    def _take_feed_batch(self) -> list[str] | None:
        """One batch of the feed, queued; None when there is nothing after the cursor (or
        another process moved the cursor first: it queued those runs)."""
        try:
            return self._queue_feed_batch()
        except _CursorMovedError:
            return None

    def _queue_feed_batch(self) -> list[str] | None:
        with self.db.begin() as conn:
            position = feed.get_cursor(conn, FEED_CONSUMER)
            entries = feed.read_after(conn, position or 0, FEED_BATCH)
            if not entries:
                return None
            oldest = entries[0].id
            if position is not None and oldest > position + 1 and oldest == feed.oldest_id(conn):
                self._log.warning("change feed pruned past this cursor", cursor=position)
            queued = self._queue_events(conn, [entry.event for entry in entries])
            if not feed.advance_cursor(conn, FEED_CONSUMER, position, entries[-1].id):
                raise _CursorMovedError  # rolls back the runs queued here
        return queued

    def _consume_safely(self) -> None:
        try:
            self.consume_feed()
        except SQLAlchemyError as exc:  # busy or failing cache: the poll loop tries again
            self._log.warning("reading the change feed failed", error=str(exc).partition("\n")[0])

    def _queue_events(self, conn: Connection, events: Sequence[VaultEvent]) -> list[str]:
        """In the caller's transaction: one pending execution per matching workflow.

        Events for notes whose current content the engine wrote itself are left out, so a
        workflow writing into a folder it watches does not start itself again.
        """
        matching = [
            (workflow, [event for event in events if workflow.matches(event)])
            for workflow in self.registry
            if workflow.enabled and workflow.on_file
        ]
        matching = [(workflow, found) for workflow, found in matching if found]
        if not matching:
            return []
        own = self._own_changes(conn, events)
        queued = []
        for workflow, found in matching:
            theirs = tuple(event for event in found if event.path not in own)
            if theirs:
                trigger = FileTrigger(theirs)
                queued.append(self._enqueue(workflow, trigger, _defaults(workflow), conn).id)
            else:
                self._log.debug("own vault writes ignored", workflow_id=workflow.id)
        return queued

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
        queued = self._enqueue(workflow, ScheduleTrigger(scheduled_time), _defaults(workflow))
        self._submit(queued.id)
        return queued.id

    def run_pending(self) -> int:
        """Take up pending rows of enabled workflows, oldest first (those queued by other
        processes included); returns how many were handed to the workers."""
        if self.jobs is not None:
            return 0  # the job system hands them out
        enabled = [workflow.id for workflow in self.registry if workflow.enabled]
        if not enabled:
            return 0
        with self.db.connect() as conn:
            pending = executions.list_pending(conn, enabled)
        for execution_id, _workflow_id in pending:
            self._submit(execution_id)
        return len(pending)

    # -- maintenance ---------------------------------------------------------------------------

    def recover_interrupted(self) -> list[str]:
        """Queue again the running rows whose process is gone (it crashed, was killed): each
        runs at its next attempt, now that an engine starts. Returns their ids."""
        with self.db.begin() as conn:
            gone = [
                (execution_id, label)
                for execution_id, label, started in executions.list_running(conn)
                if execution_id not in self._active and is_gone(label, started)
            ]
            for execution_id, label in gone:
                record = executions.get_execution(conn, execution_id)
                if record is not None:
                    reason = f"interrupted: the process running it ({label}) stopped"
                    self._requeue(conn, record, reason)
        if gone:
            self._log.warning("interrupted executions queued again", count=len(gone))
        return [execution_id for execution_id, _ in gone]

    def record_interrupted(self) -> int:
        """Queue again every run this process has under way: for a process about to end
        without waiting for them (`host.signals`). Returns how many."""
        reason = f"interrupted: the process running it ({self.process}) stopped"
        with self.db.begin() as conn:
            mine = [i for i, label, _ in executions.list_running(conn) if label == self.process]
            records = [executions.get_execution(conn, i) for i in mine]
            done = sum(
                self._requeue(conn, record, reason) is not None
                for record in records
                if record is not None
            )
        self._log.warning("runs recorded as interrupted", count=done)
        return done

    def _requeue(self, conn: Connection, record: ExecutionRecord, reason: str) -> str | None:
        """In the caller's transaction: `requeue_interrupted` under this workflow's limit; on
        the job system, with a job to run it unless one will still run (`has_live_job`: the
        interrupted run's own job, handed back or retried). Returns the status written."""
        workflow = self.registry.get(record.workflow_id)
        limit = RESUME_LIMIT + (workflow.policy.retries if workflow is not None else 0)
        status = executions.requeue_interrupted(
            conn, record, now=_now_ms(), reason=reason, limit=limit
        )
        if status == PENDING and self.jobs is not None and workflow is not None:
            from weaver.engine.jobs import RUN_TASK

            if not executions.has_live_job(conn, RUN_TASK, record.id):
                self._defer(conn, record.id, workflow)
        if status == FAILED:
            self._log.error("interrupted execution given up", execution_id=record.id)
        return status

    def prune(self, now: int | None = None) -> int:
        """Apply the retention settings (0 means no limit): ended executions by the history
        settings, superseded workflow records by each workflow's `records_retention_days`.
        Returns how many rows went, of both."""
        now = _now_ms() if now is None else now
        days = self.settings.history_retention_days
        keep = self.settings.history_retention_count
        with self.db.begin() as conn:
            removed = executions.prune(
                conn,
                older_than=now - days * DAY_MS if days > 0 else None,
                keep=keep if keep > 0 else None,
            )
            executions.prune_writes(conn, now - WRITE_MEMORY_MS)
            feed.prune(conn, now)
        if removed:
            self._log.info("execution history pruned", removed=removed)
        for workflow in self.registry:
            if workflow.records_retention_days > 0:
                cutoff = now - workflow.records_retention_days * DAY_MS
                removed += self._prune_records(workflow.id, cutoff)
        return removed

    def _prune_records(self, workflow_id: str, older_than: int) -> int:
        """Superseded records of one workflow, in batches: the first prune after an upgrade may
        meet months of history, and one long transaction would hold up the indexer's writes."""
        removed = 0
        while True:
            with self.db.begin() as conn:
                batch = prune_superseded(conn, workflow_id, older_than, PRUNE_BATCH)
            removed += batch
            if batch < PRUNE_BATCH:
                break
        if removed:
            self._log.info("superseded records pruned", workflow=workflow_id, removed=removed)
        return removed

    # -- queueing and running ------------------------------------------------------------------

    def _enqueue(
        self,
        workflow: Workflow,
        trigger: Trigger,
        data: dict[str, Any],
        conn: Connection | None = None,
    ) -> ExecutionRecord:
        """Insert a pending row; returns it as inserted (so a sync run need not read it back)."""
        record = ExecutionRecord(
            id=new_execution_id(),
            workflow_id=workflow.id,
            workflow_name=workflow.name,
            trigger_kind=trigger_kind(trigger),
            trigger_detail=trigger_detail(trigger),
            input=data,
            status=PENDING,
            progress=0,
            message=None,
            attempt=0,
            started=None,
            finished=None,
            duration=None,
            result=None,
            error=None,
            traceback=None,
            process=None,
            created=_now_ms(),
        )
        with nullcontext(conn) if conn is not None else self.db.begin() as conn:
            executions.insert_execution(
                conn,
                execution_id=record.id,
                workflow_id=record.workflow_id,
                workflow_name=record.workflow_name,
                trigger_kind=record.trigger_kind,
                trigger_detail=record.trigger_detail,
                input=record.input,
                created=record.created,
            )
            self._defer(conn, record.id, workflow)
        return record

    def _defer(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        if self.jobs is not None:
            from weaver.engine.jobs import DeferredRun

            exclusive = workflow.policy.max_concurrent == 1
            self.jobs.defer(conn, [DeferredRun(execution_id, workflow.id, exclusive)])

    def _submit(self, execution_id: str) -> None:
        if self.background == "jobs":
            return  # deferred as a job with its row (`_defer`): a worker runs it
        if self.background == "inline":
            self._drive(execution_id)
            return
        if self.background == "queue" or self._pool is None or self._stopping.is_set():
            return  # stays pending: a worker process (or this one, once started) takes it
        with self._lock:
            if execution_id in self._submitted:
                return
            self._submitted.add(execution_id)
        self._pool.submit(self._drive, execution_id)

    def _drive(self, execution_id: str) -> None:
        """Run this row if a slot is free, then the workflow's next pending rows while any."""
        try:
            current: str | None = execution_id
            while current is not None and not self._stopping.is_set():
                ran = self._claim_and_run(current)
                current = self._next_pending(ran) if ran else None
        except Exception:
            self._log.exception("workflow dispatch failed", execution_id=execution_id)
        finally:
            with self._lock:
                self._submitted.discard(execution_id)

    def _next_pending(self, workflow_id: str) -> str | None:
        if self.background == "queue":
            return None
        with self.db.connect() as conn:
            pending = executions.list_pending(conn, [workflow_id], limit=1)
        return pending[0][0] if pending else None

    def _run_to_end(self, queued: ExecutionRecord) -> ExecutionRecord:
        """Run the row here when a slot is free, else wait for whoever runs it."""
        execution_id = queued.id
        known: ExecutionRecord | None = queued
        try:
            while True:
                self._claim_and_run(execution_id, known)
                known = None
                record = self._record(execution_id)
                if record.done:
                    return record
                with self._changed:
                    self._changed.wait(SYNC_POLL_SECONDS)
        except BaseException:  # Ctrl-C in `weaver trigger`: nobody waits for it any more
            self._cancel_pending(execution_id)
            raise

    def _cancel_pending(self, execution_id: str) -> None:
        with self.db.begin() as conn:
            executions.finish(
                conn,
                execution_id,
                status=executions.CANCELLED,
                now=_now_ms(),
                message="cancelled: the caller stopped waiting",
                from_status=(PENDING,),
            )

    def _claim_and_run(self, execution_id: str, known: ExecutionRecord | None = None) -> str | None:
        """Claim the row and run it here; the workflow id if it ran, None if not claimable.

        `known` is the row as this process just inserted it (the claim still checks that it
        is pending), saving a read on the way of a sync trigger."""
        record = known
        if record is None:
            with self.db.connect() as conn:
                record = executions.get_execution(conn, execution_id)
        if record is None or record.status != PENDING or self._stopping.is_set():
            return None
        workflow = self.registry.get(record.workflow_id)
        if workflow is None or not workflow.enabled:
            return None  # not ours to run: another process may know it
        claimed_at = _now_ms()
        with self.db.begin() as conn:
            if not executions.claim(
                conn, execution_id, workflow.policy.max_concurrent, self.process, claimed_at
            ):
                return None
        # A pending row's attempt is its interrupted attempts' count: the claim counts on.
        self._execute(workflow, record, claimed_at, record.attempt + 1)
        return workflow.id

    def run_job(self, execution_id: str) -> str:
        """Run an execution handed to this worker by the job system; says what happened.

        Pending: claimed and run (`SlotBusyError` when the workflow has no free slot: the job
        system tries again shortly). Running: the job came back because the worker running it
        stopped sending heartbeats: its attempt is recorded interrupted and the run claimed
        here as the next one. Ended (cancelled while queued, say): nothing to do. A run this
        worker's stop interrupts is queued again and `RunInterruptedError` raised, so that
        the job system runs its job again."""
        from weaver.engine.jobs import RunInterruptedError, SlotBusyError

        if self._stopping.is_set():  # its run would be interrupted at once: left to the next
            raise RunInterruptedError(f"{execution_id}: worker {self.process} is stopping")
        record = self._record(execution_id)
        workflow = self.registry.get(record.workflow_id)
        if record.done:
            return f"already {record.status}"
        if workflow is None or not workflow.enabled:
            self._refuse_job(record)
            return "refused"
        now = _now_ms()
        with self.db.begin() as conn:
            if record.status == RUNNING:
                reason = f"interrupted: its worker {record.process} stopped"
                taken = self._requeue(conn, record, reason)
                if taken != PENDING:
                    return "given up" if taken == FAILED else "taken by another worker"
                self._log.warning(
                    "execution taken over from a stopped worker",
                    execution_id=execution_id,
                    previous=record.process,
                    attempt=record.attempt + 1,
                )
            limit = workflow.policy.max_concurrent
            if not executions.claim(conn, execution_id, limit, self.process, now):
                if self._record(execution_id).status == PENDING:
                    raise SlotBusyError(f"{workflow.id}: all {limit} slot(s) busy")
                return "taken by another worker"
        self._execute(workflow, record, now, record.attempt + 1)
        if self._record(execution_id).status == PENDING:
            raise RunInterruptedError(f"{execution_id}: interrupted; queued again")
        return "ran"

    def _refuse_job(self, record: ExecutionRecord) -> None:
        """A worker without the workflow (its config disabled it since the job was queued):
        recorded as failed, saying where and why, rather than left pending for nobody."""
        error = (
            f"worker {self.process} has no enabled workflow {record.workflow_id!r}: its "
            "plugins or config differ from the process that queued the run"
        )
        with self.db.begin() as conn:
            executions.finish(
                conn,
                record.id,
                status=FAILED,
                now=_now_ms(),
                message=error,
                error=error,
                from_status=(PENDING,),
            )
        self._log.error("execution refused", execution_id=record.id, error=error)

    def _execute(
        self, workflow: Workflow, record: ExecutionRecord, claimed_at: int, first_attempt: int = 1
    ) -> None:
        log = self._log.bind(execution_id=record.id, workflow_id=workflow.id)
        outcome: Outcome = interrupted()
        attempts = 0
        try:
            outcome, attempts = self._attempts(workflow, record, log, first_attempt)
        except Exception as exc:
            log.exception("execution failed inside the engine")
            outcome = Failed(f"engine error: {type(exc).__name__}: {exc}")
        finally:
            self._finish(record.id, outcome, log, attempts, claimed_at)
            with self._lock:
                self._active.pop(record.id, None)
            with self._changed:
                self._changed.notify_all()

    def _attempts(
        self,
        workflow: Workflow,
        record: ExecutionRecord,
        log: FilteringBoundLogger,
        first_attempt: int = 1,
    ) -> tuple[Outcome, int]:
        """Run attempts until one completes or the policy's retries are spent. A run resumed
        after an interruption (or taken over from a stopped worker) starts at the interrupted
        attempt + 1 (`first_attempt`) and still has all its retries: the engine's stop was not
        the workflow's failure. A stop between attempts interrupts the run: its retry is
        still owed."""
        try:
            model = workflow.input_model.model_validate(record.input)
            trigger = trigger_from_row(record.trigger_kind, record.trigger_detail)
        except Exception as exc:
            return Failed(f"cannot start: {type(exc).__name__}: {exc}"), 0
        attempt = first_attempt
        while True:
            cancelled = threading.Event()
            with self._lock:
                self._active[record.id] = cancelled
            if self._stopping.is_set():
                return interrupted(), attempt - 1
            ctx = self._context(workflow, record.id, attempt, model, trigger, cancelled, log)
            outcome = run_attempt(workflow, ctx, self._stopping)
            if isinstance(outcome, Completed) or attempt - first_attempt >= workflow.policy.retries:
                return outcome, attempt
            with self._lock:
                if record.id in self._cancel_requested:
                    return outcome, attempt
            if self._stopping.is_set():
                return interrupted(), attempt
            attempt += 1
            delay = workflow.policy.delay_before(attempt)
            log.warning("workflow attempt failed; retrying", error=outcome.error, delay=delay)
            with self.db.begin() as conn:
                note = f"attempt {attempt} in {delay:g}s after: {outcome.error}"
                executions.start_attempt(conn, record.id, attempt, note)
            if self._stopping.wait(delay):
                return interrupted(), attempt - 1

    def _context(
        self,
        workflow: Workflow,
        execution_id: str,
        attempt: int,
        model: BaseModel,
        trigger: Trigger,
        cancelled: threading.Event,
        log: FilteringBoundLogger,
    ) -> WorkflowContext[Any]:
        def progress(percent: int, message: str | None) -> None:
            if cancelled.is_set():
                return
            with self.db.begin() as conn:
                executions.set_progress(conn, execution_id, percent, message)
            listener = self._progress_listeners.get(execution_id)
            if listener is not None:
                try:
                    listener(percent, message)
                except Exception:  # the listener's failure is no failure of the workflow
                    log.exception("progress listener failed")

        def refuse_if_cancelled() -> None:
            # A timed-out attempt's thread cannot be stopped, but it can be kept from writing.
            if cancelled.is_set():
                raise WorkflowError(f"execution {execution_id} was cancelled; write refused")

        def record_write(path: str, content_hash: str) -> None:
            refuse_if_cancelled()
            with self.db.begin() as conn:
                executions.record_write(conn, path, content_hash, execution_id, _now_ms())

        return WorkflowContext(
            execution_id=execution_id,
            workflow_id=workflow.id,
            attempt=attempt,
            input=model,
            trigger=trigger,
            settings=workflow.settings,
            weaver_settings=self.settings,
            cache=CacheReader(self.db),
            vault=JournalledWriter(
                VaultAndCache(self.db, self.vault),
                f"workflow {workflow.id}",
                {"execution": execution_id},
                on_write=record_write,
            ),
            records=WorkflowRecords(
                self.db, workflow.id, execution_id=execution_id, before_write=refuse_if_cancelled
            ),
            log=log.bind(attempt=attempt),
            cancelled=cancelled,
            progress_sink=progress,
        )

    def _finish(
        self,
        execution_id: str,
        outcome: Outcome,
        log: FilteringBoundLogger,
        attempts: int,
        claimed_at: int,
    ) -> None:
        with self._lock:
            cancelled = execution_id in self._cancel_requested
            self._cancel_requested.discard(execution_id)
        if isinstance(outcome, Failed) and outcome.interrupted and not cancelled:
            self._end_interrupted(execution_id, outcome.error, log, attempts, claimed_at)
            return
        match outcome:
            case _ if cancelled:
                fields: dict[str, Any] = {
                    "status": executions.CANCELLED,
                    "message": CANCELLED_MESSAGE,
                }
            case Completed(result=result):
                fields = {"status": COMPLETED, "message": COMPLETED_MESSAGE, "result": result}
            case Failed(error=error, traceback=trace):
                fields = {"status": FAILED, "message": error, "error": error, "traceback": trace}
        now = _now_ms()
        if not self._record_end(execution_id, fields, now):
            log.error("cannot record the end of an execution; retrying", error=self._end_error)
            with self._lock:
                self._unrecorded[execution_id] = _UnrecordedEnd(
                    fields, now, time.monotonic() + END_RETRY_SECONDS, END_RETRY_SECONDS
                )
            self._start_end_retries()
        # The one canonical log event per execution; a failure at error level, so that a log
        # filtered to errors shows every run that did not do its work.
        finished = log.error if fields["status"] == FAILED else log.info
        finished(
            "workflow finished",
            status=fields["status"],
            attempts=attempts,
            duration_ms=now - claimed_at,
            error=fields.get("error"),
        )

    def _end_interrupted(
        self,
        execution_id: str,
        reason: str,
        log: FilteringBoundLogger,
        attempts: int,
        claimed_at: int,
    ) -> None:
        """Queue again a run this engine's stop interrupted. Not recorded (the cache is gone
        first), it stays `running` under this process, which the next start recovers alike."""
        try:
            with self.db.begin() as conn:
                record = executions.get_execution(conn, execution_id)
                status = None
                if record is not None and (record.status, record.process) == (
                    RUNNING,
                    self.process,
                ):
                    status = self._requeue(conn, record, reason)
        except Exception as exc:
            error = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
            log.error("cannot queue an interrupted run again; the next start will", error=error)
            return
        log.warning(
            "workflow interrupted",
            status=status,
            attempts=attempts,
            duration_ms=_now_ms() - claimed_at,
            error=reason,
        )

    def _record_end(self, execution_id: str, fields: dict[str, Any], now: int) -> bool:
        try:
            # With jobs, a run taken over elsewhere (this worker's heartbeat was late) is the
            # other worker's to end.
            owner = self.process if self.jobs is not None else None
            with self.db.begin() as conn:
                executions.finish(conn, execution_id, now=now, process=owner, **fields)
        except Exception as exc:
            self._end_error = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
            return False
        return True

    def retry_unrecorded_ends(self, force: bool = False) -> int:
        """Try again to record the ends whose time has come (all with `force`); returns how
        many are still unrecorded."""
        with self._lock:
            due = [
                (execution_id, end)
                for execution_id, end in self._unrecorded.items()
                if force or end.next_try <= time.monotonic()
            ]
        for execution_id, end in due:
            if self._record_end(execution_id, end.fields, end.finished):
                self._log.info("end of an execution recorded late", execution_id=execution_id)
                with self._lock:
                    self._unrecorded.pop(execution_id, None)
                with self._changed:
                    self._changed.notify_all()
            else:
                delay = min(end.delay * 2, END_RETRY_MAX_SECONDS)
                with self._lock:
                    self._unrecorded[execution_id] = _UnrecordedEnd(
                        end.fields, end.finished, time.monotonic() + delay, delay
                    )
        with self._lock:
            return len(self._unrecorded)

    def _start_end_retries(self) -> None:
        """A thread retrying unrecorded ends until none is left (or the engine stops): a run
        whose end is not recorded counts against `max_concurrent`, holding up the next."""
        with self._lock:
            if self._end_retrier is not None and self._end_retrier.is_alive():
                return
            self._end_retrier = threading.Thread(
                target=self._retry_ends_loop, name="weaver-engine-ends", daemon=True
            )
            self._end_retrier.start()

    def _retry_ends_loop(self) -> None:
        while self.retry_unrecorded_ends():
            if self._stopping.wait(END_RETRY_SECONDS):
                self.retry_unrecorded_ends(force=True)  # a last try on the way out
                return

    def _record(self, execution_id: str) -> ExecutionRecord:
        with self.db.connect() as conn:
            record = executions.get_execution(conn, execution_id)
        if record is None:
            raise ExecutionNotFoundError(execution_id)
        return record

    def _own_changes(self, conn: Connection, events: Sequence[VaultEvent]) -> set[str]:
        present = {event.path for event in events if event.kind != "delete"}
        deleted = {event.path for event in events if event.kind == "delete"}
        own = executions.self_written(conn, present, deleted)
        executions.forget_deletions(conn, present - own)
        return own

    def _poll_loop(self) -> None:
        last_prune = time.monotonic()
        interval = self.settings.workflow_poll_ms / 1000
        while True:
            try:
                if self._consuming:
                    self.consume_feed()
                self.run_pending()
                if time.monotonic() - last_prune > PRUNE_EVERY_SECONDS:
                    last_prune = time.monotonic()
                    self.prune()
            except Exception:
                self._log.exception("polling for queued executions failed")
            if self._stopping.wait(interval):
                return


def _not_cancellable(record: ExecutionRecord, process: str) -> str:
    if record.done:
        return f"Execution {record.id!r} has already ended ({record.status})"
    return (
        f"Execution {record.id!r} runs in process {record.process or 'unknown'}, not in this "
        f"one ({process}): only that process can cancel it"
    )


@dataclass(frozen=True, slots=True)
class _UnrecordedEnd:
    fields: dict[str, Any]
    finished: int
    next_try: float
    delay: float


class _CursorMovedError(Exception):
    """Another process consumed this batch of the feed first."""


def new_execution_id() -> str:
    """`wf_exec_20251024_123456_1a2b3c4d`: sortable by time at a glance, unique by its tail."""
    return f"wf_exec_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(4)}"


def sync_wait_seconds(workflow: Workflow) -> float:
    """How long a sync trigger on PostgreSQL waits for the workers: every attempt to its
    timeout, every retry delay, and the time to be picked up."""
    policy = workflow.policy
    per_attempt = policy.timeout if policy.timeout is not None else SYNC_JOB_NO_TIMEOUT_SECONDS
    delays = sum(policy.delay_before(attempt) for attempt in range(2, policy.retries + 2))
    return per_attempt * (policy.retries + 1) + delays + SYNC_JOB_SLACK_SECONDS


def background_for(settings: Settings, local: Background) -> Background:
    """How a host's engine runs work: on PostgreSQL through the job system (`jobs`: `weaver
    worker` processes run everything, so that runs, schedules and retries hold across the
    cluster), else `local`. Hosts (daemon, server, CLI) ask this; an engine built directly,
    as the tests build them, runs as it is told on either backend."""
    return "jobs" if settings.db_url.startswith("postgresql") else local


def _defaults(workflow: Workflow) -> dict[str, Any]:
    """The input of a run started by a file event or a schedule: the model's defaults."""
    return workflow.input_model.model_validate({}).model_dump(mode="json")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def reading_engine(app: App, registry: Registry | None = None) -> WorkflowEngine:
    """The engine as a reader hosts it: the registry loaded, nothing run here.

    Nothing written either, unless the reader has a queue (`App.queue_db`, PostgreSQL): then
    `trigger` records the pending row and defers its job in one transaction through that
    engine, exactly as the writer does, and a sync trigger waits on the row for a worker. It
    neither follows the change feed nor prunes: those are the writer's and the workers'."""
    from weaver.engine.loader import load_registry

    loaded = registry or load_registry(app.settings)
    if app.queue_db is None:
        engine = WorkflowEngine.for_app(app, loaded, "queue")
    else:
        from weaver.engine.jobs import JobQueue

        engine = WorkflowEngine(
            loaded,
            db=app.queue_db,
            vault=app.vault,
            settings=app.settings,
            background="jobs",
            jobs=JobQueue(app.settings.db_url),
        )
    engine.start_reading()
    return engine


@contextmanager
def queueing_engine(app: App, registry: Registry | None = None) -> Iterator[WorkflowEngine]:
    """The engine of a reader process beside the writer (`host.processes`): a sync trigger
    runs in the caller's thread, everything else is left queued for the writer's engine,
    which alone follows the change feed. Reader processes are there to answer reads: the
    workflows' work stays in the writer's process rather than taking the readers' core.
    On PostgreSQL, as every host there, it defers each run as a job for the workers (a row
    left pending would wait for nobody: the writer's engine runs nothing there)."""
    from weaver.engine.loader import load_registry

    background = background_for(app.settings, "queue")
    engine = WorkflowEngine.for_app(app, registry or load_registry(app.settings), background)
    engine.start(subscribe=False)
    try:
        yield engine
    finally:
        engine.stop()


@contextmanager
def hosted_engine(
    app: App, registry: Registry | None = None, *, schedules: bool = False
) -> Iterator[WorkflowEngine]:
    """The engine as the daemon (`schedules=True`) or the MCP server hosts it: plugins loaded,
    interrupted runs recovered, vault events followed, queued rows polled, schedules run."""
    from weaver.engine.loader import load_registry
    from weaver.engine.scheduler import WorkflowScheduler

    background = background_for(app.settings, "threads")
    engine = WorkflowEngine.for_app(
        app, registry or load_registry(app.settings), background=background, poll=True
    )
    engine.start()
    # On PostgreSQL the workers fire schedules (engine.worker_schedules, once per tick).
    scheduler = WorkflowScheduler(engine) if schedules and engine.jobs is None else None
    try:
        if scheduler is not None:
            scheduler.start()
            engine.scheduler = scheduler
        yield engine
    finally:
        if scheduler is not None:
            scheduler.stop()
        engine.stop()
