"""The graph and lookup tools: get_neighbors, find_path, get_hubs, get_graph, search_by_tags,
random_file, files_exist, resolve_names. Thin edges over `weaver.views.link_graph`,
`weaver.views.names` and `weaver.cache.graph`; the adjacency, the name index and the tag index
are kept per cache version."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pydantic_core
from pydantic import BaseModel, Field

from weaver.cache import fts, read
from weaver.cache import graph as cache_graph
from weaver.cache.graph import ByVersion
from weaver.errors import NoteNotFoundError
from weaver.mcp_server import hints
from weaver.mcp_server.arguments import (
    Filter,
    GraphLimit,
    HubLimit,
    NeighborLimit,
    NotePath,
    Offset,
    Relation,
    TaggedLimit,
    TagList,
    clamp_to,
    normalize_directory,
    normalize_path,
    tag_key,
)
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.envelope import ArgumentError
from weaver.mcp_server.graph_schemas import (
    LIST_CONTENT,
    PRIMARY_CONTENT,
    FilesExistData,
    GraphData,
    HubInfo,
    HubsData,
    NameMatchInfo,
    NeighborInfo,
    NeighborsData,
    NoData,
    PathData,
    RandomFileData,
    ResolveNamesData,
    TagsSearchData,
)
from weaver.mcp_server.schemas import TaggedFile
from weaver.mcp_server.semantic_tools import resolve_by_meaning
from weaver.mcp_server.sizing import estimate_tokens
from weaver.paging import has_more
from weaver.runtime.state import ServerState
from weaver.views import link_graph as g


def _tag_keys(tags: list[str], argument: str = "tags") -> list[str]:
    keys = list(dict.fromkeys(tag_key(t) for t in tags))
    if not keys or any(not k.strip("*?") for k in keys):
        raise ArgumentError(argument, f"{tags!r} holds an empty tag")
    return keys


GET_NEIGHBORS = """Notes linked to or from a note, up to 3 links away. Use it to explore a note's
neighbourhood.

`direction`: "out" (notes it links to), "in" (notes linking to it) or "both". `depth` 1-3
walks further, breadth first. `relation` keeps only typed links of that name (`author::
[[X]]`, `[[author::X]]`, or a frontmatter key such as `up`). Returns `neighbors` ordered by
depth then path, each with depth, `via` (the note it was reached from), direction, relations
and tags; with includeContent, the text after the frontmatter, cut at 500 characters
(`truncated`, `contentLength`). `total` counts all notes within depth, `hasMore` says whether
more follow (pass `offset` for the next page); incomingCount and outgoingCount are the direct
link counts. Example: {"path": "Home.md", "depth": 2}."""

FIND_PATH = """The shortest chain of links from one note to another. Use it to see how two notes
connect.

Links are followed in the direction they point (source links to the next note, and so on), as
in the reference graph server; to find a chain the other way, swap source and target. Among
equally short chains the answer is stable. Returns {path: [source, ..., target], length}
(number of links), or data null when no chain exists; "File not found" when either note does
not exist. `relation` follows only typed links of that name. Example:
{"source": "Home.md", "target": "b/Deep.md"}."""

GET_HUBS = """The most central notes by links in, links out or PageRank. Use it to find a vault's
key notes.

`metric`: "in_degree" (distinct notes linking here), "out_degree" (distinct notes it links to)
or "pagerank" (damping 0.85, rank of dangling notes spread evenly; scores sum to 1). Returns
`hubs` (path, title, score), best first, ties by path, `limit` of them from `offset` on, with
`hasMore`. Example: {"metric": "pagerank"}."""

GET_GRAPH = """The link graph of a folder or the whole vault (nodes and edges), for visualisation
or analysis.

Returns `nodes` (id = note path, title) and `edges` (source, target, relations) between them;
with includeBroken, also broken links, their targets as nodes marked `broken: true`. Beyond
`limit` notes the best connected are kept (`truncated`, `totalNodes`). `relation` keeps only
typed links of that name. `limit` is 100 notes unless asked (up to 5,000): a 1,000-note graph
is some 750 KB of JSON, more than most context windows hold; by default, where the 100 notes'
links would make the answer too big for a context window (~20,000 tokens), fewer notes are
kept, the best connected still (`truncated`).
Example: {"directory": "projects", "includeBroken": true}."""

SEARCH_BY_TAGS = """Notes carrying any or all of several tags. Use it to combine tags.

Tags ignore case and a leading '#', match nested tags ('project' finds 'project/alpha') and
accept '*'/'?' wildcards. Returns `files` (path, title, type, status, frontmatter, tags,
modified in Unix epoch milliseconds) by path, with `total` and `hasMore` (pass `offset` for
the next page). Example: {"tags": ["project", "urgent"], "mode": "all"}."""

RANDOM_FILE = """A random note, optionally among those carrying any of some tags.

