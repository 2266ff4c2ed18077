"""PDF pages by meaning: a phrase only a PDF page holds, asked in other words, is found by the
semantic and hybrid modes with its file and page; a changed PDF's old page never answers and
its new one does once embedded; a deleted PDF's vectors go; notes are embedded before PDF pages
and a note changed meanwhile goes before the PDFs left; the PDF matrix is bounded in whole
PDFs; the embedding status counts PDF pages."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp import Client
from sqlalchemy import Connection, func, select

from tests.attachments.pdfs import text_pdf
from tests.helpers import wait_for, write_files
from tests.mcp_server.test_cache_tools import Tools, serve
from weaver.cache import attachment_text, attachment_vectors
from weaver.cache.graph import names_cache
from weaver.cache.models import AttachmentChunk, AttachmentEmbedding, NoteEmbedding
from weaver.config import Settings
from weaver.index.attachment_text import AttachmentTextWorker, extract_pending
from weaver.runtime.app import App, open_app
from weaver.search import SearchRequest, find_notes
from weaver.search.results import SearchMode, SearchResults, SearchSources
from weaver.semantic import worker as worker_module
from weaver.semantic.search import SemanticIndex, embedding_status
from weaver.semantic.worker import BATCH_PDFS, EmbeddingWorker, embed_pending
from weaver.vault.events import NoteModified

ECONOMY = text_pdf(
    [
        "Introduction to wind power",
        "The central bank raised interest rates to slow inflation",
        "Conclusion and thanks",
    ]
)
FILES: dict[str, str | bytes] = {
    "kitchen/bread.md": "# Sourdough\nA lively starter, flour, water and salt.\n",
    "apps/sync.md": "# Obsidian Sync\nKeeps the vault the same on mobile and desktop.\n",
    "papers/economy.pdf": ECONOMY,
    "papers/garden.pdf": text_pdf(["Tomatoes need full sun and regular watering"]),
}
PARAPHRASE = "monetary policy to fight rising prices"  # no word of it is in the PDF


def open_extracted(root: Path, index: SemanticIndex, db_url: str | None = None) -> App:
    """An app on `root` with its PDFs' text read, and an index of its own on `index`'s model
    (an index keeps one cache's matrices)."""
    app = open_app(Settings(vault=root, database_url=db_url))
    app.semantic = SemanticIndex(model=index.model())
    app.indexer.reconcile()
    extract_pending(app.db, app.vault)
    return app


@pytest.fixture
def app(tmp_path: Path, semantic_index: SemanticIndex, db_url: str | None) -> Iterator[App]:
    app = open_extracted(write_files(tmp_path / "vault", FILES), semantic_index, db_url)
    yield app
    app.close()


def search(app: App, query: str, mode: SearchMode, **kwargs: object) -> SearchResults:
    sources = SearchSources(app.db, names_cache().get, app.semantic, True)
    return find_notes(sources, SearchRequest(query, mode, **kwargs))  # type: ignore[arg-type]


def pdf_places(found: SearchResults) -> list[tuple[str, int]]:
    return [(hit.path, hit.page) for hit in found.attachment_hits]


def embedded_pdfs(app: App) -> set[str]:
    with app.db.connect() as conn:
        return set(conn.execute(select(AttachmentEmbedding.path)).scalars())


def chunk_count(app: App, path: str) -> int:
    with app.db.connect() as conn:
        query = select(func.count()).where(AttachmentChunk.path == path)
        return int(conn.execute(query).scalar_one())


def change_file(path: Path, content: bytes) -> None:
    """Write `content`, with an mtime the indexer cannot mistake for the old one's."""
    stat = path.stat()
    path.write_bytes(content)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


@pytest.mark.both_backends
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_paraphrase_of_a_pdf_page_finds_its_file_and_page(app: App, mode: SearchMode) -> None:
    assert pdf_places(search(app, PARAPHRASE, mode)) == []  # not embedded; no word matches
    assert embed_pending(app.db, app.semantic) == 2 + 2  # the notes, then the PDFs
    found = search(app, PARAPHRASE, mode)
    assert pdf_places(found)[0] == ("papers/economy.pdf", 2)
    hit = found.attachment_hits[0]
    assert hit.snippet == "The central bank raised interest rates to slow inflation"
    assert found.attachment_total >= 1
    assert "PDF pages: embedded 4 of 4" in (found.coverage or "")
    if mode == "hybrid":  # below the floor of meaning, and no word: the garden is left out
        assert pdf_places(found) == [("papers/economy.pdf", 2)]


def test_notes_rank_the_same_with_pdf_pages_embedded(
    tmp_path: Path, semantic_index: SemanticIndex
) -> None:
    notes = {k: v for k, v in FILES.items() if k.endswith(".md")}
    alone = open_extracted(write_files(tmp_path / "alone", notes), semantic_index)
    embed_pending(alone.db, alone.semantic)
    with_pdfs = open_extracted(write_files(tmp_path / "with", FILES), semantic_index)
    embed_pending(with_pdfs.db, with_pdfs.semantic)
    try:
        for mode in ("semantic", "hybrid"):
            for query in (PARAPHRASE, "keep my phone and laptop notes the same", "flour"):
                mine = search(with_pdfs, query, mode)
                theirs = search(alone, query, mode)
                assert [(h.path, h.score) for h in mine.hits] == [
                    (h.path, h.score) for h in theirs.hits
                ]
    finally:
        alone.close()
        with_pdfs.close()


@pytest.mark.both_backends
def test_hybrid_fuses_words_and_meaning_naming_the_page_holding_the_words(app: App) -> None:
    embed_pending(app.db, app.semantic)
    found = search(app, "tomatoes", "hybrid")
    assert pdf_places(found) == [("papers/garden.pdf", 1)]
    assert "<mark>Tomatoes</mark>" in found.attachment_hits[0].snippet  # the words' snippet


def test_hybrid_places_only_the_pdfs_it_shows(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Words in many PDFs: hybrid reads their ranking `FUSION_DEPTH` deep, but looks for the
    best page of the PDFs on the page of hits only (a placement scores every page of each)."""
    pages = ["Cover", "The pressure valve and the pressure gauge"]
    files: dict[str, str | bytes] = {f"manuals/m{i}.pdf": text_pdf(pages) for i in range(6)}
    app = open_extracted(write_files(tmp_path / "vault", files), semantic_index)
    placed: list[int] = []
    best_pages = attachment_text._best_pages

    def noting(conn: Connection, expression: str, documents: dict[int, str]) -> object:
        placed.append(len(documents))
        return best_pages(conn, expression, documents)

    monkeypatch.setattr(attachment_text, "_best_pages", noting)
    try:
        embed_pending(app.db, app.semantic)
        found = search(app, "pressure valve", "hybrid", limit=2)
    finally:
        app.close()
    assert len(found.attachment_hits) == 2 and found.attachment_total >= 6
    assert all(h.page == 2 and "<mark>valve</mark>" in h.snippet for h in found.attachment_hits)
    assert placed and max(placed) <= 2


def test_a_folder_filter_keeps_pdfs_under_it_and_a_tag_filter_none(app: App) -> None:
    embed_pending(app.db, app.semantic)
    assert pdf_places(search(app, PARAPHRASE, "semantic", directory="kitchen")) == []
    assert pdf_places(search(app, PARAPHRASE, "semantic", directory="papers"))[0][0] == (
        "papers/economy.pdf"
    )
    assert pdf_places(search(app, PARAPHRASE, "semantic", tag="bread")) == []


@pytest.mark.both_backends
def test_a_changed_pdfs_old_page_never_answers_and_its_new_one_does(app: App) -> None:
    embed_pending(app.db, app.semantic)
    assert pdf_places(search(app, PARAPHRASE, "semantic"))[0] == ("papers/economy.pdf", 2)
    change_file(
        app.vault.root / "papers" / "economy.pdf",
        text_pdf(["Wind turbines", "Blade pitch control for gusty days"]),
    )
    app.indexer.reconcile()  # the file changed: its vectors are stale at once
    assert "papers/economy.pdf" not in [
        p for p, _ in pdf_places(search(app, PARAPHRASE, "semantic"))
    ]
    extract_pending(app.db, app.vault)  # read again: still stale until embedded
    assert "papers/economy.pdf" not in [
        p for p, _ in pdf_places(search(app, PARAPHRASE, "semantic"))
    ]
    assert embed_pending(app.db, app.semantic) == 1
    assert chunk_count(app, "papers/economy.pdf") == 2  # the old three pages' chunks went
    found = search(app, "blade pitch in gusty weather", "semantic")
    assert pdf_places(found)[0] == ("papers/economy.pdf", 2)
    assert "papers/economy.pdf" not in [p for p, _ in pdf_places(search(app, PARAPHRASE, "hybrid"))]


@pytest.mark.both_backends
def test_a_deleted_pdfs_vectors_go(app: App) -> None:
    embed_pending(app.db, app.semantic)
    assert pdf_places(search(app, PARAPHRASE, "semantic"))[0] == ("papers/economy.pdf", 2)
    (app.vault.root / "papers" / "economy.pdf").unlink()
    app.indexer.reconcile()
    assert pdf_places(search(app, PARAPHRASE, "semantic"))[:1] != [("papers/economy.pdf", 2)]
    extract_pending(app.db, app.vault)  # forgets its text
    embed_pending(app.db, app.semantic)
    assert embedded_pdfs(app) == {"papers/garden.pdf"}
    assert chunk_count(app, "papers/economy.pdf") == 0


def test_notes_are_embedded_before_the_pdf_pages_waiting(
    tmp_path: Path, semantic_index: SemanticIndex
) -> None:
    files: dict[str, str | bytes] = {
        f"library/report-{n:02}.pdf": text_pdf([f"Annual report number {n}", "Tables"])
        for n in range(50)
    }
    app = open_extracted(write_files(tmp_path / "vault", files), semantic_index)
    try:
        (app.vault.root / "rates.md").write_text(
            "# Rates\nThe central bank raised interest rates to slow inflation.\n"
        )
        app.indexer.reconcile()
        batches = 0

        def one_batch_only() -> bool:
            nonlocal batches
            batches += 1
            return batches > 1

        # A pass stopped after its first batch: the note is embedded, no PDF yet.
        assert embed_pending(app.db, app.semantic, one_batch_only) == 1
        assert embedded_pdfs(app) == set()
        found = search(app, PARAPHRASE, "semantic")
        assert [hit.path for hit in found.hits] == ["rates.md"]
    finally:
        app.close()


def test_a_note_changed_while_pdfs_are_embedded_ends_the_pass_for_it(
    tmp_path: Path, semantic_index: SemanticIndex
) -> None:
    files: dict[str, str | bytes] = {
        f"library/report-{n:02}.pdf": text_pdf([f"Annual report number {n}"]) for n in range(20)
    }
    app = open_extracted(write_files(tmp_path / "vault", files), semantic_index)
    try:
        pdf_batches = 0

        def count_batches() -> None:
            nonlocal pdf_batches
            pdf_batches += 1

        # The worker's wake says notes changed after the first PDF batch: the pass ends there.
        done = embed_pending(
            app.db,
            app.semantic,
            before_batch=count_batches,
            notes_waiting=lambda: pdf_batches > 1,
        )
        assert done == len(embedded_pdfs(app)) == BATCH_PDFS
        assert embed_pending(app.db, app.semantic) == 20 - BATCH_PDFS  # the next pass goes on
        with app.db.connect() as conn:
            assert conn.execute(select(func.count()).select_from(NoteEmbedding)).scalar_one() == 0
    finally:
        app.close()


def test_the_pdf_matrix_holds_whole_pdfs_up_to_its_bound(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed_pending(app.db, app.semantic)
    with app.db.connect() as conn:
        model_id, dimensions = app.semantic.model_id, app.semantic.model().dimensions
        whole = attachment_vectors.load_page_vectors(conn, model_id, dimensions, 10)
        bounded = attachment_vectors.load_page_vectors(conn, model_id, dimensions, 3)
        cut = attachment_vectors.load_page_vectors(conn, model_id, dimensions, 2)
    assert whole.paths == ["papers/economy.pdf", "papers/garden.pdf"]
    assert len(whole.matrix) == 4
    assert bounded.paths == ["papers/economy.pdf"]  # the garden's row would pass the bound
    assert len(bounded.matrix) == 3 and bounded.starts.tolist() == [0, 3]
    assert cut.paths == [] and len(cut.matrix) == 0  # never part of a PDF


def test_a_pdf_is_embedded_up_to_its_bound_of_pages(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "MAX_PDF_PAGES", 2)
    files: dict[str, str | bytes] = {"long.pdf": text_pdf([f"Page {n} text" for n in range(5)])}
    app = open_extracted(write_files(tmp_path / "vault", files), semantic_index)
    try:
        embed_pending(app.db, app.semantic)
        assert chunk_count(app, "long.pdf") == 2
    finally:
        app.close()


def test_the_embedding_status_counts_pdf_pages(app: App) -> None:
    with app.db.connect() as conn:
        before = embedding_status(app.semantic, conn, True)
    assert before.endswith("; PDF pages: embedded 0 of 4")
    embed_pending(app.db, app.semantic)
    with app.db.connect() as conn:
        after = embedding_status(app.semantic, conn, True)
    assert after == "embedded 2 of 2 notes; PDF pages: embedded 4 of 4"


def test_the_pdf_text_worker_wakes_the_embedding_worker_for_new_text(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "POLL_SECONDS", 3600.0)  # no safety net's pass
    app = open_extracted(write_files(tmp_path / "vault", {"a.md": "# A\nalpha\n"}), semantic_index)
    embedding = EmbeddingWorker(app.db, app.semantic, app.bus)
    extractor = AttachmentTextWorker(app.db, app.vault, text_listeners=[embedding.wake])
    try:
        embedding.start()
        wait_for(lambda: embedding.passes >= 1, 60, "the first embedding pass")
        (app.vault.root / "economy.pdf").write_bytes(ECONOMY)
        app.indexer.reconcile()  # records the attachment; no note event
        extractor.start()  # reads its text, then wakes the embedding worker
        wait_for(lambda: embedded_pdfs(app) == {"economy.pdf"}, 30, "the PDF's vectors")
        assert pdf_places(search(app, PARAPHRASE, "semantic")) == [("economy.pdf", 2)]
    finally:
        extractor.stop()
        embedding.stop()
        app.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_search_notes_answers_pdf_pages_by_meaning_with_how_to_read_them(
    tmp_path: Path, semantic_index: SemanticIndex
) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", FILES)))
    served.app.semantic = SemanticIndex(model=semantic_index.model())
    extract_pending(served.app.db, served.app.vault)
    embed_pending(served.app.db, served.app.semantic)
    try:
        async with Client(served.server) as client:
            found = await Tools(client).ok("search_notes", query=PARAPHRASE, mode="hybrid")
    finally:
        served.app.close()
    assert found["attachments"] == [
        {
            "path": "papers/economy.pdf",
            "page": 2,
            "snippet": "The central bank raised interest rates to slow inflation",
            "score": found["attachments"][0]["score"],
            "readWith": 'get_attachment {"path": "papers/economy.pdf", "page": 2}',
        }
    ]
    assert found["attachmentTotal"] == 1
    assert "PDF pages: embedded 4 of 4" in found["coverage"]


def test_a_pdf_batch_is_bounded_in_chunks_so_notes_wait_little(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "BATCH_CHUNKS", 3)
    files: dict[str, str | bytes] = {
        f"two-{n}.pdf": text_pdf([f"First page {n}", f"Second page {n}"]) for n in range(4)
    }
    app = open_extracted(write_files(tmp_path / "vault", files), semantic_index)
    try:
        batches = 0

        def count_batches() -> None:
            nonlocal batches
            batches += 1

        done = embed_pending(
            app.db, app.semantic, before_batch=count_batches, notes_waiting=lambda: batches > 1
        )
        assert done == len(embedded_pdfs(app)) == 1  # 2 chunks: a second PDF would pass 3
        assert embed_pending(app.db, app.semantic) == 3
    finally:
        app.close()


def test_new_pdf_text_does_not_end_a_pdf_pass_but_a_note_change_does(
    tmp_path: Path, semantic_index: SemanticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While PDFs are extracted the text worker wakes this one at every PDF it stores; were
    that taken for a note change, each PDF pass would end before its first batch and no PDF
    would be embedded until every one was extracted."""
    monkeypatch.setattr(worker_module, "POLL_SECONDS", 3600.0)
    app = open_extracted(write_files(tmp_path / "vault", {"a.md": "# A\nalpha\n"}), semantic_index)
    embedding = EmbeddingWorker(app.db, app.semantic, app.bus)
    asked: list[bool] = []

    def a_pass(*_args: object, notes_waiting: Callable[[], bool], **_kwargs: object) -> int:
        if asked:  # only the first pass
            return 0
        embedding.wake()  # the PDF text worker stored another PDF meanwhile
        asked.append(notes_waiting())
        app.bus.publish([NoteModified("a.md")])  # a note changed meanwhile
        asked.append(notes_waiting())
        return 0

    monkeypatch.setattr(worker_module, "embed_pending", a_pass)
    try:
        embedding.start()
        wait_for(lambda: len(asked) == 2, 30, "the first pass")
    finally:
        embedding.stop()
        app.close()
    assert asked == [False, True]
