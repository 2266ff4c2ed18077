"""The link graph: crafted graphs with known paths, neighbours, hubs and PageRank; the graph as
loaded from a real cache (and reloaded when it changes); name resolution; the tasks-demo corpus
against what Obsidian itself resolved."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from rapidfuzz import fuzz

from tests.corpora import require_corpora
from tests.helpers import WriteNotes
from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.config import Settings
from weaver.mcp_server.graph_schemas import GraphData, GraphEdge, GraphNode
from weaver.mcp_server.graph_tools import graph_wire
from weaver.runtime.app import App, open_app
from weaver.views import link_graph as g
from weaver.views.names import MatchedOn, NameIndex, NameRow, fold, length_window, resolve_names
from weaver.views.tag_tree import TagMode

PATH_ONLY: tuple[MatchedOn, ...] = ("path",)


def make(edges: str, extra: str = "", broken: str = "") -> g.Graph:
    """`"a>b b>c:rel"` -> a graph of notes a.md, b.md, c.md (plus `extra` isolated notes)."""
    pairs = []
    for item in edges.split():
        link, _, relation = item.partition(":")
        source, target = link.split(">")
        pairs.append((f"{source}.md", f"{target}.md", relation or None))
    names = {p for pair in pairs for p in pair[:2]} | {f"{n}.md" for n in extra.split()}
    nodes = [g.NodeInfo(n, n.removesuffix(".md").upper(), "") for n in sorted(names)]
    missing = [(f"{s}.md", t, None) for s, t in (b.split(">") for b in broken.split())]
    return g.Graph(nodes, pairs, missing)


# -- shortest paths ---------------------------------------------------------------------------


def test_shortest_path_follows_links_in_their_direction() -> None:
    graph = make("a>b b>c c>d a>x x>y y>d d>a")
    assert g.shortest_path(graph, "a.md", "d.md") == ["a.md", "b.md", "c.md", "d.md"]
    assert g.shortest_path(graph, "d.md", "a.md") == ["d.md", "a.md"]
    assert g.shortest_path(graph, "c.md", "b.md") == ["c.md", "d.md", "a.md", "b.md"]


def test_shortest_path_ties_break_by_path_order_and_edge_cases() -> None:
    graph = make("s>b s>a a>t b>t", extra="alone")
    assert g.shortest_path(graph, "s.md", "t.md") == ["s.md", "a.md", "t.md"]
    assert g.shortest_path(graph, "s.md", "s.md") == ["s.md"]
    assert g.shortest_path(graph, "t.md", "s.md") is None  # only against the links
    assert g.shortest_path(graph, "s.md", "alone.md") is None
    assert g.shortest_path(graph, "s.md", "nowhere.md") is None


def test_shortest_path_by_relation() -> None:
    graph = make("a>b:Knows b>c:knows a>c:cites")
    assert g.shortest_path(graph, "a.md", "c.md") == ["a.md", "c.md"]
    assert g.shortest_path(graph, "a.md", "c.md", "KNOWS") == ["a.md", "b.md", "c.md"]
    assert g.shortest_path(graph, "a.md", "c.md", "likes") is None


def test_self_links_duplicates_and_links_to_unknown_notes_are_not_edges() -> None:
    graph = g.Graph(
        [g.NodeInfo("a.md", "A", ""), g.NodeInfo("b.md", "B", "")],
        [
            ("a.md", "a.md", None),
            ("a.md", "b.md", None),
            ("a.md", "b.md", "x"),
            ("a.md", "img.png", None),
        ],
    )
    assert graph.edge_count() == 1
    assert graph.relations["a.md", "b.md"] == frozenset({None, "x"})


# -- neighbours --------------------------------------------------------------------------------


def test_neighbors_by_direction_and_depth() -> None:
    graph = make("a>b b>a c>a b>d d>e e>f")
    found, total = g.neighbors(graph, "a.md", "both", 1)
    assert [(n.path, n.direction, n.depth, n.via) for n in found] == [
        ("b.md", "both", 1, "a.md"),
        ("c.md", "in", 1, "a.md"),
    ]
    assert total == 2
    out, _ = g.neighbors(graph, "a.md", "out", 3)
    assert [(n.path, n.depth, n.via) for n in out] == [
        ("b.md", 1, "a.md"),
        ("d.md", 2, "b.md"),
        ("e.md", 3, "d.md"),
    ]
    into, _ = g.neighbors(graph, "e.md", "in", 3)
    assert [n.path for n in into] == ["d.md", "b.md", "a.md"]


def test_neighbors_limit_keeps_the_total_and_relation_filters() -> None:
    graph = make("a>b:author a>c:Author a>d c>e:author")
    found, total = g.neighbors(graph, "a.md", "both", 2, limit=2)
    assert ([n.path for n in found], total) == (["b.md", "c.md"], 4)
    typed, total = g.neighbors(graph, "a.md", "out", 2, relation=" AUTHOR ")
    assert [(n.path, n.relations) for n in typed] == [
        ("b.md", ("author",)),
        ("c.md", ("Author",)),
        ("e.md", ("author",)),
    ]
    assert total == 3


# -- hubs and PageRank ----------------------------------------------------------------------


def test_degree_hubs_count_distinct_notes_and_leave_zeros_out() -> None:
    graph = make("a>h b>h c>h a>b h>a", extra="lonely")
    assert [(h.path, h.score) for h in g.hubs(graph, "in_degree", 2)] == [
        ("h.md", 3.0),
        ("a.md", 1.0),
    ]
    assert [(h.path, h.score) for h in g.hubs(graph, "out_degree", 10)] == [
        ("a.md", 2.0),
        ("b.md", 1.0),
        ("c.md", 1.0),
        ("h.md", 1.0),
    ]


def test_pagerank_of_a_cycle_is_uniform_and_sums_to_one() -> None:
    ranks = g.pagerank(make("a>b b>c c>a"))
    assert ranks == pytest.approx({"a.md": 1 / 3, "b.md": 1 / 3, "c.md": 1 / 3}, abs=1e-9)


def test_pagerank_spreads_a_dangling_note_over_every_note() -> None:
    # a -> b, b has no links: solved by hand, x = 0.075 + 0.425y, y = 0.075 + 0.425y + 0.85x.
    ranks = g.pagerank(make("a>b"))
    assert ranks["a.md"] == pytest.approx(0.350877193, abs=1e-8)
    assert ranks["b.md"] == pytest.approx(0.649122807, abs=1e-8)


def dense_pagerank(graph: g.Graph, damping: float = 0.85, steps: int = 2000) -> dict[str, float]:
    """The textbook definition, computed the slow way, to check the fast one against."""
    nodes = sorted(graph.nodes)
    rank = dict.fromkeys(nodes, 1 / len(nodes))
    for _ in range(steps):
        nxt = dict.fromkeys(nodes, (1 - damping) / len(nodes))
        for node in nodes:
            targets = graph.out.get(node, ())
            share = targets or tuple(nodes)
            for target in share:
                nxt[target] += damping * rank[node] / len(share)
        rank = nxt
    return rank


def test_pagerank_matches_the_definition_and_orders_hubs() -> None:
    graph = make("a>h b>h c>h d>h h>x x>a e>d f>e", extra="z")
    ranks = g.pagerank(graph)
    assert ranks == pytest.approx(dense_pagerank(graph), abs=1e-9)
    assert sum(ranks.values()) == pytest.approx(1.0)
    order = [h.path for h in g.hubs(graph, "pagerank", 3)]
    assert order == ["h.md", "x.md", "a.md"]
    assert graph.ranked("pagerank") is graph.ranked("pagerank")  # computed once per graph


def edges_from(graph: g.Graph, sources: set[str]) -> list[tuple[str, str, str | None]]:
    return [(s, t, r) for (s, t), rels in graph.relations.items() if s in sources for r in rels]


def test_pagerank_after_edits_splices_the_arrays_and_ranks_as_from_scratch() -> None:
    """After an edit PageRank starts from the earlier graph's ranks: the same ranks as a
    graph built afresh, to the iteration's tolerance."""
    random.seed(3)
    names = [f"n{i}" for i in range(40)]
    graph = make(" ".join(f"{random.choice(names)}>{random.choice(names)}" for _ in range(120)))
    graph.ranked("pagerank")  # a server asked once: its arrays are there to splice from
    for step in range(12):
        # A note's links change (the notes stay the same), twice between two PageRank calls.
        note = f"n{random.randrange(40)}.md"
        links = [(note, f"{random.choice(names)}.md", None) for _ in range(random.randrange(5))]
        graph = graph.patched([note], [graph.nodes[note]], links)
        if step % 2:
            splice = graph._splice
            ranks = graph.pagerank()
            fresh = g.Graph(graph.nodes.values(), edges_from(graph, set(graph.nodes)))
            assert splice is not None and splice.ranks is not None
            assert ranks == pytest.approx(g.pagerank(fresh), abs=g.PAGERANK_TOLERANCE)
            assert graph.adjacency.targets.tolist() == fresh.adjacency.targets.tolist()
            assert graph.adjacency.offsets.tolist() == fresh.adjacency.offsets.tolist()
    # A note added: the arrays are built afresh (indices move), and still rank right.
    grown = graph.patched(
        ["new.md"], [g.NodeInfo("new.md", "NEW", "")], [("new.md", "n1.md", None)]
    )
    assert grown._splice is None
    fresh = g.Graph(grown.nodes.values(), edges_from(grown, set(grown.nodes)))
    assert g.pagerank(grown) == pytest.approx(g.pagerank(fresh), abs=1e-12)


