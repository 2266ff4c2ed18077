"""A keyword search reads the PDF pages on a thread of its own while it reads the notes (the
two take about the longer of the two on two cores, not their sum), and answers exactly as
when they are read after the notes: when every such thread is taken, that is what it does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attachments.pdfs import text_pdf
from tests.helpers import write_files
from weaver.attachments.pdf_text import pdf_available
from weaver.cache.graph import names_cache
from weaver.config import Settings
from weaver.index.attachment_text import extract_pending
from weaver.runtime.app import App, open_app
from weaver.search import SearchRequest, SearchResults, SearchSources, core, find_notes, pdf_pages

pytestmark = pytest.mark.skipif(not pdf_available(), reason="needs pypdfium2 (the extra)")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    files: dict[str, str | bytes] = {
        "Harvest.md": "# Harvest\nThe harvest moon rose.\n",
        "Field.md": "A harvest in the field.\n",
        "Reports/q3.pdf": text_pdf(["Quarterly report", "Harvest moon yields rose"]),
        "Reports/q4.pdf": text_pdf(["The harvest again", "and once more the harvest"]),
    }
    opened = open_app(Settings(vault=write_files(tmp_path / "vault", files), semantic=False))
    opened.indexer.reconcile()
    extract_pending(opened.db, opened.vault)
    yield opened
    opened.close()


def search(app: App, query: str) -> SearchResults:
    sources = SearchSources(app.db, names_cache().get, app.semantic, False)
    return find_notes(sources, SearchRequest(query, "keyword", limit=5))


def answer(found: SearchResults) -> tuple[object, ...]:
    notes = [(hit.path, hit.score) for hit in found.hits]
    pages = [(hit.path, hit.page, hit.snippet, hit.score) for hit in found.attachment_hits]
    return notes, found.total, pages, found.attachment_total


def test_the_pdfs_are_read_beside_the_notes_with_the_same_answer(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    readers: list[str] = []
    words = pdf_pages.pages_by_words

    def noting_the_thread(*args: object) -> object:
        readers.append(threading.current_thread().name)
        return words(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pdf_pages, "pages_by_words", noting_the_thread)
    monkeypatch.setattr(core, "pages_by_words", noting_the_thread)
    beside = search(app, "harvest")
    assert readers[-1].startswith("pdf-words")  # a thread of its own
    taken = [pdf_pages._BESIDE_SLOTS.acquire(False) for _ in range(pdf_pages.BESIDE_THREADS)]
    try:
        assert all(taken)
        after = search(app, "harvest")  # no thread free: read after the notes, here
    finally:
        for _ in taken:
            pdf_pages._BESIDE_SLOTS.release()
    assert readers[-1] == threading.current_thread().name
    assert answer(beside) == answer(after)
    assert {(h.path, h.page) for h in beside.attachment_hits} == {
        ("Reports/q3.pdf", 2),
        ("Reports/q4.pdf", 1),
    }
    assert beside.total == 2 and beside.attachment_total == 2


def test_a_query_without_words_or_with_a_tag_reads_no_pdf_beside(app: App) -> None:
    sources = SearchSources(app.db, names_cache().get, app.semantic, False)
    assert pdf_pages.pdf_words_beside(app.db, SearchRequest("  ", "keyword")) is None
    assert pdf_pages.pdf_words_beside(app.db, SearchRequest("harvest", tag="crops")) is None
    found = find_notes(sources, SearchRequest("harvest", "keyword", tag="crops"))
    assert found.attachment_hits == []  # an attachment has no tags
