"""What a canvas says, as the index keeps it: its links, tags and searchable text.

A file node is a link from the canvas to the file it shows (its `subpath` is the link's
`#heading` or `#^block`); a text node is markdown, read by the note parser, so its links and
tags are found exactly as a note's are (never in code, comments or math). Group labels are
searchable text; a link node's URL is an external link, which the cache does not keep for
notes either. A link's `line` is the position of its node in the file's `nodes` (the spec's z
order, what `get_canvas` answers), since a node's place in the file is not a line of text.
Pure: bytes in, values out.
"""

from __future__ import annotations

from dataclasses import dataclass

from weaver.canvas.document import Canvas, Node, read_canvas
from weaver.errors import InvalidCanvasError
from weaver.markdown.parser import Heading, ParsedLink, parse_note

# A text node's markdown is parsed after a newline, so that a card starting with `---` is read
# as a rule, as the app draws it, never as frontmatter.
_NOT_FRONTMATTER = "\n"


@dataclass(frozen=True, slots=True)
class CanvasContents:
    """The links, tags, headings and text of a canvas's cards; `error` when the file is not a
    JSON Canvas document (then nothing else is read from it)."""

    links: tuple[ParsedLink, ...] = ()
    tags: tuple[str, ...] = ()
    headings: tuple[Heading, ...] = ()
    body: str = ""  # the cards' text, one card after another, for full-text search
    word_count: int = 0
    error: str | None = None


def read_contents(path: str, data: bytes) -> CanvasContents:
    """The contents of the canvas file `path` holding `data`; never raises on content."""
    try:
        canvas = read_canvas(data, path)
    except InvalidCanvasError as exc:
        return CanvasContents(error=str(exc))
    return contents_of(path, canvas)


def contents_of(path: str, canvas: Canvas) -> CanvasContents:
    links: list[ParsedLink] = []
    tags: dict[str, None] = {}  # ordered, each tag once
    headings: list[Heading] = []
    texts: list[str] = []
    words = 0
    for place, node in enumerate(canvas.nodes):
        if node.type == "file" and (link := _file_link(node, place)) is not None:
            links.append(link)
        elif node.type == "text" and (text := node.text_of("text")):
            parsed = parse_note(path, _NOT_FRONTMATTER + text)
            links += (link._replace(line=place) for link in parsed.links)
            tags.update(dict.fromkeys(parsed.tags))
            headings += (Heading(h.level, h.text, place) for h in parsed.headings)
            texts.append(text)
            words += parsed.word_count
        elif node.type == "group" and (label := node.text_of("label")):
            texts.append(label)
            words += len(label.split())
    return CanvasContents(tuple(links), tuple(tags), tuple(headings), "\n\n".join(texts), words)


def _file_link(node: Node, place: int) -> ParsedLink | None:
    """The link a file node makes: its `file` (a vault path), its `subpath` without the '#'."""
    target = node.text_of("file")
    if not target:
        return None
    subpath = (node.text_of("subpath") or "").removeprefix("#") or None
    return ParsedLink(target, "canvas", None, subpath, None, place)
