"""`weaver search` from a shell finds text that is only in a PDF, once it has been read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.attachments.pdfs import text_pdf
from tests.helpers import write_files
from weaver.attachments.pdf_text import pdf_available
from weaver.cli import main

pytestmark = pytest.mark.skipif(not pdf_available(), reason="needs pypdfium2 (the extra)")


def vault_with_a_pdf(tmp_path: Path) -> Path:
    vault = write_files(tmp_path / "vault", {"Plan.md": "# Plan\nRead the paper.\n"})
    pdf = text_pdf(["An introduction", "The heliotrope method of grafting"])
    (vault / "paper.pdf").write_bytes(pdf)
    return vault


def search(vault: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["--vault", str(vault), "search", *args]) == 0
    return capsys.readouterr().out


def test_update_reads_the_pdfs_and_a_search_names_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = vault_with_a_pdf(tmp_path)
    before = json.loads(search(vault, capsys, "heliotrope", "--mode", "keyword", "--json"))
    assert before["attachments"] == []
    assert before["unreadPdfs"] == 1  # said, not silently missing
    after = json.loads(
        search(vault, capsys, "heliotrope", "--mode", "keyword", "--json", "--update")
    )
    assert [(h["path"], h["page"]) for h in after["attachments"]] == [("paper.pdf", 2)]
    assert "<mark>heliotrope</mark>" in after["attachments"][0]["snippet"].lower()
    assert after["unreadPdfs"] == 0


def test_the_table_shows_pdf_pages_after_the_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = vault_with_a_pdf(tmp_path)
    unread = search(vault, capsys, "grafting", "--mode", "keyword")
    assert "1 PDF not read yet: `--update` reads them first" in unread
    out = search(vault, capsys, "grafting", "--mode", "keyword", "--update")
    assert "no notes found" in out
    assert "PDF pages (1 of 1):" in out
    assert "paper.pdf" in out.split("PDF pages")[1]
    assert "not read yet" not in out
