"""Weaver as a cluster on one real PostgreSQL, each role a separate process (`-m cluster`).

One writer (`weaver daemon`) and its standby (`--standby`), three workers (`weaver worker`),
and two HTTP readers (`weaver serve --no-vault --transport http`, each on its own port, behind
the same token), as issue 26 draws it.

- 1,000 executions triggered over MCP (streamable HTTP, several sessions on each reader at
  once) complete exactly once each: each run appends its id to a file, which must hold every
  id the readers answered, once; their status and history read the same from either reader.
- `kill -9` of the worker running a slow workflow (triggered on a reader): the run is retried
  on another worker and completes there, as attempt 2.
- `kill -9` of the writer: a run triggered on a reader meanwhile still completes, and the
  standby takes the writer lock and catches up with a note written meanwhile.
- A schedule firing every second starts one execution per tick, however many workers run.
- A sync trigger, on a reader and with `weaver trigger`, waits for a worker to run it and
  answers the worker's result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from sqlalchemy import create_engine, text

from tests.helpers import free_port, wait_for
from tests.host.test_http_processes import Connection

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

EXECUTIONS = 1000
WORKERS = 3
TOKEN = "cluster-test-token"
# MCP sessions triggering at once on each reader (each its own client, as agents would be).
SESSIONS_PER_READER = 4

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


@dataclass
class Cluster:
    root: Path
    url: str
    config: Path
    vault: Path
    run_log: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    outputs: list[IO[bytes]] = field(default_factory=list)
    readers: list[str] = field(default_factory=list)  # their base URLs

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

    def start_reader(self, name: str, processes: int) -> str:
        """`weaver serve --no-vault` over HTTP on a port of its own, served by `processes`
        processes (`--http-processes`); its base URL."""
        port = free_port()
        self.start(
            "serve",
            "--no-vault",
            "--transport",
            "http",
            "--port",
            str(port),
            "--http-processes",
            str(processes),
            name=name,
        )
        base = f"http://127.0.0.1:{port}"
        self.readers.append(base)
        return base

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
        "http_token": TOKEN,
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
    # The second reader with a reader process beside it (stateless HTTP, one port): calls
    # reach either process, so both must queue runs.
    readers = [cluster.start_reader("reader0", 1), cluster.start_reader("reader1", 2)]
    wait_for(lambda: "daemon started" in (cluster.root / "writer.log").read_text(), 30)
    wait_for(lambda: len(cluster.query("SELECT id FROM procrastinate_workers")) == WORKERS, 30)
    for base in readers:
        wait_for(partial(health, base), 30, f"the reader at {base}")

    try:
        check_exactly_once(cluster)
        check_each_reader_process_queues(cluster)
        check_worker_kill(cluster, workers)
        check_writer_kill(cluster, writer, standby)
        check_schedule(cluster)
        check_sync_trigger(cluster, workers)
    except BaseException:
        print(cluster.logs())
        raise


def health(base: str) -> bool:
    """The reader answers `/health` (it is listening, and its cache opened)."""
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False  # not listening yet


@asynccontextmanager
async def reader_session(base: str) -> AsyncIterator[Client]:
    """One MCP session on a reader, over streamable HTTP, with the cluster's token."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with create_mcp_http_client(headers=headers) as http_client:
        transport = streamable_http_client(base + "/mcp", http_client=http_client)
        async with Client(transport) as client:
            yield client


async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's envelope, which must say success."""
    result = await client.call_tool(name, arguments)
    answer: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert answer["success"], answer
    data: dict[str, Any] = answer["data"]
    return data


