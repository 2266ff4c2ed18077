"""The embedding worker and the vectors in the cache: incremental, resumable, model-aware."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.helpers import wait_for, write_files
from weaver.cache import vectors
from weaver.cache.models import NoteChunk, NoteEmbedding
from weaver.cache.read import read_snapshot
from weaver.cache.vectors import ChunkMatrix
from weaver.config import Settings
from weaver.errors import SemanticUnavailableError
from weaver.runtime.app import App, open_app
from weaver.semantic import worker as worker_module
from weaver.semantic.model import TRANSFORMER_MODEL, EmbeddingModel
from weaver.semantic.search import SemanticIndex
from weaver.semantic.worker import EmbeddingWorker, embed_pending

NOTES = {
    "sync.md": "# Obsidian Sync\nKeeps the vault the same on the mobile app and the desktop.\n",
    "bread.md": "# Sourdough\nA lively starter, flour, water and salt, then a long proof.\n",
    "rates.md": "# Rates\nThe central bank raised interest rates to slow inflation.\n",
    "long.md": "# Long\n" + "## Part\n" + "word " * 200 + "\n",
}


@pytest.fixture
def app(tmp_path: Path, semantic_index: SemanticIndex, db_url: str | None) -> Iterator[App]:
    root = write_files(tmp_path / "vault", NOTES)
    app = open_app(Settings(vault=root, database_url=db_url))
    app.semantic = semantic_index
    app.indexer.reconcile()
    yield app
    app.close()


def chunk_rows(app: App) -> list[tuple[str, int]]:
    with app.db.connect() as conn:
        rows = conn.execute(select(NoteChunk.note_path, NoteChunk.chunk_no))
        return [(path, number) for path, number in rows]


def embedded_at(app: App) -> dict[str, int]:
    with app.db.connect() as conn:
        rows = conn.execute(select(NoteEmbedding.note_path, NoteEmbedding.embedded_at))
        return {row.note_path: row.embedded_at for row in rows}


@pytest.mark.both_backends  # the vectors' SQL, on PostgreSQL too
def test_a_first_pass_embeds_every_note_in_chunks(app: App) -> None:
    assert embed_pending(app.db, app.semantic) == len(NOTES)
    rows = chunk_rows(app)
    assert {path for path, _ in rows} == set(NOTES)
    assert len([r for r in rows if r[0] == "long.md"]) == 2  # 200 words, split with overlap
    with app.db.connect() as conn:
        assert vectors.count_embedded(conn, app.semantic.model_id).complete
        version = vectors.vectors_version(conn)
    assert embed_pending(app.db, app.semantic) == 0  # nothing changed, nothing embedded
    with app.db.connect() as conn:  # and readers keep their loaded matrix
        assert vectors.vectors_version(conn) == version


@pytest.mark.both_backends  # the vectors' SQL, on PostgreSQL too
def test_an_edit_re_embeds_that_note_only(app: App) -> None:
    embed_pending(app.db, app.semantic)
    before = embedded_at(app)
    (app.vault.root / "bread.md").write_text("# Sourdough\nRye flour this time.\n")
    app.indexer.reconcile()
    assert embed_pending(app.db, app.semantic) == 1
    after = embedded_at(app)
    assert after["bread.md"] >= before["bread.md"]
    assert {p: after[p] for p in after if p != "bread.md"} == {
        p: before[p] for p in before if p != "bread.md"
    }
    with app.db.connect() as conn:
        page = app.semantic.search(conn, "baking with rye", 1, 0)
    assert page.hits[0].path == "bread.md"
    assert "Rye flour" in page.hits[0].snippet


@pytest.mark.both_backends  # the vectors' SQL, on PostgreSQL too
def test_a_move_keeps_the_vectors_and_a_delete_drops_them(app: App) -> None:
    embed_pending(app.db, app.semantic)
    root = app.vault.root
    (root / "sync.md").rename(root / "moved-sync.md")
    (root / "rates.md").unlink()
    app.indexer.reconcile()
    assert embed_pending(app.db, app.semantic) == 0  # re-keyed, not embedded again
    paths = {path for path, _ in chunk_rows(app)}
    assert "moved-sync.md" in paths
    assert not paths & {"sync.md", "rates.md"}


def test_a_changed_model_re_embeds_everything(app: App, semantic_index: SemanticIndex) -> None:
    embed_pending(app.db, app.semantic)
    other = SemanticIndex(TRANSFORMER_MODEL, threads=2)  # from static to the transformer
    assert embed_pending(app.db, other) == len(NOTES)
    with app.db.connect() as conn:
        models = set(conn.execute(select(NoteEmbedding.model)).scalars())
    assert models == {TRANSFORMER_MODEL}
    with read_snapshot(app.db) as conn:
        assert other.matrix(conn).matrix.shape[1] == other.model().dimensions == 384


@pytest.mark.both_backends  # the vectors' SQL, on PostgreSQL too
def test_a_pass_stopped_midway_resumes_without_duplicates(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "BATCH_NOTES", 1)
    batches: list[int] = []
    stop_after_two = lambda: len(batches) >= 2  # noqa: E731
    embed_pending(app.db, app.semantic, should_stop=stop_after_two, on_batch=batches.append)
    assert len({path for path, _ in chunk_rows(app)}) == 2
    assert embed_pending(app.db, app.semantic) == len(NOTES) - 2
    rows = chunk_rows(app)
    assert len(rows) == len(set(rows))
    with app.db.connect() as conn:
        expected = conn.execute(select(func.sum(NoteEmbedding.chunk_count))).scalar_one()
    assert len(rows) == expected


def test_the_worker_embeds_in_the_background_and_follows_edits(app: App) -> None:
    worker = EmbeddingWorker(app.db, app.semantic, app.bus)
    worker.start()
    try:
        wait_for(lambda: set(embedded_at(app)) == set(NOTES), timeout=60)
        (app.vault.root / "new.md").write_text("# Tides\nThe moon pulls the oceans.\n")
        app.indexer.reconcile()  # publishes the change: the worker wakes
        wait_for(lambda: "new.md" in embedded_at(app), timeout=30)
    finally:
        worker.stop()
    assert not worker.running and worker.error is None


class StuckLoad(SemanticIndex):
    """A model whose load does not end: another process distilling it holds its file lock."""

    def __init__(self) -> None:
        self.started, self.released = threading.Event(), threading.Event()
        super().__init__()

    def _load(self, on_progress: Callable[[float], None]) -> EmbeddingModel:
        self.started.set()
        self.released.wait(60)
        raise SemanticUnavailableError("the other process let go")


def test_a_worker_waiting_for_its_model_stops_at_once(app: App) -> None:
    """A daemon stopping while its model loads stopped at once, not after the load: the
    stop's grace (7 s) ran out while the worker waited on another process's distillation."""
    index = StuckLoad()
    worker = EmbeddingWorker(app.db, index, app.bus)
    worker.start()
    try:
        assert index.started.wait(30)
        stopping = time.monotonic()
        worker.stop(timeout=5)
        assert not worker.running
        assert time.monotonic() - stopping < 2
        assert worker.error is None  # stopped, not failed
    finally:
        index.released.set()


def test_the_worker_holds_its_batches_while_the_server_answers_calls(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "BATCH_NOTES", 1)
    monkeypatch.setattr(worker_module, "DEFER_MAX_S", 30.0)
    answering = True
    polls: list[int] = []

    def busy() -> bool:
        polls.append(len(embedded_at(app)))
        return answering

    worker = EmbeddingWorker(app.db, app.semantic, app.bus, busy)
    worker.start()
    try:
        wait_for(lambda: len(polls) >= 3, what="the worker asking whether calls come in")
        assert embedded_at(app) == {}  # nothing embedded while the server answers
        answering = False
        wait_for(lambda: set(embedded_at(app)) == set(NOTES), timeout=60)
    finally:
        worker.stop()
    assert len(set(polls)) > 1  # asked again before each batch, not once per pass


def test_a_worker_held_back_too_long_embeds_anyway(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "DEFER_MAX_S", 0.2)
    worker = EmbeddingWorker(app.db, app.semantic, app.bus, lambda: True)
    worker.start()
    try:
        wait_for(lambda: set(embedded_at(app)) == set(NOTES), timeout=60)
    finally:
        worker.stop()


@pytest.mark.both_backends  # the vectors' SQL, on PostgreSQL too
def test_a_loaded_matrix_is_patched_to_equal_a_fresh_load(app: App) -> None:
    index = SemanticIndex(app.semantic.model_id, app.semantic.model().source.onnx_path)
    embed_pending(app.db, app.semantic)
    with read_snapshot(app.db) as conn:
        index.matrix(conn)  # loaded whole
    root = app.vault.root
    (root / "bread.md").write_text("# Sourdough\nRye flour this time.\n")
    (root / "sync.md").rename(root / "moved-sync.md")
    (root / "rates.md").unlink()
    write_files(root, {"tides.md": "# Tides\nThe moon pulls the oceans.\n"})
    app.indexer.reconcile()
    embed_pending(app.db, app.semantic)
    with read_snapshot(app.db) as conn:
        patched = index.matrix(conn)
        whole = vectors.load_vectors(conn, index.model_id, index.model().dimensions)
    assert rows_of(patched) == rows_of(whole)


def rows_of(matrix: ChunkMatrix) -> dict[tuple[str, int], bytes]:
    rows = {}
    for i, path in enumerate(matrix.paths):
        for row in range(matrix.starts[i], matrix.starts[i + 1]):
            rows[(path, int(matrix.chunk_nos[row]))] = matrix.matrix[row].tobytes()
    return rows


def test_an_idle_index_lets_its_model_and_vectors_go_and_loads_them_again(app: App) -> None:
    index = SemanticIndex(app.semantic.model_id, threads=1)
    embed_pending(app.db, index)
    with read_snapshot(app.db) as conn:
        before = [hit.path for hit in index.search(conn, "baking bread", 2, 0).hits]
    assert index.holds_model
    assert not index.release_if_idle(60.0)  # used a moment ago: kept
    assert index.release_if_idle(0.0)
    assert not index.holds_model
    with read_snapshot(app.db) as conn:  # the next search loads them again, same answer
        assert [hit.path for hit in index.search(conn, "baking bread", 2, 0).hits] == before
    assert index.holds_model


def test_the_worker_unloads_the_model_when_idle_and_skips_idle_passes(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "POLL_SECONDS", 0.05)
    trims: list[bool] = []

    def trim() -> bool:
        trims.append(True)
        return True

    monkeypatch.setattr(worker_module, "trim_heap", trim)
    index = SemanticIndex(app.semantic.model_id, threads=1)
    worker = EmbeddingWorker(app.db, index, app.bus, release_after_s=0.3)
    worker.start()
    try:
        wait_for(lambda: set(embedded_at(app)) == set(NOTES), timeout=60)
        wait_for(lambda: not index.holds_model, timeout=10, what="the idle model unloaded")
        assert trims  # the freed memory given back
        passes = worker.passes
        time.sleep(0.5)  # ten safety-net wake-ups, the cache unchanged: no pass, no reload
        assert worker.passes == passes and not index.holds_model
        with read_snapshot(app.db) as conn:  # a search still answers, loading it again
            hits = index.search(conn, "baking bread", 1, 0).hits
        assert [hit.path for hit in hits] == ["bread.md"]
        (app.vault.root / "new.md").write_text("# Tides\nThe moon pulls the oceans.\n")
        app.indexer.reconcile()  # an edit after the unload is embedded all the same
        wait_for(lambda: "new.md" in embedded_at(app), timeout=30)
    finally:
        worker.stop()
    assert worker.error is None
