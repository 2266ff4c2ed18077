"""`health_check`: the report of `runtime.health_report`, as the tool answers it."""

from __future__ import annotations

import time
from typing import Annotated

import anyio.to_thread
import structlog
from mcp_types import CallToolResult

from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import fail, ok
from weaver.mcp_server.schemas import Envelope, HealthData
from weaver.runtime.health_report import Health, compute_health
from weaver.runtime.state import ServerState

log = structlog.get_logger(__name__)

HealthResult = Annotated[CallToolResult, Envelope[HealthData]]

HEALTH_CHECK = """Whether Weaver is working: status, components, role and problems. Use it when
other tools fail or answers look stale.

Returns `status` ("healthy", "starting" while the initial index runs, "degraded" or
"unhealthy"), `components` (shadowCache,
workflowEngine, fileSystem as booleans), `uptime` in milliseconds, `requestCount` (tool calls
since start), `version`, `role` ("writer" when this server keeps the cache fresh, "reader" when
another process does, "unwatched" when nothing here watches the vault) and `problems` explaining
anything short of healthy. Use it when other
tools fail or answers look stale. Example: {}."""


def health_data(report: Health) -> HealthData:
    """The report as the tool's wire model."""
    return HealthData.model_validate(report, from_attributes=True)


@tool("Health check", HEALTH_CHECK, toolset="system")
async def health_check(state: ServerState) -> HealthResult:
    # Not through `answer`: it reports a server still indexing (or stuck) rather than wait.
    started = time.perf_counter()
    try:
        report = await anyio.to_thread.run_sync(compute_health, state)
    except Exception as exc:  # compute_health guards each check; this is the last net
        log.exception("health check failed")
        return fail(f"health check failed: {type(exc).__name__}", started, False)
    return ok(health_data(report), started, False)
