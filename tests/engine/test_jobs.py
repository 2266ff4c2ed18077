"""Executions as jobs of the job system on PostgreSQL (weaver.engine.jobs): deferred with their
row, run by `run_job`, taken over from a stopped worker, refused by a worker without the
workflow, and each schedule listed for the workers to fire (the ticks themselves:
tests/engine/test_worker_schedules.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest
from sqlalchemy import text, update
from sqlalchemy.exc import OperationalError

from weaver.cache import executions
from weaver.cache.models import Execution
from weaver.config import Settings
from weaver.engine import OnSchedule, Registry, WorkflowContext, WorkflowEngine, workflow
from weaver.engine.jobs import (
    RUN_TASK,
    SCHEDULE_TASK,
    SlotBusyError,
    build_worker_app,
    conninfo_of,
    queue_of,
    worker_queues,
)
from weaver.engine.worker_schedules import worker_schedules
from weaver.runtime.app import App
from weaver.runtime.engines import engine_for


@workflow(id="echo", name="Echo")
def echo(ctx: WorkflowContext[Any]) -> dict[str, Any]:
    return {"attempt": ctx.attempt}


@workflow(id="pair", name="Pair", max_concurrent=2)
def pair(_ctx: WorkflowContext[Any]) -> str:
    return "done"


@workflow(id="nightly", name="Nightly", triggers=[OnSchedule("0 3 * * *")])
def nightly(_ctx: WorkflowContext[Any]) -> None:
    return None


def engine_of(app: App, *workflows: Any, background: Any = "jobs") -> WorkflowEngine:
    registry = Registry()
    for item in workflows:
        registry.register(item)
    engine = engine_for(app, registry, background=background)
    engine.start(subscribe=False)
    return engine


def jobs(url: str) -> list[tuple[str, str | None, dict[str, Any], str]]:
    with psycopg.connect(conninfo_of(url)) as conn:
        found = conn.execute(
            "SELECT queue_name, lock, args, status FROM procrastinate_jobs ORDER BY id"
        ).fetchall()
    return [(q, lock, args, status) for q, lock, args, status in found]


def test_a_trigger_defers_one_job_on_the_workflows_queue(pg_app: App) -> None:
    engine = engine_of(pg_app, echo, pair)
    try:
        assert engine.background == "jobs"
        first = engine.trigger("echo", async_=True)
        second = engine.trigger("pair", async_=True)
        assert first.status == "pending" and "workers" in first.message
    finally:
        engine.stop()
    assert jobs(pg_app.settings.db_url) == [
        ("weaver.workflow.echo", "echo", {"execution_id": first.execution_id}, "todo"),
        ("weaver.workflow.pair", None, {"execution_id": second.execution_id}, "todo"),
    ]


def test_a_rolled_back_row_leaves_no_job(pg_app: App) -> None:
    engine = engine_of(pg_app, echo)
    try:
        with pytest.raises(RuntimeError), pg_app.db.begin() as conn:
            engine.runs.enqueue(engine.registry.require("echo"), engine_trigger(), {}, conn)
            raise RuntimeError("rolled back")
    finally:
        engine.stop()
    assert jobs(pg_app.settings.db_url) == []


def engine_trigger() -> Any:
    from weaver.engine import ManualTrigger

    return ManualTrigger("test")


def test_run_job_runs_a_pending_execution_once(pg_app: App) -> None:
    engine = engine_of(pg_app, echo)
    try:
        queued = engine.trigger("echo", async_=True)
        assert engine.run_job(queued.execution_id) == "ran"
        assert engine.run_job(queued.execution_id) == "already completed"
        record = engine.runs.get(queued.execution_id)
        assert (record.status, record.result, record.process) == (
            "completed",
            {"attempt": 1},
            engine.process,
        )
    finally:
        engine.stop()


def test_a_run_of_a_stopped_worker_is_taken_over_as_the_next_attempt(pg_app: App) -> None:
    engine = engine_of(pg_app, echo)
    try:
        queued = engine.trigger("echo", async_=True)
        with pg_app.db.begin() as conn:  # as a worker killed mid-run leaves it
            conn.execute(
                update(Execution)
                .where(Execution.id == queued.execution_id)
                .values(status="running", attempt=1, process="elsewhere:42", started=1)
            )
        assert engine.run_job(queued.execution_id) == "ran"
        record = engine.runs.get(queued.execution_id)
        assert (record.status, record.attempt, record.result) == ("completed", 2, {"attempt": 2})
        assert record.process == engine.process
        assert [(i.attempt, i.reason) for i in record.interruptions] == [
            (1, "interrupted: its worker elsewhere:42 stopped")
        ]
    finally:
        engine.stop()


def test_a_run_its_worker_stopped_under_runs_again_through_its_own_job(pg_app: App) -> None:
    """`weaver worker` stopped (SIGTERM) mid-run: the run goes back to pending, its job is
    retried, and the next worker completes it as attempt 2; one job, one row."""
    started = threading.Event()

    @workflow(id="long", timeout=None)
    def long(ctx: WorkflowContext[Any]) -> dict[str, Any]:
        if ctx.attempt == 1:
            started.set()
            ctx.cancelled.wait(60)
        return {"attempt": ctx.attempt}

    first = engine_of(pg_app, long)
    queued = first.trigger("long", async_=True).execution_id

    def stop_when_started() -> None:  # as SIGTERM would, while the job runs
        if started.wait(30):
            first.stop()

    stopper = threading.Thread(target=stop_when_started)
    stopper.start()
    interrupted = lambda: bool(first.runs.get(queued).interruptions)  # noqa: E731
    asyncio.run(work_until(first, interrupted, timeout=30))
    stopper.join(30)
    assert first.runs.get(queued).status == "pending"
    second = engine_of(pg_app, long)
    try:
        completed = lambda: second.runs.get(queued).status == "completed"  # noqa: E731
        asyncio.run(work_until(second, completed, timeout=30))
        record = second.runs.get(queued)
        assert (record.attempt, record.result) == (2, {"attempt": 2})
        assert [i.reason for i in record.interruptions] == ["interrupted: the engine stopped"]
    finally:
        second.stop()
    assert [(args, status) for _q, _lock, args, status in jobs(pg_app.settings.db_url)] == [
        ({"execution_id": queued}, "succeeded")
    ]


def test_a_run_left_with_no_job_gets_one_when_queued_again(pg_app: App) -> None:
    """The worker's job was aborted at its shutdown (not retried): queueing the run again
    defers a new job, or nothing would ever run it."""
    engine = engine_of(pg_app, echo)
    try:
        queued = engine.trigger("echo", async_=True).execution_id
        with pg_app.db.begin() as conn:
            assert executions.claim(conn, queued, 1, engine.process, 1)
            conn.execute(text("UPDATE procrastinate_jobs SET status = 'aborted'"))
        assert engine.record_interrupted() == 1
        assert engine.runs.get(queued).status == "pending"
        statuses = [status for *_, status in jobs(pg_app.settings.db_url)]
        assert statuses == ["aborted", "todo"]
    finally:
        engine.stop()


def test_no_free_slot_asks_the_job_system_to_try_again(pg_app: App) -> None:
    engine = engine_of(pg_app, pair)
    try:
        ids = [engine.trigger("pair", async_=True).execution_id for _ in range(3)]
        with pg_app.db.begin() as conn:
            for execution_id in ids[:2]:
                assert executions.claim(conn, execution_id, 2, "elsewhere:1", 1)
        with pytest.raises(SlotBusyError, match="all 2 slot"):
            engine.run_job(ids[2])
    finally:
        engine.stop()


def test_a_worker_without_the_workflow_records_why_it_refused(pg_app: App) -> None:
    writer = engine_of(pg_app, echo)
    worker = engine_of(pg_app)  # no plugins
    try:
        queued = writer.trigger("echo", async_=True)
        assert worker.run_job(queued.execution_id) == "refused"
        record = worker.runs.get(queued.execution_id)
        assert record.status == "failed"
        assert f"worker {worker.process} has no enabled workflow 'echo'" in (record.error or "")
    finally:
        worker.stop()
        writer.stop()


def test_the_worker_app_runs_executions_and_fires_each_schedule(pg_app: App) -> None:
    engine = engine_of(pg_app, echo, nightly)
    try:
        app = build_worker_app(engine)
        assert {RUN_TASK, SCHEDULE_TASK} <= set(app.tasks)
        # Ticks are deferred by weaver.engine.worker_schedules, not Procrastinate's periodic
        # tasks (which read cron in UTC).
        assert not app.periodic_registry.periodic_tasks
        schedules = worker_schedules(engine)
        assert [(s.periodic_id, s.workflow_id, s.queue) for s in schedules] == [
            ("nightly#0", "nightly", queue_of("nightly"))
        ]
    finally:
        engine.stop()


def test_a_sync_trigger_waits_for_the_workers(pg_app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker is alive (its heartbeat row) but never takes the run: the sync call answers at
    its deadline, saying the run goes on."""
    monkeypatch.setattr("weaver.engine.job_dispatch.SYNC_JOB_SLACK_SECONDS", 1.5)
    fast = workflow(id="quick", name="Quick", timeout=0.2)(lambda _ctx: None)
    engine = engine_of(pg_app, fast)
    try:
        with pg_app.db.begin() as conn:
            conn.execute(text("INSERT INTO procrastinate_workers DEFAULT VALUES"))
        answer = engine.trigger("quick")
        assert answer.mode == "sync" and answer.status == "pending"
        assert "no worker finished it within" in answer.message
    finally:
        engine.stop()


