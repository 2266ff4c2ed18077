"""The edits of a canvas: each returns a new canvas that keeps every other node and edge as the
file held it, makes ids as Obsidian does, and refuses what it cannot do, naming why."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest

from tests.canvas.test_document import EVERY_KIND, GROUP, LINK, NOTE, PHOTO, TEXT
from weaver.canvas import operations as ops
from weaver.canvas.document import Canvas, read_canvas, write_canvas
from weaver.errors import CanvasEditError


def board() -> Canvas:
    return read_canvas(EVERY_KIND)


def ids(*made: str) -> Callable[[], str]:
    return iter(made).__next__


def test_an_added_text_card_goes_on_top_with_obsidians_id_and_size() -> None:
    edited = ops.add_node(board(), ops.NewNode("text", content={"text": "new idea"}))
    assert edited.node is not None
    assert re.fullmatch(r"[0-9a-f]{16}", edited.node.id)
    assert edited.canvas.nodes[-1] == edited.node
    # Placed right of everything (the photo ends at 820), level with the top (the group's).
    assert dict(edited.node.fields) == {
        "id": edited.node.id,
        "type": "text",
        "text": "new idea",
        "x": 860.5,
        "y": -300,
        "width": 250,
        "height": 60,
    }
    # The file gains one line; the one before it gains a comma; nothing else changes.
    old = write_canvas(board()).decode().split("\n")
    new = write_canvas(edited.canvas).decode().split("\n")
    last = len(board().nodes) + 1  # the last node's line
    assert new[: last + 1] == [*old[:last], old[last] + ","]
    assert new[last + 2 :] == old[last + 1 :]


def test_a_card_is_written_in_obsidians_field_order() -> None:
    new = ops.NewNode(
        "file",
        x=10,
        y=20,
        width=30,
        height=40,
        color="3",
        content={"subpath": "#H", "file": "a.md"},
    )
    edited = ops.add_node(board(), new, make_id=ids("1234567890abcdef"))
    assert edited.node is not None
    assert list(edited.node.fields) == [
        "id", "type", "file", "subpath", "x", "y", "width", "height", "color"
    ]  # fmt: skip
    group = ops.add_node(board(), ops.NewNode("group", x=0, y=0, content={"label": "L"})).node
    assert group is not None
    assert list(group.fields) == ["id", "type", "x", "y", "width", "height", "label"]


def test_whole_numbers_are_written_as_integers_as_obsidian_writes_them() -> None:
    new = ops.NewNode("group", x=600.0, y=-260.0, width=300.0, height=200.5)
    edited = ops.add_node(board(), new, make_id=ids("1234567890abcdef"))
    assert b'"x":600,"y":-260,"width":300,"height":200.5}' in write_canvas(edited.canvas)


def test_a_group_goes_below_every_card() -> None:
    edited = ops.add_node(board(), ops.NewNode("group", x=0, y=0))
    assert edited.canvas.nodes[0] == edited.node
    assert edited.canvas.nodes[1:] == board().nodes


def test_the_first_card_of_an_empty_canvas_is_centred() -> None:
    edited = ops.add_node(Canvas(), ops.NewNode("link", content={"url": "https://a.b"}))
    assert edited.node is not None and edited.node.box() == (-200, -200, 400, 400)
    assert write_canvas(edited.canvas).startswith(b'{\n\t"nodes":[\n\t\t{"id":')


def test_an_id_already_taken_is_never_given_again() -> None:
    edited = ops.add_node(board(), ops.NewNode("group", x=0, y=0), make_id=ids(TEXT, "0" * 16))
    assert edited.node is not None and edited.node.id == "0" * 16


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (ops.NewNode("text"), "a text node needs 'text'"),
        (ops.NewNode("link", content={"text": "x", "url": "u"}), "a link node has no 'text'"),
        (ops.NewNode("note", content={}), "a node's type is text, file, link or group"),
        (ops.NewNode("group", x=5), "give both x and y, or neither"),
        (ops.NewNode("group", width=0), "width and height must be above 0"),
        (ops.NewNode("group", color="blue"), "a color is a preset '1' to '6'"),
        (ops.NewNode("group", content={"backgroundStyle": "tile"}), "backgroundStyle is one of"),
        (ops.NewNode("file", content={"file": "a.md", "subpath": "H"}), "a subpath starts"),
        (ops.NewNode("group", x=float("nan"), y=0), "it would leave node"),
    ],
)
def test_a_card_that_cannot_be_made_is_refused(new: ops.NewNode, reason: str) -> None:
    with pytest.raises(CanvasEditError, match=re.escape(reason)):
        ops.add_node(board(), new)


def test_a_moved_group_carries_the_cards_inside_it() -> None:
    edited = ops.move_node(board(), GROUP, x=-300, y=-200)
    after = {n.id: n.box() for n in edited.canvas.nodes}
    assert after[GROUP] == (-300, -200, 900, 700)
    assert after[TEXT] == (-260, -160, 250, 60)  # moved by (+100, +100)
    assert after[NOTE] == (100, -160, 400, 400)
    assert after[PHOTO] == (700, 0, 120.5, 80)  # outside the group: stays
    assert edited.moved == (TEXT, NOTE, LINK)
    # Only geometry changed: the cards keep their other fields and their order.
    text = edited.canvas.nodes[1]
    assert list(text.fields) == list(board().nodes[1].fields)
    assert text.fields["styleAttributes"] == {"shape": "pill"}


def test_a_resized_group_and_a_moved_card_move_nothing_else() -> None:
    resized = ops.move_node(board(), GROUP, width=1000)
    assert resized.moved == () and resized.canvas.nodes[1:] == board().nodes[1:]
    moved = ops.move_node(board(), TEXT, y=0)
    assert moved.node is not None and moved.node.box() == (-360, 0, 250, 60)
    assert moved.canvas.nodes[0] == board().nodes[0]


def test_moving_needs_a_change_a_known_card_and_a_real_size() -> None:
    with pytest.raises(CanvasEditError, match="nothing to change"):
        ops.move_node(board(), TEXT)
    with pytest.raises(CanvasEditError, match=r"no node has the id 'b2' \(ids: a0+a1, b0+b2"):
        ops.move_node(board(), "b2", x=1)
    with pytest.raises(CanvasEditError, match="above 0"):
        ops.move_node(board(), TEXT, height=-5)


def test_connecting_joins_the_sides_that_face_each_other() -> None:
    made = (f"{i:016x}" for i in itertools.count(1)).__next__
    right = ops.connect(board(), ops.NewEdge(TEXT, PHOTO), make_id=made).edge
    below = ops.connect(board(), ops.NewEdge(TEXT, LINK, label="see"), make_id=made).edge
    assert right is not None and below is not None
    assert dict(right.fields) == {
        "id": "0000000000000001",
        "fromNode": TEXT,
        "fromSide": "right",
        "toNode": PHOTO,
        "toSide": "left",
    }
    assert (below.fields["fromSide"], below.fields["toSide"], below.fields["label"]) == (
        "bottom",
        "top",
        "see",
    )


def test_an_edge_given_every_field_keeps_the_specs_order() -> None:
    new = ops.NewEdge(LINK, TEXT, "top", "bottom", "arrow", "none", "why", "#123456")
    edited = ops.connect(board(), new)
    assert edited.canvas.edges[-1] == edited.edge and edited.edge is not None
    assert list(edited.edge.fields.values())[1:] == [
        LINK, "top", "arrow", TEXT, "bottom", "none", "#123456", "why"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (ops.NewEdge(TEXT, "nope"), "no node has the id 'nope'"),
        (ops.NewEdge(TEXT, NOTE, from_side="middle"), "fromSide is one of top, right"),
        (ops.NewEdge(TEXT, NOTE, to_end="dot"), "toEnd is one of none, arrow"),
        (ops.NewEdge(TEXT, NOTE, color="7"), "a color is a preset"),
    ],
)
def test_an_edge_that_cannot_be_made_is_refused(new: ops.NewEdge, reason: str) -> None:
    with pytest.raises(CanvasEditError, match=re.escape(reason)):
        ops.connect(board(), new)


def test_removing_a_card_removes_its_edges_and_nothing_else() -> None:
    edited = ops.remove_node(board(), NOTE)
    assert [n.id for n in edited.canvas.nodes] == [GROUP, TEXT, LINK, PHOTO]
    assert edited.removed_edges == ("f0000000000000f6", "f0000000000000f7")
    assert [e.id for e in edited.canvas.edges] == ["f0000000000000f8"]
    assert edited.canvas.extra == board().extra


def test_removing_a_group_leaves_its_cards() -> None:
    edited = ops.remove_node(board(), GROUP)
    assert [n.id for n in edited.canvas.nodes] == [TEXT, NOTE, LINK, PHOTO]


def test_removing_an_edge_and_the_last_edge() -> None:
    canvas = board()
    for edge in board().edges:
        canvas = ops.remove_edge(canvas, edge.id).canvas
    assert canvas.nodes == board().nodes
    assert b'\t"edges":[],\n' in write_canvas(canvas)
    with pytest.raises(CanvasEditError, match="no edge has the id 'x' \\(the canvas has none\\)"):
        ops.remove_edge(canvas, "x")
