"""A PDF page's text, read in a bounded subprocess: each page by number, a page past the end
answered with the page count, a broken file, a reader out of time or out of memory each an
`UnreadablePdfError` naming why, never a hang or a crash of the caller."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.attachments.pdfs import text_pdf
from weaver.attachments.pdf_text import PdfUnavailableError, UnreadablePdfError, read_pdf_page


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    file = tmp_path / "paper.pdf"
    file.write_bytes(text_pdf(["Weaver reads attachments", "Second page text"]))
    return file


def test_each_page_has_its_own_text_and_the_count(pdf: Path) -> None:
    first, second = read_pdf_page(pdf, 1), read_pdf_page(pdf, 2)
    assert (first.pages, first.text) == (2, "Weaver reads attachments")
    assert (second.pages, second.text) == (2, "Second page text")


def test_a_page_past_the_end_has_no_text(pdf: Path) -> None:
    past = read_pdf_page(pdf, 9)
    assert (past.pages, past.text) == (2, None)


def test_a_broken_file_is_named_unreadable(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catal")
    with pytest.raises(UnreadablePdfError, match="not a PDF that can be read"):
        read_pdf_page(broken, 1)


def test_a_reader_past_its_time_is_stopped(pdf: Path) -> None:
    with pytest.raises(UnreadablePdfError, match=r"took longer than 0\.01 s"):
        read_pdf_page(pdf, 1, timeout_s=0.01)


@pytest.mark.skipif(sys.platform == "win32", reason="the memory bound is POSIX's setrlimit")
def test_a_reader_out_of_memory_ends_without_harm(tmp_path: Path) -> None:
    # A bound below what the process already holds, and a page whose text needs megabytes:
    # reading it must map new memory, which fails as a hostile file's allocations would.
    # (A small page might fit in the heap the reader already has.)
    heavy = tmp_path / "heavy.pdf"
    heavy.write_bytes(text_pdf(["many words " * 400_000]))
    with pytest.raises(UnreadablePdfError, match="out of memory or on a malformed file"):
        read_pdf_page(heavy, 1, memory_bytes=1024 * 1024)


def test_without_pypdfium2_the_error_says_how_to_install_it(
    pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    with pytest.raises(PdfUnavailableError, match=r"weaver-mcp\[attachments\]"):
        read_pdf_page(pdf, 1)
