"""The edits of a canvas, as Obsidian makes them: add a node, move or resize one, connect two,
remove a node (with its edges) or an edge. Each takes a canvas and returns an `Edited` one;
the nodes and edges it does not touch keep their objects as they are, every field kept.

Ids are what Obsidian makes: 16 hex digits, random, unique in the canvas. A node without a
position goes to the right of everything on the canvas (at the middle of an empty one), as a
model has no view to aim at; an edge without sides joins the sides that face each other.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from weaver.canvas.document import (
    BACKGROUND_STYLES,
    ENDS,
    REQUIRED_FIELD,
    SIDES,
    Canvas,
    Edge,
    Node,
    check_canvas,
    is_color,
    lies_within,
)
from weaver.errors import CanvasEditError, InvalidCanvasError

# Obsidian's size for a new card of each type (a text card is one line high).
DEFAULT_SIZES: Final = {
    "text": (250, 60),
    "file": (400, 400),
    "link": (400, 400),
    "group": (400, 400),
}
GAP: Final = 40  # between a node placed by Weaver and what is already on the canvas
# The fields a node of each type may be given, besides its geometry and color.
TYPE_FIELDS: Final = {
    "text": ("text",),
    "file": ("file", "subpath"),
    "link": ("url",),
    "group": ("label", "background", "backgroundStyle"),
}

# Where Obsidian writes a node's fields: its content before the geometry, a group's after it.
AFTER_GEOMETRY: Final = ("label", "background", "backgroundStyle")

IdMaker = Callable[[], str]


def new_id() -> str:
    return secrets.token_hex(8)


@dataclass(frozen=True, slots=True)
class Edited:
    """The canvas after an edit, and what the edit made or touched."""

    canvas: Canvas
    node: Node | None = None
    edge: Edge | None = None
    moved: tuple[str, ...] = ()  # nodes a moved group carried along
    removed_edges: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NewNode:
    """A node to add: its type, where (None: placed by Weaver), and its type's fields (the
    spec's names: `text`, `file`, `subpath`, `url`, `label`, `background`,
    `backgroundStyle`)."""

    type: str
    x: float | None = None
    y: float | None = None
    width: float | None = None
    height: float | None = None
    color: str | None = None
    content: Mapping[str, str] = field(default_factory=dict)


def add_node(canvas: Canvas, new: NewNode, make_id: IdMaker = new_id) -> Edited:
    """A group goes below every other node (a group drawn above its cards would hide them),
    any other node on top of the rest."""
    _check_new(new)
    width, height = _size(new)
    x, y = _place(canvas, new, width, height)
    fields: dict[str, Any] = {"id": _fresh_id(canvas, make_id), "type": new.type}
    content = [(k, new.content[k]) for k in TYPE_FIELDS[new.type] if k in new.content]
    fields |= {k: v for k, v in content if k not in AFTER_GEOMETRY}
    geometry = {"x": x, "y": y, "width": width, "height": height}
    fields |= {key: _whole(value) for key, value in geometry.items()}
    fields |= {k: v for k, v in content if k in AFTER_GEOMETRY}
    if new.color is not None:
        fields["color"] = new.color
    node = Node(fields)
    nodes = (node, *canvas.nodes) if new.type == "group" else (*canvas.nodes, node)
    return Edited(_checked(canvas.replace(nodes, canvas.edges)), node=node)


def _check_new(new: NewNode) -> None:
    if new.type not in TYPE_FIELDS:
        raise CanvasEditError(f"a node's type is text, file, link or group, not {new.type!r}")
    allowed = TYPE_FIELDS[new.type]
    for key in new.content:
        if key not in allowed:
            raise CanvasEditError(
                f"a {new.type} node has no {key!r} (it takes {', '.join(allowed)})"
            )
    required = REQUIRED_FIELD.get(new.type)
    if required is not None and required not in new.content:
        raise CanvasEditError(f"a {new.type} node needs {required!r}")
    if not new.content.get("subpath", "#").startswith("#"):
        raise CanvasEditError("a subpath starts with '#': '#Heading' or '#^block'")
    style = new.content.get("backgroundStyle")
    if style is not None and style not in BACKGROUND_STYLES:
        raise CanvasEditError(f"backgroundStyle is one of {', '.join(BACKGROUND_STYLES)}")
    if (new.x is None) != (new.y is None):
        raise CanvasEditError("give both x and y, or neither (the node is then placed for you)")
    _check_color(new.color)


def _size(new: NewNode) -> tuple[float, float]:
    default_width, default_height = DEFAULT_SIZES[new.type]
    width = default_width if new.width is None else new.width
    height = default_height if new.height is None else new.height
    _check_size(width, height)
    return width, height


def _place(canvas: Canvas, new: NewNode, width: float, height: float) -> tuple[float, float]:
    if new.x is not None and new.y is not None:
        return new.x, new.y
    if not canvas.nodes:
        return -(width // 2), -(height // 2)
    boxes = [node.box() for node in canvas.nodes]
    right = max(x + w for x, _, w, _ in boxes)
    top = min(y for _, y, _, _ in boxes)
    return right + GAP, top


def _fresh_id(canvas: Canvas, make_id: IdMaker) -> str:
    taken = {node.id for node in canvas.nodes} | {edge.id for edge in canvas.edges}
    while (made := make_id()) in taken:
        pass
    return made


# ---------------------------------------------------------------- moving and resizing


def move_node(
    canvas: Canvas,
    node_id: str,
    *,
    x: float | None = None,
    y: float | None = None,
    width: float | None = None,
    height: float | None = None,
) -> Edited:
    """Move and/or resize a node. A group moved carries along the nodes lying wholly inside
    it, as dragging it in Obsidian does; resizing one moves nothing else."""
    node = _node(canvas, node_id)
    if x is None and y is None and width is None and height is None:
        raise CanvasEditError("nothing to change: give x, y, width or height")
    old_x, old_y, old_width, old_height = node.box()
    new_width = old_width if width is None else width
    new_height = old_height if height is None else height
    _check_size(new_width, new_height)
    dx = 0 if x is None else x - old_x
    dy = 0 if y is None else y - old_y
    carried = _inside(canvas, node) if node.type == "group" and (dx or dy) else set()
    changed = {"width": new_width, "height": new_height}
    moved_node = _with(node, {"x": old_x + dx, "y": old_y + dy} | changed)
    nodes = []
    for each in canvas.nodes:
        if each.id == node.id:
            nodes.append(moved_node)
        elif each.id in carried:
            each_x, each_y, _, _ = each.box()
            nodes.append(_with(each, {"x": each_x + dx, "y": each_y + dy}))
        else:
            nodes.append(each)
    moved = tuple(n.id for n in canvas.nodes if n.id in carried)
    return Edited(_checked(canvas.replace(nodes, canvas.edges)), node=moved_node, moved=moved)


def _inside(canvas: Canvas, group: Node) -> set[str]:
    return {node.id for node in canvas.nodes if node.id != group.id and lies_within(node, group)}


def _with(node: Node, values: Mapping[str, float]) -> Node:
    """The node with these fields set, its other fields and their order as they were; a
    whole number stays an integer, as Obsidian writes positions."""
    return Node(dict(node.fields) | {key: _whole(value) for key, value in values.items()})


def _whole(value: float) -> float:
    return int(value) if float(value).is_integer() else value


# ---------------------------------------------------------------- edges


@dataclass(frozen=True, slots=True)
class NewEdge:
    from_node: str
    to_node: str
    from_side: str | None = None  # None: the side facing the other node
    to_side: str | None = None
    from_end: str | None = None  # None: the spec's default (none at the start)
    to_end: str | None = None  # None: the spec's default (an arrow at the end)
    label: str | None = None
    color: str | None = None


def connect(canvas: Canvas, new: NewEdge, make_id: IdMaker = new_id) -> Edited:
    """Add an edge from one node to another (on top of the others)."""
    start, end = _node(canvas, new.from_node), _node(canvas, new.to_node)
    for name, value, choices in (
        ("fromSide", new.from_side, SIDES),
        ("toSide", new.to_side, SIDES),
        ("fromEnd", new.from_end, ENDS),
        ("toEnd", new.to_end, ENDS),
    ):
        if value is not None and value not in choices:
            raise CanvasEditError(f"{name} is one of {', '.join(choices)}, not {value!r}")
    _check_color(new.color)
    facing_from, facing_to = facing_sides(start, end)
    fields: dict[str, Any] = {
        "id": _fresh_id(canvas, make_id),
        "fromNode": start.id,
        "fromSide": new.from_side or facing_from,
        "fromEnd": new.from_end,
        "toNode": end.id,
        "toSide": new.to_side or facing_to,
        "toEnd": new.to_end,
        "color": new.color,
        "label": new.label,
    }
    edge = Edge({key: value for key, value in fields.items() if value is not None})
    return Edited(_checked(canvas.replace(canvas.nodes, (*canvas.edges, edge))), edge=edge)


def facing_sides(start: Node, end: Node) -> tuple[str, str]:
    """The sides of two nodes that face each other: along the axis their centres lie further
    apart on (right to left when `end` is to the right, bottom to top when below)."""
    sx, sy, sw, sh = start.box()
    ex, ey, ew, eh = end.box()
    dx = (ex + ew / 2) - (sx + sw / 2)
    dy = (ey + eh / 2) - (sy + sh / 2)
    if abs(dx) >= abs(dy):
        return ("right", "left") if dx >= 0 else ("left", "right")
    return ("bottom", "top") if dy >= 0 else ("top", "bottom")


# ---------------------------------------------------------------- removing


def remove_node(canvas: Canvas, node_id: str) -> Edited:
    """Remove a node and every edge to or from it; the nodes inside a group stay."""
    node = _node(canvas, node_id)
    nodes = [each for each in canvas.nodes if each.id != node.id]
    touching = {e.id for e in canvas.edges if node.id in (e.from_node, e.to_node)}
    edges = [edge for edge in canvas.edges if edge.id not in touching]
    removed = tuple(e.id for e in canvas.edges if e.id in touching)
    return Edited(canvas.replace(nodes, edges), node=node, removed_edges=removed)


def remove_edge(canvas: Canvas, edge_id: str) -> Edited:
    edge = canvas.get_edge(edge_id)
    if edge is None:
        raise CanvasEditError(f"no edge has the id {edge_id!r}{_ids(e.id for e in canvas.edges)}")
    edges = [each for each in canvas.edges if each.id != edge_id]
    return Edited(canvas.replace(canvas.nodes, edges), edge=edge)


# ---------------------------------------------------------------- shared


def _node(canvas: Canvas, node_id: str) -> Node:
    node = canvas.get_node(node_id)
    if node is None:
        raise CanvasEditError(f"no node has the id {node_id!r}{_ids(n.id for n in canvas.nodes)}")
    return node


def _ids(ids: Iterable[str]) -> str:
    """A hint for an unknown id: a few of the canvas's ids (a model may have misread one)."""
    shown = list(ids)
    if not shown:
        return " (the canvas has none)"
    more = ", ..." if len(shown) > 5 else ""
    return f" (ids: {', '.join(shown[:5])}{more}; get_canvas lists them)"


def _check_size(width: float, height: float) -> None:
    if width <= 0 or height <= 0:
        raise CanvasEditError(f"width and height must be above 0, not {width} x {height}")


def _check_color(color: str | None) -> None:
    if color is not None and not is_color(color):
        raise CanvasEditError(
            f"a color is a preset '1' to '6' or a hex color such as '#FF0000', not {color!r}"
        )


def _checked(canvas: Canvas) -> Canvas:
    """An edit that adds values is checked as a read is: it never writes what it would refuse
    to read (a value the checks above let through, such as a position that is not finite)."""
    try:
        check_canvas(canvas)
    except InvalidCanvasError as exc:
        raise CanvasEditError(f"it would leave {'; '.join(exc.problems)}") from None
    return canvas