def call_reader(base: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def one_call() -> dict[str, Any]:
        async with reader_session(base) as client:
            return await call_tool(client, name, arguments)

    return anyio.run(one_call)


def trigger_everywhere(readers: list[str], total: int) -> list[str]:
    """`total` async triggers of `count`, spread over SESSIONS_PER_READER sessions on each
    reader, all at once; the execution ids the readers answered."""
    sessions = [base for base in readers for _ in range(SESSIONS_PER_READER)]
    shares = [total // len(sessions) + (i < total % len(sessions)) for i in range(len(sessions))]
    answered: list[str] = []

    async def trigger(base: str, count: int) -> None:
        async with reader_session(base) as client:
            for _ in range(count):
                arguments = {"workflowId": "count", "async": True}
                answered.append(
                    (await call_tool(client, "trigger_workflow", arguments))["executionId"]
                )

    async def all_sessions() -> None:
        async with anyio.create_task_group() as tg:
            for base, count in zip(sessions, shares, strict=True):
                tg.start_soon(trigger, base, count)

    anyio.run(all_sessions)
    return answered


def check_exactly_once(cluster: Cluster) -> None:
    answered = trigger_everywhere(cluster.readers, EXECUTIONS)
    assert len(set(answered)) == EXECUTIONS

    def done() -> int:
        rows = cluster.query(
            "SELECT count(*) FROM executions WHERE workflow_id = 'count' AND status = 'completed'"
        )
        return int(rows[0][0])  # type: ignore[call-overload]

    wait_for(lambda: done() == EXECUTIONS, 60, "1,000 executions completed", every=0.2)
    ran = Counter(fields[0] for fields in cluster.lines("count"))
    assert set(ran) == set(answered)
    assert ran.most_common(1)[0][1] == 1  # no execution ran twice
    statuses = cluster.query(
        "SELECT status, count(*) FROM executions WHERE workflow_id = 'count' GROUP BY 1"
    )
    assert statuses == [("completed", EXECUTIONS)]
    # The same answers from either reader, whichever queued the run.
    for base in cluster.readers:
        status = call_reader(base, "get_workflow_status", {"executionId": answered[0]})
        assert (status["status"], status["result"]) == ("completed", "counted")
        history = call_reader(base, "get_workflow_history", {"workflowId": "count", "limit": 1})
        assert history["total"] == EXECUTIONS


def check_each_reader_process_queues(cluster: Cluster) -> None:
    """The second reader's two processes share its port: a new connection reaches either, and
    a run queued on each completes."""
    port = int(cluster.readers[1].rsplit(":", 1)[1])
    queued_by: dict[int, str] = {}

    def queue_on_a_new_connection() -> bool:
        connection = Connection(port, token=TOKEN)
        try:
            pid = connection.health()["process"]["pid"]
            answer = connection.call("trigger_workflow", workflowId="echo", **{"async": True})
        finally:
            connection.http.close()
        assert answer["success"], answer
        queued_by[pid] = answer["data"]["executionId"]
        return len(queued_by) == 2

    wait_for(queue_on_a_new_connection, 30, "a run queued on each process", every=0.02)
    ids = ", ".join(f"'{execution_id}'" for execution_id in queued_by.values())

    def both_completed() -> bool:
        rows = cluster.query(f"SELECT status FROM executions WHERE id IN ({ids})")
        return [status for (status,) in rows] == ["completed", "completed"]

    wait_for(both_completed, 30, "the runs queued on each process", every=0.1)


def check_worker_kill(cluster: Cluster, workers: list[subprocess.Popen[bytes]]) -> None:
    queued = call_reader(
        cluster.readers[1], "trigger_workflow", {"workflowId": "slow", "async": True}
    )
    execution_id = queued["executionId"]
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
    # The readers and workers do not need the writer: a run queued now completes.
    queued = call_reader(
        cluster.readers[0], "trigger_workflow", {"workflowId": "echo", "async": True}
    )

    def indexed() -> bool:
        rows = cluster.query("SELECT path FROM notes WHERE path = 'written-meanwhile.md'")
        return bool(rows)

    wait_for(indexed, 30)
    execution = {"executionId": queued["executionId"]}

    def completed() -> bool:
        status = call_reader(cluster.readers[1], "get_workflow_status", execution)
        return status["status"] == "completed"

    wait_for(completed, 30, "the run queued while the writer was down", every=0.2)
    note = call_reader(cluster.readers[1], "get_file", {"path": "written-meanwhile.md"})
    assert note["path"] == "written-meanwhile.md"
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
    """A sync trigger_workflow on a reader, and `weaver trigger` without --async, wait for a
    worker to run it, and answer its result."""
    alive = {w.pid for w in workers if w.poll() is None}
    answer = call_reader(cluster.readers[1], "trigger_workflow", {"workflowId": "echo"})
    assert (answer["mode"], answer["status"]) == ("sync", "completed")
    assert answer["result"]["worker"] in alive
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
