"""What the index reads of a canvas: file cards as links, text cards as markdown."""

from __future__ import annotations

import json
from typing import Any

from weaver.canvas.contents import read_contents


def canvas(*nodes: dict[str, Any]) -> bytes:
    placed = [{"x": 0, "y": 0, "width": 10, "height": 10, **node} for node in nodes]
    return json.dumps({"nodes": placed, "edges": []}).encode()


def test_a_text_card_is_read_as_markdown_never_its_code() -> None:
    data = canvas(
        {"id": "t", "type": "text", "text": "---\ntags: [no]\n---\n[[A]] #yes\n`[[B]] #code`"}
    )
    contents = read_contents("Board.canvas", data)
    assert [link.target for link in contents.links] == ["A"]
    assert contents.tags == ("yes",)  # a leading --- is a rule on a card, not frontmatter
    assert contents.error is None


def test_a_file_card_is_a_link_with_its_subpath_and_place() -> None:
    contents = read_contents(
        "Board.canvas",
        canvas(
            {"id": "l", "type": "link", "url": "https://example.com"},
            {"id": "f", "type": "file", "file": "Notes/A.md", "subpath": "#^block1"},
            {"id": "p", "type": "file", "file": "img/photo.png"},
        ),
    )
    assert [(lk.target, lk.kind, lk.subpath, lk.line) for lk in contents.links] == [
        ("Notes/A.md", "canvas", "^block1", 1),
        ("img/photo.png", "canvas", None, 2),
    ]
    assert contents.body == ""  # a link card's URL is no text of the board


def test_an_empty_file_is_an_empty_canvas_and_a_broken_one_an_error() -> None:
    assert read_contents("New.canvas", b"") == read_contents("New.canvas", b"{}")
    broken = read_contents("Bad.canvas", canvas({"id": "x", "type": "text"}))
    assert broken.error is not None and "'Bad.canvas'" in broken.error and not broken.links
