"""What the tool list costs a client: the bytes of the serialized tools/list answer (as it
travels, read through the SDK's client) and its tokens at 4 characters a token, for each
toolset alone, the default toolsets and all of them. Clients put this list into the model's
context on every turn; the budget (docs/tools.md, "Toolsets") is for the default."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import anyio
from mcp import Client

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from weaver import config
from weaver.config import TOOLSETS, Settings, Toolset
from weaver.mcp_server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState

BUDGET = Target("<=", 40_000, "≤ 40 KB")
CHARS_PER_TOKEN = 4


async def _listed(settings: Settings) -> tuple[int, int, int]:
    """Bytes of tools/list, of its descriptions and input schemas, and its tools."""
    app = open_app(settings)
    try:
        async with Client(build_server(ServerState(app, watch=False))) as client:
            wire = (await client.list_tools()).model_dump_json(by_alias=True, exclude_none=True)
    finally:
        app.close()
    tools = json.loads(wire)["tools"]
    prose = sum(
        len(t.get("description", "")) + len(json.dumps(t["inputSchema"], separators=(",", ":")))
        for t in tools
    )
    return len(wire.encode()), prose, len(tools)


def _figure(name: str, toolsets: Sequence[Toolset], ctx: BenchContext) -> Figure:
    settings = Settings(vault=ctx.vault(min(ctx.sizes)), toolsets=list(toolsets), read_only=False)
    total, prose, tools = anyio.run(_listed, settings)
    tokens = total // CHARS_PER_TOKEN
    shown = (
        f"{total / 1000:.1f} KB ≈ {tokens:,} tokens, {tools} tools (descriptions + inputs "
        f"{prose / 1000:.1f} KB)"
    )
    data = {"bytes": total, "tokens": tokens, "prose_bytes": prose, "tools": tools}
    return Figure("tool list", name, total, "B", shown, BUDGET, data)


def run(ctx: BenchContext) -> list[Figure]:
    default = config.DEFAULT_TOOLSETS
    figures = [_figure(f"default ({', '.join(default)})", default, ctx)]
    figures += [_figure(f"{toolset} alone", [toolset], ctx) for toolset in TOOLSETS]
    every = _figure("all", TOOLSETS, ctx)
    return [*figures, replace(every, target=None)]  # reported: the budget is the default's
