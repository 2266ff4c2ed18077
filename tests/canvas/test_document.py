"""Reading a canvas and writing it back: every node and edge kind of JSON Canvas 1.0, with
fields the spec does not know, comes back byte for byte in Obsidian's layout; another layout
comes back as the same JSON; what the spec forbids is refused naming the node or edge."""

from __future__ import annotations

import json

import pytest

from weaver.canvas.document import group_of, read_canvas, write_canvas
from weaver.errors import InvalidCanvasError

# Obsidian's layout: tab-indented, one node or edge per line, no newline at the end. Every
# node type, every optional field, preset and hex colors, fields of no spec (a plugin's
# `styleAttributes`, a top-level `metadata`), non-ASCII text and escapes.
# The ids of EVERY_KIND's cards, which the operation and tool tests name.
GROUP, TEXT, NOTE, LINK, PHOTO = (
    "a0000000000000a1",
    "b0000000000000b2",
    "c0000000000000c3",
    "d0000000000000d4",
    "e0000000000000e5",
)
EVERY_KIND = (
    "{\n"
    '\t"nodes":[\n'
    '\t\t{"id":"a0000000000000a1","type":"group","x":-400,"y":-300,"width":900,"height":700,'
    '"label":"Sprint 12","background":"img/wall.png","backgroundStyle":"ratio","color":"4"},\n'
    '\t\t{"id":"b0000000000000b2","type":"text","text":"# Plan\\nShip **canvas** — «soon»\\t✓",'
    '"x":-360,"y":-260,"width":250,"height":60,"color":"#FF8800",'
    '"styleAttributes":{"shape":"pill"}},\n'
    '\t\t{"id":"c0000000000000c3","type":"file","file":"Projects/Weaver.md",'
    '"subpath":"#Goals","x":0,"y":-260,"width":400,"height":400},\n'
    '\t\t{"id":"d0000000000000d4","type":"link","url":"https://jsoncanvas.org/",'
    '"x":-360,"y":-100,"width":300,"height":200,"color":"6"},\n'
    '\t\t{"id":"e0000000000000e5","type":"file","file":"img/photo.png",'
    '"x":700,"y":0,"width":120.5,"height":80}\n'
    "\t],\n"
    '\t"edges":[\n'
    '\t\t{"id":"f0000000000000f6","fromNode":"b0000000000000b2","fromSide":"right",'
    '"toNode":"c0000000000000c3","toSide":"left"},\n'
    '\t\t{"id":"f0000000000000f7","fromNode":"c0000000000000c3","fromSide":"bottom",'
    '"fromEnd":"arrow","toNode":"d0000000000000d4","toSide":"top","toEnd":"none",'
    '"color":"2","label":"cites"},\n'
    '\t\t{"id":"f0000000000000f8","fromNode":"d0000000000000d4","toNode":"e0000000000000e5",'
    '"color":"#00aa00","pathfindingMethod":"square"}\n'
    "\t],\n"
    '\t"metadata":{"version":"1.0-1.0","frontmatter":{}}\n'
    "}"
).encode()


def test_every_kind_round_trips_byte_for_byte() -> None:
    canvas = read_canvas(EVERY_KIND)
    assert write_canvas(canvas) == EVERY_KIND
    assert [n.type for n in canvas.nodes] == ["group", "text", "file", "link", "file"]
    assert canvas.nodes[1].fields["styleAttributes"] == {"shape": "pill"}
    assert canvas.edges[2].fields["pathfindingMethod"] == "square"


def test_another_layout_comes_back_as_the_same_json_in_obsidians() -> None:
    pretty = json.dumps(json.loads(EVERY_KIND), indent=2).encode()
    written = write_canvas(read_canvas(pretty))
    assert written == EVERY_KIND
    before, after = json.loads(pretty), json.loads(written)
    assert before == after and list(before) == list(after)
    assert [list(n) for n in before["nodes"]] == [list(n) for n in after["nodes"]]


def test_an_older_obsidians_field_order_and_an_empty_edge_list_round_trip() -> None:
    # Obsidian once wrote `type` before `id`; an empty array stays on its key's line.
    older = (
        b"{\n"
        b'\t"nodes":[\n'
        b'\t\t{"type":"file","file":"Home.md","id":"0123456789abcdef","x":-200,"y":-80,'
        b'"width":350,"height":240}\n'
        b"\t],\n"
        b'\t"edges":[]\n'
        b"}"
    )
    assert write_canvas(read_canvas(older)) == older


def test_a_canvas_of_edges_only_or_nothing_keeps_its_keys() -> None:
    assert write_canvas(read_canvas(b'{\n\t"nodes":[]\n}')) == b'{\n\t"nodes":[]\n}'
    assert write_canvas(read_canvas(b"{}")) == b"{}"
    empty = read_canvas(b"")  # how Obsidian makes a new canvas
    assert empty.nodes == () and empty.edges == ()