# -- subgraph --------------------------------------------------------------------------------


def test_the_graph_answer_built_as_dicts_is_the_models_wire_form() -> None:
    graph = make("a>b:up a>c c>a b>c:down b>c", extra="z", broken="a>Nowhere c>Gone")
    sub = g.subgraph(graph, None, True, None, 3)
    model = GraphData(
        directory=None,
        nodes=[GraphNode(id=p, title=graph.nodes[p].title, broken=False) for p in sub.nodes]
        + [GraphNode(id=t, title=t, broken=True) for t in sub.broken],
        edges=[
            GraphEdge(
                source=e.source, target=e.target, relations=list(e.relations), broken=e.broken
            )
            for e in sub.edges
        ],
        total_nodes=sub.total_nodes,
        truncated=len(sub.nodes) < sub.total_nodes,
    )
    wire = graph_wire(graph, sub, None)
    assert wire == model.to_wire()
    assert wire["truncated"] is True and any(e["broken"] for e in wire["edges"])


def test_the_degree_order_is_kept_per_graph_and_follows_a_patch() -> None:
    graph = make("a>b b>c c>a d>a", extra="e")
    assert graph.by_degree == ["a.md", "b.md", "c.md", "d.md", "e.md"]  # ties by path
    assert graph.by_degree is graph.by_degree  # sorted once
    links = [("e.md", "d.md", None), ("e.md", "c.md", None)]
    patched = graph.patched(["e.md"], [graph.nodes["e.md"]], links)
    fresh = g.Graph(patched.nodes.values(), edges_from(patched, set(patched.nodes)))
    assert patched.by_degree == fresh.by_degree == ["a.md", "c.md", "b.md", "d.md", "e.md"]
    assert graph.by_degree == ["a.md", "b.md", "c.md", "d.md", "e.md"]


