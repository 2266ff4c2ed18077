"""A canvas file's document: read from bytes, checked against JSON Canvas 1.0, written back.

Every node and edge keeps the object the file holds, every field in the file's order, known to
the spec or not (a plugin's own fields, a newer app's), and so does the top level. Writing
gives Obsidian's own layout: the top level tab-indented, one node or edge per line, each
object compact. "The same" after a read and a write means: byte for byte for a file Obsidian
wrote; for a file another program laid out differently, the same JSON (equal after
`json.loads`, keys in the same order), in Obsidian's layout.

The checks are the spec's: `nodes` and `edges` are arrays of objects; a node has a unique
string `id`, a `type` of text, file, link or group, numeric `x`, `y`, `width` and `height`,
and its type's required field (`text`, `file`, `url`); an edge has a unique `id` and names
existing nodes in `fromNode` and `toNode`; sides, ends, colors and background styles take the
spec's values. A problem names the node or edge (id and place) and the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from weaver.errors import InvalidCanvasError
from weaver.json_nesting import load_json

NODE_TYPES: Final = ("text", "file", "link", "group")
SIDES: Final = ("top", "right", "bottom", "left")
ENDS: Final = ("none", "arrow")
BACKGROUND_STYLES: Final = ("cover", "ratio", "repeat")
PRESET_COLORS: Final = ("1", "2", "3", "4", "5", "6")  # red, orange, yellow, green, cyan, purple
_HEX_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3}){1,2}")
GEOMETRY: Final = ("x", "y", "width", "height")
# The field each node type requires, and the optional string fields each may have.
REQUIRED_FIELD: Final = {"text": "text", "file": "file", "link": "url"}
OPTIONAL_STRINGS: Final = {"file": ("subpath",), "group": ("label", "background")}


@dataclass(frozen=True, slots=True)
class Node:
    """One node, as the file holds it (`fields`: every key, in the file's order)."""

    fields: Mapping[str, Any]

    @property
    def id(self) -> str:
        return str(self.fields["id"])

    @property
    def type(self) -> str:
        return str(self.fields["type"])

    def box(self) -> tuple[float, float, float, float]:
        """(x, y, width, height) in canvas pixels."""
        x, y, width, height = (self.fields[key] for key in GEOMETRY)
        return x, y, width, height

    def text_of(self, key: str) -> str | None:
        value = self.fields.get(key)
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge, as the file holds it (`fields`: every key, in the file's order)."""

    fields: Mapping[str, Any]

    @property
    def id(self) -> str:
        return str(self.fields["id"])

    @property
    def from_node(self) -> str:
        return str(self.fields["fromNode"])

    @property
    def to_node(self) -> str:
        return str(self.fields["toNode"])

    def text_of(self, key: str) -> str | None:
        value = self.fields.get(key)
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Canvas:
    """A canvas's nodes (lowest first: the spec's z order) and edges, and the top level's
    other keys (`extra`) and key order (`keys`), so that writing it back loses nothing."""

    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    extra: Mapping[str, Any] | None = None
    keys: tuple[str, ...] = ()

    def get_node(self, node_id: str) -> Node | None:
        return next((node for node in self.nodes if node.id == node_id), None)

    def get_edge(self, edge_id: str) -> Edge | None:
        return next((edge for edge in self.edges if edge.id == edge_id), None)

    def replace(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> Canvas:
        return Canvas(tuple(nodes), tuple(edges), self.extra, self.keys)


def lies_within(inner: Node, outer: Node) -> bool:
    """Whether `inner`'s whole box lies in `outer`'s: what Obsidian takes a group to hold
    (where a card lies, not a field of the file)."""
    x, y, w, h = inner.box()
    ox, oy, ow, oh = outer.box()
    return ox <= x and oy <= y and x + w <= ox + ow and y + h <= oy + oh


def group_of(canvas: Canvas, node: Node) -> Node | None:
    """The smallest group the node lies in."""
    holding = [
        group
        for group in canvas.nodes
        if group.type == "group" and group.id != node.id and lies_within(node, group)
    ]
    return min(holding, key=lambda group: group.box()[2] * group.box()[3], default=None)


def read_canvas(data: bytes, path: str = "canvas") -> Canvas:
    """The canvas `data` holds; raises `InvalidCanvasError` naming every problem found. An
    empty file is an empty canvas: Obsidian makes a new canvas as an empty file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidCanvasError(
            path, [f"not UTF-8 (invalid byte at offset {exc.start})"]
        ) from None
    if not text.strip():
        return Canvas()
    try:
        document = load_json(text)
    except ValueError as exc:  # JSONDecodeError, JSONTooDeepError
        raise InvalidCanvasError(path, [f"not JSON ({exc})"]) from None
    problems = list(check_document(document))
    if problems:
        raise InvalidCanvasError(path, problems)
    extra = {k: v for k, v in document.items() if k not in ("nodes", "edges")}
    nodes = tuple(Node(fields) for fields in document.get("nodes", []))
    edges = tuple(Edge(fields) for fields in document.get("edges", []))
    return Canvas(nodes, edges, extra, tuple(document))


def check_canvas(canvas: Canvas) -> None:
    """Raise `InvalidCanvasError` if an edit left the canvas outside the spec."""
    problems = list(check_document(to_document(canvas)))
    if problems:
        raise InvalidCanvasError("canvas", problems)


def check_document(document: Any) -> Iterator[str]:
    """Each way the parsed JSON falls short of JSON Canvas 1.0, named."""
    if not isinstance(document, dict):
        yield f"the top level must be an object, not {_kind(document)}"
        return
    nodes, edges = document.get("nodes", []), document.get("edges", [])
    for key, value in (("nodes", nodes), ("edges", edges)):
        if not isinstance(value, list):
            yield f"'{key}' must be an array, not {_kind(value)}"
    node_ids: set[str] = set()
    if isinstance(nodes, list):
        for index, node in enumerate(nodes):
            yield from _check_node(node, f"nodes[{index}]", node_ids)
    if isinstance(edges, list):
        edge_ids: set[str] = set()
        for index, edge in enumerate(edges):
            yield from _check_edge(edge, f"edges[{index}]", edge_ids, node_ids)


def _check_node(node: Any, place: str, seen: set[str]) -> Iterator[str]:
    if not isinstance(node, dict):
        yield f"{place} must be an object, not {_kind(node)}"
        return
    name = yield from _check_id(node, "node", place, seen)
    node_type = node.get("type")
    if node_type not in NODE_TYPES:
        yield f"{name}: 'type' must be one of {', '.join(NODE_TYPES)}, not {_shown(node_type)}"
    for key in GEOMETRY:
        if not _is_number(node.get(key)):
            yield f"{name}: '{key}' must be a number, not {_shown(node.get(key))}"
    required = REQUIRED_FIELD.get(str(node_type))
    if required is not None and not isinstance(node.get(required), str):
        found = _shown(node.get(required))
        yield f"{name}: a {node_type} node needs a string '{required}', not {found}"
    for key in OPTIONAL_STRINGS.get(str(node_type), ()):
        if key in node and not isinstance(node[key], str):
            yield f"{name}: '{key}' must be a string, not {_shown(node[key])}"
    subpath = node.get("subpath")
    if node_type == "file" and isinstance(subpath, str) and not subpath.startswith("#"):
        yield f"{name}: 'subpath' must start with '#', not {_shown(node['subpath'])}"
    if node_type == "group":
        yield from _check_choice(node, "backgroundStyle", BACKGROUND_STYLES, name)
    yield from _check_color(node, name)


def _check_edge(edge: Any, place: str, seen: set[str], node_ids: set[str]) -> Iterator[str]:
    if not isinstance(edge, dict):
        yield f"{place} must be an object, not {_kind(edge)}"
        return
    name = yield from _check_id(edge, "edge", place, seen)
    for key in ("fromNode", "toNode"):
        value = edge.get(key)
        if not isinstance(value, str):
            yield f"{name}: '{key}' must be a node id, not {_shown(value)}"
        elif value not in node_ids:
            yield f"{name}: '{key}' names no node of the canvas ({_shown(value)})"
    for key, choices in (
        ("fromSide", SIDES),
        ("toSide", SIDES),
        ("fromEnd", ENDS),
        ("toEnd", ENDS),
    ):
        yield from _check_choice(edge, key, choices, name)
    if "label" in edge and not isinstance(edge["label"], str):
        yield f"{name}: 'label' must be a string, not {_shown(edge['label'])}"
    yield from _check_color(edge, name)


def _check_id(
    item: dict[str, Any], kind: str, place: str, seen: set[str]
) -> Generator[str, None, str]:
    """Yields the id's problems; returns how the problems of the item name it."""
    item_id = item.get("id")
    if not isinstance(item_id, str) or not item_id:
        yield f"{kind} {place}: 'id' must be a non-empty string, not {_shown(item_id)}"
        return f"{kind} {place}"
    name = f"{kind} {item_id!r} ({place})"
    if item_id in seen:
        yield f"{name}: another {kind} has the same id"
    seen.add(item_id)
    return name


def _check_choice(
    item: dict[str, Any], key: str, choices: Sequence[str], name: str
) -> Iterator[str]:
    if key in item and item[key] not in choices:
        yield f"{name}: '{key}' must be one of {', '.join(choices)}, not {_shown(item[key])}"


def _check_color(item: dict[str, Any], name: str) -> Iterator[str]:
    if "color" in item and not is_color(item["color"]):
        yield (
            f"{name}: 'color' must be a preset '1' to '6' or a hex color such as '#FF0000', "
            f"not {_shown(item['color'])}"
        )


def is_color(value: Any) -> bool:
    """A `canvasColor`: a preset number as a string, or a hex color."""
    return isinstance(value, str) and (
        value in PRESET_COLORS or _HEX_COLOR.fullmatch(value) is not None
    )


def _is_number(value: Any) -> bool:
    # The spec says integers; a fractional position another app wrote is kept, not refused.
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return _shown(value)


def _shown(value: Any) -> str:
    """A value in a problem, as JSON, cut short: a problem must not carry a whole text node."""
    if value is None:
        return "missing"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= 60 else shown[:59] + "…"


# ---------------------------------------------------------------- writing


def to_document(canvas: Canvas) -> dict[str, Any]:
    """The top-level object: the keys as read, in their order; `nodes` and `edges` added
    (in that order, as Obsidian writes them) when the file had none and now there are some."""
    lists: dict[str, list[Mapping[str, Any]]] = {
        "nodes": [node.fields for node in canvas.nodes],
        "edges": [edge.fields for edge in canvas.edges],
    }
    extra = canvas.extra or {}
    document: dict[str, Any] = {}
    for key in canvas.keys:
        document[key] = lists[key] if key in lists else extra[key]
    for key, items in lists.items():
        if key not in document and items:
            document[key] = items
    return document


def write_canvas(canvas: Canvas) -> bytes:
    """The canvas in Obsidian's layout: tab-indented, a node or edge per line, compact
    objects, non-ASCII characters as they are, no newline at the end."""
    document = to_document(canvas)
    if not document:
        return b"{}"
    members = [f"\t{_compact(key)}:{_member(value)}" for key, value in document.items()]
    return ("{\n" + ",\n".join(members) + "\n}").encode("utf-8")


def _member(value: Any) -> str:
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(f"\t\t{_compact(item)}" for item in value) + "\n\t]"
    return _compact(value)


def _compact(value: Any) -> str:
    # JavaScript's JSON.stringify without spaces: what Obsidian writes inside a line.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
