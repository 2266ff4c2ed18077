"""PDF text kept in step with the vault by the background extractor: a phrase only a PDF page
holds is found with its file and page, a PDF being one hit at its best page; replacing the PDF
(seen by the watcher) replaces its hits and deleting it removes them; a malformed PDF and one
past the reader's bounds are listed as problems; a slow PDF never holds up note indexing, and
stopping the worker kills a reader under way; without pypdfium2 notes index as ever and the
worker says why there is no PDF text. The tests of what the cache holds run on both backends
(FTS5 on SQLite, `tsvector`s on PostgreSQL), the same assertions."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from watchfiles import Change

from tests.attachments.pdfs import text_pdf
from tests.helpers import wait_for
from weaver.attachments.pdf_reader import PdfReader, PdfText, read_pdf_document
from weaver.cache import attachment_text, fts
from weaver.cache.attachment_text import PageHit
from weaver.index.attachment_text import MERGE_AFTER, AttachmentTextWorker, extract_pending
from weaver.runtime.app import App
from weaver.runtime.state import ServerState
from weaver.search import SearchRequest, find_notes
from weaver.vault.watcher import VaultWatcher


def pages_matching(app: App, words: str) -> list[PageHit]:
    """The PDF pages `search_notes` answers for `words` (in keyword mode: what the cache's
    index finds, whether or not a model is installed)."""
    request = SearchRequest(words, mode="keyword")
    return find_notes(ServerState(app, watch=False).search_sources, request).attachment_hits


def marked(snippet: str) -> str:
    """A snippet with a phrase's words marked once: FTS5 marks the phrase, PostgreSQL (for
    notes too) each word."""
    return snippet.replace("</mark> <mark>", " ")


def problems(app: App) -> dict[str, str]:
    with app.db.connect() as conn:
        return {p.path: p.problem for p in attachment_text.pdf_problems(conn, 50, 0).items}


@pytest.mark.both_backends
def test_a_phrase_only_in_a_pdf_page_is_found_with_its_file_and_page(
    app: App, vault_dir: Path
) -> None:
    (vault_dir / "papers").mkdir()
    (vault_dir / "papers" / "turbine.pdf").write_bytes(
        text_pdf(["Introduction to wind", "Blade pitch control loops", "Conclusion"])
    )
    (vault_dir / "note.md").write_text("A note about wind.\n")
    app.indexer.reconcile()
    assert pages_matching(app, '"pitch control"') == []  # recorded, not yet read
    assert extract_pending(app.db, app.vault) == 1
    (hit,) = pages_matching(app, '"pitch control"')
    assert (hit.path, hit.page) == ("papers/turbine.pdf", 2)
    assert marked(hit.snippet) == "Blade <mark>pitch control</mark> loops"
    # The note's own search is untouched: no note holds the phrase.
    with app.db.connect() as conn:
        assert fts.search(conn, '"pitch control"', 10, 0).total == 0
    assert extract_pending(app.db, app.vault) == 0  # read once, not again


@pytest.mark.both_backends
def test_a_pdf_is_one_hit_at_its_best_page(app: App, vault_dir: Path) -> None:
    (vault_dir / "manual.pdf").write_bytes(
        text_pdf(
            [
                "An introduction to the plant, its history, its people and one valve",
                "The valve is closed, the valve is checked, the valve is logged",
                "Appendix: the plant's other parts, pumps and pipes, and one valve",
                "Glossary ends with pressure",
                "relief at last",
            ]
        )
    )
    app.indexer.reconcile()
    extract_pending(app.db, app.vault)
    (hit,) = pages_matching(app, "valve")  # on three pages: one hit, at the page most about it
    assert (hit.path, hit.page) == ("manual.pdf", 2)
    assert hit.snippet.count("<mark>valve</mark>") == 3
    # A phrase is never found across a page break.
    assert pages_matching(app, '"pressure relief"') == []
    assert [h.page for h in pages_matching(app, '"relief at last"')] == [5]


@pytest.mark.both_backends
def test_replacing_and_deleting_the_pdf_updates_its_hits_through_the_watcher(
    app: App, vault_dir: Path
) -> None:
    pdf = vault_dir / "scan.pdf"
    pdf.write_bytes(text_pdf(["The old quarterly figures"]))
    app.indexer.reconcile()
    extract_pending(app.db, app.vault)
    assert [h.page for h in pages_matching(app, "quarterly")] == [1]
    watcher = VaultWatcher(app.indexer)

    pdf.write_bytes(text_pdf(["Cover page", "The revised annual figures"]))
    watcher.handle_changes({(Change.modified, str(pdf))})
    # The indexer recorded the new file: the old text is no longer found, even before the
    # extractor has read the new one.
    assert pages_matching(app, "quarterly") == []
    extract_pending(app.db, app.vault)
    assert [(h.path, h.page) for h in pages_matching(app, "annual")] == [("scan.pdf", 2)]
    # The old text is gone from both indexes, not only hidden: new pages may take the old
    # ones' ids, and would otherwise be found by the old words.
    assert indexed(app, "quarterly") == {"pages": 0, "documents": 0}
    assert indexed(app, "annual") == {"pages": 1, "documents": 1}

    pdf.unlink()
    watcher.handle_changes({(Change.deleted, str(pdf))})
    assert pages_matching(app, "annual") == []
    extract_pending(app.db, app.vault)
    with app.db.connect() as conn:
        stored = conn.exec_driver_sql("SELECT count(*) FROM attachment_pages").scalar_one()
    assert stored == 0  # the gone PDF's pages are dropped, not only hidden
    assert indexed(app, "annual") == {"pages": 0, "documents": 0}


def indexed(app: App, word: str) -> dict[str, int]:
    """How many pages and documents each backend's own index finds `word` in, fresh or not."""
    if app.db.dialect.name == "sqlite":
        tables = {"pages": "attachment_fts", "documents": "attachment_doc_fts"}
        sql = "SELECT count(*) FROM {0} WHERE {0} MATCH '" + word + "'"
    else:
        tables = {"pages": "attachment_page_search", "documents": "attachment_doc_search"}
        sql = (
            "SELECT count(*) FROM {0} WHERE document @@ to_tsquery('weaver_search', '" + word + "')"
        )
    with app.db.connect() as conn:
        return {k: conn.exec_driver_sql(sql.format(t)).scalar_one() for k, t in tables.items()}


