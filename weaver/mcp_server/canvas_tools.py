"""The canvas tools (toolset `canvas`): get_canvas reads a `.canvas` file's nodes and edges, a
page at a time; edit_canvas makes one change to it. Thin edges over `weaver.edits.canvases`
and `weaver.canvas`; edit_canvas is not registered when the settings say `read_only = true`.

One edit tool rather than one per operation: every operation shares the arguments a model
must get right (path, expectedHash) and the answer it reads (the new contentHash, what was
made or removed), as update_task's actions do, and the tool list stays one entry long.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.canvas import operations
from weaver.canvas.document import GEOMETRY, Canvas, Edge, Node, group_of
from weaver.canvas.operations import TYPE_FIELDS
from weaver.edits import canvases
from weaver.edits.steps import CacheSync
from weaver.mcp_server.arguments import Limit, Offset
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.edit_tools import ExpectedHash
from weaver.mcp_server.envelope import ArgumentError
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.sizing import fit_text, fitting_items
from weaver.paging import has_more
from weaver.runtime.cache_sync import sync_cache
from weaver.runtime.state import ServerState

# A text node in a page is cut to this many characters, so that a default page of long cards
# fits its share of the answer; get_canvas with `node` gives one card's whole text.
LISTED_TEXT_CHARS = 300
DEFAULT_NODES = 50
DEFAULT_EDGES = 100
# The answer's shares (estimated tokens) of nodes and of edges: together well under the
# 25,000-token bound. A page asked bigger stops at its share and says where to go on.
NODE_TOKENS = 12_000
EDGE_TOKENS = 6_000
# A field of no spec (a plugin's) longer than this as JSON is named, not shown: one card's
# plugin data must not crowd a page out.
MAX_EXTRA_CHARS = 1_000
# The fields the answer names; any other field of a node or edge is shown under `extra`.
# What `edit_canvas add_node` takes: every field a card of the spec may carry but its id.
NODE_CONTENT = frozenset(
    {"type", "color", *GEOMETRY, *(f for fields in TYPE_FIELDS.values() for f in fields)}
)
NODE_FIELDS = NODE_CONTENT | {"id"}
# What `edit_canvas connect` takes: every field of an edge of the spec but its id.
EDGE_CONTENT = frozenset(
    ["fromNode", "toNode", "fromSide", "toSide", "fromEnd", "toEnd", "color", "label"]
)
EDGE_FIELDS = EDGE_CONTENT | {"id"}

GET_CANVAS = """Read an Obsidian canvas (.canvas, JSON Canvas): its cards (text, note, link,
group) and the edges between them, a page at a time.

Returns `nodes` in the file's order (lowest first), each with `id`, `type`, position and size
(`x`, `y`, `width`, `height`), `color`, and its content: `text` (markdown) for a text card,
`file` (the vault path of the note or attachment; `missing` when the vault has no such file)
and `subpath` for a file card, `url` for a link card, `label` for a group; `group` is the id
of the smallest group the card lies in.
Text in a page is cut at 300 characters (`textChars` then gives its whole length): pass
`node` (an id) for one card's whole text and every edge to or from it. `edges` join
`fromNode` to `toNode` (with sides, ends, `label`, `color`). Fields the app or a plugin added
are under `extra`. Nodes and edges page separately (`offset`/`limit`, `edgeOffset`/
`edgeLimit`); `contentHash` is edit_canvas's expectedHash. Example:
{"path": "Boards/Plan.canvas"}."""

EDIT_CANVAS = """Change an Obsidian canvas (.canvas): add a card, move or resize one, connect two,
or remove a card or an edge; every other field of the file is kept.

