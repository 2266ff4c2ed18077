"""The run mode on PostgreSQL: every run is a job of the job system (`engine.jobs`), deferred
with its row, and `weaver worker` processes on any host run it (`run_job`). Nothing runs in
the process that queued it; a sync trigger waits on the row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

import structlog
from sqlalchemy import Connection
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions
from weaver.cache.executions import FAILED, PENDING, RUNNING, ExecutionRecord
from weaver.engine.definition import Workflow
from weaver.engine.execution import now_ms
from weaver.engine.jobs import (
    RUN_TASK,
    DeferredRun,
    JobQueue,
    RunInterruptedError,
    SlotBusyError,
    ensure_job_schema,
)
from weaver.engine.runs import Runs

JOB_QUEUED_MESSAGE = "Workflow execution queued for the workers"
# A sync trigger on PostgreSQL waits for a worker this long beyond the workflow's own time
# limits (its attempts' timeouts and retry delays): the time to be picked up.
SYNC_JOB_SLACK_SECONDS = 60.0
# A sync run on PostgreSQL still pending this long with no live worker answers at once, saying
# so, rather than wait out its deadline for a worker nobody started.
NO_WORKER_GRACE_S = 1.0
# What a sync wait assumes of a workflow with no timeout, per attempt.
SYNC_JOB_NO_TIMEOUT_SECONDS = 3600.0


class JobDispatch:
    """Runs go to the workers through `queue`; this process only defers and waits."""

    name: Literal["jobs"] = "jobs"
    queued_message = JOB_QUEUED_MESSAGE
    polls = True  # the change feed and retention still need a reader here
    quiet = False
    burst_events: int | None = None  # the workers share a burst's runs out already
    consuming_apart = False

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue

    def defer(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        exclusive = workflow.policy.max_concurrent == 1
        self._queue.defer(conn, [DeferredRun(execution_id, workflow.id, exclusive)])

    def requeued(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """A job for the row, unless one will still run (`has_live_job`: the interrupted
        run's own job, handed back or retried)."""
        if not executions.has_live_job(conn, RUN_TASK, execution_id):
            self.defer(conn, execution_id, workflow)

    def start(self, runs: Runs) -> None:
        # The job system notices dead workers itself; its tables must exist before deferring.
        ensure_job_schema(self._queue.url)

    def stop(self) -> None:
        self._queue.close()

    def submit(self, runs: Runs, execution_id: str) -> None:
        """Nothing: deferred as a job with its row (`defer`), a worker runs it."""

    def consume_apart(self, runs: Runs, after: Callable[[bool], None]) -> bool:
        return False

    def submit_pending(self, runs: Runs) -> int:
        return 0  # the job system hands them out

    def run_sync(self, runs: Runs, queued: ExecutionRecord, workflow: Workflow) -> ExecutionRecord:
        """Wait on the row while the workers run it, for as long as its workflow's limits
        allow and a little more; then answer with the row as it is, saying it goes on."""
        started = time.monotonic()
        deadline = started + sync_wait_seconds(workflow)
        looked_for_workers = False
        while True:
            record = runs.get(queued.id)
            if record.done:
                return record
            if not looked_for_workers and time.monotonic() - started >= NO_WORKER_GRACE_S:
                looked_for_workers = True
                if record.status == PENDING and not _workers_alive(runs):
                    note = (
                        "queued, but no `weaver worker` is running for this database: the "
                        "run starts when one does; follow it with "
                        f"get_workflow_status({queued.id!r})"
                    )
                    return replace(record, message=note)
            if time.monotonic() >= deadline:
                note = (
                    f"no worker finished it within {sync_wait_seconds(workflow):g}s; it is "
                    f"still {record.status}: follow it with get_workflow_status({queued.id!r})"
                )
                return replace(record, message=note)
            runs.live.wait()


def run_job(runs: Runs, execution_id: str) -> str:
    """Run an execution handed to this worker by the job system; says what happened.

    Pending: claimed and run (`SlotBusyError` when the workflow has no free slot: the job
    system tries again shortly). Running: the job came back because the worker running it
    stopped sending heartbeats: its attempt is recorded interrupted and the run claimed
    here as the next one. Ended (cancelled while queued, say): nothing to do. A run this
    worker's stop interrupts is queued again and `RunInterruptedError` raised, so that
    the job system runs its job again."""
    if runs.live.stopping.is_set():  # its run would be interrupted at once: left to the next
        raise RunInterruptedError(f"{execution_id}: worker {runs.process} is stopping")
    record = runs.get(execution_id)
    workflow = runs.registry.get(record.workflow_id)
    if record.done:
        return f"already {record.status}"
    if workflow is None or not workflow.enabled:
        _refuse(runs, record)
        return "refused"
    now = now_ms()
    with runs.db.begin() as conn:
        if record.status == RUNNING:
            taken = _take_over(runs, conn, record)
            if taken != PENDING:
                return "given up" if taken == FAILED else "taken by another worker"
        limit = workflow.policy.max_concurrent
        if not executions.claim(conn, execution_id, limit, runs.process, now):
            if runs.get(execution_id).status == PENDING:
                raise SlotBusyError(f"{workflow.id}: all {limit} slot(s) busy")
            return "taken by another worker"
    runs.executor.execute(workflow, record, now, record.attempt + 1)
    if runs.get(execution_id).status == PENDING:
        raise RunInterruptedError(f"{execution_id}: interrupted; queued again")
    return "ran"


def sync_wait_seconds(workflow: Workflow) -> float:
    """How long a sync trigger on PostgreSQL waits for the workers: every attempt to its
    timeout, every retry delay, and the time to be picked up."""
    policy = workflow.policy
    per_attempt = policy.timeout if policy.timeout is not None else SYNC_JOB_NO_TIMEOUT_SECONDS
    delays = sum(policy.delay_before(attempt) for attempt in range(2, policy.retries + 2))
    return per_attempt * (policy.retries + 1) + delays + SYNC_JOB_SLACK_SECONDS


def _take_over(runs: Runs, conn: Connection, record: ExecutionRecord) -> str | None:
    """A run whose worker stopped: its attempt recorded interrupted, the row pending again."""
    taken = runs.requeue(conn, record, f"interrupted: its worker {record.process} stopped")
    if taken == PENDING:
        _log().warning(
            "execution taken over from a stopped worker",
            execution_id=record.id,
            previous=record.process,
            attempt=record.attempt + 1,
        )
    return taken


def _refuse(runs: Runs, record: ExecutionRecord) -> None:
    """A worker without the workflow (its config disabled it since the job was queued):
    recorded as failed, saying where and why, rather than left pending for nobody."""
    error = (
        f"worker {runs.process} has no enabled workflow {record.workflow_id!r}: its "
        "plugins or config differ from the process that queued the run"
    )
    with runs.db.begin() as conn:
        executions.finish(
            conn,
            record.id,
            status=FAILED,
            now=now_ms(),
            message=error,
            error=error,
            from_status=(PENDING,),
        )
    _log().error("execution refused", execution_id=record.id, error=error)


def _workers_alive(runs: Runs) -> bool:
    with runs.db.connect() as conn:
        return executions.live_job_workers(conn, runs.settings.worker_stalled_s) > 0


def _log() -> FilteringBoundLogger:
    logger: FilteringBoundLogger = structlog.get_logger("weaver.engine")
    return logger
