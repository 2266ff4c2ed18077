"""Running workflows: sync and async, failure, timeout, retry, the concurrency limit, the queue
shared with other processes, crash recovery, pruning, and what the core calls answer."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import insert, select, text
from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from tests.helpers import EngineFactory, wait_for
from weaver.cache import executions
from weaver.cache.models import Execution, Note
from weaver.engine import (
    ExecutionNotFoundError,
    InvalidInputError,
    ManualTrigger,
    WorkflowContext,
    WorkflowDisabledError,
    WorkflowNotFoundError,
    workflow,
)
from weaver.runtime.app import App

pytestmark = pytest.mark.both_backends


def rows(app: App) -> list[executions.ExecutionRecord]:
    with app.db.connect() as conn:
        return executions.list_executions(conn, None, 1000, 0)[0]


class Echo(BaseModel):
    text: str = "hi"
    times: int = 1


@workflow(id="echo", name="Echo", input_model=Echo)
def echo(ctx: WorkflowContext[Echo]) -> dict[str, Any]:
    ctx.report_progress(50, "half")
    return {"echo": ctx.input.text * ctx.input.times, "via": ctx.trigger}


@workflow(id="explode", name="Explode")
def explode(_ctx: WorkflowContext[Any]) -> None:
    raise ValueError("kaboom")


# -- sync and async -------------------------------------------------------------------------------


def test_sync_trigger_answers_with_the_final_status(app: App, make_engine: EngineFactory) -> None:
    engine = make_engine(echo)
    data = engine.trigger("echo", {"text": "ab", "times": 2}, via="mcp")
    assert data.mode == "sync"
    assert data.status == "completed"
    assert data.result == {"echo": "abab", "via": {"via": "mcp"}}
    assert data.message == "Workflow completed"
    assert data.duration is not None and data.duration >= 0
    assert set(data.to_wire()) >= {
        "executionId",
        "workflowId",
        "workflowName",
        "mode",
        "status",
        "duration",
        "message",
    }
    status = engine.get_status(data.execution_id)
    assert status.status == "completed"
    assert status.progress == 100
    assert status.attempt == 1
    assert status.input == {"text": "ab", "times": 2}
    assert status.trigger.kind == "manual"
    assert status.process == f"{socket.gethostname()}:{os.getpid()}"
    assert status.start_time is not None and status.end_time is not None


def test_a_sync_trigger_tells_its_caller_the_id_and_the_progress(
    app: App, make_engine: EngineFactory
) -> None:
    @workflow(id="steps")
    def steps(ctx: WorkflowContext[Any]) -> str:
        for percent in (20, 140):  # clamped to 100, as recorded
            ctx.report_progress(percent, f"at {percent}")
        return "done"

    @workflow(id="noisy")
    def noisy(ctx: WorkflowContext[Any]) -> str:
        ctx.report_progress(50)
        return "done anyway"

    engine = make_engine(steps, noisy, background="threads")
    queued: list[str] = []
    heard: list[tuple[int, str | None]] = []
    data = engine.trigger(
        "steps",
        on_queued=queued.append,
        on_progress=lambda percent, message: heard.append((percent, message)),
    )
    assert queued == [data.execution_id]
    assert heard == [(20, "at 20"), (100, "at 140")]

    def deaf(_percent: int, _message: str | None) -> None:
        raise RuntimeError("listener gone")

    # A listener that fails is the caller's problem, not the run's.
    assert engine.trigger("noisy", on_progress=deaf).status == "completed"


def test_async_trigger_returns_at_once_and_runs_in_the_background(
    app: App, make_engine: EngineFactory
) -> None:
    gate = threading.Event()

    @workflow(id="gated")
    def gated(ctx: WorkflowContext[Any]) -> str:
        ctx.report_progress(30, "waiting at the gate")
        gate.wait(5)
        return "through"

    engine = make_engine(gated, background="threads")
    data = engine.trigger("gated", async_=True)
    assert data.mode == "async"
    assert data.message == "Workflow execution started"
    wait_for(lambda: engine.get_status(data.execution_id).progress == 30)
    running = engine.get_status(data.execution_id)
    assert (running.status, running.message, running.end_time) == (
        "running",
        "waiting at the gate",
        None,
    )
    gate.set()
    wait_for(lambda: engine.get_status(data.execution_id).status == "completed")
    assert engine.get_status(data.execution_id).result == "through"


def test_async_workflow_functions_run_too(app: App, make_engine: EngineFactory) -> None:
    @workflow(id="coro")
    async def coro(ctx: WorkflowContext[Any]) -> int:
        await asyncio.sleep(0.01)
        return ctx.attempt

    assert make_engine(coro).trigger("coro").result == 1


def test_failure_is_recorded_with_its_traceback(app: App, make_engine: EngineFactory) -> None:
    engine = make_engine(explode, echo)
    data = engine.trigger("explode")
    assert (data.status, data.error, data.message) == (
        "failed",
        "ValueError: kaboom",
        "ValueError: kaboom",
    )
    status = engine.get_status(data.execution_id)
    assert status.traceback is not None and 'raise ValueError("kaboom")' in status.traceback
    assert engine.trigger("echo").status == "completed"  # the engine carries on


def test_a_failed_run_is_logged_at_error_level(app: App, make_engine: EngineFactory) -> None:
    engine = make_engine(echo, explode)
    with capture_logs() as logs:
        engine.trigger("echo")
        engine.trigger("explode")
    finished = [(e["log_level"], e["status"]) for e in logs if e["event"] == "workflow finished"]
    assert finished == [("info", "completed"), ("error", "failed")]


def test_unserialisable_result_fails_the_run(app: App, make_engine: EngineFactory) -> None:
    @workflow(id="odd")
    def odd(_ctx: WorkflowContext[Any]) -> object:
        return object()

    data = make_engine(odd).trigger("odd")
    assert data.status == "failed"
    assert "not JSON-serialisable" in (data.error or "")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_timeout_fails_the_run(app: App, make_engine: EngineFactory, kind: str) -> None:
    answered, finished = threading.Event(), threading.Event()
    seen: list[bool] = []
    if kind == "sync":

        @workflow(id="slow", timeout=0.1)
        def slow(ctx: WorkflowContext[Any]) -> None:
            # Held until the trigger has answered: the answer may not wait for the thread.
            seen.append(answered.wait(60))
            seen.append(ctx.cancelled.is_set())  # what a well-behaved long workflow watches
            try:
                ctx.vault.write_text("late.md", "written after the timeout")
            finally:
                finished.set()

    else:

        @workflow(id="slow", timeout=0.1)
        async def slow(ctx: WorkflowContext[Any]) -> None:
            await asyncio.sleep(60)  # cancelled at the timeout

    engine = make_engine(slow)
    data = engine.trigger("slow")
    answered.set()
    assert data.status == "failed"
    assert data.error == "TimeoutError: ran past its timeout of 0.1s"
    if kind == "sync":
        assert finished.wait(10)
        assert seen == [True, True]  # the answer came first; the attempt was told to stop
    assert not (app.vault.root / "late.md").exists()  # a timed-out attempt may not write


def test_retries_are_new_attempts_on_the_same_record(app: App, make_engine: EngineFactory) -> None:
    calls: list[int] = []

    @workflow(id="flaky", retries=2, retry_delay=0.01)
    def flaky(ctx: WorkflowContext[Any]) -> int:
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError(f"try {ctx.attempt}")
        return ctx.attempt

    @workflow(id="hopeless", retries=1, retry_delay=0.01, timeout=0.05)
    def hopeless(ctx: WorkflowContext[Any]) -> None:
        ctx.cancelled.wait(1)

    engine = make_engine(flaky, hopeless)
    data = engine.trigger("flaky")
    assert (data.status, data.result, calls) == ("completed", 3, [1, 2, 3])
    assert engine.get_status(data.execution_id).attempt == 3
    failed = engine.trigger("hopeless")
    assert failed.status == "failed" and "timeout" in (failed.error or "")
    assert engine.get_status(failed.execution_id).attempt == 2
    assert len(rows(app)) == 2


def test_retry_delay_doubles() -> None:
    @workflow(id="x", retries=5, retry_delay=0.5)
    def x(_ctx: object) -> None: ...

    assert [x.policy.delay_before(n) for n in (2, 3, 4)] == [0.5, 1.0, 2.0]


# -- requests that record nothing ---------------------------------------------------------------


def test_history_of_a_removed_workflow_is_read_and_a_misspelt_id_named(
    app: App, make_engine: EngineFactory
) -> None:
    make_engine(echo).trigger("echo")
    without_echo = make_engine(explode)  # echo's plugin since removed: its history stays
    assert without_echo.get_history("echo").total == 1
    assert without_echo.get_history("echo", status="failed").total == 0  # no error either
    with pytest.raises(WorkflowNotFoundError, match="did you mean 'explode'"):
        without_echo.get_history("explod")


def test_bad_requests_are_clear_errors_and_record_nothing(
    app: App, make_engine: EngineFactory
) -> None:
    engine = make_engine(echo, explode, workflows={"explode": {"enabled": False}})
    with pytest.raises(WorkflowNotFoundError) as missing:
        engine.trigger("nope")
    assert str(missing.value) == "Workflow not found: 'nope'"  # nothing close
    # A typo or a part of the id: the workflow it probably meant is named.
    with pytest.raises(WorkflowNotFoundError) as missing:
        engine.trigger("ecoh")
    assert str(missing.value) == "Workflow not found: 'ecoh' (did you mean 'echo'?)"
    with pytest.raises(WorkflowNotFoundError) as missing:
        engine.trigger("PLODE")
    assert str(missing.value) == "Workflow not found: 'PLODE' (did you mean 'explode'?)"
    with pytest.raises(WorkflowDisabledError, match="Workflow disabled: 'explode'"):
        engine.trigger("explode")
    with pytest.raises(InvalidInputError, match="times: Input should be a valid integer"):
        engine.trigger("echo", {"times": "x"})
    with pytest.raises(ExecutionNotFoundError, match="Execution not found: 'wf_exec_x'"):
        engine.get_status("wf_exec_x")
    assert rows(app) == []


# -- concurrency ---------------------------------------------------------------------------------


def test_concurrency_limit_queues_runs_beyond_it(app: App, make_engine: EngineFactory) -> None:
    gate = threading.Event()
    running_now: list[str] = []
    overlap: list[int] = []

    def body(ctx: WorkflowContext[Any]) -> None:
        running_now.append(ctx.execution_id)
        overlap.append(len(running_now))
        gate.wait(30)  # always set by the test; a bound, not a timing (a 5 s one ran out on CI)
        running_now.remove(ctx.execution_id)

    single = workflow(id="single")(body)
    double = workflow(id="double", max_concurrent=2)(body)
    engine = make_engine(single, double, background="threads")

    ids = [engine.trigger("single", async_=True).execution_id for _ in range(3)]
    wait_for(lambda: len(running_now) == 1)  # whichever the pool claimed first
    time.sleep(0.05)  # proving a negative: a second run let through would start meanwhile
    assert sorted(engine.get_status(i).status for i in ids) == ["pending", "pending", "running"]
    gate.set()
    wait_for(lambda: all(engine.get_status(i).status == "completed" for i in ids))
    assert max(overlap) == 1
    spans = sorted((s.start_time or 0, s.end_time or 0) for s in map(engine.get_status, ids))
    assert all(earlier[1] <= later[0] for earlier, later in pairwise(spans))  # one after another

    gate.clear()
    overlap.clear()
    ids = [engine.trigger("double", async_=True).execution_id for _ in range(3)]
    wait_for(lambda: len(running_now) == 2)
    time.sleep(0.05)  # proving a negative: a third run let through would start meanwhile
    assert sorted(engine.get_status(i).status for i in ids) == ["pending", "running", "running"]
    gate.set()
    wait_for(lambda: all(engine.get_status(i).status == "completed" for i in ids))
    assert max(overlap) == 2


def test_sync_trigger_waits_for_a_free_slot(app: App, make_engine: EngineFactory) -> None:
    gate = threading.Event()

    @workflow(id="one-at-a-time")
    def one(ctx: WorkflowContext[Any]) -> str:
        gate.wait(5)
        return ctx.execution_id

    engine = make_engine(one, background="threads")
    first = engine.trigger("one-at-a-time", async_=True)
    wait_for(lambda: engine.get_status(first.execution_id).status == "running")
    threading.Timer(0.2, gate.set).start()
    second = engine.trigger("one-at-a-time")
    assert second.status == "completed"
    second_started = engine.get_status(second.execution_id).start_time
    first_ended = engine.get_status(first.execution_id).end_time
    assert second_started is not None and first_ended is not None
    assert second_started >= first_ended


# -- the queue shared with other processes -------------------------------------------------------


def test_rows_queued_elsewhere_are_claimed_by_a_worker(
    app: App, make_engine: EngineFactory
) -> None:
    """`weaver trigger --async` queues (an engine in `queue` mode); the daemon's engine runs."""
    shell = make_engine(echo, background="queue")
    queued = shell.trigger("echo", {"text": "later"}, async_=True, via="cli")
    assert (queued.mode, queued.status) == ("async", "pending")
    assert queued.message == "Workflow execution queued for the daemon"
    assert shell.get_status(queued.execution_id).status == "pending"

    daemon = make_engine(echo, background="inline")
    assert daemon.run_pending() == 1
    done = daemon.get_status(queued.execution_id)
    assert done.status == "completed"
    assert done.result == {"echo": "later", "via": {"via": "cli"}}


