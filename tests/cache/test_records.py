"""Workflow records: what `ctx.records` keeps and reads back, the get_workflow_records tool
through the SDK's in-memory client, and `weaver records`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from tests.helpers import EngineFactory
from weaver.cache.records import (
    NewRecord,
    RecordFilter,
    RecordsReadOnlyError,
    WorkflowRecords,
    fetch_page,
    insert_records,
    prune_superseded,
)
from weaver.cli import main
from weaver.engine import (
    Registry,
    WorkflowContext,
    WorkflowDefinitionError,
    load_registry,
    retention,
    workflow,
)
from weaver.mcp_server import record_tools
from weaver.mcp_server.catalog import tools_of
from weaver.runtime.app import App
from weaver.runtime.engines import engine_for
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.both_backends

DAY_MS = 86_400_000


def seed(app: App) -> None:
    """Three analyses of two notes and one change, at known times."""
    rows = [
        NewRecord("a.md", {"words": 1}, "analysis", 1_000),
        NewRecord("b.md", {"words": 5}, "analysis", 2_000),
        NewRecord("a.md", {"words": 3}, "analysis", 3_000),
    ]
    with app.db.begin() as conn:
        insert_records(conn, "markdown-analyzer", rows, now=0, execution_id="wf_exec_x")
        insert_records(conn, "file-change-logger", [NewRecord("a.md", {"kind": "add"})], now=500)


# -- the store a workflow uses -------------------------------------------------------------------


def test_records_keep_a_timeline_per_key(app: App) -> None:
    seed(app)
    records = WorkflowRecords(app.db, "markdown-analyzer")
    latest = records.latest("a.md")
    assert latest is not None and latest.data == {"words": 3}
    assert latest.execution_id == "wf_exec_x"
    assert records.latest("missing.md") is None
    assert {
        k: r.data["words"] for k, r in records.latest_many(["a.md", "b.md", "c.md"]).items()
    } == {
        "a.md": 3,
        "b.md": 5,
    }
    assert [r.data["words"] for r in records.history("a.md")] == [3, 1]
    assert [r.data["words"] for r in records.history(oldest_first=True)] == [1, 5, 3]
    assert [r.key for r in records.history(since=2_000, until=3_000)] == ["b.md"]
    assert records.history(kind="state") == []
    # Scoped to its own workflow: the change log's record is not among them.
    assert len(records.history(limit=None)) == 3


def test_replace_keeps_one_state_and_move_key_carries_the_timeline(app: App) -> None:
    records = WorkflowRecords(app.db, "concept-tracker")
    records.replace("x.md", {"version": 1}, kind="state")
    records.replace("x.md", {"version": 2}, kind="state")
    records.append("x.md", {"version": 2}, kind="version")
    assert [r.data for r in records.history("x.md", kind="state")] == [{"version": 2}]
    assert records.move_key("x.md", "renamed/x.md") == 2
    assert records.history("x.md") == []
    assert len(records.history("renamed/x.md")) == 2


def test_another_workflows_records_are_read_only(app: App) -> None:
    seed(app)
    mine = WorkflowRecords(app.db, "file-deletion-monitor")
    theirs = mine.of("markdown-analyzer")
    assert theirs.latest("b.md") is not None
    with pytest.raises(RecordsReadOnlyError):
        theirs.append("b.md", {"words": 0})


def test_a_timed_out_attempt_cannot_write_records(app: App) -> None:
    release, tried = threading.Event(), threading.Event()

    @workflow(id="slow-recorder", timeout=0.1)
    def slow(ctx: WorkflowContext[Any]) -> None:
        release.wait(5)
        try:
            ctx.records.append("late.md", {"too": "late"})
        finally:
            tried.set()

    registry = Registry()
    registry.register(slow)
    engine = engine_for(app, registry, background="inline")
    engine.start()
    try:
        assert engine.trigger("slow-recorder").status == "failed"
        release.set()
        assert tried.wait(5)  # the abandoned thread tried its write (and was refused)
    finally:
        engine.stop()
    assert WorkflowRecords(app.db, "slow-recorder").history() == []


def test_fetch_page_clamps_and_pages(app: App) -> None:
    seed(app)
    page = fetch_page(app.db, RecordFilter("markdown-analyzer"), limit=2, offset=-5)
    assert (page.total, page.limit, page.offset, page.has_more) == (3, 2, 0, True)
    assert [r.recorded_at for r in page.items] == [3_000, 2_000]
    assert fetch_page(app.db, RecordFilter("markdown-analyzer"), limit=10_000).limit == 500


# -- retention -----------------------------------------------------------------------------------


def timeline(app: App, workflow_id: str) -> list[tuple[str, str, int]]:
    records = WorkflowRecords(app.db, workflow_id).history(limit=None, oldest_first=True)
    return [(r.key, r.kind, r.recorded_at) for r in records]


def test_pruning_drops_old_superseded_records_and_keeps_each_newest(app: App) -> None:
    rows = [
        NewRecord("a.md", {}, "analysis", 1 * DAY_MS),  # superseded, old: goes
        NewRecord("a.md", {}, "analysis", 2 * DAY_MS),  # superseded, old: goes
        NewRecord("a.md", {}, "analysis", 8 * DAY_MS),  # superseded, recent: stays
        NewRecord("a.md", {}, "analysis", 9 * DAY_MS),  # newest of a.md: stays
        NewRecord("a.md", {}, "state", 1 * DAY_MS),  # the only state of a.md: stays
        NewRecord("b.md", {}, "analysis", 1 * DAY_MS),  # b.md untouched since: stays
        NewRecord("c.md", {"n": 1}, "analysis", 3 * DAY_MS),  # two at the same time:
        NewRecord("c.md", {"n": 2}, "analysis", 3 * DAY_MS),  # the later insert is newest
    ]
    with app.db.begin() as conn:
        insert_records(conn, "markdown-analyzer", rows, now=0)
        insert_records(conn, "other", rows, now=0)
        assert prune_superseded(conn, "markdown-analyzer", 5 * DAY_MS, limit=2) == 2
        assert prune_superseded(conn, "markdown-analyzer", 5 * DAY_MS, limit=10) == 1

    assert timeline(app, "markdown-analyzer") == [
        ("a.md", "state", 1 * DAY_MS),
        ("b.md", "analysis", 1 * DAY_MS),
        ("c.md", "analysis", 3 * DAY_MS),
        ("a.md", "analysis", 8 * DAY_MS),
        ("a.md", "analysis", 9 * DAY_MS),
    ]
    newest_c = WorkflowRecords(app.db, "markdown-analyzer").latest("c.md")
    assert newest_c is not None and newest_c.data == {"n": 2}
    assert len(timeline(app, "other")) == len(rows)  # another workflow's records are its own


def test_the_engine_prunes_by_each_workflows_retention(
    app: App, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "PRUNE_BATCH", 1)  # a long history, batch by batch

    @workflow(id="chatty", records_retention_days=30)
    def chatty(ctx: WorkflowContext[Any]) -> None: ...

    @workflow(id="keeper")
    def keeper(ctx: WorkflowContext[Any]) -> None: ...

    analyzer = load_registry(app.settings).get("markdown-analyzer")
    assert analyzer is not None
    engine = make_engine(chatty, keeper, analyzer)
    now = 200 * DAY_MS
    old_and_new = [
        NewRecord("x.md", {}, "log", now - 121 * DAY_MS),
        NewRecord("x.md", {}, "log", now - 120 * DAY_MS),
        NewRecord("x.md", {}, "log", now),
    ]
    with app.db.begin() as conn:
        for workflow_id in ("chatty", "keeper", "markdown-analyzer"):
            insert_records(conn, workflow_id, old_and_new, now=0)

    # chatty's old records (30 days kept), and the built-in analyzer's (90 days)
    assert engine.prune(now=now) == 4
    assert timeline(app, "chatty") == [("x.md", "log", now)]
    assert len(timeline(app, "keeper")) == 3  # 0 days (the default) keeps every record
    assert timeline(app, "markdown-analyzer") == [("x.md", "log", now)]


def test_config_sets_a_workflows_retention(app: App, make_engine: EngineFactory) -> None:
    @workflow(id="chatty", records_retention_days=30)
    def chatty(ctx: WorkflowContext[Any]) -> None: ...

    # Records from the future of the engines' own start-up prune, which runs at the real now.
    now = time.time_ns() // 1_000_000 + 1_000 * DAY_MS
    old_and_new = [
        NewRecord("x.md", {}, "log", now - 40 * DAY_MS),
        NewRecord("x.md", {}, "log", now),
    ]
    with app.db.begin() as conn:
        insert_records(conn, "chatty", old_and_new, now=0)
    kept_all = make_engine(chatty, workflows={"chatty": {"records_retention_days": 0}})
    assert kept_all.prune(now=now) == 0
    longer = make_engine(chatty, workflows={"chatty": {"records_retention_days": 50}})
    assert longer.prune(now=now) == 0  # 40 days old is within 50
    assert make_engine(chatty).prune(now=now) == 1  # the declared 30 days
    broken = make_engine(chatty, workflows={"chatty": {"records_retention_days": -1}})
    assert "chatty" not in broken.registry
    assert "records_retention_days" in broken.plugin_errors[0]
    with pytest.raises(WorkflowDefinitionError, match="records_retention_days cannot be negative"):
        workflow(id="bad", records_retention_days=-1)


# -- get_workflow_records ------------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(app: App) -> AsyncIterator[Client]:
    seed(app)
    state = ServerState(app, watch=False)
    server = MCPServer(name="weaver-test", tools=tools_of(state, record_tools))
    async with Client(server) as connected:
        yield connected


async def call(client: Client, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("get_workflow_records", args)
    envelope: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.structured_content == envelope
    assert result.is_error is (not envelope["success"])
    return envelope


@pytest.mark.anyio
async def test_the_tool_reads_records_by_key_time_and_page(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["get_workflow_records"].input_schema
    assert schema["required"] == ["workflowId"]
    assert set(schema["properties"]) == {
        "workflowId",
        "key",
        "kind",
        "since",
        "until",
        "limit",
        "offset",
    }
    assert tools["get_workflow_records"].annotations.read_only_hint is True  # type: ignore[union-attr]

    envelope = await call(client, workflowId="markdown-analyzer", key="a.md", limit=1)
    assert envelope["success"] is True
    data = envelope["data"]
    assert (data["total"], data["hasMore"]) == (2, True)
    newest = data["records"][0]
    assert newest == {
        "id": newest["id"],
        "workflowId": "markdown-analyzer",
        "key": "a.md",
        "kind": "analysis",
        "recordedAt": 3_000,
        "executionId": "wf_exec_x",
        "data": {"words": 3},
    }
    window = await call(client, workflowId="markdown-analyzer", since=1_500, until=3_000)
    assert [r["key"] for r in window["data"]["records"]] == ["b.md"]
    iso = await call(
        client,
        workflowId="markdown-analyzer",
        since="1970-01-01T00:00:01.500Z",
        until="1970-01-01T00:00:03+00:00",
    )
    assert iso["data"]["records"] == window["data"]["records"]
    second = await call(client, workflowId="markdown-analyzer", limit=1, offset=1, key="")
    assert second["data"]["records"][0]["recordedAt"] == 2_000
    none = await call(client, workflowId="no-such-workflow")
    assert none["data"]["records"] == [] and none["data"]["total"] == 0


@pytest.mark.anyio
async def test_the_tool_answers_bad_arguments_in_an_envelope(client: Client) -> None:
    envelope = await call(client, workflowId="markdown-analyzer", since="yesterday")
    assert envelope["success"] is False
    assert envelope["error"].startswith("Invalid arguments: since")
    missing = await call(client)
    assert missing["error"].startswith("Invalid arguments: workflowId")


@workflow(id="markdown-analyzer")
def analyzer(_ctx: WorkflowContext[Any]) -> None: ...


@pytest.mark.anyio
async def test_a_misspelt_workflow_id_is_named_not_answered_empty(
    app: App, make_engine: EngineFactory
) -> None:
    seed(app)
    state = ServerState(app, watch=False, engine=make_engine(analyzer))
    async with Client(MCPServer(name="weaver-test", tools=tools_of(state, record_tools))) as client:
        typo = await call(client, workflowId="markdown-analyser")
        assert typo["error"] == (
            "Workflow not found: 'markdown-analyser' (did you mean 'markdown-analyzer'?)"
        )
        # A workflow that is there, with nothing matching: an empty page, as before; and the
        # records of a workflow since removed are still read.
        empty = await call(client, workflowId="markdown-analyzer", kind="nothing")
        assert (empty["success"], empty["data"]["total"]) == (True, 0)
        removed = await call(client, workflowId="file-change-logger")
        assert removed["data"]["total"] == 1
        # ... also when nothing of it matches: its id is known from what it recorded.
        filtered = await call(client, workflowId="file-change-logger", kind="nothing")
        assert (filtered["success"], filtered["data"]["total"]) == (True, 0)


# -- weaver records ------------------------------------------------------------------------------


def weaver(app: App, *args: str) -> int:
    """The CLI on `app`'s vault and cache (whichever database the test runs on)."""
    vault = str(app.settings.vault)
    return main(["--vault", vault, "--db", app.settings.db_url, "--log-level", "error", *args])