@pytest.mark.both_backends
def test_a_malformed_pdf_and_one_past_the_bounds_are_listed_as_problems(
    app: App, vault_dir: Path
) -> None:
    (vault_dir / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catal")
    (vault_dir / "long.pdf").write_bytes(text_pdf([f"page number {i}" for i in range(1, 6)]))
    (vault_dir / "slow.pdf").write_bytes(text_pdf(["never read in time"]))
    app.indexer.reconcile()

    def bounded(file: Path, should_stop: Callable[[], bool]) -> PdfText:
        # The real reader, with bounds small enough to hit: 3 pages, and no time at all for
        # slow.pdf.
        timeout = 0.001 if file.name == "slow.pdf" else 30.0
        return read_pdf_document(file, timeout_s=timeout, max_pages=3, should_stop=should_stop)

    assert extract_pending(app.db, app.vault, read_pdf=bounded) == 3
    found = problems(app)
    assert found.keys() == {"broken.pdf", "long.pdf", "slow.pdf"}
    assert "not a PDF that can be read" in found["broken.pdf"]
    assert found["long.pdf"].startswith("only the first 3 of its 5 pages are searched")
    assert "took longer than 0.001 s" in found["slow.pdf"]
    # What was read of the long one is searchable; what was not, is not.
    assert [h.page for h in pages_matching(app, '"number 3"')] == [3]
    assert pages_matching(app, '"number 5"') == []
    # A problem PDF is not read again until it changes.
    assert extract_pending(app.db, app.vault, read_pdf=bounded) == 0


def test_a_slow_pdf_never_holds_up_note_indexing(app: App, vault_dir: Path) -> None:
    (vault_dir / "huge.pdf").write_bytes(text_pdf(["a huge document"]))
    app.indexer.reconcile()
    reading = threading.Event()
    release = threading.Event()

    def slow(file: Path, should_stop: Callable[[], bool]) -> PdfText:
        reading.set()
        while not release.is_set() and not should_stop():
            time.sleep(0.01)
        return read_pdf_document(file)

    worker = AttachmentTextWorker(app.db, app.vault, read_pdf=slow)
    worker.start()
    try:
        wait_for(reading.is_set, what="the worker to read the PDF")
        (vault_dir / "fresh.md").write_text("A note written while the PDF extracts\n")
        started = time.monotonic()
        app.indexer.apply_paths(["fresh.md"])
        with app.db.connect() as conn:
            assert fts.search(conn, '"while the PDF extracts"', 10, 0).total == 1
        assert time.monotonic() - started < 2.0  # promptly, while the read still waits
        assert not release.is_set()
        release.set()
        wait_for(lambda: pages_matching(app, "huge"), what="the PDF's text")
    finally:
        release.set()
        worker.stop()
    assert not worker.running


def test_stopping_the_worker_kills_a_reader_under_way(app: App, vault_dir: Path) -> None:
    (vault_dir / "doc.pdf").write_bytes(text_pdf(["text"]))
    app.indexer.reconcile()
    started = threading.Event()

    # A reader that never answers (as one stuck in a hostile file would not), stopped by the
    # real reader's stop check.
    reader = PdfReader(command=[sys.executable, "-c", "import time; time.sleep(60)"])

    def endless(file: Path, should_stop: Callable[[], bool]) -> PdfText:
        started.set()
        return reader.read(file, should_stop)

    worker = AttachmentTextWorker(app.db, app.vault, read_pdf=endless)
    worker.start()
    wait_for(started.is_set, what="the reader to start")
    began = time.monotonic()
    worker.stop()
    assert time.monotonic() - began < 5.0
    assert not worker.running
    with app.db.connect() as conn:
        assert attachment_text.count_pending(conn) == 1  # left for the next start


def test_without_pypdfium2_notes_index_and_the_worker_says_why(
    app: App, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    (vault_dir / "doc.pdf").write_bytes(text_pdf(["unreadable here"]))
    (vault_dir / "note.md").write_text("notes still index\n")
    app.indexer.reconcile()
    worker = AttachmentTextWorker(app.db, app.vault)
    worker.start()
    worker.stop()
    assert worker.error is not None and "weaver-mcp[attachments]" in worker.error
    with app.db.connect() as conn:
        assert fts.search(conn, '"notes still index"', 10, 0).total == 1
    assert pages_matching(app, "unreadable") == []


def test_the_worker_sleeps_until_the_indexer_reports_an_attachment(
    app: App, vault_dir: Path
) -> None:
    """Idle, it makes no pass (it looked at the cache every second); a note changing does not
    wake it, a PDF arriving does, and its text is found soon after."""
    app.indexer.reconcile()
    worker = AttachmentTextWorker(app.db, app.vault)
    app.indexer.attachment_listeners.append(worker.wake)
    worker.start()
    try:
        wait_for(lambda: worker.passes == 1, what="the first pass")
        (vault_dir / "note.md").write_text("A note, not an attachment\n")
        app.indexer.apply_paths(["note.md"])
        time.sleep(1.5)
        assert worker.passes == 1
        (vault_dir / "later.pdf").write_bytes(text_pdf(["a document that arrived later"]))
        app.indexer.apply_paths(["later.pdf"])
        wait_for(lambda: pages_matching(app, "arrived later"), what="the new PDF's text")
        wait_for(lambda: worker.passes == 2, what="the pass to end")
    finally:
        worker.stop()


def test_after_a_pass_the_text_indexes_are_merged_into_one_piece(app: App, vault_dir: Path) -> None:
    """Each PDF is stored in a transaction of its own, which FTS5 keeps as a segment of its
    own; a search pays for each segment. Once a pass of many is done nothing is left to merge."""
    for i in range(MERGE_AFTER):
        (vault_dir / f"paper-{i}.pdf").write_bytes(text_pdf([f"Paper {i} on turbines", "More"]))
    app.indexer.reconcile()
    assert extract_pending(app.db, app.vault) == MERGE_AFTER
    with app.db.begin() as conn:
        for table in ("attachment_fts", "attachment_doc_fts"):
            before = conn.exec_driver_sql("SELECT total_changes()").scalar_one()
            conn.exec_driver_sql(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', -64)")
            after = conn.exec_driver_sql("SELECT total_changes()").scalar_one()
            assert after - before < 2, f"{table} was left in pieces"  # FTS5: nothing merged
    assert len(pages_matching(app, "turbines")) == 20  # the search's page
