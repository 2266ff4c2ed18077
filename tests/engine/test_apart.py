"""A burst of workflow runs (a first index's) run in a child process: the same runs, the same
records as in process, only run by another process; what the child leaves undone (it cannot
start, the engine stops under it) is run here or queued again, never lost."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_for, write_files
from weaver.cache import executions
from weaver.cache.executions import ExecutionRecord
from weaver.cache.records import RecordFilter, list_records
from weaver.config import Settings
from weaver.engine import WorkflowEngine, load_registry
from weaver.engine import apart as apart_module
from weaver.engine.apart import ApartRuns
from weaver.runtime import engines
from weaver.runtime.app import App, open_app
from weaver.runtime.engines import engine_for

NOTES = {
    "a.md": "# A\n\nLinks to [[b]] and [[missing]]. #topic\n\n- [ ] open task\n",
    "b.md": "---\ntype: spec\n---\n# B\n\nTODO write the requirements.\n",
    "Concepts/Graph.md": "# Graph\n\nNodes and edges, see [[a]].\n",
    "notes/c.md": "Plain words, no links.\n",
}
RECORDING = ("file-change-logger", "markdown-analyzer", "concept-tracker", "proof-spec-kit-review")
# Stands in for a slow workflow: waits until its run is stopped (or 30 s).
SLOW_PLUGIN = """
from typing import Any
from weaver.engine import OnFile, WorkflowContext, workflow

@workflow(id="slow", name="Slow", triggers=[OnFile("**")], timeout=60)
def slow(ctx: WorkflowContext[Any]) -> str:
    ctx.cancelled.wait(30)
    return "woke"
"""


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Any]:
    """Apps over the notes, each with a cache of its own (`opened(name, **settings)`)."""
    vault = write_files(tmp_path / "vault", NOTES)
    apps: list[App] = []

    def open_one(name: str, **values: Any) -> App:
        url = f"sqlite:///{tmp_path / name}.db"
        apps.append(open_app(Settings(vault=vault, database_url=url, **values)))
        return apps[-1]

    yield open_one
    for app in apps:
        app.close()


def first_index(app: App, min_events: int) -> tuple[WorkflowEngine, list[ExecutionRecord]]:
    """Index every note with a daemon's engine (runs in threads, bursts of `min_events` feed
    events apart) and wait until the runs it set off have ended; the engine and the runs."""
    apart = ApartRuns(app.settings, app.vault, min_events=min_events)
    engine = engine_for(app, load_registry(app.settings), "threads", apart=apart)
    engine.start()
    try:
        app.indexer.reconcile()
        runs = wait_for(lambda: ended_runs(app), 60, "the runs of the first index to end")
    finally:
        engine.stop()
    return engine, runs


def ended_runs(app: App) -> list[ExecutionRecord]:
    """Every run, once there are some and all have ended; else none."""
    with app.db.connect() as conn:
        runs = executions.list_executions(conn, None, 100, 0)[0]
    return runs if all(run.done for run in runs) else []


def recorded(app: App) -> list[tuple[str, str, str, Any]]:
    """Every record of the recording built-ins, without the time it was made at."""
    found = []
    with app.db.connect() as conn:
        for workflow_id in RECORDING:
            for record in list_records(conn, RecordFilter(workflow_id)):
                data = {k: v for k, v in record.data.items() if k != "time"}
                found.append((workflow_id, record.key, record.kind, data))
    return sorted(found, key=repr)


def history(runs: list[ExecutionRecord]) -> list[tuple[str, str, str, int]]:
    return sorted(
        (run.workflow_id, run.trigger_kind, run.status, len(run.trigger_detail["events"]))
        for run in runs
    )


def test_a_burst_runs_in_a_child_and_records_what_it_would_here(opened: Any) -> None:
    here = opened("here")
    in_process, runs_here = first_index(here, min_events=len(NOTES) + 1)
    apart = opened("apart")
    engine, runs_apart = first_index(apart, min_events=len(NOTES))

    assert {run.process for run in runs_here} == {in_process.process}
    assert all(run.process and run.process != engine.process for run in runs_apart)
    assert all(run.status == "completed" for run in runs_apart), [r.error for r in runs_apart]
    assert history(runs_apart) == history(runs_here)
    assert recorded(apart) == recorded(here)
    logged = [r for r in recorded(apart) if r[0] == "file-change-logger"]
    assert sorted(r[1] for r in logged) == sorted(NOTES)
    assert all(r[3]["initial"] is True for r in logged)


def test_a_lasting_process_hosts_an_engine_that_runs_bursts_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write_files(tmp_path / "vault", NOTES)
    monkeypatch.setattr(engines, "ApartRuns", partial(ApartRuns, min_events=len(NOTES)))
    settings = Settings(vault=vault, database_url=f"sqlite:///{tmp_path / 'daemon.db'}")
    app = open_app(settings, lasting=True)  # as the daemon and `weaver serve` open it
    try:
        with engines.hosted_engine(app) as engine:
            app.indexer.reconcile()
            runs = wait_for(lambda: ended_runs(app), 60, "the runs of the first index to end")
            assert all(run.process != engine.process for run in runs)
        assert len([r for r in recorded(app) if r[0] == "file-change-logger"]) == len(NOTES)
    finally:
        app.close()


def test_with_no_child_the_burst_runs_here(opened: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_child(_code: str) -> Any:
        raise OSError("no interpreter")

    monkeypatch.setattr(apart_module, "start_child", no_child)
    app = opened("nochild")
    engine, runs = first_index(app, min_events=1)

    assert {run.process for run in runs} == {engine.process}
    assert all(run.status == "completed" for run in runs)
    assert len([r for r in recorded(app) if r[0] == "file-change-logger"]) == len(NOTES)


def test_stopping_the_engine_queues_the_childs_runs_again(opened: Any, tmp_path: Path) -> None:
    plugins = write_files(tmp_path / "plugins", {"slow.py": SLOW_PLUGIN})
    app = opened("stopped", workflow_dirs=[plugins])
    engine = engine_for(
        app,
        load_registry(app.settings),
        "threads",
        apart=ApartRuns(app.settings, app.vault, min_events=1),
    )
    engine.start()
    try:
        app.indexer.reconcile()
        running = wait_for(lambda: slow_run(app, "running"), 30, "the slow run to start")
        assert running is not None and running.process != engine.process  # the child runs it
    finally:
        engine.stop()  # returns once the child has ended

    after = slow_run(app, None)
    assert after is not None and after.id == running.id
    assert after.status == "pending"  # queued again for the next engine, as interrupted
    assert "interrupted" in (after.message or "")


def slow_run(app: App, status: str | None) -> ExecutionRecord | None:
    with app.db.connect() as conn:
        runs = executions.list_executions(conn, "slow", 10, 0)[0]
    return next((run for run in runs if status is None or run.status == status), None)