def test_subgraph_of_a_folder_with_broken_links_and_a_limit() -> None:
    nodes = [
        g.NodeInfo("p/a.md", "A", "p"),
        g.NodeInfo("p/sub/b.md", "B", "p/sub"),
        g.NodeInfo("p/c.md", "C", "p"),
        g.NodeInfo("px/d.md", "D", "px"),
    ]
    edges = [
        ("p/a.md", "p/sub/b.md", "up"),
        ("p/a.md", "px/d.md", None),
        ("p/c.md", "p/a.md", None),
    ]
    graph = g.Graph(nodes, edges, [("p/a.md", "Missing", None), ("px/d.md", "Gone", None)])
    sub = g.subgraph(graph, "p")
    assert sub.nodes == ["p/a.md", "p/c.md", "p/sub/b.md"] and sub.broken == []
    assert [(e.source, e.target) for e in sub.edges] == [
        ("p/a.md", "p/sub/b.md"),
        ("p/c.md", "p/a.md"),
    ]
    with_broken = g.subgraph(graph, "p", include_broken=True)
    assert with_broken.broken == ["Missing"]
    assert with_broken.edges[-1] == g.SubgraphEdge("p/a.md", "Missing", (), True)
    typed = g.subgraph(graph, None, relation="up")
    assert [(e.source, e.target, e.relations) for e in typed.edges] == [
        ("p/a.md", "p/sub/b.md", ("up",))
    ]
    capped = g.subgraph(graph, None, limit=2)
    assert (capped.nodes, capped.total_nodes) == (["p/a.md", "p/c.md"], 4)
    assert [(e.source, e.target) for e in capped.edges] == [("p/c.md", "p/a.md")]