def test_a_byte_order_mark_and_a_final_newline_are_read() -> None:
    canvas = read_canvas(b"\xef\xbb\xbf" + EVERY_KIND + b"\n")
    assert len(canvas.nodes) == 5


def test_the_smallest_group_holding_a_card_is_its_group() -> None:
    canvas = read_canvas(EVERY_KIND)
    text, photo = canvas.nodes[1], canvas.nodes[4]
    group = group_of(canvas, text)
    assert group is not None and group.id == "a0000000000000a1"
    assert group_of(canvas, photo) is None  # lies outside the group's box


def problems_of(document: object) -> tuple[str, ...]:
    with pytest.raises(InvalidCanvasError) as caught:
        read_canvas(json.dumps(document).encode(), "Boards/Bad.canvas")
    assert "Boards/Bad.canvas" in str(caught.value)
    return caught.value.problems


def node(node_id: str, **fields: object) -> dict[str, object]:
    base: dict[str, object] = {"id": node_id, "type": "text", "text": "t"}
    return base | {"x": 0, "y": 0, "width": 10, "height": 10} | fields


def test_each_problem_names_the_node_or_edge_and_the_field() -> None:
    found = problems_of(
        {
            "nodes": [
                node("n1", width="12"),
                node("n1"),
                node("n3", type="sticky"),
                node("n4", type="file", subpath="Goals"),
                {"id": "n5", "type": "link", "x": 0, "y": 0, "width": 1, "height": 1},
                node("n6", type="group", backgroundStyle="stretch", color="red"),
                {"type": "text"},
            ],
            "edges": [
                {"id": "e1", "fromNode": "n1", "toNode": "ghost", "toSide": "middle"},
                {"id": "e2", "fromNode": "n1", "toNode": "n3", "toEnd": "circle"},
            ],
        }
    )
    assert found == (
        "node 'n1' (nodes[0]): 'width' must be a number, not \"12\"",
        "node 'n1' (nodes[1]): another node has the same id",
        "node 'n3' (nodes[2]): 'type' must be one of text, file, link, group, not \"sticky\"",
        "node 'n4' (nodes[3]): a file node needs a string 'file', not missing",
        "node 'n4' (nodes[3]): 'subpath' must start with '#', not \"Goals\"",
        "node 'n5' (nodes[4]): a link node needs a string 'url', not missing",
        "node 'n6' (nodes[5]): 'backgroundStyle' must be one of cover, ratio, repeat, "
        'not "stretch"',
        "node 'n6' (nodes[5]): 'color' must be a preset '1' to '6' or a hex color such as "
        "'#FF0000', not \"red\"",
        "node nodes[6]: 'id' must be a non-empty string, not missing",
        "node nodes[6]: 'x' must be a number, not missing",
        "node nodes[6]: 'y' must be a number, not missing",
        "node nodes[6]: 'width' must be a number, not missing",
        "node nodes[6]: 'height' must be a number, not missing",
        "node nodes[6]: a text node needs a string 'text', not missing",
        "edge 'e1' (edges[0]): 'toNode' names no node of the canvas (\"ghost\")",
        "edge 'e1' (edges[0]): 'toSide' must be one of top, right, bottom, left, not \"middle\"",
        "edge 'e2' (edges[1]): 'toEnd' must be one of none, arrow, not \"circle\"",
    )


def test_the_message_shows_the_first_problems_and_counts_the_rest() -> None:
    with pytest.raises(InvalidCanvasError) as caught:
        read_canvas(json.dumps({"nodes": [node(f"n{i}", x="?") for i in range(8)]}).encode())
    assert str(caught.value).endswith("; and 3 more")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"[1, 2]", "the top level must be an object, not an array"),
        (b'{"nodes": {}}', "'nodes' must be an array, not an object"),
        (b'{"edges": [3]}', "edges[0] must be an object, not 3"),
        (b'{"nodes": [', "not JSON (Expecting value: line 1 column 12 (char 11))"),
        (b"\xff{}", "not UTF-8 (invalid byte at offset 0)"),
        (b"[" * 600 + b"]" * 600, "not JSON (nested deeper than 512 levels)"),
    ],
)
def test_what_is_no_canvas_at_all_is_refused(data: bytes, problem: str) -> None:
    with pytest.raises(InvalidCanvasError) as caught:
        read_canvas(data)
    assert caught.value.problems == (problem,)


def test_a_fractional_position_is_kept_and_a_non_number_is_not() -> None:
    assert read_canvas(json.dumps({"nodes": [node("n", x=1.5)]}).encode()).nodes[0].box()[0] == 1.5
    assert problems_of({"nodes": [node("n", x=True)]}) == (
        "node 'n' (nodes[0]): 'x' must be a number, not true",
    )
