"""The answer-size bound: every tool called with default arguments on the most linked and the
biggest note of the reference vault; the largest answer in estimated tokens (the conservative
count of `weaver.mcp_server.sizing`) must stay under 25,000. The unit test
`tests/mcp_server/test_answer_size.py` runs the same calls on the corpora and on a vault of
extremes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client
from sqlalchemy import func, select

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from weaver.cache import read
from weaver.cache.models import Link, Note, TagCounter
from weaver.config import TOOLSETS, Settings
from weaver.mcp_server import build_server
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens
from weaver.runtime.app import App, open_app
from weaver.runtime.state import ServerState

Call = Callable[[str, dict[str, Any]], Awaitable[str]]  # tool, arguments -> the answer's text


@dataclass(frozen=True)
class Extremes:
    most_linked: str
    biggest: str
    tag: str
    title: str


def find_extremes(app: App) -> Extremes:
    with read.read_snapshot(app.db) as conn:
        incoming = func.count(Link.source_path.distinct())
        most_linked = conn.execute(
            select(Link.target_path)
            .where(Link.target_path.is_not(None))
            .group_by(Link.target_path)
            .order_by(incoming.desc())
            .limit(1)
        ).scalar_one()
        biggest = conn.execute(select(Note.path).order_by(Note.size.desc()).limit(1)).scalar_one()
        tag = conn.execute(
            select(TagCounter.key).order_by(TagCounter.notes.desc()).limit(1)
        ).scalar_one()
        title = conn.execute(select(Note.title).where(Note.path == most_linked)).scalar_one()
    assert most_linked is not None  # the query keeps resolved targets only
    return Extremes(most_linked, biggest, tag, title or most_linked)


def arguments(tool: str, required: list[str], note: str, other: str, x: Extremes) -> dict[str, Any]:
    """The tool's required arguments, aimed at `note`; every optional one left at its default.
    A tool with a required argument not known here fails: say what its worst call is."""
    fillers: dict[str, Any] = {
        "path": note,
        "source": note,
        "target": other,
        "tag": x.tag,
        "tags": [x.tag],
        "query": x.title,
        "names": [x.title],
        "paths": [note, other],
        "workflowId": "markdown-analyzer",
        "executionId": "no-such-execution",
        "period": "day",  # today's note: the one a vault is most likely to have
    }
    missing = [name for name in required if name not in fillers]
    if missing:
        raise AssertionError(f"{tool}: no value for required {missing}: add one to answers.py")
    return {name: fillers[name] for name in required}


async def default_answer_sizes(client: Client, x: Extremes) -> dict[str, int]:
    """Estimated tokens of each tool's default answer on both extreme notes, by call."""
    sizes: dict[str, int] = {}
    for tool in (await client.list_tools()).tools:
        required = list(tool.input_schema.get("required", []))
        for note, other in ((x.most_linked, x.biggest), (x.biggest, x.most_linked)):
            args = arguments(tool.name, required, note, other, x)
            result = await client.call_tool(tool.name, args)
            text = result.content[0].text  # type: ignore[union-attr]
            json.loads(text)  # a whole JSON answer, not a cut one
            sizes[f"{tool.name} {json.dumps(args, ensure_ascii=False)[:80]}"] = estimate_tokens(
                text
            )
    return sizes


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    app = open_app(Settings(vault=vault, read_only=True, toolsets=list(TOOLSETS)))
    try:
        app.indexer.reconcile()
        x = find_extremes(app)
        server = build_server(ServerState(app, watch=False))

        async def measure() -> dict[str, int]:
            async with Client(server, mode="legacy") as client:
                return await default_answer_sizes(client, x)

        sizes = anyio.run(measure)
    finally:
        app.close()
    worst = max(sizes, key=sizes.__getitem__)
    return [
        Figure(
            "answer size",
            f"largest default answer, {ctx.reference:,} notes ({worst.split()[0]})",
            sizes[worst],
            "tokens",
            f"{sizes[worst]:,} est. tokens",
            Target("<=", ANSWER_TOKEN_BOUND, f"< {ANSWER_TOKEN_BOUND:,} tokens"),
            {"sizes": sizes, "mostLinked": x.most_linked, "biggest": x.biggest},
        )
    ]
