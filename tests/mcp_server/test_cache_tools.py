"""Every tool through the SDK's in-memory client, in both protocol modes, on a temp vault and on
the real tasks-demo corpus: filters, pagination edges, clamping, errors, path traversal."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic_core
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import TextContent, TextResourceContents
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from tests.corpora import require_corpora
from tests.helpers import free_port, write_files
from weaver.config import Settings
from weaver.mcp_server import build_server
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens
from weaver.runtime import health_report
from weaver.runtime.app import App, open_app
from weaver.runtime.health_report import compute_health
from weaver.runtime.state import ServerState
from weaver.vault.watcher import VaultWatcher

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

TOOLS = {
    "query_files",
    "get_file",
    "get_file_content",
    "search_tags",
    "search_links",
    "get_stats",
    "health_check",
}

FILES: dict[str, str | bytes] = {
    "Home.md": (
        "---\ntype: hub\nstatus: active\ntags: [Project/Alpha]\naliases: [Start]\n---\n"
        "# Home\nSee [[Topic]], [[Missing]] and ![[img.png]]. #inline\n"
    ),
    "technical/Topic.md": "---\ntype: concept\nstatus: active\n---\nBack to [[Home]] #neural\n",
    "technical/sub/deep.md": "---\ntype: concept\nstatus: draft\n---\n[[Topic]] #project #Neural\n",
    "technical-old/old.md": "---\ntype: concept\n---\n#projects [[Home]]\n",
    "bom.md": "\ufeff# Bom\nbody\n",
    "latin1.md": "caf\xe9 #latin".encode("latin-1"),
    "img.png": b"\x89PNG",
    ".obsidian/hidden.md": "# hidden\n",
    ".weaver/notes.md": "# cache folder\n",
    "ignored/skip.md": "# ignored by config\n",
}


@dataclass
class Served:
    server: MCPServer[ServerState]
    state: ServerState
    app: App
    root: Path


class Tools:
    """Calls tools and checks the envelope is the same as structured content and as text (an
    answer over the token bound has a short text instead: `envelope.text_for_window`)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def raw(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        result = await self.client.call_tool(name, args or {})
        text: str = result.content[0].text  # type: ignore[union-attr]
        if text.startswith(f"{name} answered ") and result.structured_content is not None:
            size = estimate_tokens(pydantic_core.to_json(result.structured_content).decode())
            assert size > ANSWER_TOKEN_BOUND and "structured content only" in text
            text = pydantic_core.to_json(result.structured_content).decode()
        envelope: dict[str, Any] = json.loads(text)
        assert result.structured_content == envelope
        assert result.is_error is (not envelope["success"])
        # `warnings` only on a write that has something to say (metadata.warnings)
        assert set(envelope["metadata"]) - {"warnings"} == {"executionTime", "cacheHit"}
        assert isinstance(envelope["metadata"]["executionTime"], int | float)
        return envelope

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        envelope = await self.raw(name, args)
        assert envelope["success"] is True, envelope
        assert "error" not in envelope
        data: dict[str, Any] = envelope["data"]
        return data

    async def error(self, name: str, **args: Any) -> str:
        envelope = await self.raw(name, args)
        assert envelope["success"] is False, envelope
        assert "data" not in envelope
        message: str = envelope["error"]
        return message


def serve(settings: Settings, reconcile: bool = True) -> Served:
    app = open_app(settings)
    if reconcile:
        app.indexer.reconcile()
    state = ServerState(app, watch=False)
    return Served(build_server(state), state, app, settings.vault)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def temp(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("mcp")
    root = base / "vault"
    write_files(root, FILES)
    write_files(base, {"outside.md": "# secret\n", "outside-dir/secret.md": "# secret\n"})
    (root / "escape.md").symlink_to(base / "outside.md")
    (root / "escape-dir").symlink_to(base / "outside-dir")
    (root / "alias.md").symlink_to(root / "bom.md")
    served = serve(Settings(vault=root, ignore=["ignored"], database_url=module_db_url))
    yield served
    served.app.close()


@asynccontextmanager
async def tools_of(served: Served, mode: str) -> AsyncIterator[Tools]:
    """A client of `served` speaking one protocol version (`legacy` or the newest)."""
    async with Client(served.server, mode=mode) as client:
        yield Tools(client)


@pytest.fixture(params=["legacy", "auto"])
async def tools(request: pytest.FixtureRequest, temp: Served) -> AsyncIterator[Tools]:
    async with tools_of(temp, request.param) as tools:
        yield tools


def paths(data: dict[str, Any]) -> list[str]:
    return [f["path"] for f in data["files"]]


ALL_NOTES = [
    "Home.md",
    "alias.md",
    "bom.md",
    "latin1.md",
    "technical-old/old.md",
    "technical/Topic.md",
    "technical/sub/deep.md",
]


# -- tools/list ---------------------------------------------------------------------------


async def help_text(client: Client, tool: str) -> str:
    """The tool's whole help (its examples, its result's fields), as a client reads it."""
    contents = (await client.read_resource(f"weaver://help/{tool}")).contents[0]
    assert isinstance(contents, TextResourceContents)
    return contents.text


async def test_lists_the_contract_tools_read_only_with_schemas(tools: Tools) -> None:
    listed = {tool.name: tool for tool in (await tools.client.list_tools()).tools}
    assert set(listed) >= TOOLS  # the other tools are checked in test_graph_tools.py
    for tool in (listed[name] for name in TOOLS):
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.output_schema is not None
        assert "Example" in await help_text(tools.client, tool.name)
    for name in ("query_files", "get_file", "search_tags", "get_stats"):
        assert "epoch milliseconds" in await help_text(tools.client, name)
    limit = listed["query_files"].input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 500, 50)
    assert listed["search_tags"].input_schema["properties"]["limit"]["default"] == 100
    assert listed["search_links"].input_schema["required"] == ["path"]
    direction = listed["search_links"].input_schema["properties"]["direction"]
    assert (direction["enum"], direction["default"]) == (["outgoing", "incoming", "both"], "both")


async def test_every_tool_refuses_arguments_it_does_not_take(tools: Tools) -> None:
    listed = (await tools.client.list_tools()).tools
    assert [t.name for t in listed if t.input_schema.get("additionalProperties") is not False] == []
    # A misspelt filter answered as if applied would mislead: it is named, with what is taken.
    assert await tools.error("query_files", hasErrors=True, limit=5) == (
        "Invalid arguments: hasErrors: not an argument of query_files (it takes directory, "
        "type, status, tag, limit, offset, sortBy, sortOrder, modifiedSince, modifiedUntil, "
        "where)"
    )
    message = await tools.error("get_stats", verbose=True, depth=2)
    assert message == (
        "Invalid arguments: depth, verbose: not arguments of get_stats (it takes no arguments)"
    )
    assert (await tools.ok("query_files", limit=5))["limit"] == 5


# -- query_files --------------------------------------------------------------------------


async def test_query_files_all_notes_by_path(tools: Tools) -> None:
    data = await tools.ok("query_files")
    assert paths(data) == ALL_NOTES
    assert (data["total"], data["limit"], data["offset"], data["hasMore"]) == (7, 50, 0, False)
    home = data["files"][0]
    assert set(home) >= {"path", "type", "status", "frontmatter", "tags", "created", "modified"}
    assert (home["type"], home["status"], home["tags"]) == (
        "hub",
        "active",
        ["inline", "Project/Alpha"],
    )
    assert isinstance(home["modified"], int) and home["modified"] > 1_600_000_000_000
    assert home["size"] == len(str(FILES["Home.md"]).encode())


async def test_query_files_each_filter(tools: Tools) -> None:
    assert paths(await tools.ok("query_files", directory="technical")) == [
        "technical/Topic.md",
        "technical/sub/deep.md",
    ]
    assert paths(await tools.ok("query_files", directory="/technical/sub/")) == [
        "technical/sub/deep.md"
    ]
    assert len(paths(await tools.ok("query_files", type="concept"))) == 3
    assert paths(await tools.ok("query_files", status="draft")) == ["technical/sub/deep.md"]
    assert paths(await tools.ok("query_files", tag="project")) == [
        "Home.md",
        "technical/sub/deep.md",
    ]
    assert paths(await tools.ok("query_files", tag="#PROJECT/alpha")) == ["Home.md"]


async def test_query_files_filters_combine_with_and(tools: Tools) -> None:
    data = await tools.ok("query_files", directory="technical", type="concept", status="active")
    assert paths(data) == ["technical/Topic.md"]
    data = await tools.ok("query_files", tag="neural", status="draft")
    assert paths(data) == ["technical/sub/deep.md"]


async def test_query_files_no_match_and_blank_filters(tools: Tools) -> None:
    data = await tools.ok("query_files", directory="technical", type="nope")
    assert (data["files"], data["total"], data["hasMore"]) == ([], 0, False)
    # A folder on disk with nothing Weaver serves in it: no notes, and no error.
    assert (await tools.ok("query_files", directory="ignored"))["total"] == 0
    assert paths(await tools.ok("query_files", directory="", type=" ", tag="")) == ALL_NOTES


@pytest.mark.parametrize(
    ("directory", "error"),
    [
        ("nowhere", "Folder not found: 'nowhere'"),
        ("Technical", "Folder not found: 'Technical' (did you mean 'technical'?)"),
        ("sub", "Folder not found: 'sub' (did you mean 'technical/sub'?)"),
        (
            "technical/sab",
            "Folder not found: 'technical/sab' (did you mean 'technical/sub' or 'technical'?)",
        ),
        ("../outside-dir", "Folder not found: '../outside-dir'"),  # no peeking outside
    ],
)
async def test_a_folder_that_is_not_there_is_named_not_answered_empty(
    tools: Tools, directory: str, error: str
) -> None:
    """An empty page would read as "no such notes"; the folder is what is wrong."""
    assert await tools.error("query_files", directory=directory) == error


async def test_query_files_pagination_edges(tools: Tools) -> None:
    pages = []
    for offset in range(0, 8, 3):
        data = await tools.ok("query_files", limit=3, offset=offset)
        assert (data["total"], data["offset"]) == (7, offset)
        assert data["hasMore"] is (offset + 3 < 7)
        pages.extend(paths(data))
    assert pages == ALL_NOTES
    at_end = await tools.ok("query_files", limit=3, offset=7)
    assert (at_end["files"], at_end["total"], at_end["hasMore"]) == ([], 7, False)
    last = await tools.ok("query_files", limit=1, offset=6)
    assert (paths(last), last["hasMore"]) == (["technical/sub/deep.md"], False)


@pytest.mark.parametrize(
    ("args", "limit", "offset"),
    [
        ({"limit": 0}, 1, 0),
        ({"limit": -5}, 1, 0),
        ({"limit": 9999}, 500, 0),
        ({"limit": "7"}, 7, 0),
        ({"limit": 3.0}, 3, 0),
        ({"offset": -3}, 50, 0),
        ({"offset": 10**30}, 50, 2**31 - 1),
    ],
)
async def test_query_files_clamps_limit_and_offset(
    tools: Tools, args: dict[str, Any], limit: int, offset: int
) -> None:
    data = await tools.ok("query_files", **args)
    assert (data["limit"], data["offset"]) == (limit, offset)


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ({"limit": "abc"}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"offset": [1]}, "offset"),
        ({"directory": 5}, "directory"),
        ({"tag": {"x": 1}}, "tag"),
    ],
)
async def test_query_files_wrong_types_name_the_argument(
    tools: Tools, args: dict[str, Any], argument: str
) -> None:
    message = await tools.error("query_files", **args)
    assert message.startswith(f"Invalid arguments: {argument}: ")


