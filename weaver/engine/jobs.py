"""Workflow executions as jobs of Procrastinate, the PostgreSQL job system (`weaver worker`).

The `executions` table stays the record of every run and what every tool reads; Procrastinate
decides who runs it. Each execution is deferred as one job carrying its id, in the transaction
that inserts its row, so a crash cannot leave a pending row no job will ever run, nor a job for
a row that was rolled back.

- Each workflow has its own queue (`queue_of`): a worker claims only the runs of workflows it
  has loaded and enabled; a job that reaches one without its workflow fails loudly, its
  execution recorded failed.
- `max_concurrent` holds as on SQLite (one run at a time: a Procrastinate `lock`).
- A job held by a dead worker (no heartbeat for `worker_stalled_s`) goes back to the queue; its
  attempt is recorded interrupted and the next one runs. A worker stopping cleanly queues its
  runs again the same way.
- Each schedule tick is deferred once across all workers as a `SCHEDULE_TASK` job
  (`weaver.engine.worker_schedules`).

How: docs/architecture.md, "engine/jobs.py".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from sqlalchemy import Connection
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, OperationalError

from weaver.cache import job_tables
from weaver.engine.workflow_errors import JobTablesMissingError

if TYPE_CHECKING:
    import procrastinate

    from weaver.config import Settings
    from weaver.engine.registry import Registry

log = structlog.get_logger(__name__)

RUN_TASK = "weaver.run_execution"
SCHEDULE_TASK = "weaver.fire_schedule"
QUEUE_PREFIX = "weaver.workflow."
# A job that found no free slot of its workflow (max_concurrent > 1) is tried again after this.
SLOT_RETRY_SECONDS = 1
SLOT_RETRY_ATTEMPTS = 100_000


def queue_of(workflow_id: str) -> str:
    return QUEUE_PREFIX + workflow_id


def conninfo_of(url: str) -> str:
    """A libpq URI from the cache's SQLAlchemy URL (`postgresql+psycopg://` -> `postgresql://`)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass(frozen=True, slots=True)
class DeferredRun:
    execution_id: str
    workflow_id: str
    exclusive: bool  # max_concurrent == 1: run under the workflow's Procrastinate lock


class SlotBusyError(Exception):
    """Every slot of the workflow is taken: the job system tries this job again shortly."""


class RunInterruptedError(Exception):
    """The worker stopped under the run, which is queued again: the job system runs this job
    again (on another worker, or this one's successor)."""


class JobRunner(Protocol):
    """What a worker's tasks need of the engine (the workflow engine is one)."""

    @property
    def registry(self) -> Registry: ...

    @property
    def settings(self) -> Settings: ...

    def run_job(self, execution_id: str) -> str: ...

    def enqueue_scheduled(self, workflow_id: str, scheduled_time: datetime) -> str | None: ...


class JobQueue:
    """The deferring side, in every process of a cluster that queues runs (writer, readers,
    the CLI, workers): no worker loop, a connection only when asked to defer outside a
    transaction of the cache."""

    def __init__(self, url: str) -> None:
        from procrastinate import App, SyncPsycopgConnector

        self.url = url
        self.app: procrastinate.App = App(
            connector=SyncPsycopgConnector(conninfo=conninfo_of(url), min_size=0, max_size=2)
        )

    def defer(self, conn: Connection, runs: Sequence[DeferredRun]) -> None:
        """Defer one job per run, in the transaction `conn` is in (rolled back with it)."""
        if not runs:
            return
        from procrastinate.exceptions import ConnectorException
        from psycopg.errors import UndefinedFunction, UndefinedObject, UndefinedTable

        # The psycopg connection under SQLAlchemy's: Procrastinate defers through it, so the
        # job rows commit (or not) with the executions' rows.
        raw: Any = conn.connection.driver_connection
        try:
            for run in runs:
                self.app.configure_task(
                    RUN_TASK,
                    queue=queue_of(run.workflow_id),
                    lock=run.workflow_id if run.exclusive else None,
                    connection=raw,
                ).defer(execution_id=run.execution_id)
        except ConnectorException as exc:
            if isinstance(exc.__cause__, UndefinedFunction | UndefinedObject | UndefinedTable):
                raise JobTablesMissingError() from exc
            raise

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.app.close()


def ensure_job_schema(url: str) -> bool:
    """Create Procrastinate's tables if this database has none yet; True if it did."""
    return job_tables.ensure_job_schema(conninfo_of(url))


def build_worker_app(engine: JobRunner) -> procrastinate.App:
    """The worker's Procrastinate app: the run task, and the task a schedule's tick defers
    (`worker_schedules.fire_schedules` defers them)."""
    from procrastinate import App, PsycopgConnector, RetryStrategy

    app = App(connector=PsycopgConnector(conninfo=conninfo_of(engine.settings.db_url)))
    # A job that failed on the database (a dropped connection, a server restarting) before its
    # run began would leave the execution pending for no job: it is tried again, as a busy slot,
    # and so is one whose run this worker's stop interrupted (queued again, `run_job`).
    retry = RetryStrategy(
        max_attempts=SLOT_RETRY_ATTEMPTS,
        wait=SLOT_RETRY_SECONDS,
        retry_exceptions={SlotBusyError, RunInterruptedError, OperationalError, InterfaceError},
    )

    @app.task(name=RUN_TASK, retry=retry)
    def run_execution(execution_id: str) -> str:
        return engine.run_job(execution_id)

    @app.task(name=SCHEDULE_TASK)
    def fire_schedule(timestamp: int, workflow_id: str) -> str | None:
        return engine.enqueue_scheduled(workflow_id, datetime.fromtimestamp(timestamp, UTC))

    return app


def worker_queues(engine: JobRunner) -> list[str]:
    return [queue_of(workflow.id) for workflow in engine.registry if workflow.enabled]


async def retry_stalled_jobs(app: procrastinate.App, stalled_seconds: float) -> int:
    """Hand back to the queue the jobs of workers whose heartbeat stopped. Several workers may
    do this at once: a job another one handed back first is skipped."""
    from procrastinate import exceptions

    stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_seconds)
    retried = 0
    for job in stalled:
        try:
            await app.job_manager.retry_job(job)
        except exceptions.ConnectorException:
            continue  # no longer "doing": another worker handed it back
        retried += 1
        log.warning("stalled job handed back", job_id=job.id, task=job.task_name)
    return retried


async def watch_stalled_jobs(app: procrastinate.App, stalled_seconds: float) -> None:
    """Every few seconds (a third of the stall time) until cancelled."""
    while True:
        try:
            await retry_stalled_jobs(app, stalled_seconds)
        except Exception:
            log.exception("looking for stalled jobs failed")
        await asyncio.sleep(max(stalled_seconds / 3, 0.2))