def test_a_polling_worker_claims_them_by_itself(app: App, make_engine: EngineFactory) -> None:
    shell = make_engine(echo, background="queue")
    queued = shell.trigger("echo", async_=True)
    make_engine(echo, background="threads", poll=True, workflow_poll_ms=20)
    wait_for(lambda: shell.get_status(queued.execution_id).status == "completed")


def test_claims_are_atomic(app: App, make_engine: EngineFactory) -> None:
    shell = make_engine(echo, background="queue")
    queued = shell.trigger("echo", async_=True).execution_id
    with app.db.begin() as conn:
        assert executions.claim(conn, queued, 1, "a:1", 1)
        assert not executions.claim(conn, queued, 1, "b:2", 1)


def test_stop_interrupts_runs_under_way(app: App, make_engine: EngineFactory) -> None:
    woken: list[bool] = []
    started = threading.Event()

    @workflow(id="forever", timeout=None)
    def forever(ctx: WorkflowContext[Any]) -> None:
        started.set()
        woken.append(ctx.cancelled.wait(60))  # True: woken by the stop, not by the wait's end

    engine = make_engine(forever, background="threads")
    data = engine.trigger("forever", async_=True)
    # The workflow's own body, not the row's `running`: a stop between the claim and the
    # attempt interrupts the run before it starts (rightly), and nothing would wake. Bounds
    # for a loaded machine (a full run once took more than 5 s to start the run).
    assert started.wait(30)
    engine.stop()
    wait_for(lambda: woken == [True], 30)
    status = engine.get_status(data.execution_id)
    # Queued again for the next start (tests/engine/test_resume.py).
    assert (status.status, status.error) == ("pending", None)
    assert [i.reason for i in status.interruptions] == ["interrupted: the engine stopped"]
    assert not engine.running


