"""The scheduler: a short cron firing for real, the registry reconciled into the job store, jobs
holding only a textual reference, and a run missed while asleep running once, not many times."""

from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from apscheduler.events import (  # type: ignore[import-untyped]
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from sqlalchemy import select, update

from tests.helpers import wait_for
from weaver.cache import executions
from weaver.engine import (
    OnSchedule,
    Registry,
    ScheduleTrigger,
    Workflow,
    WorkflowContext,
    WorkflowEngine,
    workflow,
)
from weaver.engine.scheduler import (
    DISPATCH_REF,
    FORMER_DISPATCH_REFS,
    EnqueueExecutor,
    WorkflowScheduler,
)
from weaver.runtime.app import App


@workflow(id="daily", triggers=[OnSchedule("0 7 * * *", timezone="UTC")])
def daily(ctx: WorkflowContext[Any]) -> str:
    assert isinstance(ctx.trigger, ScheduleTrigger)
    return ctx.trigger.scheduled_time.isoformat()


@pytest.fixture
def engine(app: App) -> Iterator[WorkflowEngine]:
    registry = Registry()
    registry.register(daily)
    engine = WorkflowEngine(
        registry, db=app.db, vault=app.vault, settings=app.settings, background="inline"
    )
    engine.start(subscribe=False)
    yield engine
    engine.stop()


@pytest.fixture
def open_scheduler(
    engine: WorkflowEngine, tmp_path: Path
) -> Iterator[Callable[[], WorkflowScheduler]]:
    opened: list[WorkflowScheduler] = []

    def make() -> WorkflowScheduler:
        scheduler = WorkflowScheduler(engine, store_path=tmp_path / "scheduler.db")
        opened.append(scheduler)
        return scheduler

    yield make
    for scheduler in opened:
        scheduler.stop()


def scheduled_runs(app: App) -> list[executions.ExecutionRecord]:
    with app.db.connect() as conn:
        records = executions.list_executions(conn, None, 1000, 0)[0]
    return [r for r in records if r.trigger_kind == "schedule"]


def test_default_store_is_a_file_of_its_own(engine: WorkflowEngine) -> None:
    scheduler = WorkflowScheduler(engine)
    assert scheduler.store_path == engine.settings.vault / ".weaver" / "scheduler.db"
    scheduler.stop()


def test_a_short_cron_fires(
    app: App, engine: WorkflowEngine, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    every_second = dataclasses.replace(daily, id="tick", schedules=(OnSchedule("* * * * * *"),))
    engine.registry.register(every_second)
    open_scheduler().start()
    wait_for(lambda: any(r.status == "completed" for r in scheduled_runs(app)), timeout=3)
    run = next(r for r in scheduled_runs(app) if r.status == "completed")
    assert run.workflow_id == "tick"
    planned = datetime.fromisoformat(run.result)
    assert planned.microsecond == 0 and abs(planned.timestamp() - time.time()) < 3


def test_jobs_hold_a_textual_reference_and_the_workflow_id(
    engine: WorkflowEngine, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    scheduler = open_scheduler()
    report = scheduler.start()
    assert report.added == ["daily#0"]
    [job] = scheduler.jobs()
    assert job.func_ref == DISPATCH_REF
    assert job.args == ("daily",)
    assert job.coalesce is True
    assert job.misfire_grace_time == engine.settings.schedule_misfire_grace_s
    assert job.next_run_time.hour == 7 and str(job.next_run_time.tzinfo) == "UTC"


def replace_workflow(engine: WorkflowEngine, workflow_id: str, **changes: Any) -> Workflow:
    current = engine.registry.get(workflow_id)
    assert current is not None
    updated = dataclasses.replace(current, **changes)
    engine.registry.replace(updated)
    return updated


def test_reconcile_adds_updates_removes_and_keeps(
    engine: WorkflowEngine, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    first = open_scheduler()
    first.start()
    kept_time = first.jobs()[0].next_run_time
    first.stop()

    again = open_scheduler()
    assert again.start().kept == ["daily#0"]
    assert again.jobs()[0].next_run_time == kept_time  # untouched, due time and all
    again.stop()

    replace_workflow(engine, "daily", schedules=(OnSchedule("30 8 * * *", timezone="Asia/Tokyo"),))
    engine.registry.register(
        dataclasses.replace(
            daily,
            id="weekly",
            schedules=(
                OnSchedule("0 9 * * 1", timezone="UTC"),
                OnSchedule("0 18 * * 5", timezone="UTC"),
            ),
        )
    )
    third = open_scheduler()
    report = third.start()
    assert (report.updated, report.added) == (["daily#0"], ["weekly#0", "weekly#1"])
    daily_job = next(j for j in third.jobs() if j.id == "daily#0")
    assert (
        daily_job.next_run_time.astimezone(daily_job.trigger.timezone).strftime("%H:%M") == "08:30"
    )
    third.stop()

    replace_workflow(engine, "daily", enabled=False)
    engine.registry.remove("weekly")
    fourth = open_scheduler()
    assert sorted(fourth.start().removed) == ["daily#0", "weekly#0", "weekly#1"]
    assert fourth.jobs() == []


def move_due_time(scheduler: WorkflowScheduler, job_id: str, when: datetime) -> None:
    """What a night asleep looks like to the store: a due time long past."""
    scheduler._scheduler.start(paused=True)
    scheduler.reconcile()
    scheduler._scheduler.get_job(job_id).modify(next_run_time=when)
    scheduler._scheduler.shutdown(wait=False)


def test_a_run_missed_while_asleep_runs_once_on_wake(
    app: App, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    three_days_ago = datetime.now(UTC) - timedelta(days=3, hours=1)
    move_due_time(open_scheduler(), "daily#0", three_days_ago)
    woke = open_scheduler()
    woke.start()
    wait_for(lambda: any(r.status == "completed" for r in scheduled_runs(app)))
    time.sleep(0.3)  # proving a negative: runs of the other missed mornings would come now
    runs = scheduled_runs(app)
    assert len(runs) == 1  # three missed mornings, coalesced into one run
    assert runs[0].status == "completed"
    planned = datetime.fromisoformat(runs[0].result)
    assert planned.hour == 7 and datetime.now(UTC) - planned < timedelta(days=1)
    assert woke.jobs()[0].next_run_time > datetime.now(UTC)


def store_former_ref(scheduler: WorkflowScheduler, job_id: str) -> None:
    """Write a job as 0.1 stored it (APScheduler itself refuses a reference it cannot import)."""
    jobs = scheduler._store.jobs_t
    with scheduler._store.engine.begin() as conn:
        blob = conn.execute(select(jobs.c.job_state).where(jobs.c.id == job_id)).scalar_one()
        state = pickle.loads(blob)
        state["func"] = FORMER_DISPATCH_REFS[0]
        conn.execute(update(jobs).where(jobs.c.id == job_id).values(job_state=pickle.dumps(state)))


def test_a_job_stored_before_the_scheduler_moved_still_fires(
    app: App, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    """A store written by 0.1 names `weaver.scheduler:dispatch`: the job keeps its due time."""
    old = open_scheduler()
    three_days_ago = datetime.now(UTC) - timedelta(days=3)
    move_due_time(old, "daily#0", three_days_ago)
    store_former_ref(old, "daily#0")
    upgraded = open_scheduler()
    report = upgraded.start()
    assert report.kept == ["daily#0"]
    wait_for(lambda: any(r.status == "completed" for r in scheduled_runs(app)))
    assert upgraded.jobs()[0].func_ref == DISPATCH_REF


def test_a_run_missed_beyond_the_grace_is_skipped(
    app: App, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=30)
    scheduler = open_scheduler()
    scheduler._scheduler.start(paused=True)
    scheduler.reconcile()
    missed: list[JobExecutionEvent] = []
    scheduler._scheduler.add_listener(missed.append, EVENT_JOB_MISSED)
    job = scheduler._scheduler.get_job("daily#0")
    job.modify(next_run_time=long_ago)
    executor = EnqueueExecutor(scheduler.engine)
    executor.start(scheduler._scheduler, "test")
    # Twice: the executor's instance count must come back down, or max_instances=1 would
    # refuse the second submission.
    for _ in range(2):
        executor.submit_job(job, [long_ago])
    assert scheduled_runs(app) == []
    assert [(e.job_id, e.scheduled_run_time) for e in missed] == [("daily#0", long_ago)] * 2
    scheduler._scheduler.shutdown(wait=False)


def test_a_due_run_is_reported_to_the_scheduler_as_executed(
    app: App, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    scheduler = open_scheduler()
    scheduler._scheduler.start(paused=True)
    scheduler.reconcile()
    executed: list[JobExecutionEvent] = []
    scheduler._scheduler.add_listener(executed.append, EVENT_JOB_EXECUTED)
    executor = EnqueueExecutor(scheduler.engine)
    executor.start(scheduler._scheduler, "test")
    now = datetime.now(UTC)
    executor.submit_job(scheduler._scheduler.get_job("daily#0"), [now])
    assert [e.job_id for e in executed] == ["daily#0"]
    wait_for(lambda: [r.status for r in scheduled_runs(app)] == ["completed"])
    scheduler._scheduler.shutdown(wait=False)


def test_disabled_or_unknown_workflows_are_not_enqueued(app: App, engine: WorkflowEngine) -> None:
    replace_workflow(engine, "daily", enabled=False)
    now = datetime.now(UTC)
    assert engine.enqueue_scheduled("daily", now) is None
    assert engine.enqueue_scheduled("ghost", now) is None
    assert scheduled_runs(app) == []


def test_next_fire_times_per_workflow_for_the_dashboard(
    engine: WorkflowEngine, open_scheduler: Callable[[], WorkflowScheduler]
) -> None:
    twice = dataclasses.replace(
        daily,
        id="twice",
        schedules=(OnSchedule("0 9 * * *", "UTC"), OnSchedule("0 8 * * *", "UTC")),
    )
    engine.registry.register(twice)
    scheduler = open_scheduler()
    assert not scheduler.running
    scheduler.start()
    assert scheduler.running
    fires = scheduler.next_fire_times()
    assert set(fires) == {"daily", "twice"}
    now = datetime.now(UTC)
    soonest = min(s.build_trigger().get_next_fire_time(None, now) for s in twice.schedules)
    assert fires["twice"] == soonest  # the sooner of its two schedules
    assert fires["daily"].hour == 7
    scheduler.stop()
    assert not scheduler.running
