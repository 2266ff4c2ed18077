"""The workflow tools: trigger_workflow, list_workflows, get_workflow_status,
get_workflow_history. Thin edges over `WorkflowEngine` (the same calls `weaver trigger`,
`weaver workflows`, `weaver status` and `weaver history` make).

The engine is read from `state.engine` at each call, so the server can be built before the
lifespan starts the engine; until then the tools answer "Workflow engine not available".

A sync `trigger_workflow` whose run failed (or was cancelled) is not a success: its envelope
has `success: false` and `isError: true`, with `error` the run's error and `data` the same
object a successful run returns, so the execution id and status are not lost.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import structlog
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import CallToolResult, TextContent
from pydantic import ConfigDict, Field

from weaver.cache.executions import ExecutionStatus
from weaver.engine import WorkflowEngine
from weaver.engine.payloads import (
    ListWorkflowsData,
    TriggerWorkflowData,
    WorkflowHistoryData,
    WorkflowStatusData,
)
from weaver.engine.workflow_errors import EngineUnavailableError, NotCancellableError
from weaver.mcp_server.arguments import HistoryLimit, Offset
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import answer
from weaver.mcp_server.schemas import Envelope, Metadata
from weaver.runtime.state import ServerState

log = structlog.get_logger(__name__)

TriggerResult = Annotated[CallToolResult, Envelope[TriggerWorkflowData]]

TRIGGER_WORKFLOW = """Run a registered workflow now, with optional input; wait for its result or
get an execution id to follow.

Sync (the default) waits for the run and returns `executionId`, `workflowId`, `workflowName`,
`mode` "sync", `status` ("completed" or "failed"), `duration` in ms, `message`, `result` (what
the workflow returned) and `error`; a failed run comes back with success false, its error, and
the same data. With `async: true` it returns at once with `executionId` and `mode` "async":
follow it with get_workflow_status. `input` must match the workflow's `inputSchema` (see
list_workflows). Fails with "Workflow not found", "Workflow disabled" or "Invalid input".
Example: {"workflowId": "markdown-analyzer", "input": {"path": "concepts/graph.md"}}."""

LIST_WORKFLOWS = """The registered workflows: what each does, its triggers, input schema and recent
runs.

Returns `workflows` (id, name, description, enabled, triggers such as "manual",
"file-change", "schedule", lastExecuted in Unix epoch milliseconds or null, executionCount,
inputSchema: the JSON Schema of its input, fileTriggers, schedules, policy), their `count`, and
`errors`: workflow plugins that failed to load. `enabled` filters on enabled status. Example:
{"enabled": true}."""

GET_WORKFLOW_STATUS = """One workflow execution's state, result or error.

Returns executionId, workflowId, workflowName, `status` (pending, running, completed, failed,
cancelled), `progress` 0-100, `message`, `attempt`, startTime / endTime (Unix epoch
milliseconds, null until reached), `duration` in ms, `result`, `error` and `traceback`, the
`trigger` (manual, file or schedule, with detail) and the `input`. Fails with "Execution not
found". Example: {"executionId": "wf_exec_20251024_123456_1a2b3c4d"}."""

GET_WORKFLOW_HISTORY = """Past and queued workflow executions, newest first, filtered by workflow
or state.

Returns `executions` (executionId, workflowId, workflowName, status, startTime, endTime in Unix
epoch milliseconds, duration in ms, error, trigger), with `total`, the `limit`/`offset` applied
and `hasMore`. `workflowId` keeps one workflow's executions ("Workflow not found" for an id
no workflow has), `status` those in one state ("failed" for what went wrong). Examples:
{"workflowId": "markdown-analyzer", "limit": 10}; {"status": "failed"}."""