async def test_a_tool_failing_on_a_model_of_its_own_is_not_blamed_on_the_arguments(
    tmp_path: Path,
) -> None:
    """A pydantic error inside a tool body is a bug of the tool: the client gets the SDK's
    crash answer, not "Invalid arguments" pointing the model at arguments that were fine."""
    from pydantic import BaseModel

    from weaver.mcp_server.envelope import make_tool

    class Needs(BaseModel):
        n: int

    async def broken(n: int = 1) -> dict[str, Any]:
        return Needs.model_validate({"n": "not a number"}).model_dump()

    (tmp_path / "vault").mkdir()
    app = open_app(Settings(vault=tmp_path / "vault"))
    tool = make_tool(broken, ServerState(app, watch=False), title="t", description="d")
    server = MCPServer("t", tools=[tool])
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("broken", {"n": 2})
    finally:
        app.close()
    assert result.is_error
    assert isinstance(result.content[0], TextContent)
    assert "Invalid arguments" not in result.content[0].text


DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    """Notes last modified on 1, 2 or 3 March 2026 at noon, local time (b and e the same)."""
    root = tmp_path_factory.mktemp("dated") / "vault"
    days = {"a.md": 1, "b.md": 3, "c/d.md": 2, "e.md": 3, "f.md": 2}
    write_files(
        root, {path: f"#{'even' if day % 2 == 0 else 'odd'}\n" for path, day in days.items()}
    )
    for path, day in days.items():
        noon = datetime(2026, 3, day, 12).timestamp()
        os.utime(root / path, (noon, noon))
    served = serve(Settings(vault=root, database_url=module_db_url))
    yield served
    served.app.close()