Returns path, title, tags, frontmatter, modified (Unix epoch milliseconds) and the text after
the frontmatter, cut at 10,000 characters (`truncated`, `contentLength`); data null when no
note qualifies. Good for discovery and review. Example: {"tags": ["idea"]}."""

FILES_EXIST = """Whether vault paths exist (notes or attachments), many at once.

Returns `exists` (each path as given -> true/false), `found`, `missing`, and `suggestions`
for missing paths that differ from an existing one only by case or a missing '.md'. Paths are
relative to the vault root. Example: {"paths": ["Home.md", "projects/plan.md"]}."""

RESOLVE_NAMES = """Note paths for names as a person would say them (titles, aliases, file names):
exact, fuzzy or by meaning. Use it before calling a tool that needs a path.

A note answers to its title, file name, path and aliases, ignoring case, '.md' and [[ ]].
`strategy` "exact" matches those exactly; "fuzzy" tolerates typos, scoring 0-1 and keeping
matches at or above `threshold` (0.7 by default; 0.5-0.6 for looser). When several notes
match, the best is chosen as Obsidian picks a link target and the rest are `alternatives`.
"semantic" matches by meaning (a description such as "the note about syncing my phone"),
scoring cosine similarity 0-1 (try `threshold` 0.3-0.5); it needs semantic search installed.
`tag` and `directory` narrow the candidates. Example:
{"names": ["projet plan", "Alice"], "strategy": "fuzzy", "threshold": 0.6}."""


GRAPH_LIMIT = 100
GRAPH_TOKENS = 20_000
# A 1,000-note answer is ~6,000 small dicts (a few MB); at the 5,000-note cap, five times that.
KEPT_GRAPH_ANSWERS = 4


def _graph_tokens(wire: dict[str, Any]) -> int:
    return estimate_tokens(pydantic_core.to_json(wire).decode())


class GraphAnswers:
    """`get_graph`'s last few answers for each graph, i.e. for each cache version: what a
    visualisation asks for again and again (handing back a kept one costs nothing; building
    one again does: docs/benchmarks-notes.md). Held by a weak reference to
    their graph, so they go when a newer version replaces it. Thread-safe."""

    def __init__(self, per_graph: int = KEPT_GRAPH_ANSWERS) -> None:
        self._per_graph = per_graph
        self._lock = threading.Lock()
        self._answers: weakref.WeakKeyDictionary[g.Graph, dict[Hashable, dict[str, Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, graph: g.Graph, asked: Hashable) -> dict[str, Any] | None:
        with self._lock:
            return self._answers.get(graph, {}).get(asked)

    def keep(self, graph: g.Graph, asked: Hashable, wire: dict[str, Any]) -> None:
        """Keep `wire` (never changed after: the SDK copies what it sends), dropping the
        oldest answer beyond `per_graph`."""
        with self._lock:
            answers = self._answers.setdefault(graph, {})
            answers[asked] = wire
            while len(answers) > self._per_graph:
                del answers[next(iter(answers))]


@dataclass(frozen=True)
class GraphViews:
    """What the graph tools of one server share: its state, the link graph kept per cache
    version (built once for all four tools) and get_graph's last answers."""

    state: ServerState
    graphs: ByVersion[g.Graph]
    answers: GraphAnswers

    @classmethod
    def of(cls, state: ServerState) -> GraphViews:
        return cls(state, cache_graph.graph_cache(), GraphAnswers())

    def graph(self) -> g.Graph:
        with read.read_snapshot(self.state.app.db) as conn:
            return self.graphs.get(conn)


@tool("Note neighbours", GET_NEIGHBORS, toolset="graph", using=GraphViews.of, rate_class="graph")
def get_neighbors(
    views: GraphViews,
    path: NotePath,
    direction: Literal["in", "out", "both"] = "both",
    depth: Annotated[int, Field(ge=1, le=3, description="1-3 links away"), clamp_to(1, 3)] = 1,
    limit: NeighborLimit = 20,
    includeContent: Annotated[
        bool, Field(description="Add each note's text, cut at 500 characters")
    ] = False,
    relation: Relation = None,
    offset: Offset = 0,
) -> NeighborsData:
    app = views.state.app
    clean = app.vault.check_note_path(path)
    with read.read_snapshot(app.db) as conn:
        graph = views.graphs.get(conn)
        if clean not in graph:
            raise NoteNotFoundError(clean)
        found, total = g.neighbors(graph, clean, direction, depth, relation, offset + limit)
        found = found[offset:]
        paths = [n.path for n in found]
        tags = read.tags_of(conn, paths)
        bodies = fts.note_bodies(conn, paths) if includeContent else {}
    key = g.relation_key(relation)
    items = []
    for n in found:
        item = NeighborInfo(
            path=n.path,
            title=graph.nodes[n.path].title,
            tags=list(tags.get(n.path, ())),
            depth=n.depth,
            via=n.via,
            direction=n.direction,
            relations=list(n.relations),
        )
        item.with_content(bodies.get(n.path), LIST_CONTENT)
        items.append(item)
    return NeighborsData(
        path=clean,
        title=graph.nodes[clean].title,
        direction=direction,
        depth=depth,
        relation=relation,
        neighbors=items,
        total=total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(items), total),
        incoming_count=len(list(graph.predecessors(clean, key))),
        outgoing_count=len(list(graph.successors(clean, key))),
    )


