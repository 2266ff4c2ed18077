"""Answers sized for a context window: get_file's link caps, get_file_content's pages and
sections, and `offset` on every list tool, walked to the end with truthful totals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mcp import Client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.config import Settings
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

SOURCES = 120
TARGETS = 70
CJK = "插件标签笔记" * 5_000  # 30,000 characters: 60,000 estimated tokens whole


def vault_files() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        f"src/n{i:03}.md": f"---\ntags: [many]\n---\nline zero\nsee [[hub]] here {i}\n"
        for i in range(SOURCES)
    }
    outgoing = "\n".join(f"[[t{i:02}]]" for i in range(TARGETS))  # t00-t34 exist
    files |= {f"t/t{i:02}.md": f"# T{i}\n#many\n" for i in range(TARGETS // 2)}
    files["hub.md"] = f"# Hub\n{outgoing}\n"
    files["big.md"] = "word " * 60_000
    files["cjk.md"] = CJK
    files["guide.md"] = "# Guide\n## Setup\n### Linux\napt\n### Mac\nbrew\n## Use\nrun ^go\n"
    files["bad.md"] = "---\ntitle: [unclosed\n---\nbody\n"
    return files


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("pages") / "vault", vault_files())
    served = serve(Settings(vault=root, database_url=module_db_url))
    yield served
    served.app.close()


@pytest.fixture
async def tools(paged: Served) -> AsyncIterator[Tools]:
    async with Client(paged.server, mode="legacy") as client:
        yield Tools(client)


async def walk(tools: Tools, name: str, key: str, **args: Any) -> list[Any]:
    """Every entry of `key`, page by page, checking `hasMore` on the way."""
    found: list[Any] = []
    offset = 0
    while True:
        data = await tools.ok(name, offset=offset, **args)
        found += data[key]
        offset += len(data[key])
        if not data["hasMore"]:
            return found
        assert data[key], f"{name}: hasMore with an empty page"


async def test_get_file_caps_links_with_totals_and_a_hint(tools: Tools) -> None:
    data = await tools.ok("get_file", path="hub.md")
    links = data["links"]
    assert (len(links["outgoing"]), links["outgoingTotal"]) == (50, TARGETS)
    assert (len(links["incoming"]), links["incomingTotal"]) == (50, SOURCES)
    assert links["brokenTotal"] == TARGETS // 2
    assert links["broken"] == [f"t{i:02}" for i in range(TARGETS // 2, 50)]
    assert links["hint"] == (
        'outgoing and incoming links cut at 50: call search_links with {"path": "hub.md", '
        '"direction": "both", "offset": 50} for the rest, or get_file with a larger linksLimit '
        "(up to 500)"
    )
    wide = (await tools.ok("get_file", path="hub.md", linksLimit=1000))["links"]
    assert (len(wide["outgoing"]), len(wide["incoming"]), wide["hint"]) == (TARGETS, SOURCES, None)
    back = (await tools.ok("get_file", path="hub.md".replace("hub", "t/t00")))["links"]
    assert back["incoming"] == ["hub.md"] and back["hint"] is None
    many = await tools.ok("get_file", path="hub.md", linksLimit=3)
    assert many["links"]["outgoing"] == ["t/t00.md", "t/t01.md", "t/t02.md"]


async def test_get_file_says_why_metadata_is_missing(tools: Tools) -> None:
    error = (await tools.ok("get_file", path="bad.md"))["error"]
    assert error is not None and error.startswith("invalid YAML frontmatter at line 3")
    assert (await tools.ok("get_file", path="guide.md"))["error"] is None


async def test_backlinks_page_through_with_context(tools: Tools) -> None:
    data = await tools.ok("search_links", path="hub.md", direction="incoming", limit=50)
    assert (len(data["incoming"]), data["count"]["incoming"], data["hasMore"]) == (50, 120, True)
    every = await walk(tools, "search_links", "incoming", path="hub.md", direction="incoming")
    assert every == sorted(f"src/n{i:03}.md" for i in range(SOURCES))
    outgoing = await walk(
        tools, "search_links", "outgoing", path="hub.md", direction="outgoing", limit=30
    )
    assert len(outgoing) == TARGETS == len(set(outgoing))
    ctx = await tools.ok(
        "search_links", path="hub.md", direction="incoming", limit=2, offset=5, context=True
    )
    assert ctx["context"] == [
        {"path": "src/n005.md", "lines": [{"line": 5, "text": "see [[hub]] here 5"}]},
        {"path": "src/n006.md", "lines": [{"line": 5, "text": "see [[hub]] here 6"}]},
    ]


async def test_every_list_tool_pages_to_the_end(tools: Tools) -> None:
    tagged = await walk(tools, "search_tags", "files", tag="many", limit=40)
    assert len({f["path"] for f in tagged}) == SOURCES + TARGETS // 2
    wild = await walk(tools, "search_tags", "files", tag="ma*", limit=40)
    assert [f["path"] for f in wild] == [f["path"] for f in tagged]
    by_tags = await walk(tools, "search_by_tags", "files", tags=["many"], limit=33)
    assert [f["path"] for f in by_tags] == [f["path"] for f in tagged]
    near = await walk(tools, "get_neighbors", "neighbors", path="hub.md", limit=17)
    assert len({n["path"] for n in near}) == SOURCES + TARGETS // 2
    hubs = await walk(tools, "get_hubs", "hubs", limit=7)
    assert hubs[0]["path"] == "hub.md" and len(hubs) == 1 + TARGETS // 2


async def test_a_long_note_comes_in_pages_within_the_token_budget(tools: Tools) -> None:
    first = await tools.ok("get_file_content", path="big.md")
    assert (len(first["content"]), first["nextOffset"], first["totalLength"]) == (
        40_000,
        40_000,
        300_000,
    )
    cjk = await tools.ok("get_file_content", path="cjk.md")
    assert cjk["truncated"] and 9_000 < len(cjk["content"]) < 10_001
    assert cjk["content"] == CJK[: len(cjk["content"])]
    text = json.dumps({"data": cjk}, ensure_ascii=False)
    assert estimate_tokens(text) < ANSWER_TOKEN_BOUND
    rest = await tools.ok("get_file_content", path="cjk.md", offset=cjk["nextOffset"])
    assert rest["content"].startswith(CJK[cjk["nextOffset"] : cjk["nextOffset"] + 50])


async def test_a_section_by_heading_path_or_block(tools: Tools) -> None:
    linux = await tools.ok("get_file_content", path="guide.md", section="Setup::Linux")
    assert (linux["content"], linux["section"], linux["totalLength"]) == (
        "### Linux\napt\n",
        "Setup::Linux",
        14,
    )
    block = await tools.ok("get_file_content", path="guide.md", section="^go")
    assert block["content"] == "run ^go\n"
    page = await tools.ok("get_file_content", path="guide.md", section="Setup", length=5)
    assert (page["content"], page["nextOffset"]) == ("## Se", 5)
    message = await tools.error("get_file_content", path="guide.md", section="Setup::Linus")
    assert message == "Section not found: 'Setup::Linus' in 'guide.md' (did you mean 'Linux'?)"
    message = await tools.error("get_file_content", path="guide.md", section="Nothing like it")
    assert message == (
        "Section not found: 'Nothing like it' in 'guide.md' (the note has no such heading)"
    )
