"""Where a note body's links are, and the body with them blanked: what tags and fields are read in.

The parser reads links, tags and fields through these, and so does `weaver.markdown.tasks` for a
single task line, so a task's tags are the ones the note's tags were counted from.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal
from urllib.parse import unquote

from weaver.markdown.patterns import (
    FILL,
    MD_LINK,
    SCHEME,
    WIKILINK,
    fill,
    split_subpath,
    split_wikilink,
)

__all__ = ["LinkKind", "RawLink", "find_body_links", "find_markdown_links", "find_wikilinks"]

# "canvas": a file node of a canvas, showing the file (`weaver.canvas.contents`).
LinkKind = Literal["wikilink", "embed", "markdown", "frontmatter", "canvas"]

# (start, end, kind, target, alias, subpath, relation) of a link found in a body
RawLink = tuple[int, int, LinkKind, str, str | None, str | None, str | None]


def find_wikilinks(text: str, masked: str) -> Iterator[RawLink]:
    for match in WIKILINK.finditer(masked):
        if parts := split_wikilink(text[match.start(1) : match.end(1)]):
            start = match.start()
            embed = start > 0 and masked[start - 1] == "!"
            yield start - embed, match.end(), "embed" if embed else "wikilink", *parts


def find_markdown_links(text: str, masked: str) -> Iterator[RawLink]:
    for match in MD_LINK.finditer(masked):
        start, end = match.span(2) if match.group(2) is not None else match.span(3)
        destination = text[start:end]
        if not destination or SCHEME.match(destination):
            continue  # empty, or external (https:, mailto:, obsidian:)
        target, subpath = split_subpath(unquote(destination))
        alias = text[match.start(1) : match.end(1)] or None
        embed = match.start() > 0 and masked[match.start() - 1] == "!"  # ![alt](img.png)
        kind: LinkKind = "embed" if embed else "markdown"
        yield match.start() - embed, match.end(), kind, target, alias, subpath, None


def find_body_links(text: str, masked: str) -> tuple[list[RawLink], str]:
    """The links of `text` (given masked by `mask_code`) in document order, and `masked` with
    every link blanked too: where tags and inline fields are read."""
    wikilinks = list(find_wikilinks(text, masked))
    wikiless = fill(masked, ((raw[0], raw[1], FILL) for raw in wikilinks))
    markdown = list(find_markdown_links(text, wikiless))
    linkless = fill(wikiless, ((raw[0], raw[1], FILL) for raw in markdown))
    return sorted(wikilinks + markdown, key=lambda raw: raw[0]), linkless
