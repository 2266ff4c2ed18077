"""Issue 6's tools through the SDK's in-memory client: search, graph, lookups and writes, on the
real tasks-demo corpus (read in place; writes on a copy) and on small crafted vaults, with their
hints, the envelope, hostile queries, a write racing an editor, and read-only mode."""

from __future__ import annotations

import gc
import shutil
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.corpora import require_corpora
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, help_text, serve
from weaver.config import Settings
from weaver.mcp_server.graph_tools import GraphAnswers
from weaver.views import link_graph as g

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

READ_TOOLS = {
    "search_notes",
    "get_neighbors",
    "find_path",
    "get_hubs",
    "get_graph",
    "search_by_tags",
    "random_file",
    "files_exist",
    "resolve_names",
}
WRITE_TOOLS = {"create_file": False, "update_file": True, "move_file": True, "delete_file": True}
SMOKE = "Manual Testing/Smoke Testing the Tasks Plugin.md"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """tasks-demo read in place, with its cache in a temp folder."""
    cache = tmp_path_factory.mktemp("extra") / "cache.db"
    vault = require_corpora() / "tasks-demo"
    served = serve(Settings(vault=vault, database_url=f"sqlite:///{cache}", read_only=True))
    yield served
    served.app.close()


@pytest.fixture
async def tools(corpus: Served) -> AsyncIterator[Tools]:
    async with Client(corpus.server, mode="legacy") as client:
        yield Tools(client)


@dataclass
class Writable:
    served: Served
    tools: Tools


@pytest.fixture
async def writable(tmp_path: Path, db_url: str | None) -> AsyncIterator[Writable]:
    """A writable copy of tasks-demo (notes only, a few hundred KB)."""
    root = tmp_path / "vault"
    shutil.copytree(require_corpora() / "tasks-demo", root)
    served = serve(Settings(vault=root, database_url=db_url))
    try:
        async with Client(served.server, mode="legacy") as client:
            yield Writable(served, Tools(client))
    finally:
        served.app.close()


# -- tools/list ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_lists_every_tool_with_accurate_hints(tmp_path: Path, mode: str) -> None:
    (tmp_path / "v").mkdir()
    served = serve(Settings(vault=tmp_path / "v"))
    try:
        async with Client(served.server, mode=mode) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            helps = {name: await help_text(client, name) for name in listed}
    finally:
        served.app.close()
    assert set(listed) >= READ_TOOLS | set(WRITE_TOOLS)
    for name, tool in listed.items():
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False, name
        assert tool.output_schema is not None and "Example" in helps[name], name
        if name in WRITE_TOOLS:
            assert (hints.read_only_hint, hints.idempotent_hint) == (False, True), name
            assert hints.destructive_hint is WRITE_TOOLS[name], name
        elif name in READ_TOOLS:
            assert (hints.read_only_hint, hints.destructive_hint) == (True, False), name
    schema = listed["get_neighbors"].input_schema["properties"]
    assert (schema["depth"]["minimum"], schema["depth"]["maximum"]) == (1, 3)
    assert set(schema) == {
        "path",
        "direction",
        "depth",
        "limit",
        "offset",
        "includeContent",
        "relation",
    }
    assert listed["update_file"].input_schema["properties"].keys() >= {"expectedHash", "tags"}
    assert listed["move_file"].input_schema["required"] == ["path", "newPath"]
    assert listed["resolve_names"].input_schema["properties"]["strategy"]["enum"] == [
        "exact",
        "fuzzy",
        "semantic",
    ]


async def test_read_only_hides_every_write_tool(tools: Tools) -> None:
    listed = {t.name for t in (await tools.client.list_tools()).tools}
    assert listed >= READ_TOOLS and not listed & set(WRITE_TOOLS)
    result = await tools.client.call_tool("create_file", {"path": "x.md"})
    assert result.is_error


# -- search_notes ----------------------------------------------------------------------------


async def test_search_notes_on_the_corpus(tools: Tools) -> None:
    data = await tools.ok("search_notes", query="smoke testing", limit=3)
    assert (data["total"], data["limit"], data["hasMore"]) == (9, 3, True)
    assert data["ftsQuery"] == '"smoke" "testing"'
    first = data["results"][0]
    assert set(first) == {"path", "title", "snippet", "score", "tags", "modified"}
    assert first["score"] > 0 and "Smoke" in first["title"]  # title words weigh most
    assert any("<mark>Smoke</mark>" in r["snippet"] for r in data["results"])
    rest = await tools.ok("search_notes", query="smoke testing", limit=3, offset=3)
    assert not {r["path"] for r in rest["results"]} & {r["path"] for r in data["results"]}


