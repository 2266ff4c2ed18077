"""The workflow tools through the SDK's in-memory client: the contract's arguments and fields,
sync and async runs, a failed run that is not a success, errors, the sync overhead, and a
sync run's progress and cancellation as the client sees and asks them."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from tests.helpers import wait_for
from weaver.config import Settings
from weaver.engine import Registry, WorkflowContext, WorkflowEngine, workflow
from weaver.mcp_server import workflow_tools
from weaver.mcp_server.catalog import tools_of
from weaver.mcp_server.workflow_tools import RunBridge
from weaver.runtime.app import App, open_app
from weaver.runtime.engines import engine_for
from weaver.runtime.lifespan import make_lifespan
from weaver.runtime.state import ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

GATE = threading.Event()


class Greeting(BaseModel):
    name: str = "world"


@workflow(id="greet", name="Greet", input_model=Greeting, records_retention_days=7)
def greet(ctx: WorkflowContext[Greeting]) -> dict[str, str]:
    return {"greeting": f"hello {ctx.input.name}"}


@workflow(id="broken", name="Broken")
def broken(_ctx: WorkflowContext[Any]) -> None:
    raise RuntimeError("no luck")


@workflow(id="gated", name="Gated")
def gated(_ctx: WorkflowContext[Any]) -> str:
    GATE.wait(5)
    return "opened"


@workflow(id="off", name="Off", enabled=False)
def off(_ctx: WorkflowContext[Any]) -> None: ...


@workflow(id="steps", name="Steps")
def steps(ctx: WorkflowContext[Any]) -> str:
    for percent in (25, 50, 75):
        ctx.report_progress(percent, f"step {percent}")
    return "done"


@workflow(id="patient", name="Patient")
def patient(ctx: WorkflowContext[Any]) -> str:
    ctx.report_progress(10, "waiting")
    ctx.cancelled.wait(10)
    return "gave up waiting" if ctx.cancelled.is_set() else "nobody cancelled"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(
    tmp_path: Path, db_url: str | None
) -> Iterator[tuple[MCPServer[ServerState], WorkflowEngine, App]]:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A")
    app = open_app(Settings(vault=vault, database_url=db_url))
    registry = Registry()
    for item in (greet, broken, gated, off, steps, patient):
        registry.register(item)
    engine = engine_for(app, registry, background="threads")
    engine.start()
    state = ServerState(app, watch=False, engine=engine)
    server = MCPServer(
        name="weaver-test", tools=tools_of(state, workflow_tools), lifespan=make_lifespan(state)
    )
    GATE.clear()
    yield server, engine, app
    GATE.set()
    engine.stop()
    app.close()


@pytest.fixture(params=["legacy", "auto"])
async def client(
    request: pytest.FixtureRequest, served: tuple[MCPServer[ServerState], WorkflowEngine, App]
) -> AsyncIterator[Client]:
    async with Client(served[0], mode=request.param) as connected:
        yield connected


async def call(client: Client, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    envelope: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.structured_content == envelope
    assert result.is_error is (not envelope["success"])
    return envelope


async def test_tools_and_their_schemas(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == {
        "trigger_workflow",
        "list_workflows",
        "get_workflow_status",
        "get_workflow_history",
    }
    trigger = listed["trigger_workflow"]
    assert trigger.input_schema["required"] == ["workflowId"]
    assert set(trigger.input_schema["properties"]) == {"workflowId", "input", "async"}
    assert trigger.annotations is not None and trigger.annotations.read_only_hint is False
    assert listed["get_workflow_status"].input_schema["required"] == ["executionId"]
    limit = listed["get_workflow_history"].input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)
    for tool in listed.values():
        assert tool.output_schema is not None


async def test_sync_trigger_returns_the_final_status(client: Client) -> None:
    envelope = await call(client, "trigger_workflow", workflowId="greet", input={"name": "MCP"})
    assert envelope["success"] is True
    data = envelope["data"]
    assert (data["mode"], data["status"], data["workflowName"]) == ("sync", "completed", "Greet")
    assert data["result"] == {"greeting": "hello MCP"}
    assert isinstance(data["duration"], int)
    status = await call(client, "get_workflow_status", executionId=data["executionId"])
    assert status["data"]["status"] == "completed"
    assert status["data"]["trigger"] == {"kind": "manual", "detail": {"via": "mcp"}}


async def test_a_failed_sync_run_is_not_a_success(client: Client) -> None:
    envelope = await call(client, "trigger_workflow", workflowId="broken")
    assert envelope["success"] is False
    assert envelope["error"] == "RuntimeError: no luck"
    assert envelope["data"]["status"] == "failed"
    assert envelope["data"]["executionId"].startswith("wf_exec_")


async def test_async_trigger_then_poll(client: Client) -> None:
    envelope = await call(client, "trigger_workflow", workflowId="gated", **{"async": True})
    data = envelope["data"]
    assert (data["mode"], data["message"]) == ("async", "Workflow execution started")
    status = await call(client, "get_workflow_status", executionId=data["executionId"])
    assert status["data"]["status"] in ("pending", "running")
    assert status["data"]["endTime"] is None
    GATE.set()
    with anyio.fail_after(5):
        while (await call(client, "get_workflow_status", executionId=data["executionId"]))["data"][
            "status"
        ] != "completed":
            await anyio.sleep(0.02)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"workflowId": "nope"}, "Workflow not found: 'nope'"),
        ({"workflowId": "off"}, "Workflow disabled: 'off'"),
        ({"workflowId": "greet", "input": {"name": 5}}, "Invalid input for 'greet': name:"),
        ({"workflowId": "greet", "async": "maybe"}, "Invalid arguments: async:"),
        ({}, "Invalid arguments: workflowId: Field required"),
        # The Python parameter's name is not the wire name: refused, and the run not started.
        (
            {"workflowId": "greet", "run_async": True},
            "Invalid arguments: run_async: not an argument of trigger_workflow "
            "(it takes workflowId, input, async)",
        ),
    ],
)
async def test_trigger_errors(client: Client, args: dict[str, Any], error: str) -> None:
    envelope = await call(client, "trigger_workflow", **args)
    assert envelope["success"] is False
    assert error in envelope["error"]
    history = await call(client, "get_workflow_history")
    assert history["data"]["total"] == 0  # nothing recorded


async def test_list_history_and_missing_execution(client: Client) -> None:
    for _ in range(3):
        await call(client, "trigger_workflow", workflowId="greet")
    listing = (await call(client, "list_workflows"))["data"]
    assert listing["count"] == 6 and listing["errors"] == []
    greet_info = next(w for w in listing["workflows"] if w["id"] == "greet")
    assert greet_info["executionCount"] == 3 and greet_info["lastExecuted"] is not None
    assert greet_info["inputSchema"]["properties"]["name"]["default"] == "world"
    assert greet_info["triggers"] == ["manual"]
    assert greet_info["recordsRetentionDays"] == 7
    enabled = (await call(client, "list_workflows", enabled=False))["data"]
    assert [w["id"] for w in enabled["workflows"]] == ["off"]

    page = (await call(client, "get_workflow_history", workflowId="greet", limit=2))["data"]
    assert (page["total"], page["limit"], page["offset"], page["hasMore"]) == (3, 2, 0, True)
    clamped = (await call(client, "get_workflow_history", limit=1000, offset=-3))["data"]
    assert (clamped["limit"], clamped["offset"]) == (100, 0)

    # What went wrong, across workflows or in one.
    await call(client, "trigger_workflow", workflowId="broken")
    failed = (await call(client, "get_workflow_history", status="failed"))["data"]
    assert [(e["workflowId"], e["status"]) for e in failed["executions"]] == [("broken", "failed")]
    assert failed["total"] == 1
    greet_failed = await call(client, "get_workflow_history", workflowId="greet", status="failed")
    assert greet_failed["data"]["total"] == 0
    done = (await call(client, "get_workflow_history", status="completed"))["data"]
    assert done["total"] == 3 and {e["workflowId"] for e in done["executions"]} == {"greet"}
    typo = await call(client, "get_workflow_history", workflowId="greeet")
    assert typo["error"] == "Workflow not found: 'greeet' (did you mean 'greet'?)"
    never = (await call(client, "get_workflow_history", workflowId="gated"))["data"]
    assert never["total"] == 0  # a workflow that never ran: an empty page
    wrong = await call(client, "get_workflow_history", status="broken")
    assert wrong["error"].startswith("Invalid arguments: status: Input should be 'pending'")

    missing = await call(client, "get_workflow_status", executionId="wf_exec_nope")
    assert missing["error"] == "Execution not found: 'wf_exec_nope'"


async def test_without_a_running_engine(
    client: Client, served: tuple[MCPServer[ServerState], WorkflowEngine, App]
) -> None:
    served[1].stop()
    envelope = await call(client, "list_workflows")
    assert envelope["error"] == "Workflow engine not available"


async def test_read_only_servers_offer_no_trigger(tmp_path: Path) -> None:
    app = open_app(Settings(vault=tmp_path, read_only=True))
    state = ServerState(app, watch=False)
    names = {tool.name for tool in tools_of(state, workflow_tools)}
    app.close()
    assert "trigger_workflow" not in names and len(names) == 3


async def test_a_sync_run_reports_its_progress(client: Client) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    result = await client.call_tool(
        "trigger_workflow", {"workflowId": "steps"}, progress_callback=on_progress
    )
    assert result.is_error is False
    # The SDK may hand a notification to the callback after the result: wait for all three.
    with anyio.fail_after(5):
        while len(heard) < 3:
            await anyio.sleep(0.01)
    assert heard == [(25.0, 100.0, "step 25"), (50.0, 100.0, "step 50"), (75.0, 100.0, "step 75")]


async def test_progress_without_a_token_is_not_an_error(client: Client) -> None:
    envelope = await call(client, "trigger_workflow", workflowId="steps")
    assert (envelope["success"], envelope["data"]["result"]) == (True, "done")


async def test_a_cancelled_call_cancels_its_run(
    client: Client, served: tuple[MCPServer[ServerState], WorkflowEngine, App]
) -> None:
    engine = served[1]
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        del progress, total, message
        running.set()

    async def trigger() -> None:
        await client.call_tool(
            "trigger_workflow", {"workflowId": "patient"}, progress_callback=on_progress
        )

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(trigger)
            await running.wait()
            group.cancel_scope.cancel()

    def ended() -> str | None:
        runs = engine.get_history("patient").executions
        return runs[0].status if runs and runs[0].status not in ("pending", "running") else None

    assert await anyio.to_thread.run_sync(lambda: wait_for(ended, what="the run to end")) == (
        "cancelled"
    )
    # The session is still usable after the cancellation.
    assert (await call(client, "trigger_workflow", workflowId="greet"))["success"] is True


async def test_a_call_cancelled_before_its_run_is_queued_never_runs(
    served: tuple[MCPServer[ServerState], WorkflowEngine, App],
) -> None:
    engine = served[1]
    bridge = RunBridge(engine, None)  # type: ignore[arg-type]  # no request: the handshake only
    await bridge.abandon()
    data = await anyio.to_thread.run_sync(
        lambda: engine.trigger("patient", via="mcp", on_queued=bridge.queued)
    )
    assert data.status == "cancelled"
    assert engine.get_status(data.execution_id).status == "cancelled"
