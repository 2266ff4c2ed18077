"""Whole PDFs' text for the search index, by one long-lived reader: every page of a document,
many documents by one process, each up to a page bound with each page's text cut; a broken
file, one past its time and one that kills its reader each an `UnreadablePdfError` naming why,
after which the next document is read as ever; a reader told to stop is killed at once."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from tests.attachments.pdfs import text_pdf
from weaver.attachments import pdf_reader
from weaver.attachments.pdf_reader import (
    PAGE_MAX_CHARS,
    PdfReader,
    ReadingStoppedError,
    read_pdf_document,
)
from weaver.attachments.pdf_text import PdfUnavailableError, UnreadablePdfError


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    file = tmp_path / "paper.pdf"
    file.write_bytes(text_pdf(["Weaver reads attachments", "Second page text"]))
    return file


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    file = tmp_path / "broken.pdf"
    file.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catal")
    return file


def test_a_whole_document_is_read_page_by_page(pdf: Path) -> None:
    found = read_pdf_document(pdf)
    assert (found.pages, found.texts, found.truncated) == (
        2,
        ["Weaver reads attachments", "Second page text"],
        False,
    )


def test_many_documents_are_read_by_one_reader_even_past_a_broken_one(
    pdf: Path, broken: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.pdf"
    other.write_bytes(text_pdf(["Another document"]))
    with PdfReader() as reader:
        assert reader.read(pdf).texts[1] == "Second page text"
        with pytest.raises(UnreadablePdfError, match="not a PDF that can be read"):
            reader.read(broken)
        assert reader.read(other).texts == ["Another document"]
        assert reader.started == 1


def test_a_reader_retires_after_its_share_of_documents(
    pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf_reader, "DOCUMENTS_PER_READER", 2)
    with PdfReader() as reader:
        for _ in range(5):
            assert reader.read(pdf).pages == 2
        assert reader.started == 3


def test_a_long_document_is_read_up_to_the_page_bound_and_each_page_cut(tmp_path: Path) -> None:
    long = tmp_path / "long.pdf"
    long.write_bytes(text_pdf(["x" * (PAGE_MAX_CHARS + 500), "two", "three", "four"]))
    found = read_pdf_document(long, max_pages=2)
    assert (found.pages, found.truncated) == (4, True)
    assert [len(text) for text in found.texts] == [PAGE_MAX_CHARS, 3]


def test_a_document_past_its_time_is_named_and_the_next_one_read(pdf: Path) -> None:
    with PdfReader(timeout_s=0.01) as reader:
        with pytest.raises(UnreadablePdfError, match=r"took longer than 0\.01 s"):
            reader.read(pdf)  # the reader's start alone takes longer
        reader.timeout_s = 30.0
        assert reader.read(pdf).pages == 2
        assert reader.started == 2


@pytest.mark.skipif(sys.platform == "win32", reason="the memory bound is POSIX's setrlimit")
def test_a_document_that_kills_its_reader_is_named_and_the_next_one_read(
    pdf: Path, tmp_path: Path
) -> None:
    # A page whose text needs megabytes, under a bound below what the reader already holds
    # (as tests/attachments/test_pdf_text.py does for one page).
    heavy = tmp_path / "heavy.pdf"
    heavy.write_bytes(text_pdf(["many words " * 400_000]))
    out_of_memory = pytest.raises(UnreadablePdfError, match="out of memory or on a malformed")
    with PdfReader(memory_bytes=1024 * 1024) as reader, out_of_memory:
        reader.read(heavy)
    assert read_pdf_document(pdf).pages == 2


def test_a_reader_told_to_stop_is_killed_at_once(pdf: Path) -> None:
    stop = threading.Event()
    reader = PdfReader(command=[sys.executable, "-c", "import time; time.sleep(60)"])
    threading.Timer(0.3, stop.set).start()
    began = time.monotonic()
    with pytest.raises(ReadingStoppedError):
        reader.read(pdf, stop.is_set)
    assert time.monotonic() - began < 5.0
    with pytest.raises(ReadingStoppedError):
        reader.read(pdf, stop.is_set)  # told before it starts: no reader at all
    assert reader.started == 1


def test_without_pypdfium2_the_error_says_how_to_install_it(
    pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    with pytest.raises(PdfUnavailableError, match=r"weaver-mcp\[attachments\]"):
        read_pdf_document(pdf)