async def test_search_notes_filters(tools: Tools) -> None:
    data = await tools.ok("search_notes", query="task", directory="/Test Data/", limit=100)
    assert data["total"] > 10 and all(r["path"].startswith("Test Data/") for r in data["results"])
    tagged = await tools.ok("search_notes", query="task", tag="#CONTEXT")
    assert tagged["total"] >= 1
    for result in tagged["results"]:
        assert any(t.lower().startswith("context") for t in result["tags"])
    message = await tools.error("search_notes", query="x", tag="#")
    assert message.startswith("Invalid arguments: tag:")


@pytest.mark.parametrize(
    "query", ['"', "NEAR(", "AND OR NOT", "*", ":", "^", "(", '"open', "😀", "", "title:x"]
)
async def test_search_notes_never_fails_on_hostile_syntax(tools: Tools, query: str) -> None:
    data = await tools.ok("search_notes", query=query)
    assert data["total"] >= len(data["results"])


async def test_search_notes_repeats_a_long_query_only_in_part(tools: Tools) -> None:
    query = "smoke " * 5_000
    data = await tools.ok("search_notes", query=query, mode="keyword")
    assert data["total"] >= 1 and len(data["query"]) < 1_000 and len(data["ftsQuery"]) < 1_000
    assert data["query"].endswith("(30,000 characters in all)")


# -- graph tools -----------------------------------------------------------------------------


async def test_get_neighbors_with_truncated_content(tools: Tools) -> None:
    data = await tools.ok("get_neighbors", path="Test Data/link_in_yaml.md", direction="in")
    assert {n["path"] for n in data["neighbors"]} == {
        "Test Data/link_in_task_wikilink_different_case.md",
        "Test Data/links_everywhere.md",
        "Test Data/query_using_properties.md",
    }
    assert data["incomingCount"] == 3 and data["neighbors"][0]["content"] is None
    deep = await tools.ok("get_neighbors", path=SMOKE, depth=3, limit=5, includeContent=True)
    assert deep["total"] >= len(deep["neighbors"])
    for neighbor in deep["neighbors"]:
        assert len(neighbor["content"]) <= 500
        if neighbor["truncated"]:
            assert neighbor["content"].endswith("... [truncated]")
            assert neighbor["contentLength"] > 500
    assert (await tools.error("get_neighbors", path="nope.md")).startswith("File not found")


async def test_get_neighbors_by_relation(tools: Tools) -> None:
    data = await tools.ok("get_neighbors", path="Test Data/link_in_yaml.md", relation="test-link")
    assert [(n["path"], n["relations"]) for n in data["neighbors"]] == [
        ("Test Data/yaml_tags_is_empty.md", ["test-link"])
    ]


async def test_find_path_and_null_data(tools: Tools) -> None:
    data = await tools.ok(
        "find_path", source="Test Data/link_in_yaml.md", target="Test Data/yaml_tags_is_empty.md"
    )
    assert data == {
        "path": ["Test Data/link_in_yaml.md", "Test Data/yaml_tags_is_empty.md"],
        "length": 1,
    }
    envelope = await tools.raw(
        "find_path", {"source": "Test Data/yaml_tags_is_empty.md", "target": SMOKE}
    )
    assert envelope["success"] is True and envelope["data"] is None
    assert (await tools.ok("find_path", source=SMOKE, target=SMOKE))["length"] == 0
    # A wrong name is not "no chain": it is named, with the note it probably meant.
    assert await tools.error("find_path", source=SMOKE, target="yaml_tags_is_empty.md") == (
        "File not found: 'yaml_tags_is_empty.md' (did you mean 'Test Data/yaml_tags_is_empty.md'?)"
    )


async def test_get_hubs_each_metric(tools: Tools) -> None:
    data = await tools.ok("get_hubs", metric="in_degree", limit=3)
    assert [h["score"] for h in data["hubs"]] == [3, 3, 3] and data["totalNotes"] == 205
    ranked = await tools.ok("get_hubs", metric="pagerank", limit=50)
    scores = [h["score"] for h in ranked["hubs"]]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] < 1
    assert (await tools.ok("get_hubs", metric="out_degree", limit=99))["hubs"]
    assert (await tools.error("get_hubs", metric="betweenness")).startswith("Invalid arguments")