@pytest.fixture(params=["legacy", "auto"])
async def dated_tools(request: pytest.FixtureRequest, dated: Served) -> AsyncIterator[Tools]:
    async with tools_of(dated, request.param) as tools:
        yield tools


async def test_query_files_newest_first_with_ties_by_path(dated_tools: Tools) -> None:
    newest = await dated_tools.ok("query_files", sortBy="modified")
    assert paths(newest) == ["b.md", "e.md", "c/d.md", "f.md", "a.md"]
    assert [f["modified"] for f in newest["files"]] == sorted(
        (f["modified"] for f in newest["files"]), reverse=True
    )
    oldest = await dated_tools.ok("query_files", sortBy="modified", sortOrder="asc")
    assert paths(oldest) == ["a.md", "c/d.md", "f.md", "b.md", "e.md"]
    assert paths(await dated_tools.ok("query_files", sortOrder="desc")) == sorted(
        paths(oldest), reverse=True
    )
    # Pages of a time order are stable too: together they are the whole list, once each.
    pages = [
        paths(await dated_tools.ok("query_files", sortBy="modified", limit=2, offset=offset))
        for offset in (0, 2, 4)
    ]
    assert [p for page in pages for p in page] == paths(newest)
    created = await dated_tools.ok("query_files", sortBy="created", limit=1)
    assert created["files"][0]["created"] == max(f["created"] for f in newest["files"])


