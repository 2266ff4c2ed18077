"""An answer too big for a context window (only an explicit big `limit` asks for one) travels
whole as structured content; its text block, in protocols that have structured content, says
how big it is and how to ask for less instead of repeating the JSON. Answers within the bound,
and every answer of a protocol without structured content, keep the JSON text."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.config import Settings
from weaver.mcp_server.envelope import STRUCTURED_CONTENT_SINCE, ok, text_for_window
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

pytestmark = pytest.mark.anyio

SPOKES = 400
# ~100 characters a path: 400 spokes and their links to the hub make ~190 KB of graph JSON.
SPOKE = "spokes/a folder with a rather long name/a note whose name is long as well {:03}.md"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("big") / "vault"
    spokes = {SPOKE.format(i): f"[[Hub]] [[{SPOKE.format(i + 1)[:-3]}]]\n" for i in range(SPOKES)}
    write_files(root, {**spokes, "Hub.md": "# Hub\n"})
    served = serve(Settings(vault=root, read_only=True))
    yield served
    served.app.close()


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_a_graph_over_the_bound_is_structured_only(wheel: Served) -> None:
    async with Client(wheel.server, mode="legacy") as client:  # 2025-11-25, as real clients
        result = await client.call_tool("get_graph", {"limit": 1000})
    envelope = result.structured_content
    assert envelope is not None and envelope["success"] is True
    assert len(envelope["data"]["nodes"]) == SPOKES + 1
    assert estimate_tokens(json.dumps(envelope)) > ANSWER_TOKEN_BOUND
    text = text_of(result)
    assert text.startswith("get_graph answered ") and "structured content only" in text
    assert "`limit`" in text and "`offset`" in text
    assert len(text) < 500


async def test_the_default_graph_keeps_its_json_text(wheel: Served) -> None:
    async with Client(wheel.server, mode="legacy") as client:
        result = await client.call_tool("get_graph", {})
    assert json.loads(text_of(result)) == result.structured_content


def big_result() -> CallToolResult:
    nodes = [{"id": f"note {i:05}.md", "title": f"note {i}", "broken": False} for i in range(2000)]
    return ok({"nodes": nodes}, 0.0, True)


@pytest.mark.parametrize("protocol", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_protocols_with_structured_content_get_the_note(protocol: str) -> None:
    result = big_result()
    shortened = text_for_window(result, "get_graph", protocol)
    assert "structured content only" in text_of(shortened)
    assert shortened.structured_content is result.structured_content
    assert "nodes" in text_of(result)  # the original is left as it was


@pytest.mark.parametrize("protocol", ["2024-11-05", "2025-03-26", None])
def test_older_protocols_and_direct_runs_keep_the_json(protocol: str | None) -> None:
    assert STRUCTURED_CONTENT_SINCE == "2025-06-18"
    result = big_result()
    assert text_for_window(result, "get_graph", protocol) is result


def test_answers_within_the_bound_keep_the_json() -> None:
    # Over the bound in characters but not in estimated tokens: only the estimate counts.
    fits = ok({"text": "x" * (ANSWER_TOKEN_BOUND * 2)}, 0.0, True)
    assert estimate_tokens(text_of(fits)) <= ANSWER_TOKEN_BOUND
    assert text_for_window(fits, "get_file_content", "2025-11-25") is fits
