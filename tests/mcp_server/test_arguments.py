"""The paging, path and filter arguments of every tool are the shared types of
`weaver.mcp_server.arguments`: a tool that declares its own `limit` or `offset` fails here."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from pydantic import TypeAdapter

from weaver.mcp_server import arguments, build_server
from weaver.mcp_server.schemas import lean_schema
from weaver.runtime.app import App
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.anyio

PAGING = [
    arguments.Limit,
    arguments.Offset,
    arguments.SearchLimit,
    arguments.RecordLimit,
    arguments.RecordOffset,
    arguments.HistoryLimit,
    arguments.NeighborLimit,
    arguments.TaggedLimit,
    arguments.HubLimit,
    arguments.SimilarLimit,
    arguments.LinksLimit,
    arguments.GraphLimit,
    arguments.ContentOffset,
]
FILTERS = [arguments.Directory, arguments.Tag, arguments.Filter]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def schema(kind: Any) -> dict[str, Any]:
    return TypeAdapter(kind).json_schema()


def shape(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without what the tool itself adds (its title and default)."""
    return {k: v for k, v in prop.items() if k not in ("title", "default")}


async def listed_properties(app: App) -> dict[str, dict[str, Any]]:
    server = build_server(ServerState(app, watch=False))
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    return {
        f"{tool.name}.{name}": prop
        for tool in tools
        for name, prop in tool.input_schema["properties"].items()
    }


async def test_every_limit_and_offset_is_a_shared_paging_type(app: App) -> None:
    shared = [lean_schema(schema(kind)) for kind in PAGING]
    props = await listed_properties(app)
    paging = {k: p for k, p in props.items() if k.endswith((".limit", ".offset"))}
    assert len(paging) >= 12  # the tools that page
    for name, prop in paging.items():
        assert shape(prop) in shared, name


async def test_every_note_path_and_optional_filter_is_a_shared_type(app: App) -> None:
    props = await listed_properties(app)
    note_path = lean_schema(schema(arguments.NotePath))
    for name in ("get_file.path", "get_file_content.path", "search_links.path"):
        assert shape(props[name]) == note_path
    # A shared filter may carry the tool's own description; the type under it is the same.
    nullable = {"type": ["string", "null"]}
    filters = [
        prop
        for name, prop in props.items()
        if name.endswith((".directory", ".tag")) and prop.get("type") != "string"  # optional
    ]
    assert len(filters) >= 7
    for prop in filters:
        assert {k: v for k, v in shape(prop).items() if k != "description"} == nullable
    for kind in FILTERS:
        assert {
            k: v for k, v in lean_schema(schema(kind)).items() if k != "description"
        } == nullable
