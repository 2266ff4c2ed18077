"""Weaver as a cluster on one real PostgreSQL, each role a separate process (`-m cluster`).

One writer (`weaver daemon`) and its standby (`--standby`), three workers (`weaver worker`),
and two processes triggering runs over the database (the readers' `serve --no-vault` is another
branch's work: these stand in for them, through the same engine calls the MCP tools make).

- 1,000 executions triggered from the two processes complete exactly once each: each run
  appends its id to a file, which must hold every id once.
- `kill -9` of the worker running a slow workflow: the run is retried on another worker and
  completes there, as attempt 2.
- `kill -9` of the writer: the standby takes the writer lock and catches up with a note
  written meanwhile.
- A schedule firing every second starts one execution per tick, however many workers run.
- A sync `weaver trigger` waits for a worker to run it and shows the worker's result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from sqlalchemy import create_engine, text

from tests.helpers import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

EXECUTIONS = 1000
WORKERS = 3

PLUGIN = """
import os
import time
from pathlib import Path
from weaver.engine import OnSchedule, workflow

LOG = Path(os.environ["WEAVER_TEST_RUN_LOG"])


def note(line: str) -> None:
    with LOG.open("a") as handle:  # O_APPEND: whole lines from every worker
        handle.write(line + "\\n")


@workflow(id="count", name="Count", max_concurrent=64)
def count(ctx):
    note(f"count {ctx.execution_id}")
    return "counted"


@workflow(id="slow", name="Slow", timeout=60)
def slow(ctx):
    note(f"slow-start {ctx.execution_id} {os.getpid()} {ctx.attempt}")
    time.sleep(3 if ctx.attempt == 1 else 0.2)
    note(f"slow-end {ctx.execution_id} {os.getpid()} {ctx.attempt}")
    return os.getpid()


@workflow(id="echo", name="Echo")
def echo(ctx):
    return {"worker": os.getpid()}


@workflow(id="tick", name="Tick", triggers=[OnSchedule("* * * * * *")], max_concurrent=8)
def tick(ctx):
    return str(ctx.trigger)
"""

TRIGGER = """
import sys
from pathlib import Path
from weaver.config import load_settings
from weaver.engine import WorkflowEngine, load_registry
from weaver.host.app import open_app

settings = load_settings(config_path=Path(sys.argv[1]))
app = open_app(settings)
engine = WorkflowEngine.for_app(app, load_registry(settings), background="jobs")
engine.start(subscribe=False)
for _ in range(int(sys.argv[2])):
    engine.trigger("count", async_=True, via="cluster-test")
