"""Workflow throughput on PostgreSQL with 1, 2 and 4 `weaver worker` processes (issue 26).

A real PostgreSQL server is started for the group (tests/pg_server.py, as the tests do), with
one database per worker count and workflow. This process first queues a batch of executions
(async triggers, the way the MCP tool and `weaver trigger --async` queue them), then starts
the workers; the clock is the rows' own, from the first run's claim to the last run's end, so
neither the triggering nor the workers' start-up is in the figure (a worker starting a moment
after the others is, a little). Two workflows:

- **CPU-light**: returns at once, so the figure is the job system's and the engine's own cost
  per execution (claim, run, record; fetch and finish the job);
- **sleeps**: waits `SLEEP_S` per run, like a call to a remote service: the figure is bounded
  by the slots (`CONCURRENCY` per worker) and should grow with the workers.

Figures are executions/s, with the ratio to one worker. No target: the issue asks for the
figures, and this machine's cores are shared with whatever else runs (say so when quoting).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure
from tests.benchmarks.worker import clean_env
from tests.pg_server import PostgresServer, start_server
from weaver.config import Settings
from weaver.engine import load_registry
from weaver.runtime.app import open_app
from weaver.runtime.engines import engine_for

SECTION = "workers"
WORKER_COUNTS = (1, 2, 4)
CONCURRENCY = 4  # runs at once per worker
SLEEP_S = 0.05
LIGHT_RUNS, QUICK_LIGHT_RUNS = 1000, 200
SLEEP_RUNS, QUICK_SLEEP_RUNS = 400, 100
TIMEOUT_S = 300.0
WORKER_ARGS = ("worker", "--concurrency", str(CONCURRENCY))
PLUGIN = f"""
import time
from weaver.engine import workflow


@workflow(id="bench-light", name="Bench light", max_concurrent=64)
def light(ctx):
    return ctx.execution_id


@workflow(id="bench-sleep", name="Bench sleep", max_concurrent=64)
def sleepy(ctx):
    time.sleep({SLEEP_S})
    return ctx.execution_id
"""


def run(ctx: BenchContext) -> list[Figure]:
    light = QUICK_LIGHT_RUNS if ctx.quick else LIGHT_RUNS
    sleepy = QUICK_SLEEP_RUNS if ctx.quick else SLEEP_RUNS
    server = start_server()
    rates: dict[tuple[str, int], float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="weaver-bench-workers-") as folder:
            root = ctx.workdir / "workers" if ctx.workdir else Path(folder)
            root.mkdir(exist_ok=True)
            (root / "plugins").mkdir()
            (root / "plugins" / "bench_workflows.py").write_text(textwrap.dedent(PLUGIN))
            (root / "vault").mkdir()
            for workers in WORKER_COUNTS:
                for workflow_id, count in (("bench-light", light), ("bench-sleep", sleepy)):
                    settings = _settings(server, root)
                    rate = _measure(settings, root, workers, workflow_id, count)
                    rates[(workflow_id, workers)] = rate
                    print(f"  {workflow_id}, {workers} worker(s): {rate:.0f}/s", file=sys.stderr)
    finally:
        server.stop()
    return _figures(rates, light, sleepy)


def _settings(server: PostgresServer, root: Path) -> Settings:
    return Settings(
        vault=root / "vault",
        database_url=server.url(server.create_database()),
        workflow_dirs=[root / "plugins"],
        semantic=False,
    )


def _measure(settings: Settings, root: Path, workers: int, workflow_id: str, count: int) -> float:
    """Executions per second of `count` runs of `workflow_id` on `workers` fresh workers."""
    config = root / "weaver.toml"
    config.write_text(
        f"vault = {str(settings.vault)!r}\n"
        f"database_url = {settings.db_url!r}\n"
        f"workflow_dirs = [{str(root / 'plugins')!r}]\n"
        "semantic = false\nlog_level = 'warning'\n"
    )
    app = open_app(settings)
    engine = engine_for(app, load_registry(settings), background="jobs")
    engine.start(subscribe=False)
    for _ in range(count):  # queued before any worker runs: the figure is the workers' own
        engine.trigger(workflow_id, async_=True, via="bench")
    engine.stop()
    app.close()
    logs = [(root / f"{workflow_id}-{workers}-{i}.log").open("wb") for i in range(workers)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "weaver", "--config", str(config), *WORKER_ARGS],
            env=clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for log in logs
    ]
    try:
        _wait(lambda: _completed(settings, workflow_id) >= count, every=0.2)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        for log in logs:
            log.close()
    first, last = _span(settings, workflow_id)
    return count / ((last - first) / 1000)


def _span(settings: Settings, workflow_id: str) -> tuple[int, int]:
    """From the first run's claim to the last run's end, in ms (the rows' own times)."""
    db = create_engine(settings.db_url)
    try:
        with db.connect() as conn:
            row = conn.execute(
                text("SELECT min(started), max(finished) FROM executions WHERE workflow_id = :w"),
                {"w": workflow_id},
            ).one()
    finally:
        db.dispose()
    return int(row[0]), int(row[1])


def _completed(settings: Settings, workflow_id: str) -> int:
    return _count(
        settings,
        "SELECT count(*) FROM executions WHERE status = 'completed' "
        f"AND workflow_id = '{workflow_id}'",
    )


def _count(settings: Settings, sql: str) -> int:
    db = create_engine(settings.db_url)
    try:
        with db.connect() as conn:
            return int(conn.execute(text(sql)).scalar() or 0)
    finally:
        db.dispose()


def _wait(check: Callable[[], bool], every: float = 0.2) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers bench: nothing finished within {TIMEOUT_S:g} s")
        time.sleep(every)


def _figures(rates: dict[tuple[str, int], float], light: int, sleepy: int) -> list[Figure]:
    figures = []
    for workflow_id, label, runs in (
        ("bench-light", "CPU-light workflow", light),
        ("bench-sleep", f"workflow sleeping {SLEEP_S * 1000:.0f} ms", sleepy),
    ):
        one = rates[(workflow_id, 1)]
        for workers in WORKER_COUNTS:
            rate = rates[(workflow_id, workers)]
            figures.append(
                Figure(
                    SECTION,
                    f"{label}, {workers} worker(s) x {CONCURRENCY}",
                    rate,
                    "exec/s",
                    f"{rate:.0f} executions/s ({rate / one:.2f}x one worker, n={runs})",
                    None,
                    {"executions_per_s": rate, "workers": workers, "runs": runs},
                )
            )
    return figures