def test_a_sync_trigger_with_no_worker_running_says_so_at_once(pg_app: App) -> None:
    """A new user on PostgreSQL who has not started `weaver worker` hears why nothing runs,
    a second after triggering, instead of waiting out the workflow's time limits."""
    slow = workflow(id="slow", name="Slow", timeout=600)(lambda _ctx: None)
    engine = engine_of(pg_app, slow)
    try:
        started = time.monotonic()
        answer = engine.trigger("slow")
        assert time.monotonic() - started < 10
        assert answer.status == "pending"
        assert "no `weaver worker` is running" in answer.message
        assert engine.get_status(answer.execution_id).status == "pending"  # still queued
    finally:
        engine.stop()


def test_a_run_taken_over_elsewhere_is_not_ended_by_its_first_worker(pg_app: App) -> None:
    engine = engine_of(pg_app, echo)
    try:
        queued = engine.trigger("echo", async_=True)
        with pg_app.db.begin() as conn:
            assert executions.claim(conn, queued.execution_id, 1, engine.process, 1)
        mine = engine.runs.get(queued.execution_id)
        with pg_app.db.begin() as conn:  # as worker b:2 takes it over, our heartbeat late
            taken = executions.requeue_interrupted(conn, mine, now=2, reason="late", limit=5)
            assert taken == "pending"
            assert executions.claim(conn, queued.execution_id, 1, "b:2", 2)
        engine.runs.ends.record(queued.execution_id, {"status": "completed", "message": "late"}, 3)
        assert engine.runs.get(queued.execution_id).status == "running"  # b:2's to end
    finally:
        engine.stop()