def test_cli_prints_records_as_a_table_or_json(
    app: App, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(app)
    assert weaver(app, "records", "markdown-analyzer", "--limit", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RECORDED", "KEY", "KIND", "DATA"]
    assert lines[1].split()[2:] == ["a.md", "analysis", '{"words":', "3}"]
    assert lines[-1].startswith("... 1 more (--offset 2")

    assert weaver(app, "records", "markdown-analyzer", "--key", "b.md", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["key"], r["data"]) for r in data["records"]] == [("b.md", {"words": 5})]

    assert weaver(app, "records", "markdown-analyzer", "--kind", "state") == 0
    assert capsys.readouterr().out.strip() == "No records."

    assert weaver(app, "records", "markdown-analyser") == 2
    assert capsys.readouterr().err.strip() == (
        "weaver: Workflow not found: 'markdown-analyser' (did you mean 'markdown-analyzer'?)"
    )


def test_cli_since_takes_a_local_date(
    app: App, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    midnight = int(datetime(2026, 1, 5).astimezone().timestamp() * 1000)
    rows = [
        NewRecord("old.md", {}, "change", midnight - 1),
        NewRecord("new.md", {}, "change", midnight),
    ]
    with app.db.begin() as conn:
        insert_records(conn, "file-change-logger", rows, now=0)
    assert weaver(app, "records", "file-change-logger", "--since", "2026-01-05", "--json") == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)["records"]] == ["new.md"]
    until = str(midnight)
    assert weaver(app, "records", "file-change-logger", "--until", until, "--json") == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)["records"]] == ["old.md"]
    with pytest.raises(SystemExit) as exited:
        weaver(app, "records", "file-change-logger", "--since", "last week")
    assert exited.value.code == 2
    assert "not a time: 'last week'" in capsys.readouterr().err