# -- crash recovery and pruning -----------------------------------------------------------------


def insert_row(app: App, execution_id: str, **values: Any) -> None:
    row: dict[str, Any] = {
        "id": execution_id,
        "workflow_id": "echo",
        "workflow_name": "Echo",
        "trigger_kind": "manual",
        "trigger_detail": {"via": "api"},
        "input": {},
        "status": "completed",
        "progress": 0,
        "attempt": 1,
        "created": 1_000,
    }
    row.update(values)
    with app.db.begin() as conn:
        conn.execute(insert(Execution).values(**row))


def test_rows_left_running_by_a_dead_process_are_queued_again(
    app: App, make_engine: EngineFactory
) -> None:
    host, now = socket.gethostname(), int(time.time() * 1000)
    insert_row(app, "dead", created=now, status="running", process=f"{host}:999999999", started=now)
    insert_row(
        app,
        "mine-before",
        created=now,
        status="running",
        process=f"{host}:{os.getpid()}",
        started=now,
    )
    insert_row(
        app, "alive", created=now, status="running", process=f"{host}:{os.getppid()}", started=now
    )
    insert_row(app, "elsewhere", created=now, status="running", process="other-host:1", started=now)
    engine = make_engine(echo)
    statuses = {r.id: (r.status, r.process) for r in rows(app)}
    assert statuses["dead"] == ("pending", None)
    assert statuses["mine-before"][0] == "pending"
    assert statuses["alive"] == ("running", f"{host}:{os.getppid()}")
    assert statuses["elsewhere"] == ("running", "other-host:1")
    assert [i.reason for i in engine.get_status("dead").interruptions] == [
        f"interrupted: the process running it ({host}:999999999) stopped"
    ]


