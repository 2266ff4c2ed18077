"""The MCP surface at the largest size generated (100,000 notes with `--notes 100000`; the
reference size otherwise): completions of every kind of value (note paths, folders, tags,
workflow ids), resources/list with cursors (the first page and pages deep in the vault),
`list_tags` and `query_files where=`. Each is measured through the SDK's in-memory client
(legacy protocol), round trip included, p95 against the read tools' target.

The server has the built-in workflows registered (for workflow id completions) but its engine
is not started: nothing here runs a workflow.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import anyio
from mcp import Client
from mcp_types import PromptReference, ResourceTemplateReference

from tests.benchmarks.context import BenchContext
from tests.benchmarks.queries import FAST, TOOL_CASES, ToolCase, timed_call
from tests.benchmarks.report import Figure, latency_figure, percentile
from tests.benchmarks.vaultgen import VaultFacts
from weaver.config import TOOLSETS, Settings
from weaver.engine.loader import load_registry
from weaver.mcp_server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.engines import engine_for
from weaver.runtime.state import ServerState

TEMPLATE = ResourceTemplateReference(type="ref/resource", uri="weaver://note/{+path}")
# Completions are by argument name: `folder` is summarize_folder's; `tag` and `workflowId` are
# completed for any prompt argument so named.
FOLDER_PROMPT = PromptReference(type="ref/prompt", name="summarize_folder")
# The read tools' rows that the issue asks for at 100,000 notes too.
TOOL_LABELS = (
    "list_tags",
    "list_tags by count, top level",
    "query_files where= (frontmatter date range)",
    "query_files where= (list contains, status in)",
)
Call = Callable[[int], Awaitable[Any]]


async def _timed(calls: int, call: Call) -> list[float]:
    seconds = []
    for i in range(calls):
        started = time.perf_counter()
        await call(i)
        seconds.append(time.perf_counter() - started)
    return seconds


def _prefix(value: str, i: int) -> str:
    """What a person has typed so far: 2 to 9 characters of `value`."""
    return value[: 2 + i % 8]


def _cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode()


def _completions(client: Client, facts: VaultFacts) -> dict[str, Call]:
    samples = list(facts.sample)
    folders = sorted({p.rpartition("/")[0] for p in samples if "/" in p})
    tags = [facts.tag, "status/draft", "idea", f"{facts.tag}/"]
    workflows = ["markdown-analyzer", "mark", "ta"]

    async def path(i: int) -> None:
        value = samples[i % len(samples)]
        await client.complete(TEMPLATE, {"name": "path", "value": value[: 3 + i % 8]})

    async def missing(i: int) -> None:
        value = "zz-no-such-prefix"[: 2 + i % 10]
        await client.complete(TEMPLATE, {"name": "path", "value": value})

    async def other_case(i: int) -> None:
        value = samples[i % len(samples)].upper()
        await client.complete(TEMPLATE, {"name": "path", "value": value[: 3 + i % 8]})

    async def folder(i: int) -> None:
        value = _prefix(folders[i % len(folders)], i)
        await client.complete(FOLDER_PROMPT, {"name": "folder", "value": value})

    async def tag(i: int) -> None:
        value = _prefix(tags[i % len(tags)], i)
        await client.complete(FOLDER_PROMPT, {"name": "tag", "value": value})

    async def workflow(i: int) -> None:
        value = workflows[i % len(workflows)]
        await client.complete(FOLDER_PROMPT, {"name": "workflowId", "value": value})

    return {
        "completion/complete, note path prefix": path,
        "completion/complete, note path in another case (case-folded)": other_case,
        "completion/complete, no path matches, as typed or ignoring case": missing,
        "completion/complete, folder prefix": folder,
        "completion/complete, tag prefix": tag,
        "completion/complete, workflow id prefix": workflow,
    }


def _resource_pages(client: Client, facts: VaultFacts) -> dict[str, Call]:
    samples = list(facts.sample)

    async def first_page(i: int) -> None:
        await client.list_resources()

    async def deep_page(i: int) -> None:
        await client.list_resources(cursor=_cursor(samples[i % len(samples)]))

    return {
        "resources/list, first page (100)": first_page,
        "resources/list, a page deep in the vault": deep_page,
    }


def _tool_calls(
    client: Client, facts: VaultFacts, spent: dict[str, list[float]]
) -> dict[str, Call]:
    """The `TOOL_LABELS` cases; each call's own time in the server (`executionTime`) is
    added to `spent[label]`."""
    cases: dict[str, ToolCase] = {c.label: c for c in TOOL_CASES if c.label in TOOL_LABELS}

    def call(case: ToolCase) -> Call:
        async def run(i: int) -> None:
            done = await timed_call(client, case, facts, i, [])
            spent.setdefault(case.label, []).append(done.tool)

        return run

    return {label: call(case) for label, case in cases.items()}


def _figure(name: str, seconds: list[float], spent: list[float] | None, notes: int) -> Figure:
    fig = latency_figure("query latency", f"{name}, {notes:,} notes", seconds, FAST)
    if not spent:
        return fig
    tool, tool95 = percentile(spent, 50) * 1000, percentile(spent, 95) * 1000
    return replace(
        fig,
        shown=f"{fig.shown}; tool p50 {tool:.1f} · p95 {tool95:.1f} ms",
        data={**fig.data, "tool_p50_ms": tool, "tool_p95_ms": tool95},
    )


def run(ctx: BenchContext) -> list[Figure]:
    notes = max(ctx.sizes)
    facts = ctx.facts(notes)
    app = open_app(Settings(vault=ctx.vault(notes), read_only=True, toolsets=list(TOOLSETS)))
    try:
        app.indexer.reconcile()
        engine = engine_for(app, load_registry(app.settings))
        server = build_server(ServerState(app, watch=False, engine=engine))

        spent: dict[str, list[float]] = {}

        async def measure() -> dict[str, list[float]]:
            async with Client(server, mode="legacy") as client:
                calls = {
                    **_completions(client, facts),
                    **_resource_pages(client, facts),
                    **_tool_calls(client, facts, spent),
                }
                timings = {}
                for name, call in calls.items():
                    await _timed(3, call)  # warm: the kept views of this cache version
                    spent.pop(name, None)
                    timings[name] = await _timed(ctx.calls, call)
                return timings

        timings = anyio.run(measure)
    finally:
        app.close()
    return [_figure(name, seconds, spent.get(name), notes) for name, seconds in timings.items()]
