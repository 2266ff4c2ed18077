"""What a search by meaning answers: hybrid admits only notes close enough in meaning and
counts what matches, a note named as searched for comes first in every mode, and a long note
is not found for one passage among hundreds."""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.benchmarks.semantic import judge_hybrid, precision_of
from tests.helpers import write_files
from weaver.cache.graph import names_cache
from weaver.config import Settings
from weaver.runtime.app import App, open_app
from weaver.search import SearchMode, SearchRequest, SearchResults, SearchSources, find_notes
from weaver.semantic import search as search_module
from weaver.semantic.model import EmbeddingModel, ModelSource, Vectors
from weaver.semantic.search import FUSION_DEPTH, SemanticIndex
from weaver.semantic.worker import embed_pending

NOTES = {
    "apps/sync.md": "# Obsidian Sync\nKeeps the vault the same on the phone and the laptop.\n",
    "kitchen/bread.md": "# Sourdough\nA lively starter, flour, water and salt.\n",
    "kitchen/pizza.md": "# Pizza dough\nFlour, water, yeast and salt; a long cold rise.\n",
    "money/rates.md": "# Interest rates\nThe central bank raised rates to slow inflation.\n",
    "notes/odd.md": "# Field notes\nThe zorblax was seen again near the river.\n",
    # Every name of these says "tasks"; the note named Tasks never does in its text.
    **{f"lists/tasks-{n}.md": "# Tasks\n## tasks\n" + "tasks to do, done " * n for n in range(5)},
    "zz/Tasks.md": "# Open items\nOf the week, and more words.\n",
}


def open_embedded(root: Path, index: SemanticIndex) -> App:
    app = open_app(Settings(vault=root))
    app.semantic = index
    app.indexer.reconcile()
    embed_pending(app.db, index)
    return app


@pytest.fixture
def app(tmp_path: Path, semantic_index: SemanticIndex) -> Iterator[App]:
    app = open_embedded(write_files(tmp_path / "vault", NOTES), semantic_index)
    yield app
    app.close()


def search(app: App, query: str, mode: SearchMode, limit: int = 20) -> SearchResults:
    sources = SearchSources(app.db, names_cache().get, app.semantic, True)
    return find_notes(sources, SearchRequest(query, mode, limit=limit))


def test_a_word_in_one_note_finds_that_note_alone_in_hybrid_mode(app: App) -> None:
    found = search(app, "zorblax", "hybrid")
    assert [hit.path for hit in found.hits] == ["notes/odd.md"]
    assert (found.total, found.total_exact) == (1, True)


def test_hybrid_still_finds_a_paraphrase_no_word_of_which_is_in_the_note(app: App) -> None:
    found = search(app, "how do I keep my notes in step between mobile and computer", "hybrid")
    assert found.hits[0].path == "apps/sync.md"
    assert found.total == len(found.hits) < len(NOTES)  # not every note of the vault


def test_a_note_named_as_searched_comes_first_in_every_mode(app: App) -> None:
    for mode in ("keyword", "semantic", "hybrid"):
        found = search(app, "Tasks", mode)
        assert found.hits[0].path == "zz/Tasks.md", mode


def test_hybrid_total_over_more_matches_than_it_reads_is_an_estimate(
    tmp_path: Path, semantic_index: SemanticIndex
) -> None:
    many = FUSION_DEPTH + 20
    files = {f"log/{n}.md": f"# Day {n}\nThe heron came back to the pond.\n" for n in range(many)}
    app = open_embedded(write_files(tmp_path / "vault", files), semantic_index)
    try:
        found = search(app, "heron", "hybrid")
        assert not found.total_exact and found.total >= many
        assert search(app, "heron", "keyword").total == many  # keyword counts exactly
    finally:
        app.close()


class WordCounts:
    """A model that reads words only: a text's vector is its word counts, one axis a word.
    With it a test chooses exactly how close each chunk is to a query."""

    model_id = "test-word-counts"
    dimensions = 1024
    source = ModelSource(model_id, Path("none.onnx"), Path("none.txt"))

    def embed_texts(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dimensions] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_texts([text])[0]
        return vector


def test_a_long_list_note_does_not_win_by_one_passage_among_many(tmp_path: Path) -> None:
    # Two sections of 62 are nearer the query than the short note is: by its best chunk, or
    # its best two, the list came first.
    sections = [f"## Part {n}\n{'kanban calendar citations ' * 5}\n" for n in range(60)]
    sections[17:17] = ["## Phone sync\nphone sync phone sync\n"] * 2
    files = {
        "lists/plugins.md": "# Plugins\n" + "".join(sections),
        "apps/sync.md": "# Sync\nSync the phone.\n",
    }
    app = open_embedded(write_files(tmp_path / "vault", files), SemanticIndex(model=WordCounts()))
    try:
        found = search(app, "phone sync", "semantic")
        assert [hit.path for hit in found.hits] == ["apps/sync.md", "lists/plugins.md"]
        assert "phone sync" in found.hits[1].snippet  # its snippet is still its best passage
    finally:
        app.close()


def test_while_the_model_is_built_searches_say_how_far_and_keyword_results_come_back(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first start distils the model for a minute or more: a search then answers at once,
    with the progress, and hybrid with the keyword results meanwhile."""
    app = open_embedded(write_files(tmp_path / "vault", NOTES), semantic_index)
    release = threading.Event()

    def slow_load(*args: object) -> EmbeddingModel:
        on_progress: Callable[[float], None] = args[-1]  # type: ignore[assignment]
        on_progress(0.4)
        release.wait(30)
        return semantic_index.model()

    monkeypatch.setattr(search_module, "load_model", slow_load)
    app.semantic = SemanticIndex()  # a fresh start: the vectors are there, the model is not
    try:
        started = time.monotonic()
        hybrid = search(app, "zorblax", "hybrid")
        assert hybrid.progress == "building the embedding model, 40 %; keyword results meanwhile"
        assert [hit.path for hit in hybrid.hits] == ["notes/odd.md"]
        semantic = search(app, "zorblax", "semantic")
        assert semantic.progress == "building the embedding model, 40 %"
        assert (semantic.hits, semantic.complete) == ([], False)
        assert time.monotonic() - started < 2.0  # not a wait for the build
        release.set()
        app.semantic.model(wait=None)
        assert search(app, "zorblax", "semantic").progress is None
    finally:
        release.set()
        app.close()


def test_the_bench_judges_hybrid_precision_beside_recall(app: App) -> None:
    """`make bench` reports hybrid precision: the share of its results that hold the query's
    words or are judged relevant. A word in one note is answered by that note alone."""
    word = judge_hybrid(app, "zorblax", set())
    assert (word.results, word.good) == (1, 1)
    question = "how do I keep my notes in step between mobile and computer"
    paraphrase = judge_hybrid(app, question, {"apps/sync.md"})
    assert paraphrase.rank == 1 and paraphrase.good >= 1
    assert precision_of([word, paraphrase]) == (1 + paraphrase.good / paraphrase.results) / 2
