"""The vault's link graph and the algorithms over it: pure, in memory, no I/O.

Nodes are notes; an edge `a -> b` means note `a` has at least one resolved link (wikilink,
embed, markdown or frontmatter link) to note `b`. Several links between the same pair make one
edge carrying the union of their relations (`None` for an untyped link, the Dataview field or
`[[rel::X]]` name, or the frontmatter key). Links to attachments and a note's links to itself
are not edges; broken links are kept aside, by their raw target text, for
`subgraph(include_broken=True)`.

Paths follow links in the direction they point (directed, unweighted): `shortest_path(a, b)` can
differ from the way back. Ties are broken by path order, so every answer is deterministic.
`Graph.patched` brings a graph up to date with changed notes; PageRank is computed once per
`Graph`. How: docs/architecture.md, "views/link_graph.py".

It stays whole at ~590 lines: `Graph`, its `Adjacency` and the algorithms share private helpers
over the same arrays, which a split would make public.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias

if TYPE_CHECKING:  # numpy is imported by the functions that compute: not to start a server
    import numpy as np

Relations = frozenset[str | None]
Direction = Literal["in", "out", "both"]
HubMetric = Literal["in_degree", "out_degree", "pagerank"]

DAMPING = 0.85
# Iteration stops once the L1 change of the rank vector (which sums to 1) is below this.
PAGERANK_TOLERANCE = 1e-9
PAGERANK_MAX_ITERATIONS = 200
# Past this many out-lists to redo, `Adjacency.of` is as quick as splicing.
ADJACENCY_SPLICE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class NodeInfo:
    path: str
    title: str
    folder: str


@dataclass(frozen=True, slots=True)
class Neighbor:
    path: str
    depth: int  # 1 for a direct neighbour
    via: str  # the node it was reached from (the start node at depth 1)
    direction: Literal["in", "out", "both"]  # relative to `via`: it links there, or is linked
    relations: tuple[str, ...]  # relation names on the edge(s) with `via`, sorted


@dataclass(frozen=True, slots=True)
class Hub:
    path: str
    score: float


class SubgraphEdge(NamedTuple):  # a tuple: a 1,000-note graph has thousands
    source: str
    target: str  # a note path, or a broken link's raw target
    relations: tuple[str, ...]
    broken: bool


class Ranking(NamedTuple):
    """Notes best first, ties by path: `paths[i]` scored `scores[i]`."""

    paths: list[str]
    scores: list[float]


@dataclass(frozen=True, slots=True)
class Subgraph:
    nodes: list[str]  # note paths, highest degree first
    broken: list[str]  # raw targets of broken links from those notes (include_broken only)
    edges: list[SubgraphEdge]
    total_nodes: int  # notes in scope before `limit`


IntArray: TypeAlias = "np.ndarray[Any, np.dtype[np.intp]]"
FloatArray: TypeAlias = "np.ndarray[Any, np.dtype[np.float64]]"


@dataclass(frozen=True, slots=True)
class Adjacency:
    """The out-lists as integer arrays, for numpy: note `paths[i]` links to the notes
    `targets[offsets[i]:offsets[i + 1]]` (indices into `paths`, which is sorted)."""

    paths: list[str]
    index: dict[str, int]
    offsets: IntArray  # len(paths) + 1 entries
    targets: IntArray

    @classmethod
    def of(cls, out: dict[str, tuple[str, ...]], nodes: Iterable[str]) -> Adjacency:
        import numpy as np

        paths = sorted(nodes)
        index = {path: i for i, path in enumerate(paths)}
        # Mapping every edge to integers is the larger part of a PageRank: `patched` spares it
        # after an edit.
        lists = [out.get(path, ()) for path in paths]
        targets = np.array([index[t] for targets in lists for t in targets], dtype=np.intp)
        return cls(paths, index, _offsets(map(len, lists), len(paths)), targets)

    def patched(self, out: dict[str, tuple[str, ...]], redone: Iterable[str]) -> Adjacency:
        """These arrays with the out-lists of the `redone` notes taken from `out` anew; the
        notes themselves are the same (a note added or removed means `of` again)."""
        import numpy as np

        rows = sorted(self.index[path] for path in redone if path in self.index)
        pieces: list[IntArray] = []
        counts = np.diff(self.offsets)
        done = 0
        for row in rows:
            pieces.append(self.targets[self.offsets[done] : self.offsets[row]])
            fresh = [self.index[t] for t in out.get(self.paths[row], ())]
            pieces.append(np.array(fresh, dtype=np.intp))
            counts[row] = len(fresh)
            done = row + 1
        pieces.append(self.targets[self.offsets[done] :])
        offsets = _offsets(counts.tolist(), len(self.paths))
        return Adjacency(self.paths, self.index, offsets, np.concatenate(pieces))

    def out_degree(self) -> IntArray:
        import numpy as np

        return np.diff(self.offsets)


class _Splice(NamedTuple):
    """What a graph patched from another with the same notes reuses for its PageRank: the
    arrays of an earlier graph, with the out-lists redone since, to splice; and that graph's
    ranks (None if it had none), to start iterating from."""

    adjacency: Adjacency
    redone: Collection[str]
    ranks: FloatArray | None


def _offsets(counts: Iterable[int], size: int) -> IntArray:
    import numpy as np

    offsets = np.zeros(size + 1, dtype=np.intp)
    np.cumsum(np.fromiter(counts, dtype=np.intp, count=size), out=offsets[1:])
    return offsets


def relation_key(relation: str | None) -> str | None:
    """How relations compare: case-insensitively, surrounding space ignored; blank is none."""
    if relation is None:
        return None
    return relation.strip().casefold() or None


class Graph:
    """Adjacency in both directions, each neighbour list sorted by path."""

    def __init__(
        self,
        nodes: Iterable[NodeInfo],
        edges: Iterable[tuple[str, str, str | None]],
        broken: Iterable[tuple[str, str, str | None]] = (),
    ) -> None:
        self.nodes: dict[str, NodeInfo] = {n.path: n for n in nodes}
        # Every row read from the cache is a new string: an edge list over one string object
        # per path keeps a 100,000-note vault's graph to a fraction of the memory, and its
        # lookups compare by identity first.
        same = {path: path for path in self.nodes}
        self.relations = _relations(
            (same[s], same[t], r) for s, t, r in edges if s != t and s in same and t in same
        )
        self.broken = _relations((same[s], t, r) for s, t, r in broken if s in same)
        out: dict[str, list[str]] = {}
        inc: dict[str, list[str]] = {}
        for source, target in self.relations:
            out.setdefault(source, []).append(target)
            inc.setdefault(target, []).append(source)
        self.out: dict[str, tuple[str, ...]] = {k: tuple(sorted(v)) for k, v in out.items()}
        self.inc: dict[str, tuple[str, ...]] = {k: tuple(sorted(v)) for k, v in inc.items()}
        self._ranked: dict[HubMetric, Ranking] = {}
        self._lock = threading.Lock()
        self._ranks: FloatArray | None = None  # PageRank in `adjacency` order, once computed
        # Set by `patched` when the notes are those of the graph it came from.
        self._splice: _Splice | None = None

    def patched(
        self,
        changed: Collection[str],
        nodes: Iterable[NodeInfo],
        edges: Iterable[tuple[str, str, str | None]],
        broken: Iterable[tuple[str, str, str | None]] = (),
    ) -> Graph:
        """This graph with the notes in `changed` as they are now: `nodes` are those of them
        that exist, `edges` and `broken` all links from them. The same graph as one built from
        scratch, in time proportional to what changed; this one is left as it was, for readers
        still using it."""
        changed = set(changed)
        graph = Graph((), ())
        # `.copy()`, not `dict()`: `dict()` clones a table in one block only when no key was
        # ever deleted from it, and every patch deletes some, so from the second edit on it
        # re-inserted (and re-hashed) every edge key. `.copy()` clones a table up to a third
        # deleted entries.
        graph.nodes = self.nodes.copy()
        for path in changed:
            graph.nodes.pop(path, None)
        graph.nodes.update((n.path, n) for n in nodes)
        present = graph.nodes.keys()
        fresh = _relations(
            (s, t, r)
            for s, t, r in edges
            if s != t and s in changed and s in present and t in present
        )
        # Edges lost: every edge from a changed note. A note linking to one that is gone or
        # moved had that link resolved anew, which puts it among `changed` too.
        stale = {(s, t) for s in changed for t in self.out.get(s, ())}
        graph.relations = self.relations.copy()  # a copy in C, then a few keys out and in
        for pair in stale:
            del graph.relations[pair]
        graph.relations.update(fresh)
        graph.broken = {k: v for k, v in self.broken.items() if k[0] not in changed}
        graph.broken.update(
            _relations((s, t, r) for s, t, r in broken if s in changed and s in present)
        )
        out: dict[str, list[str]] = {}
        inc: dict[str, list[str]] = {}
        for source, target in fresh:
            out.setdefault(source, []).append(target)
            inc.setdefault(target, []).append(source)
        # Every edge from a changed note was replaced: its out-list is its fresh edges only,
        # and a note it linked to (or links to now) keeps its other sources. Filtering by
        # path, not looking up each pair, keeps a hub's thousands of sources cheap to redo.
        targets = {t for _, t in stale} | inc.keys()
        graph.out = _relisted(self.out, dict.fromkeys(changed, ()), out)
        kept_sources = {t: [s for s in self.inc.get(t, ()) if s not in changed] for t in targets}
        graph.inc = _relisted(self.inc, kept_sources, inc)
        same_notes = all((path in self.nodes) == (path in present) for path in changed)
        graph._splice = self._splice_for_next(changed) if same_notes else None
        return graph

    def _splice_for_next(self, changed: Collection[str]) -> _Splice | None:
        """What a graph patched from this one, with the same notes, can reuse: this graph's
        arrays and ranks, or those this one would have reused itself (no PageRank was asked of
        it), with every out-list redone since. None when too much was redone. (Either way the
        arrays are of this graph's notes: a splice is only kept between graphs of the same.)"""
        own: Adjacency | None = self.__dict__.get("adjacency")
        if own is not None:
            splice = _Splice(own, changed, self._ranks)
        elif self._splice is not None:
            splice = self._splice._replace(redone={*self._splice.redone, *changed})
        else:
            return None
        return splice if len(splice.redone) <= ADJACENCY_SPLICE_LIMIT else None

    def __contains__(self, path: object) -> bool:
        return path in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def edge_count(self) -> int:
        return len(self.relations)

    def successors(self, path: str, relation: str | None = None) -> Iterable[str]:
        """Notes `path` links to (through an edge carrying `relation`, a `relation_key`)."""
        targets = self.out.get(path, ())
        if relation is None:
            return targets
        return [t for t in targets if _has(self.relations[path, t], relation)]

    def predecessors(self, path: str, relation: str | None = None) -> Iterable[str]:
        """Notes linking to `path` (through an edge carrying `relation`, a `relation_key`)."""
        sources = self.inc.get(path, ())
        if relation is None:
            return sources
        return [s for s in sources if _has(self.relations[s, path], relation)]

    def edge_relations(self, a: str, b: str) -> tuple[str, ...]:
        """Named relations on the edges between a and b, either way round, sorted."""
        found = self.relations.get((a, b), frozenset()) | self.relations.get((b, a), frozenset())
        return _names(found)

    @functools.cached_property
    def adjacency(self) -> Adjacency:
        """The out-lists as integer arrays (for PageRank), built once; after an edit, spliced
        from those of the graph this one was patched from."""
        splice, self._splice = self._splice, None  # the earlier arrays are not needed again
        if splice is not None:
            return splice.adjacency.patched(self.out, splice.redone)
        return Adjacency.of(self.out, self.nodes)

    @functools.cached_property
    def degree(self) -> dict[str, int]:
        """Every note's edge count, in and out (a note linking both ways counts two)."""
        return {p: len(self.out.get(p, ())) + len(self.inc.get(p, ())) for p in self.nodes}

    @functools.cached_property
    def by_degree(self) -> list[str]:
        """Every note by `degree`, highest first, ties by path; sorted once per graph, not on
        every call of the whole vault's `subgraph`."""
        degree = self.degree
        return sorted(sorted(degree), key=degree.__getitem__, reverse=True)

    def pagerank(self) -> dict[str, float]:
        """PageRank of every note, computed once (thread-safe) and kept."""
        ranking = self.ranked("pagerank")
        return dict(zip(ranking.paths, ranking.scores, strict=True))

    def rank_pages(self) -> tuple[list[str], FloatArray]:
        """PageRank of every note, paths sorted. After an edit the iteration starts from the
        ranks of the graph this one was patched from, which one edit hardly moves: about half
        the iterations of a start from uniform ranks, to the same tolerance."""
        start = self._splice.ranks if self._splice is not None else None  # before `adjacency`
        paths, self._ranks = _pagerank(self, start=start)
        return paths, self._ranks

    def ranked(self, metric: HubMetric) -> Ranking:
        """Every note by `metric`, best first, ties by path; computed once. The degree metrics
        leave out notes scoring 0."""
        with self._lock:
            if metric not in self._ranked:
                self._ranked[metric] = _ranking(self, metric)
            return self._ranked[metric]


def _relations(
    edges: Iterable[tuple[str, str, str | None]],
) -> dict[tuple[str, str], Relations]:
    """Relations per (source, target) pair; most pairs share one frozenset ({None}, {"up"})."""
    shared: dict[str | None, Relations] = {}
    found: dict[tuple[str, str], Relations] = {}
    for source, target, relation in edges:
        pair = (source, target)
        current = found.get(pair)
        if current is None:
            single = shared.get(relation)
            if single is None:
                single = shared[relation] = frozenset((relation,))
            found[pair] = single
        elif relation not in current:
            found[pair] = current | {relation}
    return found


def _relisted(
    lists: dict[str, tuple[str, ...]],
    kept: Mapping[str, Sequence[str]],
    added: dict[str, list[str]],
) -> dict[str, tuple[str, ...]]:
    """`lists` (out- or in-lists) with the list of each note in `kept` made again: `kept[note]`
    (sorted, what remains of its old list) and its `added` neighbours (none of them kept)."""
    result = lists.copy()  # not `dict()`: see `Graph.patched`
    for node, old in kept.items():
        # Timsort merges the few added into the sorted run in one pass.
        new = sorted([*old, *added[node]]) if node in added else old
        if new:
            result[node] = tuple(new)
        else:
            result.pop(node, None)
    return result


def _ranking(graph: Graph, metric: HubMetric) -> Ranking:
    import numpy as np

    if metric == "pagerank":
        paths, scores = graph.rank_pages()
    else:
        lists = graph.inc if metric == "in_degree" else graph.out
        paths = sorted(lists)
        scores = np.fromiter((len(lists[p]) for p in paths), dtype=np.float64, count=len(paths))
    # Best first, ties by path (`paths` is sorted): numpy's sort, not one tuple per note.
    order = np.lexsort((np.arange(len(paths)), -scores))
    # Two lists rather than a tuple per note: a new tuple per note was enough to set off a full
    # garbage collection (slow in a serving process) on most rankings.
    return Ranking([paths[i] for i in order.tolist()], scores[order].tolist())


def _has(relations: Relations, relation: str) -> bool:
    return any(relation_key(r) == relation for r in relations if r is not None)


@functools.lru_cache(maxsize=1024)
def _names(relations: Relations) -> tuple[str, ...]:
    """Named relations, sorted; cached, as most edges share one of a few relation sets."""
    return tuple(sorted({r for r in relations if r is not None}))


# ---------------------------------------------------------------- traversal


def neighbors(
    graph: Graph,
    start: str,
    direction: Direction = "both",
    depth: int = 1,
    relation: str | None = None,
    limit: int | None = None,
) -> tuple[list[Neighbor], int]:
    """Notes within `depth` links of `start` (breadth first), ordered by depth then path: the
    first `limit` of them, and how many there are in all.

    `direction` "out" follows links, "in" follows backlinks, "both" either; `relation` keeps
    only edges carrying that relation (case-insensitive). `start` itself is never listed.
    """
    key = relation_key(relation)
    sides = [(_OUT, graph.successors)] if direction != "in" else []
    sides += [(_IN, graph.predecessors)] if direction != "out" else []
    seen = {start}
    found: list[tuple[str, int, str, int]] = []
    frontier = [start]
    for level in range(1, depth + 1):
        reached: dict[str, tuple[str, int]] = {}  # node -> (first node reaching it, sides)
        for node in frontier:
            for bit, step in sides:
                for other in step(node, key):
                    if other in seen:
                        continue
                    entry = reached.get(other)
                    if entry is None:
                        reached[other] = (node, bit)
                    elif entry[0] == node:
                        reached[other] = (node, entry[1] | bit)
        frontier = sorted(reached)
        found.extend((path, level, *reached[path]) for path in frontier)
        seen.update(frontier)
        if not frontier:
            break
    page = found if limit is None else found[:limit]
    result = [
        Neighbor(path, level, via, _WAYS[bits], graph.edge_relations(via, path))
        for path, level, via, bits in page
    ]
    return result, len(found)


_OUT, _IN = 1, 2
_WAYS: dict[int, Literal["in", "out", "both"]] = {_OUT: "out", _IN: "in", _OUT | _IN: "both"}


def shortest_path(
    graph: Graph, source: str, target: str, relation: str | None = None
) -> list[str] | None:
    """The fewest links to follow from `source` to `target` ([source] when they are the same
    note), or None when no chain of links leads there. Breadth first, neighbours in path
    order, so among equally short paths the one found first is always the same."""
    if source not in graph or target not in graph:
        return None
    if source == target:
        return [source]
    key = relation_key(relation)
    parent: dict[str, str] = {source: source}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        for nxt in graph.successors(node, key):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt == target:
                return _walk_back(parent, target)
            queue.append(nxt)
    return None


def _walk_back(parent: dict[str, str], node: str) -> list[str]:
    path = [node]
    while parent[node] != node:
        node = parent[node]
        path.append(node)
    return path[::-1]


# ---------------------------------------------------------------- centrality


def hubs(graph: Graph, metric: HubMetric, limit: int) -> list[Hub]:
    """The `limit` notes scoring highest: in_degree (distinct notes linking here),
    out_degree (distinct notes linked to) or PageRank; ties by path. Zero scores are left out
    for the degree metrics: a note nothing links to is no hub."""
    ranking = graph.ranked(metric)
    return [Hub(p, s) for p, s in zip(ranking.paths[:limit], ranking.scores[:limit], strict=True)]


def pagerank(
    graph: Graph,
    damping: float = DAMPING,
    tolerance: float = PAGERANK_TOLERANCE,
    max_iterations: int = PAGERANK_MAX_ITERATIONS,
) -> dict[str, float]:
    """PageRank by power iteration; the ranks sum to 1.

    A note's rank is shared equally among the distinct notes it links to. A dangling note (no
    outgoing edges) spreads its rank over every note, as the random surfer jumps anywhere from
    a page without links; the teleport term (1 - damping) is uniform too. Iteration stops when
    the L1 change falls below `tolerance`, or after `max_iterations` (the rank vector is then
    as good as that many steps make it; convergence is geometric in `damping`).
    """
    paths, ranks = _pagerank(graph, damping, tolerance, max_iterations)
    return dict(zip(paths, ranks.tolist(), strict=True))


def _pagerank(
    graph: Graph,
    damping: float = DAMPING,
    tolerance: float = PAGERANK_TOLERANCE,
    max_iterations: int = PAGERANK_MAX_ITERATIONS,
    start: FloatArray | None = None,
) -> tuple[list[str], FloatArray]:
    """Every note's path, sorted, and its rank; iterating from `start` (ranks in that order)
    if given, else from uniform ranks."""
    import numpy as np

    adjacency = graph.adjacency
    paths, targets = adjacency.paths, adjacency.targets
    count = len(paths)
    if count == 0:
        return paths, np.zeros(0)
    # Vectorised over the edge list: an iteration is two array passes, not a Python loop per
    # note, which is many times slower.
    out_degree = adjacency.out_degree()
    sources = np.repeat(np.arange(count), out_degree)
    dangling = out_degree == 0
    inverse = np.divide(1.0, out_degree, out=np.zeros(count), where=~dangling)
    ranks = start if start is not None and len(start) == count else np.full(count, 1.0 / count)
    for _ in range(max_iterations):
        leaked = ranks[dangling].sum()
        base = (1.0 - damping) / count + damping * leaked / count
        inflow = np.bincount(targets, weights=(ranks * inverse)[sources], minlength=count)
        new = base + damping * inflow
        change = float(np.abs(new - ranks).sum())
        ranks = new
        if change < tolerance:
            break
    return paths, ranks


# ---------------------------------------------------------------- whole graph


def subgraph(
    graph: Graph,
    directory: str | None = None,
    include_broken: bool = False,
    relation: str | None = None,
    limit: int | None = None,
) -> Subgraph:
    """The notes of `directory` (with its subfolders; None is the whole vault) and the edges
    among them; with `include_broken`, also their broken links to raw targets.

    Beyond `limit` notes, the best connected are kept (degree within the scope, then path),
    so a capped graph still shows its structure; edges only join kept notes.
    """
    key = relation_key(relation)
    degree = _degrees(graph, directory, key)
    if degree is graph.degree:
        ranked = graph.by_degree
    else:  # stable sorts: by path, then by degree (highest first), so ties stay in path order
        ranked = sorted(sorted(degree), key=degree.__getitem__, reverse=True)
    nodes = ranked if limit is None else ranked[:limit]
    kept = set(nodes)
    relations = graph.relations
    result = [
        SubgraphEdge(s, t, _names(relations[s, t]), False)
        for s in sorted(kept)
        for t in graph.successors(s, key)
        if t in kept
    ]
    broken: set[str] = set()
    if include_broken:
        for (source, target), rels in sorted(graph.broken.items()):
            if source in kept and (key is None or _has(rels, key)):
                broken.add(target)
                result.append(SubgraphEdge(source, target, _names(rels), True))
    return Subgraph(nodes, sorted(broken), result, len(degree))


def _degrees(graph: Graph, directory: str | None, key: str | None) -> dict[str, int]:
    """Each note of `directory` (None: the vault) with its count of edges to and from notes
    there (through relation `key` when given)."""
    if not directory and key is None:  # every neighbour is in scope
        return graph.degree
    scope = {p for p, n in graph.nodes.items() if _in_folder(n.folder, directory)}
    degree = dict.fromkeys(scope, 0)
    for source in scope:
        for target in graph.successors(source, key):
            if target in scope:
                degree[source] += 1
                degree[target] += 1
    return degree


def _in_folder(folder: str, directory: str | None) -> bool:
    return not directory or folder == directory or folder.startswith(directory + "/")