# -- from the cache --------------------------------------------------------------------------


FILES: dict[str, str | bytes] = {
    "Home.md": (
        "---\nup: '[[Index]]'\n---\n[[Topic]] [[Topic#H]] ![[pic.png]] [[Missing]] [[#Self]]\n"
    ),
    "Index.md": "author:: [[Home]]\n",
    "b/Topic.md": "[[Home|back]] [x](../Index.md)\n",
    "pic.png": b"\x89PNG",
}


@pytest.fixture
def cached(app: App, write_notes: WriteNotes) -> App:
    write_notes(FILES)
    app.indexer.reconcile()
    return app


def test_load_graph_from_the_cache(cached: App) -> None:
    with read.read_snapshot(cached.db) as conn:
        graph = cache_graph.load_graph(conn)
    assert sorted(graph.relations) == [
        ("Home.md", "Index.md"),
        ("Home.md", "b/Topic.md"),
        ("Index.md", "Home.md"),
        ("b/Topic.md", "Home.md"),
        ("b/Topic.md", "Index.md"),
    ]
    assert graph.relations["Home.md", "Index.md"] == frozenset({"up"})
    assert graph.relations["Index.md", "Home.md"] == frozenset({"author"})
    assert graph.broken == {("Home.md", "Missing"): frozenset({None})}
    assert graph.nodes["b/Topic.md"] == g.NodeInfo("b/Topic.md", "Topic", "b")


def test_graph_cache_reloads_only_when_the_cache_changes(cached: App, vault_dir: Path) -> None:
    graphs = cache_graph.graph_cache()
    with read.read_snapshot(cached.db) as conn:
        first = graphs.get(conn)
    with read.read_snapshot(cached.db) as conn:
        assert graphs.get(conn) is first
    for n in range(3):  # several changes within a millisecond still give new versions
        (vault_dir / f"New{n}.md").write_text("[[Home]]", encoding="utf-8")
        cached.indexer.apply_paths([f"New{n}.md"])
        with read.read_snapshot(cached.db) as conn:
            latest = graphs.get(conn)
        assert f"New{n}.md" in latest and latest.edge_count() == 6 + n


# -- names -------------------------------------------------------------------------------------


ROWS = [
    NameRow("recipes/Chicken Soup.md", "Chicken Soup", ("Hühnersuppe",)),
    NameRow("recipes/Bulgogi.md", "Korean beef", ()),
    NameRow("Bulgogi.md", "Bulgogi (draft)", ()),
    NameRow("people/Alice Smith.md", "Alice Smith", ("Ally", "A. Smith")),
    NameRow("old/Alice.md", "Alice", ()),
]


def test_fold_strips_links_extensions_case_and_normalises_unicode() -> None:
    assert fold("  [[Some Note#Part|shown]] ") == "some note"
    assert fold("Note.MD") == "note"
    assert fold("Hu\u0308hnersuppe") == fold("Hühnersuppe")


def test_exact_names_titles_aliases_and_ambiguity() -> None:
    found = resolve_names(
        ["chicken soup", "KOREAN BEEF", "hühnersuppe", "bulgogi", "recipes/bulgogi", "Zebra"],
        ROWS,
        "exact",
    )
    assert [(m.path, m.matched_on, m.score) for m in found] == [
        ("recipes/Chicken Soup.md", "name", 1.0),
        ("recipes/Bulgogi.md", "title", 1.0),
        ("recipes/Chicken Soup.md", "alias", 1.0),
        ("Bulgogi.md", "path", 1.0),  # an exact path beats a file name, as in link resolution
        ("recipes/Bulgogi.md", "path", 1.0),
        (None, None, 0.0),
    ]
    assert found[3].alternatives == ("recipes/Bulgogi.md",)