async def test_query_files_modified_since_and_until(dated_tools: Tools) -> None:
    march_2 = int(datetime(2026, 3, 2).timestamp() * 1000)
    since = await dated_tools.ok("query_files", modifiedSince="2026-03-02")
    assert (paths(since), since["total"]) == (["b.md", "c/d.md", "e.md", "f.md"], 4)
    assert paths(await dated_tools.ok("query_files", modifiedSince=march_2)) == paths(since)
    window = await dated_tools.ok(
        "query_files", modifiedSince="2026-03-02", modifiedUntil=march_2 + DAY_MS
    )
    assert paths(window) == ["c/d.md", "f.md"]  # until is exclusive: the 3rd is out
    noon = await dated_tools.ok("query_files", modifiedUntil="2026-03-01T12:00:00")
    assert noon["total"] == 0  # a.md was modified at noon exactly: not before it
    # With a tag, the total counts the notes in the window, not every note with the tag.
    even = await dated_tools.ok("query_files", tag="even", modifiedSince="2026-03-02", limit=1)
    assert (paths(even), even["total"], even["hasMore"]) == (["c/d.md"], 2, True)
    odd = await dated_tools.ok("query_files", tag="odd", modifiedSince="2026-03-02")
    assert (paths(odd), odd["total"]) == (["b.md", "e.md"], 2)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"sortBy": "size"}, "Invalid arguments: sortBy: Input should be 'path', 'modified'"),
        ({"sortOrder": "newest"}, "Invalid arguments: sortOrder: Input should be 'asc' or 'desc'"),
        ({"modifiedSince": "last week"}, "Invalid arguments: modifiedSince: expected Unix epoch"),
        ({"modifiedUntil": -1}, "Invalid arguments: modifiedUntil: Input should be greater"),
    ],
)
async def test_query_files_bad_order_or_times_name_the_argument(
    dated_tools: Tools, args: dict[str, Any], error: str
) -> None:
    assert (await dated_tools.error("query_files", **args)).startswith(error)


async def test_query_files_rejects_a_tag_of_only_hashes(tools: Tools) -> None:
    assert (await tools.error("query_files", tag="#")).startswith("Invalid arguments: tag:")


# -- get_file -----------------------------------------------------------------------------


async def test_get_file_metadata_and_links(tools: Tools) -> None:
    data = await tools.ok("get_file", path="Home.md")
    assert (data["path"], data["title"], data["aliases"]) == ("Home.md", "Home", ["Start"])
    assert data["frontmatter"]["tags"] == ["Project/Alpha"]
    assert data["links"] == {
        "outgoing": ["technical/Topic.md", "Missing", "img.png"],
        "incoming": ["technical-old/old.md", "technical/Topic.md"],
        "broken": ["Missing"],
        "outgoingTotal": 3,
        "incomingTotal": 2,
        "brokenTotal": 1,
        "hint": None,
    }
    assert data["error"] is None
    assert isinstance(data["created"], int)


async def test_get_file_accepts_backslashes_and_dot_segments(tools: Tools) -> None:
    assert (await tools.ok("get_file", path="technical\\Topic.md"))["path"] == "technical/Topic.md"
    assert (await tools.ok("get_file", path="./technical/Topic.md"))["path"] == "technical/Topic.md"


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        ("nope.md", "File not found"),
        ("technical", "Invalid path"),
        ("../Home.md", "Invalid path"),
        (".obsidian/hidden.md", "Invalid path"),
        ("", "Invalid path"),
    ],
)
async def test_get_file_errors(tools: Tools, path: str, prefix: str) -> None:
    assert (await tools.error("get_file", path=path)).startswith(prefix)