async def test_get_graph_of_a_folder_with_broken_links(tools: Tools) -> None:
    data = await tools.ok("get_graph", directory="Test Data", includeBroken=True)
    ids = {n["id"] for n in data["nodes"]}
    broken = {n["id"] for n in data["nodes"] if n["broken"]}
    assert broken and all(not i.startswith("Test Data/") for i in broken)
    assert all(e["source"] in ids and e["target"] in ids for e in data["edges"])
    assert any(e["broken"] for e in data["edges"]) and data["truncated"] is False
    capped = await tools.ok("get_graph", limit=10)
    assert (len(capped["nodes"]), capped["totalNodes"], capped["truncated"]) == (10, 205, True)


async def test_get_graph_of_the_whole_vault_keeps_100_best_connected_notes_unless_asked(
    tools: Tools,
) -> None:
    default = await tools.ok("get_graph")
    assert (len(default["nodes"]), default["totalNodes"], default["truncated"]) == (100, 205, True)
    whole = await tools.ok("get_graph", limit=1000)
    assert (len(whole["nodes"]), whole["truncated"]) == (205, False)
    degree = {n["id"]: 0 for n in whole["nodes"]}
    for edge in whole["edges"]:
        degree[edge["source"]] += 1
        degree[edge["target"]] += 1
    kept = {n["id"] for n in default["nodes"]}
    assert min(degree[k] for k in kept) >= max(d for n, d in degree.items() if n not in kept)


async def test_search_by_tags_any_and_all(tools: Tools) -> None:
    either = await tools.ok("search_by_tags", tags=["#context", "todo"], mode="any")
    both = await tools.ok("search_by_tags", tags=["context", "todo"], mode="all")
    assert either["tags"] == ["context", "todo"]
    assert both["total"] <= either["total"] and either["total"] >= 1
    assert (await tools.error("search_by_tags", tags=[])).startswith("Invalid arguments: tags")


async def test_random_file_with_and_without_tags(tools: Tools) -> None:
    data = await tools.ok("random_file")
    assert data["path"].endswith(".md") and data["contentLength"] >= len(data["content"])
    assert len(data["content"]) <= 10_000
    tagged = await tools.ok("random_file", tags=["context/home"])
    assert any(t.lower().startswith("context/home") for t in tagged["tags"])
    envelope = await tools.raw("random_file", {"tags": ["no-such-tag"]})
    assert envelope["success"] is True and envelope["data"] is None


async def test_files_exist_batch_with_suggestions(tools: Tools) -> None:
    data = await tools.ok(
        "files_exist", paths=[SMOKE, "test data/ONE_TASK.md", "Test Data/one_task", "nope.md"]
    )
    assert data["exists"] == {
        SMOKE: True,
        "test data/ONE_TASK.md": False,
        "Test Data/one_task": False,
        "nope.md": False,
    }
    assert data["found"] == 1
    assert data["suggestions"] == {
        "test data/ONE_TASK.md": "Test Data/one_task.md",
        "Test Data/one_task": "Test Data/one_task.md",
    }


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("search_notes", {"query": "task"}),
        ("get_graph", {}),
        ("resolve_names", {"names": ["ACME"]}),
    ],
)
async def test_a_folder_filter_naming_no_folder_says_so(
    tools: Tools, tool: str, args: dict[str, Any]
) -> None:
    assert await tools.error(tool, directory="test data", **args) == (
        "Folder not found: 'test data' (did you mean 'Test Data'?)"
    )


async def test_resolve_names_exact_and_fuzzy(tools: Tools) -> None:
    exact = await tools.ok(
        "resolve_names", names=["ONE_TASK", "[[link_in_yaml]]"], strategy="exact"
    )
    assert [r["path"] for r in exact["results"]] == [
        "Test Data/one_task.md",
        "Test Data/link_in_yaml.md",
    ]
    fuzzy = await tools.ok(
        "resolve_names", names=["Smoke Testing the Tasks Plugn", "zzzz"], threshold=0.8
    )
    assert fuzzy["results"][0]["path"] == SMOKE and 0.8 <= fuzzy["results"][0]["score"] < 1
    assert fuzzy["results"][1] | {"alternatives": []} == {
        "name": "zzzz",
        "path": None,
        "title": None,
        "matchedOn": None,
        "matchedText": None,
        "score": 0.0,
        "alternatives": [],
    }
    scoped = await tools.ok(
        "resolve_names", names=["one_task"], directory="How To", strategy="exact"
    )
    assert scoped["resolved"] == 0


