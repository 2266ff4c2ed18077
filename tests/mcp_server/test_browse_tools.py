"""list_tags, list_folders and list_problems on a crafted vault: counts, the tag tree, depth,
paging to the end, and the notes with problems get_stats counts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from tests.mcp_server.test_pages import walk
from weaver.config import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

FILES: dict[str, str | bytes] = {
    "Home.md": "#Project/Alpha #project/beta #solo\n[[a/One]] [[Nowhere]] [[nowhere]]\n",
    "a/One.md": "#project/alpha [[Home]] [[Nowhere]]\n",
    "a/b/Two.md": "#Project\n",
    "a/b/c/Three.md": "---\ntags: [deep/er/est]\n---\n[[Three]]\n",
    "lonely.md": "nothing links here\n",
    "bad.md": "---\nkey: [unclosed\n---\nbody [[Gone]]\n",
    "latin.md": "caf\xe9".encode("latin-1"),
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def browsed(
    tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None
) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("browse") / "vault", FILES)
    served = serve(Settings(vault=root, database_url=module_db_url))
    yield served
    served.app.close()


@pytest.fixture(params=["legacy", "auto"])
async def tools(request: pytest.FixtureRequest, browsed: Served) -> AsyncIterator[Tools]:
    async with Client(browsed.server, mode=request.param) as client:
        yield Tools(client)


async def test_list_tags_is_a_tree_with_counts(tools: Tools) -> None:
    data = await tools.ok("list_tags")
    rows = {
        t["key"]: (t["tag"], t["notes"], t["own"], t["children"], t["depth"]) for t in data["tags"]
    }
    assert rows == {
        "deep": ("deep", 1, 0, 1, 0),
        "deep/er": ("deep/er", 1, 0, 1, 1),
        "deep/er/est": ("deep/er/est", 1, 1, 0, 2),
        "project": ("Project", 3, 1, 2, 0),
        "project/alpha": (rows["project/alpha"][0], 2, 2, 0, 1),
        "project/beta": ("project/beta", 1, 1, 0, 1),
        "solo": ("solo", 1, 1, 0, 0),
    }
    assert [t["key"] for t in data["tags"]] == sorted(rows)
    assert (data["total"], data["hasMore"]) == (7, False)
    top = await tools.ok("list_tags", depth=1, sortBy="count")
    assert [t["key"] for t in top["tags"]] == ["project", "deep", "solo"]
    nested = await tools.ok("list_tags", prefix="#PROJECT", depth=2)
    assert [t["key"] for t in nested["tags"]] == ["project", "project/alpha", "project/beta"]
    assert [t["key"] for t in await walk(tools, "list_tags", "tags", limit=2)] == sorted(rows)


async def test_list_folders_counts_notes_below(tools: Tools) -> None:
    data = await tools.ok("list_folders")
    rows = {f["path"]: (f["notes"], f["own"], f["subfolders"], f["depth"]) for f in data["folders"]}
    assert rows == {"a": (3, 1, 1, 0), "a/b": (2, 1, 1, 1), "a/b/c": (1, 1, 0, 2)}
    assert data["rootNotes"] == 4
    assert [f["path"] for f in (await tools.ok("list_folders", depth=1))["folders"]] == ["a"]
    below = await tools.ok("list_folders", folder="a/b")
    assert [f["path"] for f in below["folders"]] == ["a/b/c"]
    assert await tools.error("list_folders", folder="a/x") == "Folder not found: 'a/x'"
    assert len(await walk(tools, "list_folders", "folders", limit=1)) == 3


async def test_list_problems_finds_what_get_stats_counts(tools: Tools) -> None:
    stats = await tools.ok("get_stats")
    errors = await tools.ok("list_problems")
    assert errors["total"] == stats["filesWithErrors"] == 2
    assert [p["path"] for p in errors["problems"]] == ["bad.md", "latin.md"]
    assert errors["problems"][0]["error"].startswith("invalid YAML frontmatter")
    broken = await tools.ok("list_problems", kind="broken_links")
    assert [
        (p["target"], p["occurrences"], p["sourceCount"], p["sources"]) for p in broken["problems"]
    ] == [
        ("Nowhere", 3, 2, ["Home.md", "a/One.md"]),
        ("Gone", 1, 1, ["bad.md"]),
    ]
    orphans = await tools.ok("list_problems", kind="orphans")
    assert [p["path"] for p in orphans["problems"]] == [
        "a/b/Two.md",
        "a/b/c/Three.md",  # a link to itself is no link
        "bad.md",  # its only link is broken
        "latin.md",
        "lonely.md",
    ]
    assert len(await walk(tools, "list_problems", "problems", kind="orphans", limit=2)) == 5
    # The total comes with a page's rows, or on its own for a page past the end.
    for offset, shown in ((0, 5), (4, 1), (5, 0), (9, 0)):
        page = await tools.ok("list_problems", kind="orphans", offset=offset)
        assert (len(page["problems"]), page["total"]) == (shown, 5)


async def test_broken_links_and_orphans_follow_the_next_pass(tmp_path: Path) -> None:
    """What a server keeps per cache version (broken links' counts, the orphans) is found again
    once the cache moves."""
    vault = write_files(tmp_path / "vault", {"a.md": "[[Gone]]\n", "c.md": "alone\n"})
    served = serve(Settings(vault=vault))
    try:
        async with Client(served.server, mode="legacy") as client:
            tools = Tools(client)
            first = await tools.ok("list_problems", kind="broken_links")
            assert [p["target"] for p in first["problems"]] == ["Gone"]
            lonely = await tools.ok("list_problems", kind="orphans")
            assert [p["path"] for p in lonely["problems"]] == ["a.md", "c.md"]
            write_files(served.app.settings.vault, {"b.md": "[[Gone]] [[Lost]] [[c]]\n"})
            served.app.indexer.reconcile()
            again = await tools.ok("list_problems", kind="broken_links")
            still = await tools.ok("list_problems", kind="orphans")
    finally:
        served.app.close()
    assert [(p["target"], p["occurrences"]) for p in again["problems"]] == [
        ("Gone", 2),
        ("Lost", 1),
    ]
    assert ([p["path"] for p in still["problems"]], still["total"]) == (["a.md"], 1)
