"""The tool catalog: every tool declared once, grouped in a documented toolset, and offered by
the servers whose settings allow it."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest
from mcp import Client
from sqlalchemy import Connection

from tests.helpers import write_files
from weaver.cache import graph as cache_graph
from weaver.config import TOOLSETS, Settings
from weaver.mcp_server import build_server
from weaver.mcp_server.catalog import ToolDef, defs_of, tool, tools_of
from weaver.mcp_server.server import TOOL_MODULES
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState
from weaver.views import link_graph as g

DOCS = Path(__file__).parents[2] / "docs" / "tools.md"


def toolset_rows() -> list[tuple[str, str]]:
    """docs/tools.md's toolset table, less its header: (toolset, its tools as listed)."""
    rows = re.findall(r"^\| (\w+) \| (.+) \|$", DOCS.read_text(encoding="utf-8"), re.M)
    return [(name, tools) for name, tools in rows if name != "toolset"]


def test_every_tool_is_documented_in_its_toolset() -> None:
    declared = {
        toolset: [d.spec.name for d in defs_of(*TOOL_MODULES) if d.spec.toolset == toolset]
        for toolset in TOOLSETS
    }
    documented = {name: [t.strip(" ✎") for t in tools.split(",")] for name, tools in toolset_rows()}
    assert documented == declared
    assert all(declared.values()), "a toolset without tools"


def test_the_docs_mark_exactly_the_writing_tools() -> None:
    marked = {name for _, tools in toolset_rows() for name in re.findall(r"(\w+) ✎", tools)}
    assert marked == {d.spec.name for d in defs_of(*TOOL_MODULES) if d.spec.writes}


def declare_echo(module: types.ModuleType) -> ToolDef:
    def echo(state: ServerState) -> None:
        return None

    echo.__module__ = module.__name__
    found = tool("Echo", "Echoes.", toolset="system")(echo)
    module.echo = found  # type: ignore[attr-defined]
    return found


def test_a_name_declared_twice_is_refused() -> None:
    first, second = types.ModuleType("first"), types.ModuleType("second")
    declare_echo(first)
    declare_echo(second)
    with pytest.raises(ValueError, match="two tools are named 'echo'"):
        defs_of(first, second)


def test_a_tool_imported_by_another_module_is_collected_once() -> None:
    first, second = types.ModuleType("first"), types.ModuleType("second")
    second.echo = declare_echo(first)  # type: ignore[attr-defined]
    assert [d.spec.name for d in defs_of(first, second)] == ["echo"]
    assert defs_of(second) == []


def test_a_read_only_server_offers_no_writing_tool(tmp_path: Path) -> None:
    app = open_app(Settings(vault=tmp_path, read_only=True))
    try:
        offered = {t.name for t in tools_of(ServerState(app, watch=False), *TOOL_MODULES)}
    finally:
        app.close()
    writing = {d.spec.name for d in defs_of(*TOOL_MODULES) if d.spec.writes}
    assert offered == {d.spec.name for d in defs_of(*TOOL_MODULES)} - writing
    assert "list_edits" in offered and "restore_edit" not in offered


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_graph_tools_of_a_server_build_its_graph_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph tools share one link graph per server (`GraphViews`), not one each."""
    loads: list[object] = []
    load_graph = cache_graph.load_graph

    def counted(conn: Connection) -> g.Graph:
        loads.append(conn)
        return load_graph(conn)

    monkeypatch.setattr(cache_graph, "load_graph", counted)
    write_files(tmp_path / "vault", {"a.md": "[[b]]", "b.md": "[[a]]"})
    app = open_app(Settings(vault=tmp_path / "vault"))
    try:
        app.indexer.reconcile()
        async with Client(build_server(ServerState(app, watch=False))) as client:
            for name, args in [
                ("get_hubs", {}),
                ("get_neighbors", {"path": "a.md"}),
                ("find_path", {"source": "a.md", "target": "b.md"}),
                ("get_graph", {}),
            ]:
                result = await client.call_tool(name, args)
                assert not result.is_error, result
    finally:
        app.close()
    assert len(loads) == 1