# -- writes ----------------------------------------------------------------------------------


async def test_create_then_read_search_and_graph_see_it(writable: Writable) -> None:
    tools = writable.tools
    created = await tools.ok(
        "create_file",
        path="Inbox/Zebra idea.md",
        content="# Zebra idea\nStripes link to [[one_task]].",
        tags=["idea"],
        frontmatter={"status": "new"},
    )
    assert created["cacheSynced"] is True and created["changed"] is True
    got = await tools.ok("get_file", path="Inbox/Zebra idea.md")
    assert got["contentHash"] == created["contentHash"] and got["status"] == "new"
    assert (await tools.ok("search_notes", query="stripes"))["results"][0][
        "path"
    ] == "Inbox/Zebra idea.md"
    neighbors = await tools.ok("get_neighbors", path="Test Data/one_task.md", direction="in")
    assert "Inbox/Zebra idea.md" in {n["path"] for n in neighbors["neighbors"]}
    again = await tools.error("create_file", path="Inbox/Zebra idea.md", content="other")
    assert "already exists" in again


async def test_a_kept_graph_answer_is_not_given_after_an_edit(writable: Writable) -> None:
    tools = writable.tools
    before = await tools.ok("get_graph", limit=1000)
    assert await tools.ok("get_graph", limit=1000) == before  # kept for this cache version
    await tools.ok("create_file", path="Inbox/Linker.md", content="[[one_task]]")
    after = await tools.ok("get_graph", limit=1000)
    assert "Inbox/Linker.md" in {n["id"] for n in after["nodes"]}
    edge = {"source": "Inbox/Linker.md", "target": "Test Data/one_task.md"}
    assert edge in [{"source": e["source"], "target": e["target"]} for e in after["edges"]]
    assert (after["totalNodes"], len(after["edges"])) == (
        before["totalNodes"] + 1,
        len(before["edges"]) + 1,
    )


def test_graph_answers_are_kept_per_graph_and_few() -> None:
    kept = GraphAnswers(per_graph=2)
    one, two = g.Graph((), ()), g.Graph((), ())
    kept.keep(one, ("a",), {"n": 1})
    kept.keep(two, ("a",), {"n": 2})
    assert (kept.get(one, ("a",)), kept.get(two, ("a",)), kept.get(one, ("b",))) == (
        {"n": 1},
        {"n": 2},
        None,
    )
    kept.keep(one, ("b",), {"n": 3})
    kept.keep(one, ("c",), {"n": 4})  # the oldest of `one`'s goes
    assert [kept.get(one, k) for k in (("a",), ("b",), ("c",))] == [None, {"n": 3}, {"n": 4}]


def test_graph_answers_go_with_their_graph() -> None:
    kept = GraphAnswers()
    graph = g.Graph((), ())
    kept.keep(graph, ("a",), {"n": 1})
    held = weakref.ref(graph)
    del graph
    gc.collect()
    assert held() is None and len(kept._answers) == 0


async def test_update_refused_when_the_note_changed_in_the_editor(writable: Writable) -> None:
    tools, root = writable.tools, writable.served.root
    seen = (await tools.ok("get_file", path="Test Data/one_task.md"))["contentHash"]
    (root / "Test Data" / "one_task.md").write_text("edited in Obsidian\n", encoding="utf-8")
    message = await tools.error(
        "update_file", path="Test Data/one_task.md", content="from the model", expectedHash=seen
    )
    assert message.startswith("File changed on disk") and "nothing was written" in message
    assert (root / "Test Data" / "one_task.md").read_text(
        encoding="utf-8"
    ) == "edited in Obsidian\n"
    fresh = await tools.ok("update_file", path="Test Data/one_task.md", tags=["done"])
    assert (await tools.ok("get_file", path="Test Data/one_task.md"))["contentHash"] == fresh[
        "contentHash"
    ]
    assert (await tools.error("update_file", path="nope.md", content="x")).startswith(
        "File not found"
    )
    # The writes name the note a wrong path probably meant, as the reads do.
    assert await tools.error("update_file", path="one_task.md", content="x") == (
        "File not found: 'one_task.md' (did you mean 'Test Data/one_task.md'?)"
    )