@tool(
    "Shortest link path",
    FIND_PATH,
    toolset="graph",
    using=GraphViews.of,
    output=PathData,
    rate_class="graph",
)
def find_path(
    views: GraphViews, source: NotePath, target: NotePath, relation: Relation = None
) -> BaseModel:
    vault = views.state.app.vault
    start, end = vault.check_note_path(source), vault.check_note_path(target)
    graph = views.graph()
    for note in (start, end):
        if note not in graph:  # "no chain" would be untrue: the name is wrong
            raise NoteNotFoundError(note)
    found = g.shortest_path(graph, start, end, relation)
    return NoData() if found is None else PathData(path=found, length=len(found) - 1)


@tool("Central notes", GET_HUBS, toolset="graph", using=GraphViews.of, rate_class="graph")
def get_hubs(
    views: GraphViews,
    metric: Literal["in_degree", "out_degree", "pagerank"] = "in_degree",
    limit: HubLimit = 10,
    offset: Offset = 0,
) -> HubsData:
    graph = views.graph()
    ranked = g.hubs(graph, metric, offset + limit)[offset:]
    ranked_total = len(graph.ranked(metric).paths)
    hubs = [
        HubInfo(
            path=h.path,
            title=graph.nodes[h.path].title,
            score=round(h.score, 8) if metric == "pagerank" else int(h.score),
        )
        for h in ranked
    ]
    return HubsData(
        metric=metric,
        hubs=hubs,
        total_notes=len(graph),
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(hubs), ranked_total),
    )


