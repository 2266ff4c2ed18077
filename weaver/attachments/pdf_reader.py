"""Whole PDFs' text for the search index, read by one long-lived subprocess
(`pdf_worker --serve`) rather than one per document: starting an interpreter and loading
PDFium costs several times what reading a small PDF does.

Each document is still bounded on its own: `timeout_s` from the moment it is asked for, the
reader's address space (`memory_bytes`, POSIX), its first `max_pages` pages and
`PAGE_MAX_CHARS` characters a page. A reader that runs out of time is killed, one that runs
out of memory or crashes ends: either way that document is unreadable and the next starts a
new reader. A reader also retires after `DOCUMENTS_PER_READER` documents, so what PDFium's heap
keeps between documents never adds up."""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from weaver.attachments.pdf_text import (
    PDF_MEMORY_BYTES,
    PdfUnavailableError,
    UnreadablePdfError,
    parse_answer,
    pdf_available,
)
from weaver.errors import WeaverError

DOCUMENT_TIMEOUT_S = 60.0
DOCUMENT_MAX_PAGES = 2_000
PAGE_MAX_CHARS = 20_000
DOCUMENTS_PER_READER = 50
STOP_CHECK_S = 0.25


class ReadingStoppedError(WeaverError):
    """The reader was told to stop before it was done."""

    def __init__(self) -> None:
        super().__init__("reading the PDF was stopped")


@dataclass(frozen=True, slots=True)
class PdfText:
    """A document's text, page by page: `texts[i]` is page i + 1's (at most `PAGE_MAX_CHARS`),
    for the first pages (up to the reader's `max_pages`) of the `pages` it has."""

    pages: int
    texts: list[str]

    @property
    def truncated(self) -> bool:
        return len(self.texts) < self.pages


class PdfReader:
    """Reads documents one after another in one subprocess, started on the first read.

    `command` is the reader's command line (tests give one that never answers); None: the
    worker, at `nice` niceness from its start where a `nice` command exists."""

    def __init__(
        self,
        timeout_s: float = DOCUMENT_TIMEOUT_S,
        memory_bytes: int = PDF_MEMORY_BYTES,
        max_pages: int = DOCUMENT_MAX_PAGES,
        nice: int = 0,
        command: list[str] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self._command = command or _worker_command(memory_bytes, max_pages, nice)
        self._process: subprocess.Popen[bytes] | None = None
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._read = 0
        self.started = 0  # reader processes started: what the reuse saves is testable

    def __enter__(self) -> PdfReader:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.close()

    def read(self, file: Path, should_stop: Callable[[], bool] = lambda: False) -> PdfText:
        """The text of the PDF at `file`. `should_stop` is asked a few times a second: true,
        the reader is killed and `ReadingStoppedError` raised (a server shutting down waits
        for no document)."""
        if should_stop():
            raise ReadingStoppedError()
        process = self._ready()
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps(str(file)).encode() + b"\n")
            process.stdin.flush()
        except OSError:  # it ended since its last answer
            self.close()
            process = self._ready()
        line = self._answer(should_stop)
        self._read += 1
        if self._read >= DOCUMENTS_PER_READER:
            self.close()
        found = parse_answer(line, None)  # raises the error a document's line names
        return PdfText(int(found["pages"]), [str(text) for text in found["texts"]])

    def close(self) -> None:
        """End the reader (it is started again on the next read)."""
        process, self._process = self._process, None
        self._read = 0
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()  # a reader between documents ends by itself
        try:
            process.wait(timeout=STOP_CHECK_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _ready(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        if not pdf_available():
            raise PdfUnavailableError()
        process = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # PDFium's warnings about broken files: nobody reads them, and a full pipe would
            # block the reader.
            stderr=subprocess.DEVNULL,
        )
        self._answers = queue.Queue()
        assert process.stdout is not None
        threading.Thread(
            target=_forward_lines,
            args=(process.stdout, self._answers),
            name="weaver-pdf-reader",
            daemon=True,
        ).start()
        self._process = process
        self.started += 1
        return process

    def _answer(self, should_stop: Callable[[], bool]) -> str:
        """The reader's next answer line; "" when it ended without one."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            wait = max(0.0, min(STOP_CHECK_S, deadline - time.monotonic()))
            try:
                line = self._answers.get(timeout=wait)
            except queue.Empty:
                stopped = should_stop()
                if not stopped and time.monotonic() < deadline:
                    continue
                self._kill()
                if stopped:
                    raise ReadingStoppedError() from None
                raise UnreadablePdfError(
                    f"reading the PDF took longer than {self.timeout_s:g} s"
                ) from None
            if line is None:  # out of memory, or crashed in PDFium
                code = self._process.wait() if self._process is not None else None
                self.close()
                raise UnreadablePdfError(
                    f"the PDF could not be read (the reader ended with code {code}, "
                    "out of memory or on a malformed file)"
                )
            return line.decode()

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
        self.close()


def read_pdf_document(
    file: Path,
    timeout_s: float = DOCUMENT_TIMEOUT_S,
    memory_bytes: int = PDF_MEMORY_BYTES,
    max_pages: int = DOCUMENT_MAX_PAGES,
    nice: int = 0,
    should_stop: Callable[[], bool] = lambda: False,
) -> PdfText:
    """One document's text by a reader of its own (`PdfReader` reads many by one)."""
    with PdfReader(timeout_s, memory_bytes, max_pages, nice) as reader:
        return reader.read(file, should_stop)


def _worker_command(memory_bytes: int, max_pages: int, nice: int) -> list[str]:
    limits = [str(memory_bytes), str(max_pages), str(PAGE_MAX_CHARS), str(nice)]
    command = [sys.executable, "-m", "weaver.attachments.pdf_worker", "--serve", *limits]
    return [*_niced(nice), *command]


def _niced(nice: int) -> list[str]:
    """`nice -n N` where there is such a command: the reader's interpreter starts and imports
    PDFium at low priority too, not only what it does after (`os.nice` in the worker, which
    stays for where there is none)."""
    found = shutil.which("nice") if nice and sys.platform != "win32" else None
    return [found, "-n", str(nice)] if found else []


def _forward_lines(stream: IO[bytes], answers: queue.Queue[bytes | None]) -> None:
    """The reader's answer lines, then None when it ends; closing its pipe (this thread is the
    only one reading it, and the last to know when it ends)."""
    with stream:
        for line in stream:
            answers.put(line)
    answers.put(None)
