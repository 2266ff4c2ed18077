"""A PDF page's text (its text layer: no OCR), read by pypdfium2 in a subprocess bounded in
time (`timeout_s`) and memory (`memory_bytes`, POSIX), so a huge or hostile file costs at
most that and never stalls or crashes the server.

pypdfium2 (PDFium, the engine Chrome renders PDFs with) rather than pypdf: several times
faster on text, and it recovers from broken cross-reference tables that pure-Python parsers
give up on. It is the `attachments` extra: without it the answer says so."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weaver.attachments.images import INSTALL_HINT
from weaver.errors import WeaverError

PDF_TIMEOUT_S = 20.0
PDF_MEMORY_BYTES = 1024 * 1024 * 1024


class PdfUnavailableError(WeaverError):
    """pypdfium2 is not installed."""

    def __init__(self) -> None:
        super().__init__(f"PDF text cannot be read here: {INSTALL_HINT}")


class UnreadablePdfError(WeaverError):
    """The file is no PDF PDFium can read, or reading it ran out of time or memory."""


@dataclass(frozen=True, slots=True)
class PdfPage:
    pages: int  # in the document
    text: str | None  # None: no such page


def pdf_available() -> bool:
    """Whether pypdfium2 is installed, found without importing it: the server process never
    loads PDFium (its readers do), and a search asks this each time."""
    try:
        return importlib.util.find_spec("pypdfium2") is not None
    except (ImportError, ValueError):
        return False


def read_pdf_page(
    file: Path,
    page: int,
    timeout_s: float = PDF_TIMEOUT_S,
    memory_bytes: int = PDF_MEMORY_BYTES,
) -> PdfPage:
    """The text of page `page` (from 1) of the PDF at `file`, and its page count."""
    if not pdf_available():
        raise PdfUnavailableError()
    command = [sys.executable, "-m", "weaver.attachments.pdf_worker", str(file), str(page)]
    try:
        done = subprocess.run(
            [*command, str(memory_bytes)],
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UnreadablePdfError(f"reading the PDF took longer than {timeout_s:g} s") from None
    return _answer(done)


def _answer(done: subprocess.CompletedProcess[bytes]) -> PdfPage:
    found = _found(done)
    return PdfPage(int(found["pages"]), found["text"])


def _found(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The worker's answer line, or the error it names (or its silence means)."""
    try:
        line = done.stdout.decode().strip().splitlines()[-1]
    except IndexError:
        line = ""
    return parse_answer(line, done.returncode)


def parse_answer(line: str, returncode: int | None) -> dict[str, Any]:
    """A worker's answer line as a dict, or the error it names (or its silence means)."""
    try:
        found = json.loads(line)
    except ValueError:
        # Killed by its memory limit, or crashed inside PDFium: no answer line.
        raise UnreadablePdfError(
            f"the PDF could not be read (the reader ended with code {returncode}, "
            "out of memory or on a malformed file)"
        ) from None
    if "error" in found:
        if found["error"] == "unavailable":
            raise PdfUnavailableError()
        raise UnreadablePdfError(str(found["error"]))
    return dict(found)
