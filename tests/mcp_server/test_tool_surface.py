"""The tools/list answer, pinned: names, titles, descriptions, input and output schemas and
annotations of every tool, byte for byte, as a client sees them (`fixtures/tools_list.json`),
with every toolset served; and the instructions and tools of the default toolsets.

A client caches the list and a model learns it; a refactoring of how tools are declared must
not change a character of it. A deliberate change of the surface regenerates the fixture:
`WEAVER_PIN_TOOLS=1 pytest tests/mcp_server/test_tool_surface.py`, and the diff shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from weaver.config import DEFAULT_TOOLSETS, TOOLSETS, Settings, Toolset
from weaver.mcp_server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.default_toolsets]

FIXTURE = Path(__file__).parent / "fixtures" / "tools_list.json"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def surface(
    vault: Path, read_only: bool, toolsets: tuple[Toolset, ...] = TOOLSETS
) -> dict[str, Any]:
    """What a client of a server over `vault` is told: its instructions and its tools."""
    app = open_app(Settings(vault=vault, read_only=read_only, toolsets=list(toolsets)))
    try:
        async with Client(build_server(ServerState(app, watch=False)), mode="legacy") as client:
            listed = await client.list_tools()
            instructions = client.instructions
    finally:
        app.close()
    tools = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools
    ]
    return {"instructions": instructions, "tools": tools}


async def test_tools_list_is_exactly_the_pinned_one(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    writing = await surface(tmp_path / "vault", read_only=False)
    read_only = await surface(tmp_path / "vault", read_only=True)
    default = await surface(tmp_path / "vault", read_only=False, toolsets=DEFAULT_TOOLSETS)
    found = {
        "writer": writing,
        "readOnly": {
            "instructions": read_only["instructions"],
            "tools": [tool["name"] for tool in read_only["tools"]],
        },
        "default": {
            "instructions": default["instructions"],
            "tools": [tool["name"] for tool in default["tools"]],
        },
    }
    text = json.dumps(found, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("WEAVER_PIN_TOOLS") == "1":
        FIXTURE.write_text(text, encoding="utf-8")
    assert text == FIXTURE.read_text(encoding="utf-8")
