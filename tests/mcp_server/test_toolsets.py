"""Toolsets: which tools a server serves, chosen in the config, the environment or on the
command line; the tool list's size within budget for the default and for each toolset alone;
a tool left out is not callable; each tool's whole help is the resource weaver://help/{tool}.

The budget is what a client puts into the model's context on every turn: tools/list as it
travels, serialized, measured here on a real client session."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceTemplateReference, TextResourceContents

from tests.helpers import write_files
from weaver.cli import main
from weaver.config import DEFAULT_TOOLSETS, TOOLSETS, Settings, Toolset, load_settings
from weaver.errors import ConfigError
from weaver.mcp_server import build_server
from weaver.mcp_server.catalog import defs_of
from weaver.mcp_server.server import TOOL_MODULES
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.default_toolsets]

LIST_BUDGET = 40_000  # bytes of tools/list with the default toolsets
PROSE_BUDGET = 20_000  # of which descriptions and input schemas
HELP = ResourceTemplateReference(type="ref/resource", uri="weaver://help/{tool}")
VALID = (
    "expected some of notes, search, graph, tags, tasks, canvas, bases, periodic, attachments, "
    "edit, workflows, records, system, or all"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"a.md": "# A\n[[b]] #idea\n", "b.md": "# B\n"})


@asynccontextmanager
async def client_of(vault: Path, **settings: Any) -> AsyncIterator[Client]:
    app = open_app(Settings(vault=vault, **settings))
    try:
        app.indexer.reconcile()
        async with Client(build_server(ServerState(app, watch=False))) as client:
            yield client
    finally:
        app.close()


def tools_of(toolsets: Sequence[str]) -> list[str]:
    return [d.spec.name for d in defs_of(*TOOL_MODULES) if d.spec.toolset in toolsets]


async def listed_sizes(vault: Path, toolsets: Sequence[Toolset]) -> tuple[int, int, list[str]]:
    """tools/list as it travels (JSON, camelCase, no nulls): its bytes, those of its
    descriptions and input schemas, and the tools' names."""
    async with client_of(vault, toolsets=list(toolsets)) as client:
        listed = await client.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    tools = json.loads(wire)["tools"]
    prose = sum(len(t.get("description", "").encode()) + size(t["inputSchema"]) for t in tools)
    return len(wire.encode()), prose, [t["name"] for t in tools]


def size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


# -- the budget ----------------------------------------------------------------------------


async def test_the_default_tool_list_fits_the_budget(vault: Path) -> None:
    async with client_of(vault) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == tools_of(DEFAULT_TOOLSETS)  # the default is what a server serves unasked
    total, prose, _ = await listed_sizes(vault, DEFAULT_TOOLSETS)
    assert total <= LIST_BUDGET and prose <= PROSE_BUDGET, (total, prose)


@pytest.mark.parametrize("toolset", TOOLSETS)
async def test_each_toolset_alone_fits_the_budget(
    vault: Path, toolset: Toolset, record_property: Any
) -> None:
    total, prose, names = await listed_sizes(vault, [toolset])
    record_property("tools_list_bytes", total)
    assert names == tools_of([toolset])
    assert total <= LIST_BUDGET and prose <= PROSE_BUDGET, (total, prose)


async def test_every_toolset_lists_every_tool_and_is_reported(
    vault: Path, record_property: Any
) -> None:
    total, _, names = await listed_sizes(vault, TOOLSETS)
    record_property("tools_list_bytes", total)
    assert names == tools_of(TOOLSETS) and len(names) == len(defs_of(*TOOL_MODULES))
    default, _, _ = await listed_sizes(vault, DEFAULT_TOOLSETS)
    assert default < total