def test_a_reused_pid_does_not_keep_a_row_running(app: App, make_engine: EngineFactory) -> None:
    """After a reboot the pid may belong to a younger process: that cannot be our runner."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    host = socket.gethostname()
    insert_row(
        app,
        "old",
        created=int(time.time() * 1000),
        status="running",
        process=f"{host}:{os.getppid()}",
        started=1_000,
    )
    make_engine(echo)
    assert {r.id: r.status for r in rows(app)}["old"] == "pending"  # queued again


def test_history_is_pruned_by_age_and_count(app: App, make_engine: EngineFactory) -> None:
    engine = make_engine(echo, history_retention_days=30, history_retention_count=4)
    day = 86_400_000
    now = 100 * day
    for n in range(6):
        insert_row(app, f"recent-{n}", created=now - n * 1000)
    insert_row(app, "old", created=now - 40 * day)
    insert_row(app, "old-but-pending", status="pending", created=now - 40 * day)
    insert_row(app, "old-but-running", status="running", process="x:1", created=now - 40 * day)
    assert engine.prune(now=now) == 3
    assert sorted(r.id for r in rows(app)) == [
        "old-but-pending",
        "old-but-running",
        "recent-0",
        "recent-1",
        "recent-2",
        "recent-3",
    ]
    unlimited = make_engine(echo, history_retention_days=0, history_retention_count=0)
    assert unlimited.prune(now=now * 10) == 0


def test_a_prune_that_fails_at_start_does_not_stop_the_engine(
    app: App, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruning is housekeeping: a cache locked past the busy timeout at start is logged, and
    the engine runs workflows all the same."""

    def locked(*args: object, **kwargs: object) -> int:
        raise OperationalError("DELETE FROM executions", {}, Exception("database is locked"))

    monkeypatch.setattr(executions, "prune", locked)
    with capture_logs() as logs:
        engine = make_engine(echo)
    assert engine.trigger("echo").status == "completed"
    warning = next(e for e in logs if e["event"] == "pruning history at start failed")
    assert "database is locked" in warning["error"]