def test_fuzzy_scores_thresholds_and_alternatives() -> None:
    found = resolve_names(["chiken soup", "Alise", "Smiht", "qqq"], ROWS, "fuzzy", 0.7)
    assert found[0].path == "recipes/Chicken Soup.md" and 0.9 < found[0].score < 1
    assert (found[1].path, found[1].matched_text) == ("old/Alice.md", "Alice")
    assert found[1].score == pytest.approx(0.8)
    assert found[2].path is None  # "smiht" vs "smith" is only 0.6
    assert found[3].path is None and found[3].score == 0.0
    loose = resolve_names(["Smiht"], ROWS, "fuzzy", 0.3)[0]
    assert loose.path is not None and loose.score < 0.7
    assert resolve_names(["alice"], ROWS, "fuzzy", 0.6)[0].alternatives == (
        "people/Alice Smith.md",
    )
    by_path = NameIndex(ROWS).resolve(["old/alise"], "fuzzy", 0.7, kinds=PATH_ONLY)[0]
    assert (by_path.path, by_path.matched_on) == ("old/Alice.md", "path")
    assert NameIndex(ROWS).resolve(["Alise"], "fuzzy", 0.7, kinds=PATH_ONLY)[0].path is None


@pytest.mark.parametrize("threshold", [0.0, 0.5, 0.7, 0.9, 1.0])
def test_fuzzy_lookups_skip_only_names_whose_length_cannot_reach_the_threshold(
    threshold: float,
) -> None:
    # Every key of every length, against rapidfuzz over all of them: the same best matches.
    rng = random.Random(threshold)
    words = ["note", "chicken", "a", "soup", "meeting notes 2024", "x" * 40, "déjà vu"]
    rows = [
        NameRow(f"f{i}/{rng.choice(words)} {i}.md", rng.choice(words) * rng.randint(1, 3), ())
        for i in range(300)
    ]
    names = ["chiken", "soup 1", "meting notes", "x" * 30, "d", "déjà vu 12", "soup soup soup!"]
    index = NameIndex(rows)
    for name, found in zip(names, index.resolve(names, "fuzzy", threshold), strict=True):
        every = [(fuzz.ratio(fold(name), key.folded) / 100, key) for key in index.keys]
        best = max((score for score, _ in every if score >= threshold), default=0.0)
        assert found.score == pytest.approx(best, abs=1e-4), name


def test_many_names_at_once_answer_as_each_name_alone() -> None:
    # More names than one batch of scoring holds, some blank: each answered as if asked alone.
    index = NameIndex(ROWS)
    names = [
        ["chiken soup", "Alise", "", "Smiht", "qqq", "bulgogi", "[[ally]]"][i % 7] + " " * (i % 3)
        for i in range(40)
    ]
    together = index.resolve(names, "fuzzy", 0.6)
    assert together == [index.resolve([name], "fuzzy", 0.6)[0] for name in names]
    assert [m.path for m in together[:2]] == ["recipes/Chicken Soup.md", "old/Alice.md"]


def test_the_length_window_holds_exactly_the_lengths_that_can_reach_the_threshold() -> None:
    lengths = list(range(1, 121))
    for threshold in (0.3, 0.5, 0.7, 0.8, 0.95, 1.0):
        for size in range(1, 61):
            low, high = length_window(size, lengths, threshold)
            reachable = [b for b in lengths if 2 * min(size, b) / (size + b) >= threshold - 1e-12]
            assert lengths[low:high] == reachable, (size, threshold)


# -- the real corpus ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tasks_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[g.Graph]:
    vault = require_corpora() / "tasks-demo"
    cache = tmp_path_factory.mktemp("graph") / "cache.db"
    app = open_app(Settings(vault=vault, database_url=f"sqlite:///{cache}"))
    app.indexer.reconcile()
    with read.read_snapshot(app.db) as conn:
        graph = cache_graph.load_graph(conn)
    app.close()
    yield graph


