"""The run modes' contract, mode by mode (the `jobs` mode's is in test_jobs.py, on PostgreSQL):
where an async run goes, that a sync run is run by its caller's process, who takes up rows
queued elsewhere, and that a run a dead process left is queued again whichever mode starts."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import insert

from tests.helpers import EngineFactory, wait_for
from weaver.cache.models import Execution
from weaver.engine import WorkflowContext, dispatch, workflow
from weaver.engine.dispatch import Background
from weaver.runtime.app import App

LOCAL_MODES: tuple[Background, ...] = ("inline", "queue", "threads")
# What an async trigger answers in each mode, what the run may be when the trigger returns (a
# run in the background waits at the gate), and what it is once it settles.
ASYNC_OUTCOME: dict[str, tuple[str, set[str], str]] = {
    "inline": ("Workflow execution started", {"completed"}, "completed"),
    "queue": ("Workflow execution queued for the daemon", {"pending"}, "pending"),
    "threads": ("Workflow execution started", {"pending", "running"}, "completed"),
}

ran: list[str] = []
gate = threading.Event()  # a run in the background waits on it; an inline one must not


@workflow(id="where", name="Where")
def where(ctx: WorkflowContext[Any]) -> str:
    ran.append(ctx.execution_id)
    return "here"


@workflow(id="gated", name="Gated")
def gated(_ctx: WorkflowContext[Any]) -> str:
    gate.wait(10)
    return "through"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    ran.clear()
    gate.clear()
    yield
    gate.set()


def settled(engine: Any, execution_id: str, expected: str) -> str:
    """The run's status once its mode has had its chance to run it."""
    if expected == "completed":
        wait_for(lambda: engine.get_status(execution_id).status == "completed", 10)
    else:
        time.sleep(0.3)  # a mode that must not run it has had time to, were it to
    return str(engine.get_status(execution_id).status)


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_a_sync_trigger_runs_in_the_callers_thread(
    make_engine: EngineFactory, mode: Background
) -> None:
    engine = make_engine(where, background=mode)
    answer = engine.trigger("where")
    assert (answer.mode, answer.status, answer.result) == ("sync", "completed", "here")
    assert engine.runs.get(answer.execution_id).process == engine.process


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_an_async_run_goes_where_its_mode_says(
    make_engine: EngineFactory, mode: Background
) -> None:
    engine = make_engine(where, gated, background=mode)
    message, on_return, final = ASYNC_OUTCOME[mode]
    if mode == "inline":
        gate.set()  # it runs before the trigger returns: a closed gate would only slow it
    answer = engine.trigger("gated", async_=True)
    assert (answer.mode, answer.message) == ("async", message)
    assert engine.get_status(answer.execution_id).status in on_return
    gate.set()
    assert settled(engine, answer.execution_id, final) == final


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_rows_queued_elsewhere_are_taken_up_as_the_mode_runs_them(
    make_engine: EngineFactory, mode: Background
) -> None:
    shell = make_engine(where, background="queue")
    queued = shell.trigger("where", async_=True).execution_id
    engine = make_engine(where, background=mode)
    assert engine.run_pending() == 1
    final = ASYNC_OUTCOME[mode][2]
    assert settled(engine, queued, final) == final


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_a_stopped_engine_runs_nothing_more(make_engine: EngineFactory, mode: Background) -> None:
    engine = make_engine(where, background=mode)
    engine.stop()
    queued = engine.trigger("where", async_=True).execution_id
    assert settled(engine, queued, "pending") == "pending"
    assert ran == []


@pytest.mark.parametrize("mode", LOCAL_MODES)
def test_every_mode_queues_again_a_run_a_dead_process_left(
    app: App, make_engine: EngineFactory, mode: Background
) -> None:
    now = int(time.time() * 1000)
    with app.db.begin() as conn:
        conn.execute(
            insert(Execution).values(
                id="orphan",
                workflow_id="where",
                workflow_name="Where",
                trigger_kind="manual",
                trigger_detail={"via": "api"},
                input={},
                status="running",
                progress=0,
                attempt=1,
                created=now,
                started=now,
                process=f"{socket.gethostname()}:999999999",
            )
        )
    engine = make_engine(where, background=mode)
    status = engine.get_status("orphan")
    assert status.status == "pending"
    assert [i.attempt for i in status.interruptions] == [1]


def test_an_idle_engine_takes_up_a_run_queued_elsewhere_promptly(
    app: App, make_engine: EngineFactory
) -> None:
    """Its poll backs off while idle (a look every few seconds, then every 15), yet a run
    another process queues (`weaver trigger --async` in a shell) starts within about
    `workflow_poll_ms`: the commit to the SQLite cache cuts the pause short."""
    if app.db.dialect.name != "sqlite":
        pytest.skip("PostgreSQL: runs queued elsewhere go through its job queue")
    engine = make_engine(where, background="threads", poll=True, workflow_poll_ms=100)
    time.sleep(4.0)  # idle: the pause has grown past 3 s
    shell = make_engine(where, background="queue", subscribe=False)
    queued = shell.trigger("where", async_=True).execution_id
    began = time.monotonic()
    wait_for(lambda: engine.get_status(queued).status == "completed", 10)
    assert time.monotonic() - began < 1.5


@pytest.mark.parametrize(("burst_s", "trims"), [(0.05, 1), (60.0, 0)])
def test_the_end_of_a_burst_of_runs_gives_its_memory_back(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch, burst_s: float, trims: int
) -> None:
    """Runs in threads that kept the engine busy `BURST_S` or more: once the last of them ends,
    the heap they freed goes back to the system (once, not per run); a short spell is left."""
    trimmed: list[int] = []

    def trim() -> bool:
        trimmed.append(1)
        return True

    monkeypatch.setattr(dispatch, "BURST_S", burst_s)
    monkeypatch.setattr(dispatch, "trim_heap", trim)
    engine = make_engine(where, gated, background="threads")
    runs = [engine.trigger("gated", async_=True).execution_id for _ in range(3)]
    time.sleep(0.1)  # the spell outlasts a short BURST_S
    assert trimmed == []  # runs under way
    gate.set()
    for execution_id in runs:
        assert settled(engine, execution_id, "completed") == "completed"
    wait_for(lambda: len(trimmed) >= trims, 5, "the trim after the burst")
    time.sleep(0.1)
    assert len(trimmed) == trims
