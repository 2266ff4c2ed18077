"""Search ranking judged on real vaults: a small set of queries, each with the note a person
asking it wants (the note named for it, where many others mention it), and the share of them
found in the first five results (recall@5). `make bench` prints it; a unit test
(`tests/cache/test_ranking.py`) holds it above `RECALL_TARGET`.

The set is ours, written by reading the corpora in `../shared/corpora`; a query is kept only
when other notes mention its words too, so that ranking, not matching, decides.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from tests.corpora import CORPORA
from weaver.cache import fts
from weaver.cache.graph import load_names
from weaver.cache.read import read_snapshot
from weaver.config import Settings
from weaver.runtime.app import open_app

RECALL_TARGET = 0.9
TOP = 5


@dataclass(frozen=True)
class RankingCase:
    corpus: str
    query: str
    expected: str


RANKING_SET = (
    RankingCase("kepano-obsidian", "obsidian", "References/Obsidian.md"),
    RankingCase("kepano-obsidian", "kevin kelly", "References/Kevin Kelly.md"),
    RankingCase("kepano-obsidian", "kyoto", "References/Kyoto.md"),
    RankingCase("kepano-obsidian", "steph ango", "References/Steph Ango.md"),
    RankingCase("kepano-obsidian", "jazz", "References/Jazz.md"),
    RankingCase("kepano-obsidian", "books", "Categories/Books.md"),
    RankingCase("kepano-obsidian", "minimal theme", "Notes/Minimal Theme.md"),
    RankingCase("kepano-obsidian", "japan trip", "Notes/2023 Japan Trip.md"),
    RankingCase("kepano-obsidian", "evergreen", "Categories/Evergreen.md"),
    RankingCase("kepano-obsidian", "meetings", "Categories/Meetings.md"),
    RankingCase("kepano-obsidian", "recipes", "Categories/Recipes.md"),
    RankingCase("kepano-obsidian", "blade runner", "References/Blade Runner.md"),
    RankingCase("kepano-obsidian", "movie template", "Templates/Movie Template.md"),
    RankingCase("tasks-demo", "custom sorting", "Functions/Custom Sorting.md"),
    RankingCase("tasks-demo", "access links", "How To/Access links.md"),
    RankingCase("tasks-demo", "important project", "Important Project.md"),
    RankingCase("tasks-demo", "callout", "Test Data/callout.md"),
    RankingCase("tasks-demo", "list statuses", "Test Data/list_statuses.md"),
    RankingCase("tasks-demo", "custom filters demo", "Functions/Custom Filters - Demo.md"),
    RankingCase("tasks-demo", "blockquote", "Test Data/blockquote.md"),
    # Words most notes hold: BM25 gives them next to no weight, whatever the column.
    RankingCase("tasks-demo", "tasks", "Tasks.md"),
    RankingCase("tasks-demo", "one task", "Test Data/one_task.md"),
    RankingCase("tasks-demo", "non tasks", "Test Data/non_tasks.md"),
    RankingCase("tasks-demo", "test data file", "_meta/templates/Test Data file.md"),
    RankingCase("tasks-demo", "link in heading", "Test Data/link_in_heading.md"),
    RankingCase("kepano-obsidian", "places", "Categories/Places.md"),
)


@dataclass(frozen=True)
class RankingResult:
    recall: float
    misses: list[tuple[str, str, list[str]]]  # query, expected, what came first instead


def measure_recall(
    workdir: Path, corpora: Path = CORPORA, database_url: str | None = None
) -> RankingResult:
    """Index each corpus the set uses (caches in `workdir`, or one after the other in the
    database at `database_url`) and run its queries."""
    found = 0
    misses: list[tuple[str, str, list[str]]] = []
    for corpus in sorted({case.corpus for case in RANKING_SET}):
        cache = workdir / f"{corpus}.db"
        settings = Settings(
            vault=corpora / corpus, database_url=database_url or f"sqlite:///{cache}"
        )
        app = open_app(settings)
        try:
            app.indexer.reconcile()
            with read_snapshot(app.db) as conn:
                names = load_names(conn)
                for case in (c for c in RANKING_SET if c.corpus == corpus):
                    expression = fts.fts_query(case.query)
                    assert expression is not None
                    (named,) = names.resolve([case.query], "exact")  # as search_notes pins
                    pinned = [named.path, *named.alternatives] if named.path else []
                    page = fts.search(conn, expression, TOP, 0, pinned=pinned)
                    top = [hit.path for hit in page.hits]
                    if case.expected in top:
                        found += 1
                    else:
                        misses.append((case.query, case.expected, top))
        finally:
            app.close()
    return RankingResult(found / len(RANKING_SET), misses)


def run(ctx: BenchContext) -> list[Figure]:
    with tempfile.TemporaryDirectory(dir=ctx.workdir) as scratch:
        result = measure_recall(Path(scratch))
    shown = f"{result.recall:.2f} ({len(RANKING_SET) - len(result.misses)}/{len(RANKING_SET)})"
    return [
        Figure(
            "search ranking",
            f"search_notes recall@{TOP}, {len(RANKING_SET)} queries on the corpora",
            result.recall,
            "",
            shown,
            Target(">=", RECALL_TARGET, f"≥ {RECALL_TARGET}"),
            {"misses": [[query, expected, top] for query, expected, top in result.misses]},
        )
    ]