@pytest.mark.slow
def test_the_default_tool_list_over_stdio_fits_the_budget(vault: Path) -> None:
    """The bytes of the tools/list answer as `weaver serve` writes it to its client."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "budget", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    command = [sys.executable, "-m", "weaver", "--vault", str(vault), "serve", "--no-watch"]
    # stdin stays open until the answer is in: at its end the server may stop before answering.
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=vault.parent
    ) as served:
        assert served.stdin is not None and served.stdout is not None
        served.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        served.stdin.flush()
        raw = next(text for text in served.stdout if '"id":2' in text)
        served.stdin.close()
        served.wait(timeout=60)
    tools = json.loads(raw)["result"]["tools"]
    assert [t["name"] for t in tools] == tools_of(DEFAULT_TOOLSETS)
    assert len(raw.encode()) <= LIST_BUDGET


# -- choosing the toolsets -----------------------------------------------------------------


def test_toolsets_come_from_the_config_file_the_environment_and_the_flags(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text('vault = "vault"\ntoolsets = ["graph", "notes"]\n', encoding="utf-8")
    assert load_settings(config, environ={}).toolsets == ["notes", "graph"]
    from_env = load_settings(config, environ={"WEAVER_TOOLSETS": "tags, search"})
    assert from_env.toolsets == ["search", "tags"]
    flagged = load_settings(config, {"toolsets": "all"}, environ={"WEAVER_TOOLSETS": "tags"})
    assert flagged.toolsets == list(TOOLSETS)
    config.write_text('vault = "vault"\n', encoding="utf-8")
    assert load_settings(config, environ={}).toolsets == list(DEFAULT_TOOLSETS)


@pytest.mark.parametrize(
    ("text", "environ", "where"),
    [
        ('toolsets = ["notes", "grpah"]', {}, "in {config}"),
        ("", {"WEAVER_TOOLSETS": "notes,grpah"}, "in WEAVER_TOOLSETS"),
    ],
)
def test_an_unknown_toolset_is_refused_naming_the_valid_ones(
    tmp_path: Path, text: str, environ: dict[str, str], where: str
) -> None:
    (tmp_path / "vault").mkdir()
    config = tmp_path / "weaver.toml"
    config.write_text(f'vault = "vault"\n{text}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(config, environ=environ)
    assert str(refused.value).startswith(
        f"invalid setting 'toolsets' {where.format(config=config)}"
    )
    assert str(refused.value).endswith(f"unknown toolset 'grpah'; {VALID}")


def test_the_serving_commands_refuse_an_unknown_toolset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vault").mkdir()
    for command in ("serve", "daemon", "mcp-config"):
        argv = ["--vault", str(tmp_path / "vault"), command, "--toolsets", "notes,everything"]
        assert main(argv) == 2
        error = capsys.readouterr().err
        expected = f"unknown toolset 'everything'; {VALID}"
        assert error == f"weaver: invalid --toolsets: 'notes,everything': {expected}\n", command


def test_mcp_config_names_the_toolsets_unless_they_are_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vault").mkdir()
    monkeypatch.chdir(tmp_path)

    def serve_args(*extra: str) -> list[str]:
        assert main(["--vault", str(tmp_path / "vault"), "mcp-config", *extra]) == 0
        entry = json.loads(capsys.readouterr().out)["mcpServers"]["weaver"]
        args: list[str] = entry["args"]
        return args[args.index("serve") :]

    assert serve_args() == ["serve"]
    assert serve_args("--toolsets", "graph,notes") == ["serve", "--toolsets", "notes,graph"]
    assert serve_args("--toolsets", "all") == ["serve", "--toolsets", "all"]
    monkeypatch.setenv("WEAVER_TOOLSETS", "notes,search,edit,tags")
    assert serve_args() == ["serve", "--toolsets", "notes,search,tags,edit"]


# -- what a client sees of the toolsets ----------------------------------------------------


async def test_a_tool_not_served_is_not_callable_and_says_which_toolset_to_add(
    vault: Path,
) -> None:
    async with client_of(vault, toolsets=["notes", "search"]) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("get_neighbors", {"path": "a.md"})
    assert "get_neighbors" not in listed and "get_file" in listed
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"] == (
        "get_neighbors is in the toolset 'graph', which this server does not serve (it serves "
        "notes, search): start it with --toolsets notes,search,graph (or all), or add 'graph' "
        "to `toolsets` in its config"
    )


async def test_the_instructions_name_the_tools_served_and_the_toolsets_left_out(
    vault: Path,
) -> None:
    async with client_of(vault, toolsets=["graph"]) as client:
        instructions = client.instructions or ""
    assert "get_neighbors" in instructions and "query_files" not in instructions
    assert "Not served here" in instructions
    left_out = (
        "the notes, search, tags, tasks, canvas, bases, periodic, attachments, edit, workflows, "
        "records, system tools"
    )
    assert left_out in instructions
    async with client_of(vault, toolsets=list(TOOLSETS)) as client:
        assert "Not served here" not in (client.instructions or "")


async def test_a_read_only_server_explains_only_the_write_tools_of_its_toolsets(
    vault: Path,
) -> None:
    async with client_of(vault, toolsets=["notes", "tags"], read_only=True) as client:
        instructions = client.instructions or ""
        listed = {t.name for t in (await client.list_tools()).tools}
    assert "(add_tags, remove_tags, rename_tag) are not offered" in instructions
    assert "search_tags" in listed and not listed & {"add_tags", "create_file"}


# -- the help resource ---------------------------------------------------------------------


async def read_help(client: Client, tool: str) -> str:
    contents = (await client.read_resource(f"weaver://help/{tool}")).contents[0]
    assert isinstance(contents, TextResourceContents) and contents.mime_type == "text/markdown"
    return contents.text


async def test_a_tools_help_has_what_its_listing_leaves_out(vault: Path) -> None:
    async with client_of(vault) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        text = await read_help(client, "query_files")
    description = listed["query_files"].description or ""
    assert text.startswith("# query_files: Query notes\n\nToolset: notes; it reads only.\n")
    assert description in text and "Examples:" in text and "Examples:" not in description
    assert "- `limit` (integer; default 50): Maximum results, 1-500" in text
    assert "- `where` (object or null): Frontmatter property tests" in text
    # The result's fields with their descriptions, which the listed output schema leaves out.
    assert "  - `modified` (integer): Unix epoch milliseconds" in text
    assert "- `hasMore` (boolean): True when another page follows" in text
    assert "description" not in json.dumps(listed["query_files"].output_schema)


async def test_the_help_of_a_tool_not_served_says_how_to_have_it(vault: Path) -> None:
    async with client_of(vault, toolsets=["notes"]) as client:
        text = await read_help(client, "rename_tag")
    assert "Toolset: tags; it changes the vault." in text
    assert "Not callable here: rename_tag is in the toolset 'tags'" in text
    assert "- `tag` (string; required): The tag to rename" in text


async def test_the_help_of_an_unknown_tool_is_an_error_with_the_tool_meant(vault: Path) -> None:
    async with client_of(vault) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("weaver://help/query_file")
    assert str(refused.value).startswith("Unknown tool: 'query_file' (did you mean 'query_files'")


async def test_the_help_template_is_listed_and_completes_tool_names(vault: Path) -> None:
    async with client_of(vault) as client:
        templates = (await client.list_resource_templates()).resource_templates
        completed = await client.complete(HELP, {"name": "tool", "value": "get_f"})
    assert "weaver://help/{tool}" in [t.uri_template for t in templates]
    assert completed.completion.values == ["get_file", "get_file_content", "get_files_content"]
