"""Cancelling a run (pending, or running in this process) and re-running a past one."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.helpers import EngineFactory, wait_for
from weaver.engine import WorkflowContext, workflow
from weaver.engine.workflow_errors import NotCancellableError

released = threading.Event()


@workflow(id="waits", name="Waits", timeout=20)
def waits(ctx: WorkflowContext[Any]) -> str:
    """Runs until cancelled (or released), as a cooperative long workflow does."""
    ctx.report_progress(10, "waiting")
    while not ctx.cancelled.wait(0.02):
        if released.is_set():
            return "released"
    return "saw the cancel"


@workflow(id="stubborn", name="Stubborn", timeout=20)
def stubborn(ctx: WorkflowContext[Any]) -> str:
    """Ignores `cancelled`: the engine stops waiting for it all the same."""
    released.wait(5)
    return "done"


def test_cancel_a_running_run(make_engine: EngineFactory) -> None:
    engine = make_engine(waits, background="threads")
    started = engine.trigger("waits", async_=True)
    wait_for(lambda: engine.get_status(started.execution_id).progress == 10, 5, "the run to start")
    status = engine.cancel(started.execution_id)
    assert status.status == "cancelled"
    assert status.error is None
    assert status.message == "Workflow execution cancelled by request"


def test_cancel_right_after_the_claim_waits_for_the_run_to_register(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between claiming a run (`running` in the cache) and registering its cancel switch, this
    process's worker thread takes a moment; a cancel then must not be refused as though
    another process ran it."""
    engine = make_engine(waits, background="threads")
    registering = engine.runs.executor._attempts

    def late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # the window under test: claimed, its cancel switch not registered yet
        return registering(*args, **kwargs)

    monkeypatch.setattr(engine.runs.executor, "_attempts", late)
    started = engine.trigger("waits", async_=True)
    wait_for(lambda: engine.get_status(started.execution_id).status == "running", 5, "the claim")
    assert engine.cancel(started.execution_id).status == "cancelled"


def test_cancel_a_run_that_ignores_it(make_engine: EngineFactory) -> None:
    engine = make_engine(stubborn, background="threads")
    started = engine.trigger("stubborn", async_=True)
    wait_for(
        lambda: engine.get_status(started.execution_id).status == "running", 5, "the run to start"
    )
    try:
        assert engine.cancel(started.execution_id).status == "cancelled"
    finally:
        released.set()
    released.clear()


def test_cancel_a_pending_run(make_engine: EngineFactory) -> None:
    engine = make_engine(waits, background="queue")
    queued = engine.trigger("waits", async_=True)
    assert engine.cancel(queued.execution_id).status == "cancelled"
    with pytest.raises(NotCancellableError, match="has already ended"):
        engine.cancel(queued.execution_id)


def test_a_run_of_another_process_is_not_cancelled_here(make_engine: EngineFactory) -> None:
    from weaver.cache import executions

    engine = make_engine(waits, background="queue")
    queued = engine.trigger("waits", async_=True)
    with engine.db.begin() as conn:
        assert executions.claim(conn, queued.execution_id, 1, "elsewhere:1", 1)
    with pytest.raises(NotCancellableError, match="runs in process elsewhere:1"):
        engine.cancel(queued.execution_id)


def test_rerun_queues_the_same_workflow_and_input(make_engine: EngineFactory) -> None:
    engine = make_engine(waits, background="queue")
    first = engine.trigger("waits", async_=True)
    again = engine.rerun(first.execution_id, via="dashboard")
    assert again.execution_id != first.execution_id
    status = engine.get_status(again.execution_id)
    assert (status.workflow_id, status.input, status.trigger.detail) == (
        "waits",
        {},
        {"via": "dashboard"},
    )