@pytest.mark.parametrize(
    ("tool", "path", "error"),
    [
        # Without the folder, in another case, with a typo: the note it names is suggested.
        ("get_file", "Topic.md", "File not found: 'Topic.md' (did you mean 'technical/Topic.md'?)"),
        (
            "search_links",
            "TECHNICAL/sub/Deep.md",
            "File not found: 'TECHNICAL/sub/Deep.md' (did you mean 'technical/sub/deep.md'?)",
        ),
        (
            "get_file_content",
            "technical/Topik.md",
            "File not found: 'technical/Topik.md' (did you mean 'technical/Topic.md'?)",
        ),
        # Without `.md`: only the note at that very path, never a guess.
        (
            "get_file",
            "technical/Topic",
            "Invalid path: 'technical/Topic' (not a markdown note; did you mean "
            "'technical/Topic.md'?)",
        ),
        ("get_file", "Topic", "Invalid path: 'Topic' (not a markdown note)"),
        # A note's exact alias names it; an alias merely close to the path is no guess.
        ("get_file", "Start.md", "File not found: 'Start.md' (did you mean 'Home.md'?)"),
        ("get_file", "Stort.md", "File not found: 'Stort.md'"),
        # Nothing close: the error alone.
        ("get_file", "zzzz.md", "File not found: 'zzzz.md'"),
        ("get_file", "../Home.md", "Invalid path: '../Home.md' ('..' is not accepted)"),
    ],
)
async def test_a_path_not_found_names_the_note_it_probably_meant(
    tools: Tools, tool: str, path: str, error: str
) -> None:
    assert await tools.error(tool, path=path) == error


