"""A canvas's cards retargeted after a note moved, as `markdown.relink` does for a note's text.

A file card showing the moved note names its new path (the app writes a card's `file` as the
full vault path, whatever was written before); a text card's markdown links are rewritten by
the notes' own rule (`rewrite_links`), so a card's `[[link]]` changes exactly as the same line
in a note would. Every other field and card stays as it is. Pure: a canvas in, a canvas out.
"""

from __future__ import annotations

from weaver.canvas.document import Canvas, Node
from weaver.markdown.relink import Move, rewrite_links


def relink_canvas(canvas: Canvas, path: str, move: Move) -> tuple[Canvas, int]:
    """The canvas at `path` with its cards' links to the moved note fixed, and how many
    changed (0: the canvas is returned as it was)."""
    nodes: list[Node] = []
    changed = 0
    for node in canvas.nodes:
        relinked, count = _relink_node(node, path, move)
        nodes.append(relinked)
        changed += count
    return (canvas.replace(nodes, canvas.edges), changed) if changed else (canvas, 0)


def _relink_node(node: Node, path: str, move: Move) -> tuple[Node, int]:
    if node.type == "file":
        target = node.text_of("file")
        if target and move.before.resolve(target, path) == move.old and target != move.new:
            return Node({**node.fields, "file": move.new}), 1  # the key keeps its place
    elif node.type == "text" and (text := node.text_of("text")):
        new_text, count = rewrite_links(text, path, move)
        if count:
            return Node({**node.fields, "text": new_text}), count
    return node, 0
