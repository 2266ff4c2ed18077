"""A reader (`weaver serve --no-vault`) queues workflow runs on PostgreSQL: trigger_workflow is
offered there (not on SQLite, where the cache file is the writer's alone), records the pending
row and its job through the reader's own writable engine, a worker runs it, and any other
reader answers its status. The notes' tables stay behind the read-only session."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client
from sqlalchemy.engine import make_url

from weaver.config import Settings
from weaver.engine import Registry, WorkflowContext, WorkflowEngine, workflow
from weaver.engine.jobs import build_worker_app, conninfo_of, ensure_job_schema, worker_queues
from weaver.mcp_server.server import build_server
from weaver.runtime.app import App, open_app, reader_queues
from weaver.runtime.engines import engine_for, reading_engine
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.anyio


@workflow(id="echo", name="Echo")
def echo(ctx: WorkflowContext[Any]) -> dict[str, Any]:
    return {"attempt": ctx.attempt}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def registry() -> Registry:
    found = Registry()
    found.register(echo)
    return found


def open_reader(settings: Settings) -> App:
    """As `weaver serve --no-vault` opens its App (`host.serve.run_serve`)."""
    queue = reader_queues(settings)
    return open_app(settings.model_copy(update={"read_only": True}), files=False, queue=queue)


def reader_server(app: App) -> Any:
    state = ServerState(app, watch=False, engine=reading_engine(app, registry()), may_write=False)
    return build_server(state)


def envelope(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


@pytest.fixture
def readers(app: App) -> Iterator[list[App]]:
    """Two readers of the writer's cache (`app`, migrated by the writer)."""
    opened = [open_reader(app.settings) for _ in range(2)]
    yield opened
    for reader in opened:
        reader.close()


@pytest.mark.both_backends
async def test_a_reader_offers_trigger_workflow_on_postgresql_only(
    backend: str, readers: list[App]
) -> None:
    async with Client(reader_server(readers[0])) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    on_postgres = backend == "postgres"
    assert ("trigger_workflow" in names) is on_postgres
    assert "create_file" not in names and "update_file" not in names
    assert ("queues the run for the workers" in instructions) is on_postgres