@pytest.mark.corpus
def test_tasks_demo_graph_agrees_with_obsidian(tasks_demo: g.Graph) -> None:
    resolved = require_corpora() / "tasks-demo-obsidian-cache" / "metadataCache"
    links = json.loads((resolved / "resolvedLinks.json").read_text(encoding="utf-8"))
    obsidian = {
        (source, target)
        for source, targets in links.items()
        for target in targets
        if source.endswith(".md") and target.endswith(".md") and source != target
    }
    ours = set(tasks_demo.relations)
    assert len(tasks_demo) == 205
    assert len(obsidian & ours) >= 0.9 * len(obsidian)  # parser parity is tested elsewhere
    top = g.hubs(tasks_demo, "in_degree", 3)
    assert {h.path for h in top} == {
        "Test Data/link_in_yaml.md",
        "Test Data/multiple_headings.md",
        "Test Data/yaml_tags_is_empty.md",
    }
    assert sum(tasks_demo.pagerank().values()) == pytest.approx(1.0)
    source, target = sorted(obsidian & ours)[0]
    assert g.shortest_path(tasks_demo, source, target) == [source, target]


TAGGED: dict[str, str | bytes] = {
    "a.md": "#project/alpha #idea",
    "b.md": "#project #idea/sort #idea/sort/deep",  # two tags under idea: listed once
    "c.md": "#other #idea",
    "d.md": "---\ntags: [Project/Gamma]\n---\n",
    "e.md": "#projects",  # shares a prefix with project, is not under it
}


def _tagged(app: App, patterns: list[str], mode: TagMode, limit: int = 10) -> tuple[list[str], int]:
    index = cache_graph.tag_index_cache()
    with read.read_snapshot(app.db) as conn:
        page = cache_graph.notes_with_tags(conn, index.get(conn), patterns, mode, limit)
    return [f.path for f in page.items], page.total


def test_notes_with_tags_any_and_all_with_nested_tags_and_wildcards(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes(TAGGED)
    app.indexer.reconcile()
    assert _tagged(app, ["project"], "any") == (["a.md", "b.md", "d.md"], 3)
    assert _tagged(app, ["project", "idea"], "any") == (["a.md", "b.md", "c.md", "d.md"], 4)
    assert _tagged(app, ["project", "idea"], "all") == (["a.md", "b.md"], 2)
    assert _tagged(app, ["project", "idea", "other"], "all") == ([], 0)
    assert _tagged(app, ["proj*"], "any") == (["a.md", "b.md", "d.md", "e.md"], 4)
    assert _tagged(app, ["idea/s?rt", "project/gamma"], "any") == (["b.md", "d.md"], 2)
    assert _tagged(app, ["project", "idea"], "any", limit=2) == (["a.md", "b.md"], 4)
    assert _tagged(app, ["nothing"], "all") == ([], 0)


def test_notes_with_tags_follows_edits_and_deletes(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes(TAGGED)
    app.indexer.reconcile()
    index = cache_graph.tag_index_cache()
    with read.read_snapshot(app.db) as conn:
        first = index.get(conn)
    (vault_dir / "c.md").write_text("#project/new", encoding="utf-8")
    (vault_dir / "a.md").unlink()
    app.indexer.apply_paths(["c.md", "a.md"])
    with read.read_snapshot(app.db) as conn:
        latest = index.get(conn)
        page = cache_graph.notes_with_tags(conn, latest, ["project", "idea"], "all", 10)
        either = cache_graph.notes_with_tags(conn, latest, ["project", "idea"], "any", 10)
    assert latest is not first
    assert ([f.path for f in page.items], page.total) == (["b.md"], 1)
    assert [f.path for f in either.items] == ["b.md", "c.md", "d.md"]


def test_random_note_picks_uniformly_among_the_tagged_notes(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes(
        {
            "a.md": "#project/alpha #project/beta",  # two matching tags: still one candidate
            "b.md": "#project",
            "c.md": "#other",
            "d.md": "---\ntags: [Project/Gamma]\n---\n",
            "e.md": "no tags",
        }
    )
    app.indexer.reconcile()
    rng = random.Random(7)
    with read.read_snapshot(app.db) as conn:
        index = cache_graph.load_tag_index(conn)
        picks = Counter(
            note.path
            for _ in range(600)
            if (note := cache_graph.random_note(conn, index, ["project"], rng)) is not None
        )
        assert cache_graph.random_note(conn, index, ["nothing"], rng) is None
        untagged = (cache_graph.random_note(conn, index, [], rng) for _ in range(200))
        anything = {note.path for note in untagged if note is not None}
    assert set(picks) == {"a.md", "b.md", "d.md"}
    assert min(picks.values()) > 150  # about 200 each: a.md's two tags do not double its chance
    assert anything == {"a.md", "b.md", "c.md", "d.md", "e.md"}