# -- what the core answers ----------------------------------------------------------------------


def test_history_pages_and_list_counts(app: App, make_engine: EngineFactory) -> None:
    engine = make_engine(echo, explode)
    ids = [engine.trigger("echo").execution_id for _ in range(3)]
    engine.trigger("explode")
    page = engine.get_history(limit=2)
    assert (page.total, page.limit, page.offset, page.has_more) == (4, 2, 0, True)
    assert page.executions[0].workflow_id == "explode"  # newest first
    rest = engine.get_history(limit=2, offset=2)
    assert not rest.has_more and len(rest.executions) == 2
    only_echo = engine.get_history("echo", limit=500, offset=-5)
    assert (only_echo.limit, only_echo.offset, only_echo.total) == (100, 0, 3)
    assert {e.execution_id for e in only_echo.executions} == set(ids)
    assert set(only_echo.to_wire()["executions"][0]) >= {
        "executionId",
        "workflowId",
        "workflowName",
        "status",
        "startTime",
        "endTime",
        "duration",
        "error",
    }

    listing = engine.list_workflows()
    by_id = {w.id: w for w in listing.workflows}
    assert listing.count == 2
    assert by_id["echo"].execution_count == 3
    assert by_id["echo"].last_executed == engine.get_status(ids[-1]).start_time
    assert by_id["echo"].input_schema["properties"]["times"]["type"] == "integer"
    assert by_id["echo"].triggers == ["manual"]
    assert listing.to_wire()["workflows"][0].keys() >= {
        "id",
        "name",
        "description",
        "enabled",
        "triggers",
        "lastExecuted",
        "executionCount",
    }


def test_list_filters_on_enabled_and_reports_plugin_errors(
    app: App, make_engine: EngineFactory
) -> None:
    engine = make_engine(echo, explode, workflows={"explode": {"enabled": False}})
    assert [w.id for w in engine.list_workflows(enabled=True).workflows] == ["echo"]
    assert [w.id for w in engine.list_workflows(enabled=False).workflows] == ["explode"]
    assert engine.running and not engine.degraded and engine.plugin_errors == []
    engine.registry.add_error("plugins/broken.py", "SyntaxError: nope")
    assert engine.degraded
    assert engine.plugin_errors == ["plugins/broken.py: SyntaxError: nope"]
    assert engine.list_workflows().errors[0].source == "plugins/broken.py"


def test_context_gives_read_only_cache_settings_and_trigger(
    app: App, make_engine: EngineFactory, write_notes: Any
) -> None:
    write_notes({"a.md": "# A", "b.md": "# B"})
    app.indexer.reconcile()
    seen: dict[str, Any] = {}

    @workflow(id="inspect")
    def inspect_ctx(ctx: WorkflowContext[Any]) -> None:
        with ctx.cache.snapshot() as conn:
            seen["notes"] = sorted(conn.execute(select(Note.path)).scalars())
            try:
                conn.execute(text("DELETE FROM notes"))
            except Exception as exc:
                seen["write"] = str(exc)
        seen["settings"] = ctx.settings
        seen["trigger"] = ctx.trigger
        seen["vault"] = ctx.weaver_settings.vault

    engine = make_engine(inspect_ctx, workflows={"inspect": {"settings": {"k": 1}}})
    assert engine.trigger("inspect", via="cli").status == "completed"
    assert seen["notes"] == ["a.md", "b.md"]
    assert "readonly" in seen["write"] or "read-only" in seen["write"]
    assert seen["settings"] == {"k": 1}
    assert seen["trigger"] == ManualTrigger(via="cli")
    assert seen["vault"] == app.settings.vault
    app.indexer.reconcile(full=True)  # connections back in the pool can write again
