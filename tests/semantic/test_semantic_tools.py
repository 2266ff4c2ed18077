"""search_notes modes, get_similar_notes, resolve_names by meaning, and the progress reports,
through the MCP SDK's in-memory client, on a small vault embedded by the real model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client
from threadpoolctl import threadpool_info

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.config import Settings
from weaver.search import modes
from weaver.semantic.search import SemanticIndex
from weaver.semantic.worker import embed_pending

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

NOTES = {
    "apps/sync.md": (
        "---\ntags: [apps]\n---\n# Obsidian Sync\n\n## Setup\n"
        "Obsidian Sync keeps the vault identical on the mobile app and the desktop app.\n"
    ),
    "apps/dataview.md": "# Dataview\nQuery notes by their frontmatter fields, like a database.\n",
    "kitchen/bread.md": (
        "# Sourdough\nA lively starter, flour, water and salt; let the dough proof overnight.\n"
        "See [[pizza]].\n"
    ),
    "kitchen/pizza.md": "# Pizza dough\nFlour, water, yeast and salt; a long cold rise.\n",
    "kitchen/focaccia.md": "# Focaccia\nAn olive-oil flatbread from a wet, yeasted dough.\n",
    "money/rates.md": "# Interest rates\nThe central bank raised rates to slow inflation.\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Embedded:
    served: Served
    tools: Tools


@pytest.fixture
async def embedded(
    tmp_path: Path, semantic_index: SemanticIndex, db_url: str | None
) -> AsyncIterator[Embedded]:
    root = write_files(tmp_path / "vault", NOTES)
    served = serve(Settings(vault=root, database_url=db_url))
    served.app.semantic = semantic_index
    embed_pending(served.app.db, semantic_index)
    try:
        async with Client(served.server, mode="legacy") as client:
            yield Embedded(served, Tools(client))
    finally:
        served.app.close()


async def test_semantic_mode_finds_a_paraphrase_keyword_search_misses(embedded: Embedded) -> None:
    query = "how do I keep my notes in sync between phone and laptop"
    keyword = await embedded.tools.ok("search_notes", query=query, mode="keyword")
    assert keyword["results"] == []
    data = await embedded.tools.ok("search_notes", query=query, mode="semantic", limit=2)
    assert data["mode"] == "semantic"
    assert data["results"][0]["path"] == "apps/sync.md"
    assert "mobile app" in data["results"][0]["snippet"]
    assert data["coverage"] == "embedded 6 of 6 notes"
    assert data["hasMore"] is True and data["total"] == 6
    # Ranked by OpenBLAS on one thread: its threads, woken for each product, waited for cores
    # busy with the rest of the server (docs/semantic-search.md).
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


async def test_hybrid_is_the_default_once_every_note_is_embedded(embedded: Embedded) -> None:
    data = await embedded.tools.ok("search_notes", query="olive-oil flatbread dough")
    assert data["mode"] == "hybrid"
    assert data["results"][0]["path"] == "kitchen/focaccia.md"


async def test_partial_coverage_keeps_keyword_default_and_says_so(embedded: Embedded) -> None:
    write_files(embedded.served.root, {"new.md": "# Tides\nThe moon pulls the oceans.\n"})
    embedded.served.app.indexer.reconcile()
    default = await embedded.tools.ok("search_notes", query="moon")
    assert default["mode"] == "keyword"
    data = await embedded.tools.ok("search_notes", query="ocean tides", mode="semantic")
    assert data["coverage"] == ("embedded 6 of 7 notes; results cover the embedded notes only")
    assert data["progress"] == "embedding notes, 6 of 7"


async def test_filters_apply_to_semantic_results(embedded: Embedded) -> None:
    data = await embedded.tools.ok(
        "search_notes", query="baking bread", mode="semantic", directory="apps"
    )
    assert {r["path"] for r in data["results"]} <= {"apps/sync.md", "apps/dataview.md"}
    # Found by meaning only (no note says "phone"), under the floor hybrid admits notes from.
    query = "syncing my phone"
    tagged = await embedded.tools.ok("search_notes", query=query, mode="hybrid", tag="apps")
    assert [r["path"] for r in tagged["results"]] == ["apps/sync.md"]


async def test_empty_and_huge_queries_answer(embedded: Embedded) -> None:
    empty = await embedded.tools.ok("search_notes", query="   ", mode="semantic")
    assert empty["results"] == [] and empty["total"] == 0
    huge = await embedded.tools.ok("search_notes", query="bread " * 20_000, mode="hybrid")
    assert huge["results"][0]["path"].startswith("kitchen/")
    # The answer names the query without repeating 120,000 characters of it.
    assert huge["query"].startswith("bread bread") and len(huge["query"]) < 1_000
    assert "120,000 characters" in huge["query"]


async def test_similar_notes_can_leave_out_linked_ones(embedded: Embedded) -> None:
    data = await embedded.tools.ok("get_similar_notes", path="kitchen/bread.md", limit=3)
    paths = [r["path"] for r in data["results"]]
    assert "kitchen/bread.md" not in paths
    assert set(paths[:2]) == {"kitchen/pizza.md", "kitchen/focaccia.md"}
    assert next(r for r in data["results"] if r["path"] == "kitchen/pizza.md")["linked"]
    unlinked = await embedded.tools.ok(
        "get_similar_notes", path="kitchen/bread.md", limit=3, unlinkedOnly=True
    )
    assert "kitchen/pizza.md" not in [r["path"] for r in unlinked["results"]]
    assert unlinked["results"][0]["path"] == "kitchen/focaccia.md"
    missing = await embedded.tools.error("get_similar_notes", path="kitchen/nope.md")
    assert "File not found" in missing


async def test_resolve_names_by_meaning(embedded: Embedded) -> None:
    data = await embedded.tools.ok(
        "resolve_names",
        names=["the note about central banks", "quantum chromodynamics lecture"],
        strategy="semantic",
        threshold=0.35,
    )
    first, second = data["results"]
    assert (first["path"], first["matchedOn"]) == ("money/rates.md", "meaning")
    assert second["path"] is None


async def test_health_and_stats_report_embedding_progress(embedded: Embedded) -> None:
    stats = await embedded.tools.ok("get_stats")
    assert stats["embedding"] == "embedded 6 of 6 notes"
    health = await embedded.tools.ok("health_check")
    assert health["embedding"] == "embedded 6 of 6 notes"


async def test_a_missing_model_fails_semantic_clearly_and_keyword_keeps_working(
    tmp_path: Path,
) -> None:
    root = write_files(tmp_path / "vault", NOTES)
    served = serve(Settings(vault=root, embedding_model_path=tmp_path / "gone.onnx"))
    try:
        async with Client(served.server, mode="legacy") as client:
            tools = Tools(client)
            message = await tools.error("search_notes", query="phone sync", mode="semantic")
            assert "embedding model file not found" in message and "gone.onnx" in message
            data = await tools.ok("search_notes", query="Obsidian")
            assert data["mode"] == "keyword" and data["results"]
    finally:
        served.app.close()


async def test_without_the_extra_semantic_modes_say_how_to_enable_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("weaver.semantic.model.semantic_installed", lambda: False)
    monkeypatch.setattr(modes, "semantic_installed", lambda: False)
    root = write_files(tmp_path / "vault", NOTES)
    served = serve(Settings(vault=root))
    try:
        async with Client(served.server, mode="legacy") as client:
            tools = Tools(client)
            message = await tools.error("get_similar_notes", path="apps/sync.md")
            assert "pip install 'weaver-mcp[semantic]'" in message
            data = await tools.ok("search_notes", query="Obsidian")
            assert data["mode"] == "keyword"
    finally:
        served.app.close()


async def test_connect_note_lists_related_notes_it_does_not_link(embedded: Embedded) -> None:
    result = await embedded.tools.client.get_prompt("connect_note", {"path": "kitchen/bread.md"})
    text = result.messages[0].content.text  # type: ignore[union-attr]
    related = text.split("## Related by meaning, not linked yet", 1)[1].split("\n\n")[1]
    assert "- kitchen/focaccia.md" in related
    assert "kitchen/pizza.md" not in related  # already linked from the note