class TriggerArguments(ArgModelBase):
    """trigger_workflow's arguments: `async` is a Python keyword, so the names on the wire are
    aliases of the function's parameters, mapped back for the call."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    workflow_id: str = Field(alias="workflowId", description="ID of the workflow to trigger")
    input: dict[str, Any] | None = Field(
        default=None, description="Input for the workflow, matching its inputSchema"
    )
    run_async: bool = Field(
        default=False, alias="async", description="Return at once with the execution id"
    )

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"workflow_id": self.workflow_id, "input": self.input, "run_async": self.run_async}


def _engine(state: ServerState) -> WorkflowEngine:
    engine = state.engine
    if not isinstance(engine, WorkflowEngine) or not engine.running:
        raise EngineUnavailableError()
    return engine


class RunBridge:
    """Between one sync trigger_workflow call, waiting on the event loop, and its run, in the
    engine's threads: progress reports go to the client, the client's cancellation to the run.

    The execution id is known only once the run is queued (in the worker thread); a call
    cancelled before that cancels the run as soon as it is queued, so it never starts."""

    def __init__(self, engine: WorkflowEngine, ctx: Context[ServerState, Any]) -> None:
        self._engine = engine
        self._ctx = ctx
        self._token = anyio.lowlevel.current_token()
        self._lock = threading.Lock()
        self._execution_id: str | None = None
        self._abandoned = False

    def queued(self, execution_id: str) -> None:
        """The engine recorded the run (called in the worker thread)."""
        with self._lock:
            self._execution_id = execution_id
            abandoned = self._abandoned
        if abandoned:
            cancel_run(self._engine, execution_id)

    def progress(self, percent: int, message: str | None) -> None:
        """The workflow reported progress (called in its thread): a notification to the
        client, which the SDK sends only when the call carried a progress token."""
        if self._abandoned:
            return
        try:
            anyio.from_thread.run(
                self._ctx.report_progress, float(percent), 100.0, message, token=self._token
            )
        except Exception as exc:  # the call ended meanwhile, or the session closed
            log.debug("progress not sent", error=f"{type(exc).__name__}: {exc}")

    async def abandon(self) -> None:
        """The client cancelled the call: cancel the run (now, or once it is queued)."""
        with self._lock:
            self._abandoned = True
            execution_id = self._execution_id
        if execution_id is not None:
            await anyio.to_thread.run_sync(cancel_run, self._engine, execution_id)


def cancel_run(engine: WorkflowEngine, execution_id: str) -> None:
    """Cancel a run nobody waits for any more, unless it has ended already."""
    try:
        engine.cancel(execution_id)
    except NotCancellableError:
        return  # ended (or ran elsewhere) before the cancellation arrived
    log.info("workflow run cancelled by the client", execution_id=execution_id)


def failed_run(data: TriggerWorkflowData, started: float) -> CallToolResult:
    """The envelope of a sync run that did not complete: an error, with its data."""
    elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    envelope = {
        "success": False,
        "error": data.error or data.message,
        "data": data.to_wire(),
        "metadata": Metadata(execution_time=elapsed_ms, cache_hit=False).to_wire(),
    }
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(envelope, ensure_ascii=False))],
        structured_content=envelope,
        is_error=True,
    )


# A workflow may write to the vault, and running it twice runs it twice. A reader with a queue
# (PostgreSQL) offers it: the executions' rows and jobs are all it writes, never the notes
# (`runtime.app.reader_queues`).
@tool(
    "Trigger workflow",
    TRIGGER_WORKFLOW,
    toolset="workflows",
    writes=True,
    destructive=True,
    idempotent=False,
    queues_runs=True,
    arguments=TriggerArguments,
)
async def trigger_workflow(
    state: ServerState,
    ctx: Context[ServerState, Any],
    workflow_id: str,
    input: dict[str, Any] | None = None,
    run_async: bool = False,
) -> TriggerResult:
    started = time.perf_counter()
    outcome: list[TriggerWorkflowData] = []
    engine = state.engine
    # A sync run is tied to the call: its progress goes to the client, and it is cancelled
    # with the call. An async run outlives the call by design.
    bridge = None if run_async or not isinstance(engine, WorkflowEngine) else RunBridge(engine, ctx)

    def work() -> TriggerWorkflowData:
        data = _engine(state).trigger(
            workflow_id,
            input,
            async_=run_async,
            via="mcp",
            on_queued=bridge.queued if bridge else None,
            on_progress=bridge.progress if bridge else None,
        )
        outcome.append(data)
        return data

    try:
        # No deadline: a sync run is bounded by its workflow's own timeout.
        result = await answer(state, work, cache_hit=False, deadline=None)
    except anyio.get_cancelled_exc_class():
        if bridge is not None:
            with anyio.CancelScope(shield=True):
                await bridge.abandon()
        raise
    if outcome and outcome[0].mode == "sync" and outcome[0].status != "completed":
        return failed_run(outcome[0], started)
    return result


@tool("List workflows", LIST_WORKFLOWS, toolset="workflows", cache_hit=False, wait_ready=False)
def list_workflows(
    state: ServerState,
    enabled: Annotated[bool | None, Field(description="Only enabled (or disabled) ones")] = None,
) -> ListWorkflowsData:
    return _engine(state).list_workflows(enabled)


@tool(
    "Workflow execution status",
    GET_WORKFLOW_STATUS,
    toolset="workflows",
    cache_hit=False,
    wait_ready=False,
)
def get_workflow_status(
    state: ServerState,
    executionId: Annotated[str, Field(description="From trigger_workflow or the history")],
) -> WorkflowStatusData:
    return _engine(state).get_status(executionId)


@tool(
    "Workflow history", GET_WORKFLOW_HISTORY, toolset="workflows", cache_hit=False, wait_ready=False
)
def get_workflow_history(
    state: ServerState,
    workflowId: Annotated[str | None, Field(description="Only this workflow")] = None,
    limit: HistoryLimit = 20,
    offset: Offset = 0,
    status: Annotated[
        ExecutionStatus | None, Field(description="Only executions in this state")
    ] = None,
) -> WorkflowHistoryData:
    return _engine(state).get_history(workflowId or None, limit, offset, status)
