"""One suggester behind every "did you mean": folders, sections, tags, workflows, tool names."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from tests.mcp_server.test_browse_tools import browsed  # noqa: F401  (the module's vault)
from tests.mcp_server.test_cache_tools import Served, Tools
from weaver.errors import suggest

pytestmark = pytest.mark.anyio


def test_suggest_prefers_case_then_last_part_then_holding_then_spelling() -> None:
    known = ["Projects", "work/projects", "daily-digest", "weekly-review", "archive"]
    assert suggest("projects", known) == ["Projects"]  # only the case was wrong
    assert suggest("digest", known) == ["daily-digest"]
    assert suggest("archiv", known) == ["archive"]
    assert suggest("weekly-reveiw", known) == ["weekly-review"]
    assert suggest("zzz", known) == []
    assert suggest("", known) == []
    assert suggest("projcts", ["work/projects"]) == ["work/projects"]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def tools(browsed: Served) -> AsyncIterator[Tools]:  # noqa: F811
    async with Client(browsed.server, mode="legacy") as client:
        yield Tools(client)


async def test_tag_searches_that_find_nothing_say_what_was_meant(tools: Tools) -> None:
    data = await tools.ok("search_tags", tag="projct")
    assert (data["count"], data["hint"]) == (
        0,
        "No note carries 'projct' (did you mean 'project', 'project/beta' or 'project/alpha'?)",
    )
    assert (await tools.ok("search_tags", tag="project"))["hint"] is None
    both = await tools.ok("search_by_tags", tags=["sol", "deep/er/estt"], mode="all")
    assert both["hint"] == (
        "No note carries 'sol', 'deep/er/estt' (did you mean 'solo', 'deep/er/est' or 'deep/er'?)"
    )
    assert (await tools.ok("search_tags", tag="nothing*"))["hint"] is None  # a pattern


async def test_an_unknown_tool_is_an_envelope_naming_the_tool_meant(tools: Tools) -> None:
    assert await tools.error("list_tag") == (
        "Unknown tool: 'list_tag' (did you mean 'list_tags', 'list_edits' or 'list_bases'?)"
    )
    assert await tools.error("search-notes", query="x") == (
        "Unknown tool: 'search-notes' "
        "(did you mean 'search_notes', 'search_tags' or 'search_links'?)"
    )
    message = await tools.error("frobnicate")
    assert message.startswith("Unknown tool: 'frobnicate' (the tools: query_files, get_file,")


async def test_folders_and_sections_use_the_same_suggester(tools: Tools) -> None:
    assert await tools.error("list_folders", folder="A/B") == (
        "Folder not found: 'A/B' (did you mean 'a/b'?)"
    )
    assert await tools.error("query_files", directory="c") == (
        "Folder not found: 'c' (did you mean 'a/b/c'?)"
    )