def test_hosts_on_postgresql_hand_runs_and_schedules_to_the_workers(pg_app: App) -> None:
    from weaver.runtime.engines import background_for, hosted_engine

    assert background_for(pg_app.settings, "threads") == "jobs"
    assert background_for(Settings(vault=pg_app.settings.vault), "threads") == "threads"
    registry = Registry()
    registry.register(nightly)
    with hosted_engine(pg_app, registry, schedules=True) as engine:
        assert engine.background == "jobs"
        assert engine.scheduler is None  # the workers' periodic tasks fire schedules


def test_a_reader_process_beside_the_writer_defers_its_runs_as_jobs(pg_app: App) -> None:
    """The writer's HTTP reader processes (`queueing_engine`): on PostgreSQL a run they queue
    must reach the workers as a job; a bare pending row would wait for nobody."""
    from weaver.runtime.engines import queueing_engine

    registry = Registry()
    registry.register(echo)
    with queueing_engine(pg_app, registry) as engine:
        assert engine.background == "jobs"
        queued = engine.trigger("echo", async_=True)
    assert jobs(pg_app.settings.db_url) == [
        ("weaver.workflow.echo", "echo", {"execution_id": queued.execution_id}, "todo")
    ]


def test_a_job_that_failed_on_the_database_is_tried_again(
    pg_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dropped connection before the run began: the job comes back and the run completes,
    rather than staying pending with no job to run it."""
    engine = engine_of(pg_app, echo)
    try:
        queued = engine.trigger("echo", async_=True)
        real_run_job, calls = engine.run_job, []

        def dropped_once(execution_id: str) -> str:
            calls.append(execution_id)
            if len(calls) == 1:
                raise OperationalError("SELECT", {}, Exception("server closed the connection"))
            return real_run_job(execution_id)

        monkeypatch.setattr(engine, "run_job", dropped_once)
        completed = lambda: engine.get_status(queued.execution_id).status == "completed"  # noqa: E731
        asyncio.run(work_until(engine, completed, timeout=20))
        assert calls == [queued.execution_id] * 2
    finally:
        engine.stop()


async def work_until(engine: WorkflowEngine, done: Any, timeout: float) -> None:
    """A real Procrastinate worker, taking the jobs ready now, again until `done()`."""
    jobs_app = build_worker_app(engine)
    deadline = time.monotonic() + timeout
    async with jobs_app.open_async():
        while not done():
            assert time.monotonic() < deadline, "the run did not complete"
            await jobs_app.run_worker_async(
                queues=worker_queues(engine), wait=False, install_signal_handlers=False
            )
            await asyncio.sleep(0.2)