@tool(
    "Link graph",
    GET_GRAPH,
    toolset="graph",
    using=GraphViews.of,
    output=GraphData,
    rate_class="graph",
)
def get_graph(
    views: GraphViews,
    directory: Annotated[Filter, Field(description="Folder, with its subfolders")] = None,
    includeBroken: Annotated[bool, Field(description="Add broken links and their targets")] = False,
    relation: Relation = None,
    limit: GraphLimit = 100,
) -> dict[str, Any]:
    folder = normalize_directory(directory)
    asked = (folder, includeBroken, relation, limit)
    with read.read_snapshot(views.state.app.db) as conn:
        graph = views.graphs.get(conn)
        kept = views.answers.get(graph, asked)
        if kept is not None:
            return kept
        sub = g.subgraph(graph, folder, includeBroken, relation, limit)
        if sub.total_nodes == 0:
            hints.check_folder(views.state, conn, folder)
    wire = graph_wire(graph, sub, folder)
    # The default answer stays within a context window: a dense vault's 100 best
    # connected notes can have thousands of links between them. Fewer notes then,
    # the best connected still (an explicit `limit` is the caller's to choose).
    shown = limit
    while limit == GRAPH_LIMIT and shown > 1 and _graph_tokens(wire) > GRAPH_TOKENS:
        shown = max(1, shown * GRAPH_TOKENS // _graph_tokens(wire) * 9 // 10)
        sub = g.subgraph(graph, folder, includeBroken, relation, shown)
        wire = graph_wire(graph, sub, folder)
    views.answers.keep(graph, asked, wire)
    return wire


@tool("Search by tags", SEARCH_BY_TAGS, toolset="tags")
def search_by_tags(
    state: ServerState,
    tags: TagList,
    mode: Literal["any", "all"] = "any",
    limit: TaggedLimit = 20,
    offset: Offset = 0,
) -> TagsSearchData:
    keys = _tag_keys(tags)
    with read.read_snapshot(state.app.db) as conn:
        index = state.tag_index.get(conn)
        page = cache_graph.notes_with_tags(conn, index, keys, mode, limit, offset)
        hint = hints.tag_hint(conn, keys) if page.total == 0 else None
    return TagsSearchData(
        tags=keys,
        mode=mode,
        files=[TaggedFile.model_validate(f) for f in page.items],
        total=page.total,
        limit=limit,
        offset=offset,
        has_more=has_more(offset, len(page.items), page.total),
        hint=hint,
    )


@tool("Random note", RANDOM_FILE, toolset="notes", output=RandomFileData)
def random_file(
    state: ServerState,
    tags: Annotated[
        list[str] | None, Field(max_length=20, description="Pick among notes with any")
    ] = None,
) -> BaseModel:
    keys = _tag_keys(tags) if tags else []
    with read.read_snapshot(state.app.db) as conn:
        note = cache_graph.random_note(conn, state.tag_index.get(conn), keys)
        body = fts.note_bodies(conn, [note.path]) if note else {}
    if note is None:
        return NoData()
    data = RandomFileData(
        path=note.path,
        title=note.title,
        tags=list(note.tags),
        frontmatter=note.frontmatter,
        modified=note.modified,
    )
    data.with_content(body.get(note.path), PRIMARY_CONTENT)
    return data


@tool("Check paths exist", FILES_EXIST, toolset="notes")
def files_exist(
    state: ServerState,
    paths: Annotated[list[str], Field(min_length=1, max_length=1000)],
) -> FilesExistData:
    clean = {p: normalize_path(p.strip()) for p in paths}
    with read.read_snapshot(state.app.db) as conn:
        found = cache_graph.existing_paths(conn, list(set(clean.values())))
        missing = [p for p in dict.fromkeys(paths) if clean[p] not in found]
        guesses = {p: _guesses(clean[p]) for p in missing}
        lowered = sorted({x for gs in guesses.values() for x in gs})
        by_lower = cache_graph.paths_by_lower(conn, lowered)
    exists = {p: clean[p] in found for p in paths}
    suggestions = {}
    for p, options in guesses.items():
        hits = [hit for option in options for hit in by_lower.get(option, [])]
        if hits:
            suggestions[p] = hits[0]
    return FilesExistData(
        exists=exists,
        found=sum(exists.values()),
        missing=missing,
        suggestions=suggestions,
    )


@tool("Resolve note names", RESOLVE_NAMES, toolset="notes")
def resolve_names(
    state: ServerState,
    names: Annotated[list[str], Field(min_length=1, max_length=100)],
    strategy: Literal["exact", "fuzzy", "semantic"] = "fuzzy",
    threshold: Annotated[
        float, Field(ge=0, le=1, description="Lowest fuzzy score kept, 0-1")
    ] = 0.7,
    tag: Annotated[Filter, Field(description="Only notes with this tag (nested too)")] = None,
    directory: Annotated[Filter, Field(description="Only notes in this folder")] = None,
) -> ResolveNamesData:
    app = state.app
    key = _tag_keys([tag], "tag")[0] if tag is not None else None
    with read.read_snapshot(app.db) as conn:
        index = state.name_index.get(conn)
        folder = normalize_directory(directory)
        within = cache_graph.notes_within(conn, folder, key)
        if within is not None and not within:
            hints.check_folder(state, conn, folder)
        if strategy == "semantic":
            matches = resolve_by_meaning(app, conn, names, threshold, within)
    if strategy != "semantic":
        matches = index.resolve(names, strategy, threshold, within)
    results = [
        NameMatchInfo(
            name=m.name,
            path=m.path,
            title=m.title,
            matched_on=m.matched_on,
            matched_text=m.matched_text,
            score=m.score,
            alternatives=list(m.alternatives),
        )
        for m in matches
    ]
    resolved = sum(m.path is not None for m in matches)
    return ResolveNamesData(
        strategy=strategy, threshold=threshold, results=results, resolved=resolved
    )


def _guesses(path: str) -> list[str]:
    """Lower-cased spellings a missing path may have meant: as given, then with '.md'."""
    lowered = path.lower()
    return [lowered] if lowered.endswith(".md") or not lowered else [lowered, lowered + ".md"]


def graph_wire(graph: g.Graph, sub: g.Subgraph, folder: str | None) -> dict[str, Any]:
    """`GraphData(...).to_wire()`, built as plain dicts: a big graph has thousands of nodes and
    edges, and a model for each, then a dict of each model, took most of the tool's time.
    Clients check it against GraphData's schema like any answer."""
    nodes = [{"id": p, "title": graph.nodes[p].title, "broken": False} for p in sub.nodes]
    nodes += [{"id": t, "title": t, "broken": True} for t in sub.broken]
    edges = [
        {"source": e.source, "target": e.target, "relations": list(e.relations), "broken": e.broken}
        for e in sub.edges
    ]
    return {
        "directory": folder,
        "nodes": nodes,
        "edges": edges,
        "totalNodes": sub.total_nodes,
        "truncated": len(sub.nodes) < sub.total_nodes,
    }
