"""Result models of the graph and lookup tools (their `outputSchema`), and content truncation.

Note text in results is cut the way the reference graph server cuts it: at most 10,000
characters for a single note (`random_file`), 500 per note in a list (`get_neighbors`), the
cut text ending in "... [truncated]" within that length and never splitting a surrogate pair
(a Python `str` cannot split one; a combining sequence may be cut). Unlike the reference, a
result also says so plainly: `truncated` and the original `contentLength` in characters.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, RootModel

from weaver.mcp_server.schemas import TaggedFile, WireModel

PRIMARY_CONTENT = 10_000
LIST_CONTENT = 500
TRUNCATION_SUFFIX = "... [truncated]"


def truncate_content(text: str, limit: int) -> tuple[str, bool]:
    """`text`, or its first characters plus the suffix, `limit` characters in all."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - len(TRUNCATION_SUFFIX))] + TRUNCATION_SUFFIX, True


class NoData(RootModel[None]):
    """`data: null`: find_path with no path, random_file with nothing to pick."""

    root: None = None


class ContentFields(WireModel):
    content: str | None = Field(
        default=None, description="The note's text after its frontmatter, maybe truncated"
    )
    truncated: bool | None = Field(
        default=None, description="True when `content` was cut (it then ends in '... [truncated]')"
    )
    content_length: int | None = Field(
        default=None, description="Length of the whole text, in characters"
    )

    def with_content(self, text: str | None, limit: int) -> None:
        if text is None:
            return
        self.content, self.truncated = truncate_content(text, limit)
        self.content_length = len(text)


class NeighborInfo(ContentFields):
    path: str
    title: str
    tags: list[str]
    depth: int = Field(description="Links away from the start note (1 = direct)")
    via: str = Field(description="The note it was reached from (the start note at depth 1)")
    direction: Literal["in", "out", "both"] = Field(
        description="out: `via` links to it; in: it links to `via`; both: each to the other"
    )
    relations: list[str] = Field(description="Typed-link relations between it and `via`")


class NeighborsData(WireModel):
    path: str
    title: str
    direction: Literal["in", "out", "both"]
    depth: int
    relation: str | None
    neighbors: list[NeighborInfo]
    total: int = Field(description="Notes within `depth`, before `limit`")
    limit: int
    offset: int = 0
    has_more: bool
    incoming_count: int = Field(description="Distinct notes linking directly to this one")
    outgoing_count: int = Field(description="Distinct notes this one links to directly")


class PathData(WireModel):
    path: list[str] = Field(description="Note paths from source to target")
    length: int = Field(description="Links followed: len(path) - 1")


class HubInfo(WireModel):
    path: str
    title: str
    score: int | float = Field(description="Distinct linking/linked notes, or PageRank (sums to 1)")


class HubsData(WireModel):
    metric: Literal["in_degree", "out_degree", "pagerank"]
    hubs: list[HubInfo]
    total_notes: int
    limit: int = 10
    offset: int = 0
    has_more: bool = Field(default=False, description="True when more notes score above zero")


class GraphNode(WireModel):
    id: str = Field(description="The note's path, or a broken link's raw target")
    title: str
    broken: bool = Field(description="True for the target of a broken link (no such note)")


class GraphEdge(WireModel):
    source: str
    target: str
    relations: list[str]
    broken: bool


class GraphData(WireModel):
    directory: str | None
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    total_nodes: int = Field(description="Notes in scope, before `limit`")
    truncated: bool = Field(description="True when `limit` left notes out (best connected kept)")


class TagsSearchData(WireModel):
    tags: list[str] = Field(description="The tags searched for, normalised")
    mode: Literal["any", "all"]
    files: list[TaggedFile]
    total: int
    limit: int
    offset: int = 0
    has_more: bool
    hint: str | None = Field(
        default=None, description="When no note matched: the tags it probably meant"
    )


class RandomFileData(ContentFields):
    path: str
    title: str
    tags: list[str]
    frontmatter: dict[str, object] | None
    modified: int = Field(description="Unix epoch milliseconds")


class FilesExistData(WireModel):
    exists: dict[str, bool] = Field(description="Each path asked about -> whether it exists")
    found: int
    missing: list[str]
    suggestions: dict[str, str] = Field(
        description="For a missing path: the existing path it probably meant (case, '.md')"
    )


class NameMatchInfo(WireModel):
    name: str
    path: str | None = Field(description="The best match, or null")
    title: str | None
    matched_on: Literal["path", "name", "title", "alias", "meaning"] | None
    matched_text: str | None
    score: float = Field(description="1.0 exact; fuzzy similarity 0-1; 0 when unmatched")
    alternatives: list[str] = Field(description="Other notes that matched, best first")


class ResolveNamesData(WireModel):
    strategy: Literal["exact", "fuzzy", "semantic"]
    threshold: float
    results: list[NameMatchInfo]
    resolved: int = Field(description="Names that found a note")
