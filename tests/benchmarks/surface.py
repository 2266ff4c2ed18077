"""Completions and resources/list at the reference size (and at 100,000 notes with `--notes
100000`, the largest size generated): each measured through the SDK's in-memory client
(legacy protocol), round trip included, p95 against the read tools' target."""

from __future__ import annotations

import base64
import time
from typing import Any

import anyio
from mcp import Client
from mcp_types import ResourceTemplateReference

from tests.benchmarks.context import BenchContext
from tests.benchmarks.queries import FAST
from tests.benchmarks.report import Figure, latency_figure
from weaver.config import Settings
from weaver.host.app import open_app
from weaver.mcp_server import ServerState, build_server

TEMPLATE = ResourceTemplateReference(type="ref/resource", uri="weaver://note/{+path}")


async def _timed(calls: int, call: Any) -> list[float]:
    seconds = []
    for i in range(calls):
        started = time.perf_counter()
        await call(i)
        seconds.append(time.perf_counter() - started)
    return seconds


def run(ctx: BenchContext) -> list[Figure]:
    notes = max(ctx.sizes)
    facts = ctx.facts(notes)
    app = open_app(Settings(vault=ctx.vault(notes), read_only=True))
    try:
        app.indexer.reconcile()
        server = build_server(ServerState(app, watch=False))
        samples = list(facts.sample)

        async def measure() -> dict[str, list[float]]:
            async with Client(server, mode="legacy") as client:

                async def complete(i: int) -> None:
                    path = samples[i % len(samples)]
                    await client.complete(TEMPLATE, {"name": "path", "value": path[: 3 + i % 8]})

                async def complete_missing(i: int) -> None:
                    value = "zz-no-such-prefix"[: 2 + i % 10]
                    await client.complete(TEMPLATE, {"name": "path", "value": value})

                async def first_page(i: int) -> None:
                    await client.list_resources()

                async def deep_page(i: int) -> None:
                    after = samples[i % len(samples)]
                    cursor = base64.urlsafe_b64encode(after.encode()).decode()
                    await client.list_resources(cursor=cursor)

                return {
                    "completion/complete, note path prefix": await _timed(ctx.calls, complete),
                    "completion/complete, no path matches (case-folded scan)": await _timed(
                        ctx.calls, complete_missing
                    ),
                    "resources/list, first page (100)": await _timed(ctx.calls // 2, first_page),
                    "resources/list, a page deep in the vault": await _timed(
                        ctx.calls // 2, deep_page
                    ),
                }

        timings = anyio.run(measure)
    finally:
        app.close()
    return [
        latency_figure("query latency", f"{name}, {notes:,} notes", seconds, FAST)
        for name, seconds in timings.items()
    ]
