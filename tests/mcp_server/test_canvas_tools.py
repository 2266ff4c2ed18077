"""get_canvas and edit_canvas through the SDK's in-memory client: a board's cards and edges
with what a model needs (a note card's path, a text card's text, the group it lies in), paged
and cut to size; each edit written through the notes' safe path, every other byte of the file
kept; a stale or concurrent edit refused by hash with the file untouched; undone like a note's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.canvas.test_document import EVERY_KIND, GROUP, LINK, NOTE, PHOTO, TEXT
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve, tools_of
from weaver.canvas.document import read_canvas, write_canvas
from weaver.config import Settings
from weaver.edits import steps
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

pytestmark = pytest.mark.anyio

BOARD = "Boards/Sprint.canvas"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Any:
    root = write_files(
        tmp_path / "vault",
        {BOARD: EVERY_KIND, "Projects/Weaver.md": "# Weaver\n", ".hidden/x.canvas": EVERY_KIND},
    )
    served = serve(Settings(vault=root))
    yield served
    served.app.close()


def on_disk(served: Served) -> bytes:
    return (served.root / BOARD).read_bytes()


async def test_a_board_reads_as_cards_and_edges(served: Served) -> None:
    async with tools_of(served, "auto") as tools:
        data = await tools.ok("get_canvas", path=BOARD)
    assert data["contentHash"] == steps.sha256(EVERY_KIND)
    assert (data["nodeCount"], data["edgeCount"], data["hasMore"]) == (5, 3, False)
    group, text, note, link, photo = data["nodes"]
    assert group == {
        "id": GROUP,
        "type": "group",
        "x": -400,
        "y": -300,
        "width": 900,
        "height": 700,
        "color": "4",
        "label": "Sprint 12",
        "background": "img/wall.png",
        "backgroundStyle": "ratio",
    }
    assert text["text"] == "# Plan\nShip **canvas** — «soon»\t✓"
    assert text["group"] == GROUP and text["extra"] == {"styleAttributes": {"shape": "pill"}}
    assert (note["file"], note["subpath"], note["group"]) == ("Projects/Weaver.md", "#Goals", GROUP)
    assert link["url"] == "https://jsoncanvas.org/"
    assert photo["width"] == 120.5 and "group" not in photo
    assert "missing" not in note and photo["missing"] is True  # img/photo.png is not there
    assert data["edges"][1] == {
        "id": "f0000000000000f7",
        "fromNode": NOTE,
        "toNode": LINK,
        "fromSide": "bottom",
        "toSide": "top",
        "fromEnd": "arrow",
        "toEnd": "none",
        "color": "2",
        "label": "cites",
    }
    assert data["edges"][2]["extra"] == {"pathfindingMethod": "square"}


async def test_a_big_board_pages_and_cuts_long_text(tmp_path: Path) -> None:
    long_text = "word " * 400
    nodes: list[dict[str, Any]] = [
        {"id": f"{i:016x}", "type": "text", "text": long_text, "x": i, "y": 0, "width": 9,
         "height": 9}
        for i in range(3_000)
    ]  # fmt: skip
    longest = "line of a long card\n" * 1_200  # 24,000 characters, about 8,000 tokens
    nodes[5]["text"] = longest
    plugin_data = {"cells": list(range(5_000))}
    nodes[0]["pluginData"] = plugin_data
    edges = [
        {"id": f"e{i:015x}", "fromNode": f"{i:016x}", "toNode": f"{i + 1:016x}"}
        for i in range(2_999)
    ]
    data = json.dumps({"nodes": nodes, "edges": edges}).encode()
    served = serve(Settings(vault=write_files(tmp_path / "vault", {"big.canvas": data})))
    try:
        async with tools_of(served, "auto") as tools:
            first = await tools.ok("get_canvas", path="big.canvas")
            assert (first["nodeCount"], first["edgeCount"]) == (3_000, 2_999)
            assert len(first["nodes"]) == 50 and first["hasMore"] is True
            assert len(first["edges"]) == 100 and first["edgesHasMore"] is True
            assert first["nodes"][0]["text"] == long_text[:300]
            assert first["nodes"][0]["textChars"] == len(long_text)
            shown = f"({len(json.dumps(plugin_data)):,} characters: not shown)"
            assert first["nodes"][0]["extra"] == {"pluginData": shown}
            assert "offset 50" in first["hint"] and "edgeOffset 100" in first["hint"]
            assert "node=<id>" in first["hint"]
            # Asked for more than fits, a page stops at the answer's budget and says where.
            wide = await tools.ok("get_canvas", path="big.canvas", limit=1000, edgeLimit=1000)
            assert 50 < len(wide["nodes"]) < 500 and wide["hasMore"] is True
            assert f"offset {len(wide['nodes'])}" in wide["hint"]
            last = await tools.ok("get_canvas", path="big.canvas", offset=2_950, edgeOffset=2_990)
            assert len(last["nodes"]) == 50 and last["hasMore"] is False
            assert len(last["edges"]) == 9 and last["edgesHasMore"] is False
            one = await tools.ok("get_canvas", path="big.canvas", node=f"{5:016x}")
            assert one["nodes"][0]["text"] == longest and "textChars" not in one["nodes"][0]
            for answer in (first, wide, last, one):
                assert estimate_tokens(json.dumps(answer)) < ANSWER_TOKEN_BOUND
            assert [e["id"] for e in one["edges"]] == [f"e{4:015x}", f"e{5:015x}"]
            assert one["edgeCount"] == 2
    finally:
        served.app.close()


async def test_edits_write_the_board_and_keep_every_other_field(served: Served) -> None:
    async with tools_of(served, "auto") as tools:
        read = await tools.ok("get_canvas", path=BOARD)
        added = await tools.ok(
            "edit_canvas",
            path=BOARD,
            operation="add_node",
            type="file",
            file="Projects/Weaver.md",
            x=600,
            y=-260,
            expectedHash=read["contentHash"],
        )
        card = added["node"]["id"]
        assert added["node"] == {
            "id": card, "type": "file", "x": 600, "y": -260, "width": 400, "height": 400,
            "file": "Projects/Weaver.md",
        }  # fmt: skip
        assert added["contentHash"] == steps.sha256(on_disk(served)) and added["created"] is False
        assert b'"file":"Projects/Weaver.md","x":600,"y":-260,' in on_disk(served)
        joined = await tools.ok(
            "edit_canvas", path=BOARD, operation="connect", fromNode=TEXT, toNode=card,
            label="tracks", expectedHash=added["contentHash"],
        )  # fmt: skip
        edge = joined["edge"]
        assert (edge["fromSide"], edge["toSide"], edge["label"]) == ("right", "left", "tracks")
        moved = await tools.ok("edit_canvas", path=BOARD, operation="move_node", node=GROUP, x=0)
        assert moved["moved"] == [TEXT, NOTE, LINK]
        removed = await tools.ok("edit_canvas", path=BOARD, operation="remove_node", node=NOTE)
        assert removed["removed"] == [NOTE, "f0000000000000f6", "f0000000000000f7"]
        gone = await tools.ok(
            "edit_canvas", path=BOARD, operation="remove_edge", edge=joined["edge"]["id"]
        )
        assert gone["removed"] == [joined["edge"]["id"]]
        after = await tools.ok("get_canvas", path=BOARD)
    assert [n["id"] for n in after["nodes"]] == [GROUP, TEXT, LINK, PHOTO, card]
    assert [e["id"] for e in after["edges"]] == ["f0000000000000f8"]
    # What no edit touched keeps its line byte for byte (a comma aside, now it is not last).
    lines = {line.rstrip(",") for line in on_disk(served).decode().split("\n")}
    original = EVERY_KIND.decode().split("\n")
    assert original[6] in lines  # the photo
    assert original[-4] in lines  # the edge with `pathfindingMethod`
    assert original[-2] in lines  # the top-level `metadata`
    assert write_canvas(read_canvas(on_disk(served))) == on_disk(served)


async def test_a_stale_or_concurrent_edit_is_refused_and_nothing_written(served: Served) -> None:
    stale_hash = steps.sha256(EVERY_KIND)
    async with tools_of(served, "auto") as first, tools_of(served, "auto") as second:
        answers: list[dict[str, Any]] = []

        async def add(tools: Tools, text: str) -> None:
            args = {"path": BOARD, "operation": "add_node", "type": "text", "text": text}
            answers.append(await tools.raw("edit_canvas", args | {"expectedHash": stale_hash}))

        async with anyio.create_task_group() as group:
            group.start_soon(add, first, "one")
            group.start_soon(add, second, "two")
        assert sorted(a["success"] for a in answers) == [False, True]
        (refused,) = [a["error"] for a in answers if not a["success"]]
        assert refused.startswith(f"File changed on disk: '{BOARD}'")
        texts = [n.fields.get("text") for n in read_canvas(on_disk(served)).nodes]
        assert sorted(t for t in texts if t in ("one", "two")) in (["one"], ["two"])
        # A save in Obsidian meanwhile: the edit made on what was read is refused.
        read = await first.ok("get_canvas", path=BOARD)
        saved_in_obsidian = on_disk(served).replace(b'"label":"Sprint 12"', b'"label":"S13"')
        (served.root / BOARD).write_bytes(saved_in_obsidian)
        error = await first.error(
            "edit_canvas", path=BOARD, operation="remove_node", node=TEXT,
            expectedHash=read["contentHash"],
        )  # fmt: skip
        assert error.startswith("File changed on disk")
    assert on_disk(served) == saved_in_obsidian


async def test_an_edit_is_undone_with_restore_edit(served: Served) -> None:
    async with tools_of(served, "auto") as tools:
        await tools.ok("edit_canvas", path=BOARD, operation="remove_node", node=TEXT)
        listed = await tools.ok("list_edits", path=BOARD)
        assert listed["edits"][0]["operation"] == "edit_canvas"
        await tools.ok("restore_edit", path=BOARD, editId=listed["edits"][0]["editId"])
    assert on_disk(served) == EVERY_KIND


async def test_a_first_card_makes_a_new_board(served: Served) -> None:
    async with tools_of(served, "auto") as tools:
        made = await tools.ok(
            "edit_canvas", path="Boards/New.canvas", operation="add_node", type="text", text="hi"
        )
        assert made["created"] is True
        missing = await tools.error(
            "edit_canvas", path="Boards/Other.canvas", operation="remove_node", node=TEXT
        )
        # Canvases are indexed: the hint names the boards it may have meant, never a note.
        assert missing == (
            "File not found: 'Boards/Other.canvas' "
            "(did you mean 'Boards/New.canvas' or 'Boards/Sprint.canvas'?)"
        )
    (node,) = json.loads((served.root / "Boards/New.canvas").read_bytes())["nodes"]
    assert node == {
        "id": made["node"]["id"], "type": "text", "text": "hi", "x": -125, "y": -30,
        "width": 250, "height": 60,
    }  # fmt: skip


async def test_what_cannot_be_done_is_refused_saying_why(served: Served) -> None:
    async with tools_of(served, "auto") as tools:
        note = await tools.error("get_canvas", path="Projects/Weaver.md")
        assert note == "Invalid path: 'Projects/Weaver.md' (not a canvas (.canvas))"
        hidden = await tools.error("get_canvas", path=".hidden/x.canvas")
        assert "hidden or ignored folder" in hidden
        outside = await tools.error("get_canvas", path="../x.canvas")
        assert "'..' is not accepted" in outside
        assert await tools.error("get_canvas", path=BOARD, node="nope") == (
            f"Invalid arguments: node: {BOARD} has no node 'nope'"
        )
        wrong_argument = await tools.error(
            "edit_canvas", path=BOARD, operation="move_node", node=TEXT, label="x"
        )
        assert wrong_argument.startswith("Invalid arguments: label: move_node does not take it")
        no_text = await tools.error(
            "edit_canvas", path=BOARD, operation="add_node", type="link", text="x"
        )
        assert no_text == "Invalid arguments: text: a link card does not take it"
        unknown = await tools.error(
            "edit_canvas", path=BOARD, operation="connect", fromNode=TEXT, toNode="b2"
        )
        assert unknown.startswith("Cannot edit the canvas: no node has the id 'b2'")
        (served.root / "bad.canvas").write_text('{"nodes": [{"id": "n", "type": "text"}]}')
        broken = await tools.error("get_canvas", path="bad.canvas")
        assert broken.startswith("Invalid canvas: 'bad.canvas': node 'n' (nodes[0]): 'x' must")
        refused = await tools.error(
            "edit_canvas", path="bad.canvas", operation="remove_node", node="n"
        )
        assert refused == broken
    assert on_disk(served) == EVERY_KIND
    assert (served.root / "bad.canvas").read_text() == '{"nodes": [{"id": "n", "type": "text"}]}'