async def test_a_failing_hint_leaves_the_error_as_it_was(
    tools: Tools, temp: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def locked(conn: object) -> None:
        raise OperationalError("SELECT", {}, Exception("database is locked"))

    def broken(conn: object) -> None:
        raise MemoryError

    for failing in (locked, broken):
        monkeypatch.setattr(temp.state.name_index, "get", failing)
        assert await tools.error("get_file", path="Topic.md") == "File not found: 'Topic.md'"


async def test_get_file_requires_a_string_path(tools: Tools) -> None:
    assert (await tools.error("get_file")).startswith("Invalid arguments: path: Field required")
    assert (await tools.error("get_file", path=3)).startswith("Invalid arguments: path:")


# -- get_file_content ---------------------------------------------------------------------


async def test_get_file_content_reads_the_disk(tools: Tools, temp: Served) -> None:
    data = await tools.ok("get_file_content", path="technical/Topic.md")
    expected = (temp.root / "technical" / "Topic.md").read_bytes()
    assert data == {
        "path": "technical/Topic.md",
        "content": expected.decode(),
        "size": len(expected),
        "encoding": "utf-8",
        "offset": 0,
        "totalLength": len(expected.decode()),
        "truncated": False,
        "nextOffset": None,
        "section": None,
    }
    envelope = await tools.raw("get_file_content", {"path": "bom.md"})
    assert envelope["metadata"]["cacheHit"] is False
    assert envelope["data"]["content"] == "# Bom\nbody\n"


async def test_get_file_content_reads_a_long_note_in_pages(tools: Tools, temp: Served) -> None:
    text = (temp.root / "technical" / "Topic.md").read_text(encoding="utf-8")
    first = await tools.ok("get_file_content", path="technical/Topic.md", length=10)
    assert (first["content"], first["truncated"], first["nextOffset"]) == (text[:10], True, 10)
    assert first["totalLength"] == len(text)
    pages, offset = [first["content"]], first["nextOffset"]
    while offset is not None:
        page = await tools.ok(
            "get_file_content", path="technical/Topic.md", offset=offset, length=10
        )
        assert page["offset"] == offset
        pages.append(page["content"])
        offset = page["nextOffset"]
    assert "".join(pages) == text and page["truncated"] is False
    past = await tools.ok("get_file_content", path="technical/Topic.md", offset=10_000)
    assert (past["content"], past["truncated"], past["nextOffset"]) == ("", False, None)
    # Out of range: clamped, as every limit is; a BOM is not counted as a character.
    clamped = await tools.ok("get_file_content", path="bom.md", offset=-5, length=0)
    assert (clamped["offset"], clamped["content"], clamped["nextOffset"]) == (0, "#", 1)


async def test_get_file_content_serves_a_symlink_that_stays_inside(tools: Tools) -> None:
    data = await tools.ok("get_file_content", path="alias.md")
    assert data["content"] == "# Bom\nbody\n"


async def test_get_file_content_reports_non_utf8(tools: Tools) -> None:
    message = await tools.error("get_file_content", path="latin1.md")
    assert "not valid UTF-8" in message and "latin1.md" in message


TRAVERSAL = [
    "../outside.md",
    "technical/../../outside.md",
    "..\\outside.md",
    "technical\\..\\..\\outside.md",
    "/etc/passwd",
    "C:\\Windows\\win.ini",
    "C:/outside.md",
    "escape.md",
    "escape-dir/secret.md",
    ".obsidian/hidden.md",
    ".weaver/notes.md",
    ".weaver/cache.db",
    "ignored/skip.md",
    "img.png",
    "technical",
    "Home.md\x00.png",
    "",
]


@pytest.mark.parametrize("path", TRAVERSAL)
async def test_get_file_content_path_traversal_battery(tools: Tools, path: str) -> None:
    message = await tools.error("get_file_content", path=path)
    assert message.startswith("Invalid path"), message
    assert "# secret" not in message


async def test_get_file_content_rejects_an_absolute_path_even_inside_the_vault(
    tools: Tools, temp: Served
) -> None:
    message = await tools.error("get_file_content", path=str(temp.root / "Home.md"))
    assert message.startswith("Invalid path")


async def test_get_file_content_missing_file(tools: Tools) -> None:
    assert (await tools.error("get_file_content", path="nope.md")).startswith("File not found")


# -- search_tags --------------------------------------------------------------------------


async def test_search_tags_nested_case_and_hash(tools: Tools) -> None:
    data = await tools.ok("search_tags", tag="#Project")
    assert data["tag"] == "project"
    assert paths(data) == ["Home.md", "technical/sub/deep.md"]
    assert (data["count"], data["hasMore"]) == (2, False)
    assert data["matchedTags"] == ["project", "project/alpha"]
    assert set(data["files"][0]) >= {"path", "type", "status", "frontmatter", "modified"}


async def test_search_tags_wildcards(tools: Tools) -> None:
    data = await tools.ok("search_tags", tag="proj*")
    assert data["matchedTags"] == ["project", "project/alpha", "projects"]
    assert data["count"] == 3
    assert (await tools.ok("search_tags", tag="*/ALPHA"))["matchedTags"] == ["project/alpha"]
    assert (await tools.ok("search_tags", tag="neura?"))["count"] == 2


async def test_search_tags_limit_keeps_count(tools: Tools) -> None:
    data = await tools.ok("search_tags", tag="proj*", limit=1)
    assert (paths(data), data["count"], data["limit"], data["hasMore"]) == (
        ["Home.md"],
        3,
        1,
        True,
    )
    assert (await tools.ok("search_tags", tag="proj*", limit=0))["limit"] == 1
    assert (await tools.ok("search_tags", tag="proj*", limit=501))["limit"] == 500


async def test_search_tags_no_match_and_invalid(tools: Tools) -> None:
    data = await tools.ok("search_tags", tag="absent")
    assert (data["files"], data["count"]) == ([], 0)
    for bad in ("", "#", "  "):
        assert (await tools.error("search_tags", tag=bad)).startswith("Invalid arguments: tag:")
    assert (await tools.error("search_tags")).startswith("Invalid arguments: tag: Field required")


# -- search_links -------------------------------------------------------------------------


async def test_search_links_both_directions(tools: Tools) -> None:
    data = await tools.ok("search_links", path="Home.md")
    assert data == {
        "path": "Home.md",
        "direction": "both",
        "outgoing": ["Missing", "img.png", "technical/Topic.md"],
        "incoming": ["technical-old/old.md", "technical/Topic.md"],
        "broken": ["Missing"],
        "count": {"outgoing": 3, "incoming": 2, "total": 5},
        "limit": 100,
        "offset": 0,
        "hasMore": False,
        "context": None,
    }


async def test_search_links_one_direction_and_limit(tools: Tools) -> None:
    data = await tools.ok("search_links", path="Home.md", direction="INCOMING", limit=1)
    assert (data["direction"], data["outgoing"], data["incoming"]) == (
        "incoming",
        [],
        ["technical-old/old.md"],
    )
    assert data["count"] == {"outgoing": 0, "incoming": 2, "total": 2}
    data = await tools.ok("search_links", path="Home.md", direction="outgoing", limit=-1)
    assert (data["outgoing"], data["count"]["outgoing"]) == (["Missing"], 3)


async def test_search_links_errors(tools: Tools) -> None:
    assert (await tools.error("search_links", path="nope.md")).startswith("File not found")
    assert (await tools.error("search_links", path="../x.md")).startswith("Invalid path")
    message = await tools.error("search_links", path="Home.md", direction="sideways")
    assert message.startswith("Invalid arguments: direction:")


# -- get_stats and health_check -----------------------------------------------------------


async def test_get_stats(tools: Tools) -> None:
    data = await tools.ok("get_stats")
    assert (data["totalFiles"], data["totalAttachments"], data["filesWithErrors"]) == (7, 1, 1)
    assert (data["totalLinks"], data["brokenLinks"]) == (6, 1)
    assert data["filesByType"] == {"concept": 3, "hub": 1}
    assert data["filesByStatus"] == {"active": 2, "draft": 1}
    assert data["topTags"][0] == {"tag": "neural", "count": 2}
    assert len(data["topTags"]) <= 10
    assert isinstance(data["lastUpdated"], int) and data["lastUpdated"] > 1_600_000_000_000
    assert data["vaultSize"] > 0


async def test_get_stats_follows_the_cache_right_after_a_pass(tmp_path: Path) -> None:
    """The counts are kept per cache version: a pass that adds or removes a note shows at once."""
    root = write_files(tmp_path / "v", {"a.md": "# A\n[[b]] #x\n"})
    served = serve(Settings(vault=root))
    try:
        async with tools_of(served, "auto") as tools:
            first = await tools.ok("get_stats")
            assert (first["totalFiles"], first["brokenLinks"], first["totalTags"]) == (1, 1, 1)
            assert await tools.ok("get_stats") == first  # kept: the same answer
            write_files(root, {"b.md": "# B\n#y\n"})
            served.app.indexer.apply_paths(["b.md"])
            second = await tools.ok("get_stats")
            assert (second["totalFiles"], second["brokenLinks"], second["totalTags"]) == (2, 0, 2)
            assert second["lastUpdated"] > first["lastUpdated"]
            (root / "a.md").unlink()
            served.app.indexer.apply_paths(["a.md"])
            third = await tools.ok("get_stats")
            assert (third["totalFiles"], third["totalLinks"], third["totalTags"]) == (1, 0, 1)
    finally:
        served.app.close()


async def test_health_check(tools: Tools) -> None:
    await tools.ok("get_stats")  # health_check does not wait for the initial reconcile; this does
    first = await tools.ok("health_check")
    assert first["status"] == "healthy", first["problems"]
    assert first["components"] == {"shadowCache": True, "workflowEngine": False, "fileSystem": True}
    assert first["role"] == "unwatched"
    assert isinstance(first["uptime"], int) and first["version"]
    await tools.ok("get_stats")
    await tools.raw("get_file", {})  # argument errors count as calls too
    second = await tools.ok("health_check")
    assert second["requestCount"] == first["requestCount"] + 3


@pytest.mark.postgres
async def test_health_names_a_database_server_it_cannot_reach(
    tmp_path: Path, postgres_url: str
) -> None:
    """On PostgreSQL there is no file to check or move aside: health says whether the server
    answers, naming it (without a password)."""
    (tmp_path / "v").mkdir()
    served = serve(Settings(vault=tmp_path / "v", database_url=postgres_url))
    live = served.app.db
    try:
        async with tools_of(served, "auto") as tools:
            assert (await tools.ok("health_check"))["components"]["shadowCache"] is True
            unreachable = make_url(postgres_url).set(port=free_port(), password="secret")
            served.app.db = create_engine(unreachable, connect_args={"connect_timeout": 2})
            health = await tools.ok("health_check")
    finally:
        served.app.db.dispose()
        served.app.db = live
        served.app.close()
    assert health["status"] == "unhealthy"
    assert health["components"]["shadowCache"] is False
    (problem,) = [p for p in health["problems"] if "cannot be reached" in p]
    assert f":{unreachable.port}/" in problem and "secret" not in problem


async def test_health_reports_a_watcher_that_stopped_or_is_restarting(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    served = serve(Settings(vault=tmp_path / "v"))
    served.state.begin()
    served.state.mark_ready()  # as the lifespan does after its reconcile
    watcher = VaultWatcher(served.app.indexer)
    served.state.watch, served.state.writer, served.state.watcher = True, True, watcher
    watcher.last_error = "Unable to decode path"
    try:
        watcher.running, watcher.restarting = True, True
        restarting = compute_health(served.state)
        watcher.running, watcher.restarting = False, False
        starting = compute_health(served.state)  # set up, catching up: not a fault
        watcher.stopped = True
        stopped = compute_health(served.state)
    finally:
        served.app.close()
    assert restarting.status == "degraded"
    assert restarting.problems == [
        "the file watcher is restarting after an error: Unable to decode path"
    ]
    assert (starting.status, starting.problems) == ("healthy", [])
    assert stopped.problems == ["the file watcher stopped: Unable to decode path"]


async def test_health_reuses_its_disk_probes_for_a_moment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "v").mkdir()
    served = serve(Settings(vault=tmp_path / "v"))
    served.state.begin()
    served.state.mark_ready()
    try:
        assert compute_health(served.state).status == "healthy"
        full = shutil.disk_usage(tmp_path)._replace(free=1024)
        monkeypatch.setattr(shutil, "disk_usage", lambda _path: full)
        assert compute_health(served.state).status == "healthy"  # probed a moment ago
        monkeypatch.setattr(health_report, "PROBE_REUSE_S", 0.0)
        report = compute_health(served.state)
        assert report.status == "degraded"
        assert any(p.startswith("disk full") for p in report.problems), report.problems
        assert report.components.shadow_cache  # a full disk degrades; the cache still answers
    finally:
        served.app.close()


async def test_health_reports_an_unreadable_cache_as_unhealthy(tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()
    served = serve(Settings(vault=tmp_path / "v"))
    try:
        served.app.db.dispose()
        (tmp_path / "v" / ".weaver" / "cache.db").unlink()
        (tmp_path / "v" / ".weaver" / "cache.db").mkdir()  # now it cannot be opened
        async with Client(served.server, mode="legacy") as client:
            data = await Tools(client).ok("health_check")
            stats = await Tools(client).error("get_stats")
    finally:
        served.app.close()
    assert data["status"] == "unhealthy"
    assert data["components"]["shadowCache"] is False
    assert stats.startswith("Database error")


async def test_tools_wait_for_the_initial_reconcile(tmp_path: Path) -> None:
    write_files(tmp_path / "v", {"a.md": "#x", "b/c.md": "[[a]]"})
    served = serve(Settings(vault=tmp_path / "v"), reconcile=False)  # never indexed
    try:
        async with Client(served.server, mode="legacy") as client:
            data = await Tools(client).ok("query_files")
    finally:
        served.app.close()
    assert paths(data) == ["a.md", "b/c.md"]


# -- the real tasks-demo vault -----------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = require_corpora() / "tasks-demo"
    database = tmp_path_factory.mktemp("corpus") / "cache.db"  # the corpus is read in place
    served = serve(Settings(vault=root, database_url=f"sqlite:///{database}"))
    yield served
    served.app.close()


@pytest.fixture(params=["legacy", "auto"])
async def corpus_tools(request: pytest.FixtureRequest, corpus: Served) -> AsyncIterator[Tools]:
    async with Client(corpus.server, mode=request.param) as client:
        yield Tools(client)


def notes_on_disk(root: Path, under: str = "") -> list[str]:
    start = root / under if under else root
    found = (p.relative_to(root).as_posix() for p in start.rglob("*.md"))
    return sorted(p for p in found if not any(part.startswith(".") for part in p.split("/")))


def obsidian_backlinks(target: str) -> list[str]:
    cache = require_corpora() / "tasks-demo-obsidian-cache" / "metadataCache"
    resolved = json.loads((cache / "resolvedLinks.json").read_text(encoding="utf-8"))
    return sorted(source for source, targets in resolved.items() if target in targets)


@pytest.mark.corpus
async def test_corpus_pages_through_every_note_in_order(
    corpus_tools: Tools, corpus: Served
) -> None:
    collected: list[str] = []
    offset, has_more = 0, True
    while has_more:
        data = await corpus_tools.ok("query_files", limit=50, offset=offset)
        assert data["total"] == 205
        collected.extend(paths(data))
        has_more, offset = data["hasMore"], offset + 50
    assert collected == notes_on_disk(corpus.root)
    assert len(collected) == 205


@pytest.mark.corpus
@pytest.mark.parametrize("folder", ["How To", "Test Data", "Manual Testing", "Filters"])
async def test_corpus_directory_filter_matches_the_disk(
    corpus_tools: Tools, corpus: Served, folder: str
) -> None:
    data = await corpus_tools.ok("query_files", directory=folder, limit=500)
    assert paths(data) == notes_on_disk(corpus.root, folder)
    assert data["total"] == len(data["files"])


@pytest.mark.corpus
async def test_corpus_stats_and_tags_agree(corpus_tools: Tools) -> None:
    stats = await corpus_tools.ok("get_stats")
    assert (stats["totalFiles"], stats["filesWithErrors"]) == (205, 0)
    assert stats["totalLinks"] >= stats["brokenLinks"] > 0
    top = stats["topTags"][0]
    assert top["tag"] == "task"
    found = await corpus_tools.ok("search_tags", tag="#TASK", limit=10)
    queried = await corpus_tools.ok("query_files", tag="task", limit=10)
    assert found["count"] == queried["total"] >= top["count"]
    assert paths(found) == paths(queried)
    assert found["hasMore"] is True
    nested = await corpus_tools.ok("search_tags", tag="context")
    assert nested["matchedTags"] and all(t.startswith("context/") for t in nested["matchedTags"])


@pytest.mark.corpus
@pytest.mark.parametrize(
    "target",
    ["Test Data/all_link_types.md", "Test Data/multiple_headings.md", "Test Data/link_in_yaml.md"],
)
async def test_corpus_backlinks_match_obsidian(corpus_tools: Tools, target: str) -> None:
    data = await corpus_tools.ok("get_file", path=target)
    assert data["links"]["incoming"] == obsidian_backlinks(target)
    links = await corpus_tools.ok("search_links", path=target, direction="incoming", limit=1)
    assert links["count"]["incoming"] == len(data["links"]["incoming"])
    assert len(links["incoming"]) == 1


@pytest.mark.corpus
async def test_corpus_file_content_is_the_file(corpus_tools: Tools, corpus: Served) -> None:
    path = "Test Data/all_link_types.md"
    data = await corpus_tools.ok("get_file_content", path=path)
    raw = (corpus.root / path).read_bytes()
    assert (data["content"], data["size"]) == (raw.decode("utf-8-sig"), len(raw))
    assert (await corpus_tools.error("get_file_content", path="../edge-vault/x.md")).startswith(
        "Invalid path"
    )
