"""Cron schedules of workflows, run by APScheduler 3 inside the daemon only.

The scheduler only enqueues; the engine's workers execute. A stored job holds only a reference
to `weaver.engine.scheduler:dispatch` and the workflow id, never a plugin's callable, so it
survives plugins being renamed, removed or failing to import. `EnqueueExecutor` calls `dispatch`
with the engine it was built with and the time the run was planned for.

At start the registry is reconciled into the store (jobs added, rescheduled, removed or left as
they are), so a run that fell due while the daemon was down keeps its due time, and runs once on
wake if within `misfire_grace_time` (`coalesce=True`: several missed runs are one).

The job store is its own SQLite file, `<vault>/.weaver/scheduler.db`, not a table of the cache;
losing it only loses pending due times. Why: docs/architecture.md, "engine/scheduler.py".
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from traceback import format_exc
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from apscheduler.events import (  # type: ignore[import-untyped]
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.executors.base import BaseExecutor  # type: ignore[import-untyped]
from apscheduler.job import Job  # type: ignore[import-untyped]
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore  # type: ignore[import-untyped]
from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from weaver.cache.job_tables import rewrite_stored_jobs
from weaver.config import CACHE_DIR_NAME

if TYPE_CHECKING:
    from weaver.config import Settings
    from weaver.engine.registry import Registry

log = structlog.get_logger(__name__)

DISPATCH_REF = "weaver.engine.scheduler:dispatch"
# Where `dispatch` lived before the modules were grouped by layer (0.1): stores written then
# name it, and APScheduler drops a job whose function it cannot import, with a traceback.
FORMER_DISPATCH_REFS = ("weaver.scheduler:dispatch",)
STORE_ALIAS = "default"  # the one job store (and executor) of the scheduler
JOB_ID_SEPARATOR = "#"
# The scheduler thread sleeps until the next due time on a monotonic clock, which stands still
# while the machine is suspended: after a night asleep it would wake hours late. A nudge this
# often (seconds of awake time) makes it look at the wall clock again soon after a resume.
WAKEUP_EVERY_SECONDS = 30.0


class ScheduleTarget(Protocol):
    """What the scheduler needs of the engine (the workflow engine is one)."""

    @property
    def registry(self) -> Registry: ...

    @property
    def settings(self) -> Settings: ...

    def enqueue_scheduled(self, workflow_id: str, scheduled_time: datetime) -> str | None: ...


def dispatch(
    workflow_id: str,
    engine: ScheduleTarget | None = None,
    scheduled_time: datetime | None = None,
) -> None:
    """What every stored job runs: queue the workflow's scheduled execution.

    The job stores only `workflow_id`; `EnqueueExecutor` supplies the engine and the time the
    run was planned for (the defaults exist because APScheduler checks a job's arguments
    against this signature when the job is added).
    """
    if engine is None or scheduled_time is None:
        raise RuntimeError("dispatch is called by EnqueueExecutor, with an engine")
    engine.enqueue_scheduled(workflow_id, scheduled_time)


class EnqueueExecutor(BaseExecutor):  # type: ignore[misc]  # APScheduler 3 has no type hints
    """Calls a job's function in the scheduler's thread with the engine and the planned time.

    It implements only `_do_submit_job`, the hook APScheduler documents for executors (its own
    `DebugExecutor` runs jobs inline the same way), so the base class keeps counting instances
    and the scheduler still gets its executed / missed / error events. Enqueueing takes a
    moment, so no thread pool; a run missed by more than the job's `misfire_grace_time` is
    skipped, as APScheduler's own executors do.
    """

    def __init__(self, engine: ScheduleTarget) -> None:
        super().__init__()
        self._engine = engine

    def _do_submit_job(self, job: Job, run_times: Sequence[datetime]) -> None:
        events = [self._run(job, run_time) for run_time in run_times]
        self._run_job_success(job.id, events)

    def _run(self, job: Job, run_time: datetime) -> JobExecutionEvent:
        late = datetime.now(UTC) - run_time
        grace = job.misfire_grace_time
        if grace is not None and late > timedelta(seconds=grace):
            log.warning("scheduled run missed beyond grace", job=job.id, late=str(late))
            return JobExecutionEvent(EVENT_JOB_MISSED, job.id, STORE_ALIAS, run_time)
        try:
            result = job.func(*job.args, engine=self._engine, scheduled_time=run_time, **job.kwargs)
        except Exception as exc:
            log.exception("scheduled dispatch failed", job=job.id)
            return JobExecutionEvent(
                EVENT_JOB_ERROR,
                job.id,
                STORE_ALIAS,
                run_time,
                exception=exc,
                traceback=format_exc(),
            )
        return JobExecutionEvent(EVENT_JOB_EXECUTED, job.id, STORE_ALIAS, run_time, retval=result)


@dataclass
class ReconcileReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


class WorkflowScheduler:
    """APScheduler over one engine's registry, its jobs in a SQLite file of their own."""

    def __init__(self, engine: ScheduleTarget, store_path: Path | None = None) -> None:
        settings = engine.settings
        self.engine = engine
        self.store_path = store_path or settings.vault / CACHE_DIR_NAME / "scheduler.db"
        self.store_path.parent.mkdir(parents=True, exist_ok=True)
        self._store = SQLAlchemyJobStore(url=f"sqlite:///{self.store_path}")
        self._scheduler = BackgroundScheduler(
            jobstores={STORE_ALIAS: self._store},
            executors={STORE_ALIAS: EnqueueExecutor(engine)},
            job_defaults={
                "coalesce": True,
                "misfire_grace_time": settings.schedule_misfire_grace_s,
                "max_instances": 1,
            },
            timezone=UTC,
        )
        self._stop = threading.Event()
        self._nudger: threading.Thread | None = None

    def start(self) -> ReconcileReport:
        """Open the store, reconcile it with the registry, then let due jobs fire."""
        self._scheduler.start(paused=True)
        upgrade_stored_refs(self._store)
        report = self.reconcile()
        self._scheduler.resume()
        self._nudger = threading.Thread(
            target=self._nudge, name="weaver-scheduler-wakeup", daemon=True
        )
        self._nudger.start()
        log.info(
            "scheduler started",
            jobs=len(self.jobs()),
            **{k: len(v) for k, v in vars(report).items()},
        )
        return report

    def stop(self) -> None:
        self._stop.set()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        if self._nudger is not None:
            self._nudger.join()
        self._store.engine.dispose()

    def jobs(self) -> list[Job]:
        return list(self._scheduler.get_jobs())

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running) and not self._stop.is_set()

    def next_fire_times(self) -> dict[str, datetime]:
        """Per workflow id, the earliest next fire time of its schedules (paused ones left out)."""
        soonest: dict[str, datetime] = {}
        for job in self.jobs():
            when = job.next_run_time
            workflow_id = str(job.args[0])
            if when is not None and (workflow_id not in soonest or when < soonest[workflow_id]):
                soonest[workflow_id] = when
        return soonest

    def reconcile(self) -> ReconcileReport:
        """Make the stored jobs exactly the enabled workflows' schedules."""
        report = ReconcileReport()
        wanted = self._wanted()
        for job in self._scheduler.get_jobs():
            target = wanted.pop(job.id, None)
            if target is None:
                job.remove()
                report.removed.append(job.id)
            elif job.name != target["name"]:
                job.modify(name=target["name"])
                job.reschedule(trigger=target["trigger"])
                report.updated.append(job.id)
            else:
                report.kept.append(job.id)
        for job_id, target in wanted.items():
            self._scheduler.add_job(
                DISPATCH_REF,
                trigger=target["trigger"],
                args=[target["workflow_id"]],
                id=job_id,
                name=target["name"],
            )
            report.added.append(job_id)
        return report

    def _wanted(self) -> dict[str, dict[str, Any]]:
        wanted: dict[str, dict[str, Any]] = {}
        for workflow in self.engine.registry:
            if not workflow.enabled:
                continue
            for index, schedule in enumerate(workflow.schedules):
                job_id = f"{workflow.id}{JOB_ID_SEPARATOR}{index}"
                trigger = schedule.build_trigger()
                wanted[job_id] = {
                    "workflow_id": workflow.id,
                    # The name carries the schedule, so a changed cron or zone is seen as such
                    # (the zone as resolved: the machine's own may change between starts).
                    "name": f"{workflow.id} [{schedule.cron}] {trigger.timezone}",
                    "trigger": trigger,
                }
        return wanted

    def _nudge(self) -> None:
        while not self._stop.wait(WAKEUP_EVERY_SECONDS):
            self._scheduler.wakeup()


def upgrade_stored_refs(store: SQLAlchemyJobStore) -> int:
    """Point the stored jobs that name a former `dispatch` at today's, keeping their next run
    time (so a run missed while Weaver was being upgraded still fires); returns how many."""
    return rewrite_stored_jobs(store, _current_dispatch)


def _current_dispatch(state: dict[str, Any]) -> dict[str, Any] | None:
    if state.get("func") not in FORMER_DISPATCH_REFS:
        return None
    return {**state, "func": DISPATCH_REF}