engine.stop()
app.close()
"""


@dataclass
class Cluster:
    root: Path
    url: str
    config: Path
    vault: Path
    run_log: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    outputs: list[IO[bytes]] = field(default_factory=list)

    def start(self, *args: str, name: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, "WEAVER_TEST_RUN_LOG": str(self.run_log)}
        log = (self.root / f"{name}.log").open("wb")
        self.outputs.append(log)
        process = subprocess.Popen(
            [sys.executable, "-m", "weaver", "--config", str(self.config), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.processes.append(process)
        return process

    def query(self, sql: str) -> list[tuple[object, ...]]:
        db = create_engine(self.url)
        try:
            with db.connect() as conn:
                return [tuple(row) for row in conn.execute(text(sql))]
        finally:
            db.dispose()

    def lines(self, prefix: str) -> list[list[str]]:
        if not self.run_log.exists():
            return []
        return [
            line.split()[1:]
            for line in self.run_log.read_text().splitlines()
            if line.startswith(prefix + " ")
        ]

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.root.glob("*.log"))
        )


@pytest.fixture
def cluster(postgres_url: str, tmp_path: Path) -> Iterator[Cluster]:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "welcome.md").write_text("# Welcome\n")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "cluster_workflows.py").write_text(textwrap.dedent(PLUGIN))
    config = tmp_path / "weaver.toml"
    settings = {
        "vault": str(vault),
        "database_url": postgres_url,
        "workflow_dirs": [str(plugins)],
        "worker_heartbeat_s": 0.5,
        "worker_stalled_s": 4.0,  # generous: a loaded machine delays heartbeats
        "workflow_poll_ms": 200,
        "semantic": False,
        "log_format": "json",
    }
    config.write_text("\n".join(f"{key} = {json.dumps(value)}" for key, value in settings.items()))
    found = Cluster(tmp_path, postgres_url, config, vault, tmp_path / "runs.txt")
    yield found
    for process in found.processes:
        if process.poll() is None:
            process.kill()
        process.wait(10)
    for output in found.outputs:
        output.close()


def test_a_cluster_runs_each_execution_once_and_survives_kills(cluster: Cluster) -> None:
    writer = cluster.start("daemon", "--no-http", name="writer")
    wait_for(lambda: "writer lock taken" in (cluster.root / "writer.log").read_text(), 30)
    standby = cluster.start("daemon", "--no-http", "--standby", name="standby")
    workers = [cluster.start("worker", name=f"worker{i}") for i in range(WORKERS)]
    wait_for(lambda: "daemon started" in (cluster.root / "writer.log").read_text(), 30)
    wait_for(lambda: len(cluster.query("SELECT id FROM procrastinate_workers")) == WORKERS, 30)

    try:
        check_exactly_once(cluster)
        check_worker_kill(cluster, workers)
        check_writer_kill(cluster, writer, standby)
        check_schedule(cluster)
        check_sync_trigger(cluster, workers)
    except BaseException:
        print(cluster.logs())
        raise


def check_exactly_once(cluster: Cluster) -> None:
    triggers = [
        subprocess.Popen(
            [sys.executable, "-c", TRIGGER, str(cluster.config), str(EXECUTIONS // 2)],
            env={**os.environ, "WEAVER_TEST_RUN_LOG": str(cluster.run_log)},
        )
        for _ in range(2)
    ]
    cluster.processes += triggers
    for process in triggers:
        assert process.wait(60) == 0

    def done() -> int:
        rows = cluster.query(
            "SELECT count(*) FROM executions WHERE workflow_id = 'count' AND status = 'completed'"
        )
        return int(rows[0][0])  # type: ignore[call-overload]

    wait_for(lambda: done() == EXECUTIONS, 60, "1,000 executions completed", every=0.2)
    ran = Counter(fields[0] for fields in cluster.lines("count"))
    assert len(ran) == EXECUTIONS
    assert ran.most_common(1)[0][1] == 1  # no execution ran twice
    statuses = cluster.query(
        "SELECT status, count(*) FROM executions WHERE workflow_id = 'count' GROUP BY 1"
    )
    assert statuses == [("completed", EXECUTIONS)]


def check_worker_kill(cluster: Cluster, workers: list[subprocess.Popen[bytes]]) -> None:
    command = ["--config", str(cluster.config), "trigger", "slow", "--async", "--json"]
    trigger = subprocess.run(
        [sys.executable, "-m", "weaver", *command],
        capture_output=True,
        env={**os.environ, "WEAVER_TEST_RUN_LOG": str(cluster.run_log)},
        check=False,
    )
    assert trigger.returncode == 0, trigger.stderr.decode()
    execution_id = json.loads(trigger.stdout)["executionId"]
    wait_for(lambda: cluster.lines("slow-start"), 20)
    _id, pid, _attempt = cluster.lines("slow-start")[0]
    assert _id == execution_id
    victim = next(w for w in workers if w.pid == int(pid))
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(10)

    def ended() -> tuple[object, ...] | None:
        rows = cluster.query(
            f"SELECT status, attempt, process FROM executions WHERE id = '{execution_id}'"
        )
        return rows[0] if rows and rows[0][0] == "completed" else None

    wait_for(ended, 30)
    _status, attempt, process = ended() or ()
    assert attempt == 2
    assert not str(process).endswith(f":{pid}")
    ends = cluster.lines("slow-end")
    assert len(ends) == 1 and ends[0][1] != pid and ends[0][2] == "2"


def check_writer_kill(
    cluster: Cluster, writer: subprocess.Popen[bytes], standby: subprocess.Popen[bytes]
) -> None:
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(10)
    (cluster.vault / "written-meanwhile.md").write_text("# Meanwhile\n\nWhile nobody watched.\n")

    def indexed() -> bool:
        rows = cluster.query("SELECT path FROM notes WHERE path = 'written-meanwhile.md'")
        return bool(rows)

    wait_for(indexed, 30)
    log = (cluster.root / "standby.log").read_text()
    assert "standing by" in log and "takes over" in log
    assert standby.poll() is None
    holder = cluster.query(
        "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'weaver-writer%'"
    )
    assert [str(name) for (name,) in holder] == [
        f"weaver-writer {os.uname().nodename}:{standby.pid} since {str(holder[0][0]).split()[-1]}"
    ]


def check_schedule(cluster: Cluster) -> None:
    def ticks() -> list[tuple[object, ...]]:
        return cluster.query(
            "SELECT trigger_detail::text, count(*) FROM executions WHERE workflow_id = 'tick' "
            "GROUP BY 1"
        )

    wait_for(lambda: len(ticks()) >= 3, 20)
    assert all(count == 1 for _detail, count in ticks())


def check_sync_trigger(cluster: Cluster, workers: list[subprocess.Popen[bytes]]) -> None:
    """`weaver trigger` without --async waits for a worker to run it, and shows its result."""
    command = ["--config", str(cluster.config), "trigger", "echo", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "weaver", *command],
        capture_output=True,
        env={**os.environ, "WEAVER_TEST_RUN_LOG": str(cluster.run_log)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert (answer["mode"], answer["status"]) == ("sync", "completed")
    assert answer["result"]["worker"] in {w.pid for w in workers if w.poll() is None}