`operation`: `add_node` (`type` text, file, link or group, with `text`, `file` (+`subpath`),
`url`, or `label`; `x`/`y` left out places it right of everything; `width`/`height` default
to Obsidian's; a missing canvas is created), `move_node` (`node`; any of `x`, `y`, `width`,
`height`; a moved group carries the cards inside it), `connect` (`fromNode`, `toNode`, optional
`fromSide`/`toSide` (top, right, bottom, left; default: the facing sides), `fromEnd`/`toEnd`
(none, arrow), `label`), `remove_node` (`node`; its edges go too; a group's cards stay),
`remove_edge` (`edge`). `color` (add_node, connect): '1' to '6' (red, orange, yellow, green,
cyan, purple) or '#RRGGBB'. Pass get_canvas's contentHash as `expectedHash`: a canvas changed
since (say, in Obsidian) is refused. The edit is journalled. Example: {"path": "Plan.canvas",
"operation": "connect", "fromNode": "6f0a...", "toNode": "1c2b...", "label": "blocks"}."""

CanvasPath = Annotated[
    str, Field(description="Canvas path relative to the vault root, e.g. 'Boards/Plan.canvas'")
]
Number = Annotated[float | None, Field(description="Canvas pixels")]
Side = Literal["top", "right", "bottom", "left"]
End = Literal["none", "arrow"]


class CanvasNodeInfo(WireModel):
    id: str
    type: str
    x: float
    y: float
    width: float
    height: float
    color: str | None = None
    text: str | None = Field(default=None, description="A text card's markdown (maybe cut)")
    text_chars: int | None = Field(default=None, description="The whole text's length, if cut")
    file: str | None = Field(default=None, description="A file card's vault path")
    missing: bool | None = Field(default=None, description="True: no such file in the vault")
    subpath: str | None = None
    url: str | None = None
    label: str | None = None
    background: str | None = None
    background_style: str | None = None
    group: str | None = Field(default=None, description="The smallest group the card lies in")
    extra: dict[str, Any] | None = Field(default=None, description="Fields not of the spec")


class CanvasEdgeInfo(WireModel):
    id: str
    from_node: str
    to_node: str
    from_side: str | None = None
    to_side: str | None = None
    from_end: str | None = None
    to_end: str | None = None
    color: str | None = None
    label: str | None = None
    extra: dict[str, Any] | None = None


class CanvasData(WireModel):
    path: str
    content_hash: str = Field(description="sha256 of the file: edit_canvas's expectedHash")
    node_count: int
    edge_count: int
    nodes: list[CanvasNodeInfo]
    edges: list[CanvasEdgeInfo]
    offset: int
    has_more: bool = Field(description="More nodes: call again with offset + len(nodes)")
    edge_offset: int
    edges_has_more: bool = Field(description="More edges: edgeOffset + len(edges)")
    hint: str | None = None


class CanvasEditData(WireModel):
    path: str
    operation: str
    content_hash: str = Field(description="sha256 of the file now: the next expectedHash")
    changed: bool
    created: bool = Field(description="The canvas file was made by this edit")
    node: CanvasNodeInfo | None = Field(default=None, description="The card added or moved")
    edge: CanvasEdgeInfo | None = Field(default=None, description="The edge added or removed")
    moved: list[str] = Field(description="Cards a moved group carried along")
    removed: list[str] = Field(description="Ids removed: the node, then its edges; or the edge")
    cache_synced: bool


@tool("Read a canvas", GET_CANVAS, toolset="canvas", output=CanvasData, cache_hit=False)
def get_canvas(
    state: ServerState,
    path: CanvasPath,
    node: Annotated[str | None, Field(description="One card's id: its whole text")] = None,
    limit: Limit = DEFAULT_NODES,
    offset: Offset = 0,
    edgeLimit: Limit = DEFAULT_EDGES,
    edgeOffset: Offset = 0,
) -> dict[str, Any]:
    found = canvases.read_canvas_file(state.app, path)
    canvas = found.canvas
    if node is not None:
        answer = _one_node(found, node, edgeLimit, edgeOffset)
    else:
        page = canvas.nodes[offset : offset + limit]
        nodes = fitting_items([_node_info(n, canvas, LISTED_TEXT_CHARS) for n in page], NODE_TOKENS)
        edge_page = canvas.edges[edgeOffset : edgeOffset + edgeLimit]
        edges = fitting_items([_edge_info(e) for e in edge_page], EDGE_TOKENS)
        total = len(canvas.edges)
        answer = _answer(found, nodes, len(canvas.nodes), offset, edges, total, edgeOffset)
    _mark_missing(state, answer["nodes"])
    return answer


def _mark_missing(state: ServerState, nodes: list[dict[str, Any]]) -> None:
    """`missing` on a file card whose file the vault does not have (deleted or renamed outside
    Obsidian, which would have updated the card): asked of the cache, as `files_exist` is."""
    files = [n["file"] for n in nodes if "file" in n]
    if not files:
        return
    with read.read_snapshot(state.app.db) as conn:
        present = cache_graph.existing_paths(conn, files)
    for node in nodes:
        if "file" in node and node["file"] not in present:
            node["missing"] = True


def _one_node(found: canvases.CanvasRead, node_id: str, limit: int, offset: int) -> dict[str, Any]:
    canvas = found.canvas
    node = canvas.get_node(node_id)
    if node is None:
        raise ArgumentError("node", f"{found.path} has no node {node_id!r}")
    info = _node_info(node, canvas, fit_text(node.text_of("text") or "", NODE_TOKENS))
    touching = [e for e in canvas.edges if node_id in (e.from_node, e.to_node)]
    edges = fitting_items([_edge_info(e) for e in touching[offset : offset + limit]], EDGE_TOKENS)
    answer = _answer(found, [info], 1, 0, edges, len(touching), offset)
    if "textChars" in answer["nodes"][0]:  # longer than one answer holds
        answer["hint"] = "The card's text is cut to what one answer holds; the file has it all."
    return answer


def _answer(
    found: canvases.CanvasRead,
    nodes: list[dict[str, Any]],
    node_total: int,
    offset: int,
    edges: list[dict[str, Any]],
    edge_total: int,
    edge_offset: int,
) -> dict[str, Any]:
    more_nodes = has_more(offset, len(nodes), node_total)
    more_edges = has_more(edge_offset, len(edges), edge_total)
    hints = []
    if more_nodes:
        hints.append(f"More nodes: offset {offset + len(nodes)}.")
    if more_edges:
        hints.append(f"More edges: edgeOffset {edge_offset + len(edges)}.")
    if any("textChars" in n for n in nodes):
        hints.append("Cut text: get_canvas with node=<id> gives a card's whole text.")
    data = CanvasData(
        path=found.path,
        content_hash=found.content_hash,
        node_count=node_total,
        edge_count=edge_total,
        nodes=[],
        edges=[],
        offset=offset,
        has_more=more_nodes,
        edge_offset=edge_offset,
        edges_has_more=more_edges,
        hint=" ".join(hints) or None,
    )
    return _wire(data) | {"nodes": nodes, "edges": edges}


def _node_info(node: Node, canvas: Canvas, max_text: int) -> dict[str, Any]:
    fields = node.fields
    text = node.text_of("text")
    x, y, width, height = node.box()
    info = CanvasNodeInfo(
        id=node.id,
        type=node.type,
        x=x,
        y=y,
        width=width,
        height=height,
        color=node.text_of("color"),
        text=None if text is None else text[:max_text],
        text_chars=None if text is None or len(text) <= max_text else len(text),
        file=node.text_of("file"),
        subpath=node.text_of("subpath"),
        url=node.text_of("url"),
        label=node.text_of("label"),
        background=node.text_of("background"),
        background_style=node.text_of("backgroundStyle"),
        group=None if (group := group_of(canvas, node)) is None else group.id,
        extra=_extra(fields, NODE_FIELDS),
    )
    return _wire(info) | _numbers(fields, ("x", "y", "width", "height"))


def _edge_info(edge: Edge) -> dict[str, Any]:
    fields = edge.fields
    info = CanvasEdgeInfo(
        id=edge.id,
        from_node=edge.from_node,
        to_node=edge.to_node,
        from_side=edge.text_of("fromSide"),
        to_side=edge.text_of("toSide"),
        from_end=edge.text_of("fromEnd"),
        to_end=edge.text_of("toEnd"),
        color=edge.text_of("color"),
        label=edge.text_of("label"),
        extra=_extra(fields, EDGE_FIELDS),
    )
    return _wire(info)


def _extra(fields: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any] | None:
    extra = {}
    for key, value in fields.items():
        if key in known:
            continue
        size = len(json.dumps(value, ensure_ascii=False))
        extra[key] = value if size <= MAX_EXTRA_CHARS else f"({size:,} characters: not shown)"
    return extra or None


def _numbers(fields: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    # The file's numbers as written: 120, not the 120.0 a float field would answer.
    return {key: fields[key] for key in keys}


def _wire(model: WireModel) -> dict[str, Any]:
    # Absent rather than null: most of a node's fields belong to other types.
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# ---------------------------------------------------------------- edit_canvas


def canvas_sync(state: ServerState) -> CacheSync:
    """The cache keeps a canvas as a file of the vault (its size and time), not its content,
    and get_canvas reads the file: the writer's watcher catching up later loses nothing, so a
    process that is not the writer does not wait for it (`cacheSynced` false)."""

    def sync(expected: Mapping[str, str | None]) -> bool:
        return sync_cache(state.app, expected, holds_writer=state.writer, timeout=0)

    return sync


Operation = Literal["add_node", "move_node", "connect", "remove_node", "remove_edge"]
# The arguments each operation takes (beyond path, operation and expectedHash).
TAKES: dict[str, frozenset[str]] = {
    "add_node": NODE_CONTENT,
    "move_node": frozenset(["node", "x", "y", "width", "height"]),
    "connect": EDGE_CONTENT,
    "remove_node": frozenset({"node"}),
    "remove_edge": frozenset({"edge"}),
}
TAKES_ANY = frozenset().union(*TAKES.values())


@tool(
    "Edit a canvas",
    EDIT_CANVAS,
    toolset="canvas",
    writes=True,
    destructive=True,
    idempotent=False,
    output=CanvasEditData,
)
def edit_canvas(
    state: ServerState,
    path: CanvasPath,
    operation: Annotated[Operation, Field(description="What to do (see the tool's description)")],
    node: Annotated[str | None, Field(description="The card's id (move/remove_node)")] = None,
    edge: Annotated[str | None, Field(description="The edge's id (remove_edge)")] = None,
    type: Annotated[
        Literal["text", "file", "link", "group"] | None, Field(description="add_node")
    ] = None,
    x: Number = None,
    y: Number = None,
    width: Number = None,
    height: Number = None,
    text: Annotated[str | None, Field(description="A text card's markdown")] = None,
    file: Annotated[str | None, Field(description="A file card's vault path")] = None,
    subpath: Annotated[str | None, Field(description="'#Heading' or '#^block' of file")] = None,
    url: Annotated[str | None, Field(description="A link card's URL")] = None,
    label: Annotated[str | None, Field(description="A group's or an edge's label")] = None,
    background: Annotated[str | None, Field(description="A group's background image")] = None,
    backgroundStyle: Literal["cover", "ratio", "repeat"] | None = None,
    color: Annotated[str | None, Field(description="'1'-'6' or '#RRGGBB'")] = None,
    fromNode: str | None = None,
    toNode: str | None = None,
    fromSide: Side | None = None,
    toSide: Side | None = None,
    fromEnd: End | None = None,
    toEnd: End | None = None,
    expectedHash: ExpectedHash = None,
) -> dict[str, Any]:
    # The arguments given, by their wire names (the parameters are named as the spec's fields).
    given = {k: v for k, v in locals().items() if v is not None and k in TAKES_ANY}
    _check_arguments(operation, given)
    change = _operation(operation, given)
    result = canvases.edit_canvas(
        state.app,
        path,
        change,
        name="edit_canvas",
        arguments={"operation": operation} | _ids_of(given),
        expected_hash=expectedHash,
        sync=canvas_sync(state),
        create=operation == "add_node",
    )
    return _edit_answer(operation, result)


def _check_arguments(operation: str, given: Mapping[str, Any]) -> None:
    """An argument the operation does not use is refused, not dropped: a model that sent
    `label` with move_node meant something the edit would not do."""
    for name in given:
        if name not in TAKES[operation]:
            takes = ", ".join(sorted(TAKES[operation]))
            raise ArgumentError(name, f"{operation} does not take it (it takes {takes})")
    needed = {"move_node": "node", "remove_node": "node", "remove_edge": "edge", "add_node": "type"}
    if operation in needed and needed[operation] not in given:
        raise ArgumentError(needed[operation], f"{operation} needs it")
    if operation == "connect":
        for name in ("fromNode", "toNode"):
            if name not in given:
                raise ArgumentError(name, "connect needs it")


def _operation(operation: str, given: Mapping[str, Any]) -> canvases.Operation:
    match operation:
        case "add_node":
            content = {k: given[k] for k in operations.TYPE_FIELDS[given["type"]] if k in given}
            extra = set(given) - set(content) - {"type", "x", "y", "width", "height", "color"}
            if extra:
                raise ArgumentError(sorted(extra)[0], f"a {given['type']} card does not take it")
            new = operations.NewNode(
                type=given["type"],
                x=given.get("x"),
                y=given.get("y"),
                width=given.get("width"),
                height=given.get("height"),
                color=given.get("color"),
                content=content,
            )
            return lambda canvas: operations.add_node(canvas, new)
        case "move_node":
            sizes = {k: given.get(k) for k in ("x", "y", "width", "height")}
            return lambda canvas: operations.move_node(canvas, given["node"], **sizes)
        case "connect":
            new_edge = operations.NewEdge(
                from_node=given["fromNode"],
                to_node=given["toNode"],
                from_side=given.get("fromSide"),
                to_side=given.get("toSide"),
                from_end=given.get("fromEnd"),
                to_end=given.get("toEnd"),
                label=given.get("label"),
                color=given.get("color"),
            )
            return lambda canvas: operations.connect(canvas, new_edge)
        case "remove_node":
            return lambda canvas: operations.remove_node(canvas, given["node"])
        case _:
            return lambda canvas: operations.remove_edge(canvas, given["edge"])


def _ids_of(given: Mapping[str, Any]) -> dict[str, Any]:
    """What the journal keeps of the call: the ids it named (not a card's whole text)."""
    return {k: v for k, v in given.items() if k in ("node", "edge", "type", "fromNode", "toNode")}


def _edit_answer(operation: str, result: canvases.CanvasEdit) -> dict[str, Any]:
    edited = result.edited
    canvas = edited.canvas
    removed: list[str] = []
    if operation == "remove_node" and edited.node is not None:
        removed = [edited.node.id, *edited.removed_edges]
    elif operation == "remove_edge" and edited.edge is not None:
        removed = [edited.edge.id]
    data = CanvasEditData(
        path=result.path,
        operation=operation,
        content_hash=result.content_hash,
        changed=result.changed,
        created=result.created,
        moved=list(edited.moved),
        removed=removed,
        cache_synced=result.cache_synced,
    )
    answer = _wire(data)
    if edited.node is not None and operation != "remove_node":
        answer["node"] = _node_info(edited.node, canvas, LISTED_TEXT_CHARS)
    if edited.edge is not None:
        answer["edge"] = _edge_info(edited.edge)
    return answer