async def test_a_read_only_reader_on_postgresql_queues_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(vault=tmp_path, database_url=postgres_url, read_only=True)
    assert not reader_queues(settings)
    reader = open_reader(settings)
    try:
        assert reader.queue_db is None
        async with Client(reader_server(reader)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
        assert "trigger_workflow" not in names
    finally:
        reader.close()


async def test_an_async_trigger_on_a_reader_is_run_by_a_worker_and_seen_by_another(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(vault=tmp_path, database_url=postgres_url)
    writer = open_app(settings)
    ensure_job_schema(postgres_url)  # as the writer's or a worker's engine does as it starts
    first, second = open_reader(settings), open_reader(settings)
    try:
        async with Client(reader_server(first)) as client:
            queued = envelope(
                await client.call_tool(
                    "trigger_workflow",
                    {"workflowId": "echo", "async": True},
                )
            )
        assert queued["success"], queued
        execution_id = queued["data"]["executionId"]
        assert queued["data"]["status"] == "pending"
        assert "workers" in queued["data"]["message"]
        await run_worker_until_idle(writer)
        async with Client(reader_server(second)) as client:
            status = envelope(
                await client.call_tool("get_workflow_status", {"executionId": execution_id})
            )
        assert status["success"], status
        assert status["data"]["status"] == "completed"
        assert status["data"]["result"] == {"attempt": 1}
        assert status["data"]["trigger"]["detail"] == {"via": "mcp"}
    finally:
        first.close()
        second.close()
        writer.close()


async def test_a_sync_trigger_on_a_reader_waits_for_a_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(vault=tmp_path, database_url=postgres_url, workflow_poll_ms=100)
    writer = open_app(settings)
    ensure_job_schema(postgres_url)
    reader = open_reader(settings)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_worker_until_cancelled, writer)
            async with Client(reader_server(reader)) as client:
                with anyio.fail_after(30):
                    done = envelope(
                        await client.call_tool("trigger_workflow", {"workflowId": "echo"})
                    )
            tg.cancel_scope.cancel()
        assert done["success"], done
        assert (done["data"]["mode"], done["data"]["status"]) == ("sync", "completed")
        assert done["data"]["result"]["attempt"] == 1
    finally:
        reader.close()
        writer.close()


async def test_the_readers_queue_leaves_the_notes_read_only(
    postgres_url: str, tmp_path: Path
) -> None:
    """Least privilege: the reader's cache engine refuses writes; only its queue engine may."""
    reader = open_reader(Settings(vault=tmp_path, database_url=postgres_url))
    try:
        assert reader.queue_db is not None and reader.queue_db is not reader.db
        with reader.db.connect() as conn, pytest.raises(Exception, match="read-only"):
            conn.exec_driver_sql("DELETE FROM notes")
    finally:
        reader.close()


def worker_engine(app: App) -> WorkflowEngine:
    engine = engine_for(app, registry(), background="jobs")
    engine.start(subscribe=False)
    return engine


async def run_worker_until_idle(app: App) -> None:
    """A real Procrastinate worker, as `weaver worker` runs one, until no job is left."""
    engine = worker_engine(app)
    try:
        jobs_app = build_worker_app(engine)
        async with jobs_app.open_async():
            await jobs_app.run_worker_async(
                queues=worker_queues(engine), wait=False, install_signal_handlers=False
            )
    finally:
        engine.stop()


async def run_worker_until_cancelled(app: App) -> None:
    engine = worker_engine(app)
    try:
        jobs_app = build_worker_app(engine)
        async with jobs_app.open_async():
            await jobs_app.run_worker_async(
                queues=worker_queues(engine),
                install_signal_handlers=False,
                fetch_job_polling_interval=0.1,
            )
    finally:
        engine.stop()


async def test_a_reader_before_any_writer_or_worker_says_who_makes_the_job_tables(
    postgres_url: str, tmp_path: Path
) -> None:
    """A reader creates nothing (least privilege): with the job system's tables not made yet
    (only `weaver index` ran), a trigger is refused, naming who makes them, and records
    nothing."""
    reader = open_reader(Settings(vault=tmp_path, database_url=postgres_url))
    try:
        async with Client(reader_server(reader)) as client:
            refused = envelope(
                await client.call_tool("trigger_workflow", {"workflowId": "echo", "async": True})
            )
            history = envelope(await client.call_tool("get_workflow_history", {}))
        assert not refused["success"]
        assert "job system" in refused["error"] and "weaver worker" in refused["error"]
        assert history["data"]["total"] == 0
    finally:
        reader.close()


READER_GRANTS = """
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};
GRANT INSERT ON executions, procrastinate_jobs, procrastinate_events TO {role};
GRANT UPDATE ON executions TO {role};
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


@pytest.fixture
def reader_role_url(postgres_url: str) -> Iterator[str]:
    """`postgres_url` as a role granted what docs/deployment.md gives readers: reading every
    table, writing only the executions and the job system's queue."""
    role = f"reader_{secrets.token_hex(4)}"
    url = make_url(postgres_url)
    ensure_job_schema(postgres_url)
    with psycopg.connect(conninfo_of(postgres_url), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(READER_GRANTS.format(role=role))
    yield url.set(username=role, password=None).render_as_string(hide_password=False)
    with psycopg.connect(conninfo_of(postgres_url), autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


async def test_a_reader_needs_no_more_than_the_queues_grants(
    reader_role_url: str, tmp_path: Path
) -> None:
    """Least privilege held by the database: a reader logged in as a role that may write only
    the queue's tables serves reads and queues a run (and nothing it does needs more)."""
    reader = open_reader(Settings(vault=tmp_path, database_url=reader_role_url))
    try:
        engine = reading_engine(reader, registry())
        state = ServerState(reader, watch=False, engine=engine, may_write=False)
        async with Client(build_server(state)) as client:
            queued = envelope(
                await client.call_tool("trigger_workflow", {"workflowId": "echo", "async": True})
            )
            assert queued["success"], queued
            stats = envelope(await client.call_tool("get_stats", {}))
            assert stats["success"], stats
        # What a sync trigger whose caller went away does to its pending run.
        cancelled = engine.cancel(queued["data"]["executionId"])
        assert cancelled.status == "cancelled"
        assert reader.queue_db is not None
        with reader.queue_db.connect() as conn, pytest.raises(Exception, match="permission"):
            conn.exec_driver_sql("DELETE FROM notes")
    finally:
        reader.close()
