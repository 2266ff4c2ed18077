"""Runs interrupted by their engine stopping are resumed: a clean stop or a dead process puts
the run back in the queue, same trigger and input, and the next engine to start runs it as its
next attempt, the interruption kept in its history; a run that failed by itself is not, and a
run interrupted too often is given up saying why. (Real processes: tests/host/test_resume.py.)
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import pytest
from sqlalchemy import insert

from tests.helpers import EngineFactory, wait_for
from weaver.cache import executions
from weaver.cache.models import Execution
from weaver.engine import OnFile, WorkflowContext, workflow
from weaver.engine.runs import RESUME_LIMIT
from weaver.runtime.app import App
from weaver.vault.events import NoteModified

pytestmark = pytest.mark.both_backends

STOPPED = "interrupted: the engine stopped"


def hold_first_attempt(started: threading.Event) -> Any:
    """A workflow whose first attempt waits for its engine to stop; later ones finish."""

    @workflow(id="long", timeout=None, triggers=[OnFile("**")])
    def long(ctx: WorkflowContext[Any]) -> dict[str, Any]:
        if ctx.attempt == 1:
            started.set()
            ctx.cancelled.wait(60)
            return {"cut short": True}
        return {"attempt": ctx.attempt, "paths": sorted(getattr(ctx.trigger, "paths", []))}

    return long


def test_a_run_its_engine_stopped_under_resumes_at_the_next_start(
    app: App, make_engine: EngineFactory
) -> None:
    started = threading.Event()
    long = hold_first_attempt(started)
    first = make_engine(long, background="threads")
    queued = first.handle_events([NoteModified("a.md"), NoteModified("b.md")])
    assert len(queued) == 1
    assert started.wait(30)
    first.stop()

    waiting = first.get_status(queued[0])
    assert (waiting.status, waiting.attempt, waiting.error) == ("pending", 1, None)
    assert waiting.message is not None and waiting.message.startswith(STOPPED)
    assert [(i.attempt, i.reason) for i in waiting.interruptions] == [(1, STOPPED)]

    second = make_engine(long, background="threads", poll=True, workflow_poll_ms=20)
    wait_for(lambda: second.get_status(queued[0]).status == "completed", 30, "the resumed run")
    done = second.get_status(queued[0])
    assert done.attempt == 2
    assert done.result == {"attempt": 2, "paths": ["a.md", "b.md"]}  # the same trigger
    assert [i.attempt for i in done.interruptions] == [1]
    assert done.to_wire()["interruptions"][0]["reason"] == STOPPED
    history = second.get_history(workflow_id="long")
    assert history.total == 1  # one change, one run
    assert history.executions[0].interrupted == 1


def test_a_run_that_failed_by_itself_is_not_resumed(app: App, make_engine: EngineFactory) -> None:
    @workflow(id="explode")
    def explode(_ctx: WorkflowContext[Any]) -> None:
        raise ValueError("kaboom")

    @workflow(id="slow", timeout=0.05)
    def slow(_ctx: WorkflowContext[Any]) -> None:
        time.sleep(0.5)  # the run's work, longer than its timeout

    first = make_engine(explode, slow)
    failed = [first.trigger("explode").execution_id, first.trigger("slow").execution_id]
    first.stop()
    second = make_engine(explode, slow, background="threads", poll=True, workflow_poll_ms=20)
    time.sleep(0.3)  # proving a negative: fifteen polls, any of which would take a run again
    records = [second.runs.get(execution_id) for execution_id in failed]
    assert [(r.status, r.attempt, r.interruptions) for r in records] == [("failed", 1, [])] * 2
    assert second.get_history().total == 2


@workflow(id="echo", name="Echo")
def echo(ctx: WorkflowContext[Any]) -> dict[str, Any]:
    return {"attempt": ctx.attempt}


def insert_running(app: App, execution_id: str, process: str, **values: Any) -> None:
    now = int(time.time() * 1000)
    row: dict[str, Any] = {
        "id": execution_id,
        "workflow_id": "echo",
        "workflow_name": "Echo",
        "trigger_kind": "manual",
        "trigger_detail": {"via": "api"},
        "input": {},
        "status": "running",
        "progress": 40,
        "attempt": 1,
        "created": now,
        "started": now,
        "process": process,
    }
    row.update(values)
    with app.db.begin() as conn:
        conn.execute(insert(Execution).values(**row))


def test_a_run_of_a_crashed_process_is_resumed_by_the_next_engine(
    app: App, make_engine: EngineFactory
) -> None:
    dead = f"{socket.gethostname()}:999999999"
    insert_running(app, "crashed", dead)
    engine = make_engine(echo, background="threads", poll=True, workflow_poll_ms=20)
    wait_for(lambda: engine.get_status("crashed").status == "completed", 30, "the resumed run")
    status = engine.get_status("crashed")
    assert (status.attempt, status.result) == (2, {"attempt": 2})
    assert [(i.attempt, i.reason) for i in status.interruptions] == [
        (1, f"interrupted: the process running it ({dead}) stopped")
    ]


def test_a_run_interrupted_too_often_is_given_up_saying_why(
    app: App, make_engine: EngineFactory
) -> None:
    """A run that takes its process down each time (the OOM killer, say) must not loop."""
    dead = f"{socket.gethostname()}:999999999"
    earlier = [{"attempt": n, "at": n, "reason": "earlier"} for n in range(1, RESUME_LIMIT + 1)]
    detail = {"via": "api", "interruptions": earlier}
    insert_running(app, "doomed", dead, attempt=RESUME_LIMIT + 1, trigger_detail=detail)
    flaky = workflow(id="flaky", retries=2)(lambda _ctx: None)
    insert_running(
        app, "patient", dead, workflow_id="flaky", attempt=RESUME_LIMIT + 1, trigger_detail=detail
    )
    engine = make_engine(echo, flaky)
    doomed = engine.get_status("doomed")
    assert doomed.status == "failed"
    assert doomed.error is not None
    assert f"given up: interrupted {RESUME_LIMIT + 1} times" in doomed.error
    assert len(doomed.interruptions) == RESUME_LIMIT + 1
    # Its workflow allows retries: as many more interruptions are resumed.
    assert engine.get_status("patient").status == "pending"


def test_runs_under_way_when_the_process_must_end_now_are_queued_again(
    app: App, make_engine: EngineFactory
) -> None:
    """The stop watchdog's last word (`record_interrupted`) before the process exits."""
    insert_running(app, "mine", f"{socket.gethostname()}:{os.getpid()}")
    engine = make_engine(echo, background="queue")
    insert_running(app, "mine-now", engine.process)
    insert_running(app, "other", f"{socket.gethostname()}:{os.getppid()}")
    assert engine.record_interrupted() == 1
    statuses = {r.id: r.status for r in rows(app)}
    assert statuses == {"mine": "pending", "mine-now": "pending", "other": "running"}


def test_queued_runs_never_started_run_at_the_next_start(
    app: App, make_engine: EngineFactory
) -> None:
    shell = make_engine(echo, background="queue")
    queued = [shell.trigger("echo", async_=True).execution_id for _ in range(3)]
    shell.stop()
    engine = make_engine(echo, background="threads", poll=True, workflow_poll_ms=20)
    done = lambda: all(engine.get_status(i).status == "completed" for i in queued)  # noqa: E731
    wait_for(done, 30, "the runs queued before")


def rows(app: App) -> list[executions.ExecutionRecord]:
    with app.db.connect() as conn:
        return executions.list_executions(conn, None, 1000, 0)[0]
