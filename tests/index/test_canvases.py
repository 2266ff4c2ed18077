"""Canvases indexed as the app reads them: a file card is a link to the note it shows (in the
note's backlinks and the graph), a text card's markdown is searchable with its links and tags,
a broken canvas is a listed problem, and lists and counts of notes stay notes only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from tests.helpers import WriteNotes, write_files
from tests.index.test_indexer import bump_mtime, links_of
from tests.mcp_server.test_cache_tools import serve, tools_of
from weaver.cache.models import Link, Note, Tag
from weaver.config import Settings
from weaver.runtime.app import App

BOARD = "Boards/Quarter.canvas"


def card(node_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": node_id, "x": 0, "y": 0, "width": 250, "height": 60, **fields}


def board(text: str = "Read [[Ideas]] about #roadmap and zeppelins") -> str:
    return json.dumps(
        {
            "nodes": [
                card("group1", type="group", label="Second quarter"),
                card("plan1", type="file", file="Projects/Plan.md", subpath="#Goals"),
                card("text1", type="text", text=text),
                card("site1", type="link", url="https://example.com/road"),
            ],
            "edges": [{"id": "edge1", "fromNode": "plan1", "toNode": "text1"}],
        },
        indent="\t",
    )


VAULT = {
    BOARD: board(),
    "Projects/Plan.md": "# Plan\n## Goals\n",
    "Ideas.md": "ideas, tagged #roadmap\n",
}


def test_cards_are_backlinks_graph_edges_search_hits_and_tagged_files(tmp_path: Path) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", VAULT)))

    async def ask() -> dict[str, Any]:
        async with tools_of(served, "auto") as tools:
            return {
                "backlinks": await tools.ok("search_links", path="Projects/Plan.md"),
                "ideas": await tools.ok("search_links", path="Ideas.md", direction="incoming"),
                "graph": await tools.ok("get_graph"),
                "search": await tools.ok("search_notes", query="zeppelins", mode="keyword"),
                "label": await tools.ok("search_notes", query="quarter", mode="keyword"),
                "tagged": await tools.ok("search_by_tags", tags=["roadmap"]),
                "files": await tools.ok("query_files"),
                "tags": await tools.ok("list_tags"),
                "stats": await tools.ok("get_stats"),
            }

    try:
        got = anyio.run(ask)
    finally:
        served.app.close()
    assert got["backlinks"]["incoming"] == [BOARD]
    assert got["ideas"]["incoming"] == [BOARD]
    edges = {(e["source"], e["target"]) for e in got["graph"]["edges"]}
    assert edges == {(BOARD, "Projects/Plan.md"), (BOARD, "Ideas.md")}
    (hit,) = got["search"]["results"]
    assert (hit["path"], hit["title"], hit["tags"]) == (BOARD, "Quarter", ["roadmap"])
    assert "<mark>zeppelins</mark>" in hit["snippet"]
    assert [r["path"] for r in got["label"]["results"]] == [BOARD]  # a group's label
    assert {f["path"] for f in got["tagged"]["files"]} == {BOARD, "Ideas.md"}
    # Lists and counts of notes are of notes, as Obsidian's (docs/canvas.md).
    assert [f["path"] for f in got["files"]["files"]] == ["Ideas.md", "Projects/Plan.md"]
    assert got["tags"]["tags"][0]["notes"] == 1
    assert (got["stats"]["totalFiles"], got["stats"]["totalAttachments"]) == (2, 1)


@pytest.mark.both_backends
def test_a_file_cards_subpath_is_the_links_heading(app: App, write_notes: WriteNotes) -> None:
    write_notes(VAULT)
    app.indexer.reconcile()
    with app.db.connect() as conn:
        rows = conn.execute(
            select(Link.target_path, Link.kind, Link.subpath, Link.line).where(
                Link.source_path == BOARD
            )
        ).all()
    # `line`: the card's place in the file's nodes.
    assert sorted(rows) == [
        ("Ideas.md", "wikilink", None, 2),
        ("Projects/Plan.md", "canvas", "Goals", 1),
    ]


@pytest.mark.both_backends
def test_a_canvas_edited_on_disk_updates_its_links_tags_and_text(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes(VAULT)
    app.indexer.reconcile()
    (root / BOARD).write_text(board("Now about [[Projects/Plan]] and #launch airships"))
    bump_mtime(root / BOARD)
    app.indexer.apply_paths([BOARD])
    assert links_of(app, BOARD) == {
        "Projects/Plan.md": "Projects/Plan.md",
        "Projects/Plan": "Projects/Plan.md",
    }
    with app.db.connect() as conn:
        tags = set(conn.execute(select(Tag.key).where(Tag.note_path == BOARD)).scalars())
    assert tags == {"launch"}
    (root / BOARD).unlink()
    app.indexer.apply_paths([BOARD])
    assert links_of(app, BOARD) == {}


@pytest.mark.both_backends
def test_a_broken_canvas_is_listed_as_a_problem(app: App, write_notes: WriteNotes) -> None:
    write_notes({**VAULT, "Broken.canvas": '{"nodes": [{"id": "a", "type": "text"}]}'})
    report = app.indexer.reconcile()
    assert report.errors == 1
    with app.db.connect() as conn:
        error = conn.execute(select(Note.error).where(Note.path == "Broken.canvas")).scalar_one()
    assert error is not None and "Broken.canvas" in error and "text" in error
    assert links_of(app, BOARD) != {}  # the other canvas is read all the same


def _indexed(app: App) -> dict[str, Any]:
    with app.db.connect() as conn:
        links = conn.execute(
            select(Link.source_path, Link.target, Link.target_path, Link.kind, Link.line)
        ).all()
        notes = conn.execute(select(Note.path, Note.title, Note.word_count, Note.error)).all()
        tags = conn.execute(select(Tag.note_path, Tag.key)).all()
    return {"links": sorted(links), "notes": sorted(notes), "tags": sorted(tags)}


@pytest.mark.both_backends
@pytest.mark.parametrize("change", ["edit", "add", "delete"])
def test_a_full_reindex_equals_the_incremental_one(
    app: App, write_notes: WriteNotes, change: str
) -> None:
    root = write_notes(VAULT)
    app.indexer.reconcile()
    other = "Boards/Other.canvas"
    if change == "edit":
        (root / BOARD).write_text(board("[[Missing]] and [[Ideas#Top]] #later"))
        bump_mtime(root / BOARD)
    elif change == "add":
        (root / other).write_text(board("[[Projects/Plan]]"))
    else:
        (root / "Ideas.md").unlink()
    app.indexer.apply_paths([BOARD, other, "Ideas.md"])
    incremental = _indexed(app)
    assert BOARD in {source for source, *_ in incremental["links"]}
    app.indexer.reconcile(full=True)
    assert _indexed(app) == incremental