async def test_move_file_rewrites_the_corpus_links(writable: Writable) -> None:
    tools, root = writable.tools, writable.served.root
    before = await tools.ok("get_stats")
    moved = await tools.ok(
        "move_file", path="Test Data/yaml_tags_is_empty.md", newPath="Archive/Empty tags.md"
    )
    assert moved["path"] == "Archive/Empty tags.md" and moved["failed"] == []
    assert {r["path"] for r in moved["rewritten"]} >= {"Test Data/link_in_yaml.md"}
    assert 'test-link: "[[Empty tags]]"' in (root / "Test Data" / "link_in_yaml.md").read_text(
        encoding="utf-8"
    )
    after = await tools.ok("get_stats")
    assert after["brokenLinks"] == before["brokenLinks"]
    linked = await tools.ok("get_file", path="Archive/Empty tags.md")
    assert len(linked["links"]["incoming"]) == 3


async def test_delete_file_goes_to_trash(writable: Writable) -> None:
    tools, root = writable.tools, writable.served.root
    data = await tools.ok("delete_file", path="Test Data/one_task.md")
    assert data == {
        "path": "Test Data/one_task.md",
        "deleted": True,
        "trashPath": ".trash/Test Data/one_task.md",
        "cacheSynced": True,
    }
    assert (root / ".trash" / "Test Data" / "one_task.md").is_file()
    assert (await tools.error("get_file", path="Test Data/one_task.md")).startswith(
        "File not found"
    )
    missing = await tools.error("delete_file", path="Test Data/one_task.md")
    assert missing.startswith("File not found: 'Test Data/one_task.md'")
    misspelt = await tools.error("delete_file", path="Test Data/one_tsk.md")
    assert "did you mean 'Test Data/" in misspelt
    message = await tools.error("delete_file", path="../outside.md")
    assert message.startswith("Invalid path")


async def test_a_failing_disk_is_reported_and_the_note_kept(
    writable: Writable, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools, root = writable.tools, writable.served.root
    original = (root / "Test Data" / "one_task.md").read_bytes()

    def full_disk(*_args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", full_disk)
    message = await tools.error("update_file", path="Test Data/one_task.md", content="new")
    assert message == "Cannot write file: 'Test Data/one_task.md' (No space left on device)"
    assert (root / "Test Data" / "one_task.md").read_bytes() == original


async def test_write_tools_on_a_crafted_vault(tmp_path: Path) -> None:
    write_files(tmp_path / "v", {"a.md": "[[b]]", "b.md": "# B", "o/b.md": "# Other B"})
    served = serve(Settings(vault=tmp_path / "v"))
    try:
        async with Client(served.server, mode="auto") as client:
            tools = Tools(client)
            # Without b.md at the root, [[b]] would find o/b.md (shorter path): it is rewritten.
            moved = await tools.ok("move_file", path="b.md", newPath="sub/")
            assert moved["rewritten"] == [{"path": "a.md", "links": 1}]
            assert (tmp_path / "v" / "a.md").read_text(encoding="utf-8") == "[[sub/b]]"
            unlinked = await tools.ok("move_file", path="o/b.md", newPath="zz/b.md")
            assert unlinked["rewritten"] == []
            path = await tools.ok("find_path", source="a.md", target="sub/b.md")
            assert path == {"path": ["a.md", "sub/b.md"], "length": 1}
    finally:
        served.app.close()


async def test_random_file_truncates_a_long_note_like_the_reference(tmp_path: Path) -> None:
    body = "word " * 3000  # 15,000 characters
    write_files(tmp_path / "v", {"long.md": f"---\ntags: [big]\n---\n{body}", "x.md": "x"})
    served = serve(Settings(vault=tmp_path / "v"))
    try:
        async with Client(served.server, mode="legacy") as client:
            data = await Tools(client).ok("random_file", tags=["BIG"])
    finally:
        served.app.close()
    assert (data["path"], data["truncated"], data["contentLength"]) == ("long.md", True, 15_000)
    assert len(data["content"]) == 10_000 and data["content"].endswith("word ... [truncated]")
