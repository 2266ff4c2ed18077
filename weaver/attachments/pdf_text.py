"""A PDF page's text (its text layer: no OCR), read by pypdfium2 in a subprocess bounded in
time (`timeout_s`) and memory (`memory_bytes`, POSIX), so a huge or hostile file costs at
most that and never stalls or crashes the server.

pypdfium2 (PDFium, the engine Chrome renders PDFs with) rather than pypdf: several times
faster on text, and it recovers from broken cross-reference tables that pure-Python parsers
give up on. It is the `attachments` extra: without it the answer says so."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weaver.attachments.images import INSTALL_HINT
from weaver.errors import WeaverError

PDF_TIMEOUT_S = 20.0
PDF_MEMORY_BYTES = 1024 * 1024 * 1024
# A whole document's text, for the search index (`read_pdf_document`): a few minutes of reading
# at most, the first pages of a huge one, a bounded page of text each.
DOCUMENT_TIMEOUT_S = 60.0
DOCUMENT_MAX_PAGES = 2_000
PAGE_MAX_CHARS = 20_000
STOP_CHECK_S = 0.25


class PdfUnavailableError(WeaverError):
    """pypdfium2 is not installed."""

    def __init__(self) -> None:
        super().__init__(f"PDF text cannot be read here: {INSTALL_HINT}")


class UnreadablePdfError(WeaverError):
    """The file is no PDF PDFium can read, or reading it ran out of time or memory."""


class ReadingStoppedError(WeaverError):
    """`read_pdf_document` was told to stop before the reader was done."""

    def __init__(self) -> None:
        super().__init__("reading the PDF was stopped")


@dataclass(frozen=True, slots=True)
class PdfPage:
    pages: int  # in the document
    text: str | None  # None: no such page


@dataclass(frozen=True, slots=True)
class PdfText:
    """A document's text, page by page: `texts[i]` is page i + 1's (at most `PAGE_MAX_CHARS`),
    for the first `DOCUMENT_MAX_PAGES` pages of the `pages` it has."""

    pages: int
    texts: list[str]

    @property
    def truncated(self) -> bool:
        return len(self.texts) < self.pages


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


def read_pdf_document(
    file: Path,
    timeout_s: float = DOCUMENT_TIMEOUT_S,
    memory_bytes: int = PDF_MEMORY_BYTES,
    max_pages: int = DOCUMENT_MAX_PAGES,
    nice: int = 0,
    should_stop: Callable[[], bool] = lambda: False,
) -> PdfText:
    """The text of every page of the PDF at `file` (up to `max_pages`), read by one
    subprocess at `nice` niceness, bounded in time and memory as `read_pdf_page` is.

    `should_stop` is asked a few times a second: true, the reader is killed and
    `ReadingStoppedError` raised (a server shutting down waits for no document)."""
    if not pdf_available():
        raise PdfUnavailableError()
    limits = [str(memory_bytes), str(max_pages), str(PAGE_MAX_CHARS), str(nice)]
    command = [sys.executable, "-m", "weaver.attachments.pdf_worker", "--document", str(file)]
    done = _run_bounded([*_niced(nice), *command, *limits], timeout_s, should_stop)
    found = _found(done)
    return PdfText(int(found["pages"]), [str(text) for text in found["texts"]])


def _niced(nice: int) -> list[str]:
    """`nice -n N` where there is such a command: the reader's interpreter starts and imports
    PDFium at low priority too, not only what it does after (`os.nice` in the worker, which
    stays for where there is none)."""
    found = shutil.which("nice") if nice and sys.platform != "win32" else None
    return [found, "-n", str(nice)] if found else []


def _run_bounded(
    command: list[str], timeout_s: float, should_stop: Callable[[], bool]
) -> subprocess.CompletedProcess[bytes]:
    if should_stop():
        raise ReadingStoppedError()
    deadline = time.monotonic() + timeout_s
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        while True:
            wait = max(0.0, min(STOP_CHECK_S, deadline - time.monotonic()))
            try:
                out, err = process.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                stopped = should_stop()
                if not stopped and time.monotonic() < deadline:
                    continue
                process.kill()
                process.communicate()
                if stopped:
                    raise ReadingStoppedError() from None
                raise UnreadablePdfError(
                    f"reading the PDF took longer than {timeout_s:g} s"
                ) from None
            return subprocess.CompletedProcess(command, process.returncode, out, err)


def _answer(done: subprocess.CompletedProcess[bytes]) -> PdfPage:
    found = _found(done)
    return PdfPage(int(found["pages"]), found["text"])


def _found(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The worker's answer line, or the error it names (or its silence means)."""
    try:
        found = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        # Killed by its memory limit, or crashed inside PDFium: no answer line.
        raise UnreadablePdfError(
            f"the PDF could not be read (the reader ended with code {done.returncode}, "
            "out of memory or on a malformed file)"
        ) from None
    if "error" in found:
        if found["error"] == "unavailable":
            raise PdfUnavailableError()
        raise UnreadablePdfError(str(found["error"]))
    return dict(found)
