"""The PDF text extractor: keeps the attachment text index in step with the vault's PDFs, in
the background.

The indexer only records attachments (path, size, mtime), as cheaply as before; this worker's
thread catches up behind it. A pass drops the text of PDFs that are gone, then reads the
pending ones (never read, or changed since) newest first, each bounded in time and memory
(`pdf_reader.PdfReader`: one subprocess reads them in turn), and stores each document's pages
in a short transaction of its own, so the indexer's writes wait for one document's insert at
most, never for a read. After a pass that stored or dropped many, the full-text indexes'
pieces are merged into one, a short step at a time (searches are quicker on one). A
PDF that cannot be read, runs out of time or memory, or has more pages than are read is stored
with its `problem` (list_problems shows it) and not read again until it changes.

A pass starts when the indexer says attachments changed (`wake`, one of its
`attachment_listeners`: its bus carries note events only) and, as a safety net, every
`POLL_SECONDS`; between them the thread sleeps, so an idle server does no work for it.
Without pypdfium2 the worker stops at once, saying why (`error`); notes are indexed as ever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog
from sqlalchemy import Engine

from weaver.attachments.pdf_reader import PdfReader, PdfText, ReadingStoppedError
from weaver.attachments.pdf_text import PdfUnavailableError, UnreadablePdfError, pdf_available
from weaver.cache import attachment_text
from weaver.cache.attachment_text import ExtractedPdf, PendingPdf
from weaver.errors import WeaverError
from weaver.vault.fs import Vault

log = structlog.get_logger(__name__)

BATCH = 32  # pending PDFs listed at a time: a change made meanwhile jumps the queue soon
POLL_SECONDS = 300.0  # a pass without a wake: a change the indexer did not report
NICE = 19  # the reading subprocess's niceness: below the server and everything else
# A pass that stored or dropped this many PDFs merges the text indexes into one piece. Merging
# rewrites the whole index: after every PDF added alone it would rewrite it each time; a few
# added at once leave FTS5 a segment or two more, which its own merging keeps in bounds.
MERGE_AFTER = 32
# Bigger files are not read at all: their text would take the reader's whole time bound.
MAX_FILE_BYTES = 256 * 1024 * 1024

# A PDF's file, and a callable saying the worker is stopping.
ReadPdf = Callable[[Path, Callable[[], bool]], PdfText]


def extract_pending(
    db: Engine,
    vault: Vault,
    should_stop: Callable[[], bool] = lambda: False,
    read_pdf: ReadPdf | None = None,
) -> int:
    """Bring the PDF text up to date with the attachments; the number of PDFs read, by one
    reader process for the pass (`read_pdf` instead, where given).

    Raises `PdfUnavailableError` without pypdfium2."""
    with db.begin() as conn:
        forgotten = attachment_text.forget_gone(conn)
    if read_pdf is not None:
        done = _extract_all(db, vault, should_stop, read_pdf)
    else:
        with PdfReader(nice=NICE) as reader:
            done = _extract_all(db, vault, should_stop, reader.read)
    if done + forgotten >= MERGE_AFTER:
        merge_index(db, should_stop)
    return done


def merge_index(db: Engine, should_stop: Callable[[], bool] = lambda: False) -> None:
    """Merge the text indexes' segments into one, a short transaction a step, so that the
    indexer's writes wait for one step at most (`attachment_text.merge_step`)."""
    while not should_stop():
        with db.begin() as conn:
            if not attachment_text.merge_step(conn):
                return


def _extract_all(
    db: Engine, vault: Vault, should_stop: Callable[[], bool], read_pdf: ReadPdf
) -> int:
    done = 0
    tried: set[PendingPdf] = set()
    while not should_stop():
        with db.connect() as conn:
            pending = [p for p in attachment_text.pending_pdfs(conn, BATCH) if p not in tried]
        if not pending:
            return done
        for pdf in pending:
            if should_stop():
                break
            tried.add(pdf)  # stored as read: never read twice in a pass, whatever happens
            try:
                extracted = _extract(vault, pdf, lambda file: read_pdf(file, should_stop))
            except ReadingStoppedError:
                break  # left pending: the next start reads it
            with db.begin() as conn:
                attachment_text.store_extracted(conn, extracted, int(time.time() * 1000))
            done += 1
    return done


def _extract(vault: Vault, pdf: PendingPdf, read_pdf: Callable[[Path], PdfText]) -> ExtractedPdf:
    def problem(why: str) -> ExtractedPdf:
        return ExtractedPdf(pdf.path, pdf.size, pdf.mtime_ns, None, (), why)

    if pdf.size > MAX_FILE_BYTES:
        return problem(
            f"the file is over {MAX_FILE_BYTES // 1024 // 1024} MB: its text is not read"
        )
    try:
        found = read_pdf(vault.attachment_file(pdf.path))
    except (PdfUnavailableError, ReadingStoppedError):
        raise
    except (UnreadablePdfError, WeaverError, OSError) as exc:
        return problem(str(exc))
    partial = None
    if found.truncated:
        partial = (
            f"only the first {len(found.texts):,} of its {found.pages:,} pages are searched "
            "(the reader's bound on pages or text)"
        )
    return ExtractedPdf(pdf.path, pdf.size, pdf.mtime_ns, found.pages, found.texts, partial)


class AttachmentTextWorker:
    """A daemon thread running `extract_pending` whenever it is woken (attachments changed)."""

    def __init__(
        self,
        db: Engine,
        vault: Vault,
        read_pdf: ReadPdf | None = None,
        text_listeners: Sequence[Callable[[], None]] = (),
    ) -> None:
        self._db = db
        self._text_listeners = list(text_listeners)  # told after a pass that stored text
        self._vault = vault
        self._read_pdf = read_pdf
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        self.passes = 0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if not pdf_available():
            self.error = str(PdfUnavailableError())
            log.info("PDF text is not searched", reason=self.error)
            return
        self._thread = threading.Thread(target=self._run, name="weaver-pdf-text", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop: a reader under way is killed (it is asked a few times a second), and its
        document left for the next start."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """Attachments changed: a pass soon (at once when idle, after the current one if
        a pass is under way, so that a change made during it is not missed)."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():  # a first pass at once: what changed while down
            self._wake.clear()
            if not self._pass():
                return
            self._wake.wait(POLL_SECONDS)

    def _pass(self) -> bool:
        """One pass; False when extraction cannot go on (no PDF library)."""
        try:
            count = extract_pending(self._db, self._vault, self._stop.is_set, self._read_pdf)
        except PdfUnavailableError as exc:
            self.error = str(exc)
            log.warning("PDF text is not searched", reason=self.error)
            return False
        except Exception as exc:  # a bad pass must not end extraction for good
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("PDF text pass failed")
            return True
        self.error = None
        self.passes += 1
        if count:
            log.info("read PDF text", count=count)
            for listener in self._text_listeners:
                listener()
        return True
