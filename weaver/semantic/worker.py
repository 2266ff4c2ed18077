"""The embedding worker: keeps the chunk vectors in step with the notes, in the background.

It runs in its own thread, after the metadata index and apart from it: a pass reads the pending
notes from the cache (`vectors.sync_embeddings`), embeds them a batch at a time and stores each
batch in one transaction. The indexer never waits for it, so metadata stays as fresh with
embedding running as without; the vectors follow a few seconds behind. A pass starts when the
indexer publishes changes and, as a safety net, every `POLL_SECONDS` if the cache changed since
the last pass. Stopped mid-pass (at shutdown), it finishes the batch under way or drops it;
either way every note is fully embedded or pending, and the next start resumes with the
pending ones.

PDF pages (their text, as the PDF text worker extracted it) are embedded in the same pass, after
every note, a few PDFs per transaction (`attachment_vectors`); a note changed meanwhile ends the
pass, so the next one embeds it before the PDFs go on. The PDF text worker wakes this one when
it stored text (`wake`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import PurePosixPath

import structlog
from sqlalchemy import Engine

from weaver.cache import attachment_vectors, read, vectors
from weaver.cache.attachment_vectors import EmbeddedPdf, PageChunkVector, PdfSource
from weaver.cache.vectors import ChunkVector, EmbeddedNote
from weaver.errors import ModelLoadingError, SemanticUnavailableError
from weaver.memory_trim import trim_heap
from weaver.semantic.chunks import PageChunk, chunk_note, chunk_pages
from weaver.semantic.model import EmbeddingModel, Vectors
from weaver.semantic.search import SemanticIndex
from weaver.semantic.static import stop_distilling
from weaver.vault.events import EventBus, VaultEvent

log = structlog.get_logger(__name__)

# Notes per transaction: small enough that a stop loses little work and a changed note's
# vectors appear soon; large enough that the model sees full batches.
BATCH_NOTES = 16
# PDFs per transaction, and what of each is embedded: its first pages, and of those the first
# chunks (a 2,000-page PDF must not take the model minutes, nor the matrix its rows; later
# pages are found by their words).
BATCH_PDFS = 8
BATCH_CHUNKS = 256  # chunks between two looks at the notes: seconds of the transformer
MAX_PDF_PAGES = 100
MAX_PDF_CHUNKS = 200
POLL_SECONDS = 30.0
# After this long without a search or a pass, the model and the vectors are let go (the next
# use loads them again, a second or so) and the freed memory given back to the system.
RELEASE_AFTER_S = 600.0
NICE = 19  # the embedding thread's niceness: below everything else of the process
# While the server answers calls, a batch waits for a pause in them, at most this long.
DEFER_MAX_S = 5.0
DEFER_POLL_S = 0.1


def embed_pending(
    db: Engine,
    index: SemanticIndex,
    should_stop: Callable[[], bool] = lambda: False,
    on_batch: Callable[[int], None] | None = None,
    before_batch: Callable[[], None] | None = None,
    notes_waiting: Callable[[], bool] = lambda: False,
) -> int:
    """Bring the vectors up to date with the notes, then with the PDFs' pages; the number of
    notes and PDFs embedded. The PDFs come after every note, and give way (the pass ends, a
    PDF at most later) when `notes_waiting` says notes changed meanwhile: a vault's notes never
    wait for its PDFs.

    Raises `SemanticUnavailableError` when the model cannot be loaded."""
    try:  # the first start distils the static model: wait for it, unless told to stop
        model = index.model(wait=None, stopped=should_stop)
    except ModelLoadingError:
        if should_stop():
            return 0
        raise
    with db.connect() as conn:
        pending = vectors.sync_embeddings(conn, index.model_id)
    done = 0
    for start in range(0, len(pending), BATCH_NOTES):
        if before_batch is not None:
            before_batch()
        if should_stop():
            return done
        done += _embed_batch(db, model, pending[start : start + BATCH_NOTES])
        if on_batch is not None:
            on_batch(len(pending) - start - BATCH_NOTES)
    return done + embed_pending_pdfs(
        db, model, lambda: should_stop() or notes_waiting(), before_batch
    )


def embed_pending_pdfs(
    db: Engine,
    model: EmbeddingModel,
    should_stop: Callable[[], bool] = lambda: False,
    before_batch: Callable[[], None] | None = None,
) -> int:
    """Bring the PDF pages' vectors up to date with their text, newest PDF first, a few PDFs
    (`BATCH_CHUNKS` chunks at most, but a whole PDF) per transaction; the number of PDFs
    embedded."""
    with db.connect() as conn:
        pending = attachment_vectors.sync_page_embeddings(conn, model.model_id)
    done = 0
    for start in range(0, len(pending), BATCH_PDFS):
        with db.connect() as conn:
            sources = attachment_vectors.pdf_sources(
                conn, pending[start : start + BATCH_PDFS], MAX_PDF_PAGES
            )
        chunked = [
            (source, chunk_pages(PurePosixPath(source.path).stem, source.pages, MAX_PDF_CHUNKS))
            for source in sources
        ]
        for batch in _batches(chunked):
            if before_batch is not None:
                before_batch()
            if should_stop():
                return done
            done += _embed_pdfs(db, model, batch)
    return done


_Chunked = tuple[PdfSource, list[PageChunk]]


def _batches(chunked: Sequence[_Chunked]) -> Iterator[list[_Chunked]]:
    """Consecutive runs of PDFs of `BATCH_CHUNKS` chunks at most (one PDF at least): what the
    model embeds between two looks at whether notes wait."""
    batch: list[_Chunked] = []
    size = 0
    for item in chunked:
        if batch and size + len(item[1]) > BATCH_CHUNKS:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item[1])
    if batch:
        yield batch


def _embed_pdfs(db: Engine, model: EmbeddingModel, chunked: Sequence[_Chunked]) -> int:
    embedded = model.embed_texts([c.chunk.text for _, chunks in chunked for c in chunks])
    pdfs = [
        EmbeddedPdf(
            source.path,
            source.extracted_at,
            [PageChunkVector(c.page, c.chunk.body, v) for c, v in zip(chunks, rows, strict=True)],
        )
        for (source, chunks), rows in zip(chunked, _per_source(embedded, chunked), strict=True)
    ]
    with db.connect() as conn:
        attachment_vectors.store_page_embeddings(conn, pdfs, model.model_id)
    return len(pdfs)


def _per_source(
    embedded: Vectors, chunked: Sequence[tuple[object, Sequence[object]]]
) -> Iterator[Vectors]:
    """The rows of `embedded` (every source's chunks, one after another) of each source."""
    row = 0
    for _, chunks in chunked:
        yield embedded[row : row + len(chunks)]
        row += len(chunks)


def _embed_batch(db: Engine, model: EmbeddingModel, paths: Sequence[str]) -> int:
    with db.connect() as conn:
        sources = vectors.note_sources(conn, paths)
    chunked = [
        (source, chunk_note(source.title, source.body, source.aliases, source.tags))
        for source in sources
    ]
    embedded = model.embed_texts([c.text for _, chunks in chunked for c in chunks])
    notes = [
        EmbeddedNote(
            source.path,
            source.content_hash,
            [ChunkVector(c.heading, c.body, v) for c, v in zip(chunks, rows, strict=True)],
        )
        for (source, chunks), rows in zip(chunked, _per_source(embedded, chunked), strict=True)
    ]
    with db.connect() as conn:
        vectors.store_embeddings(conn, notes, model.model_id)
    return len(notes)


def _lower_priority() -> None:
    """Give this thread the lowest CPU priority: on Linux a thread id is a `PRIO_PROCESS` target,
    so the indexer and the tools keep theirs. With one model thread (`embedding_threads`),
    ONNX Runtime computes on this thread, so the embedding yields the CPU to metadata."""
    if not sys.platform.startswith("linux"):
        return  # elsewhere a thread id is no `setpriority` target: it could name a process
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except OSError:  # not allowed: embedding still works
        log.debug("cannot lower the embedding worker's priority")


class EmbeddingWorker:
    """A daemon thread running `embed_pending` whenever the vault changes.

    `busy` says the server is answering calls: a batch then waits for a pause in them (up to
    `DEFER_MAX_S`, so embedding still moves under constant load). The thread's low priority
    keeps the CPU for the rest of the process, but not the GIL: a batch holds it for its Python
    parts and, preempted as the lowest-priority thread, made every call wait for it
    (docs/benchmarks-notes.md)."""

    def __init__(
        self,
        db: Engine,
        index: SemanticIndex,
        bus: EventBus,
        busy: Callable[[], bool] | None = None,
        release_after_s: float = RELEASE_AFTER_S,
    ) -> None:
        self._db = db
        self._release_after_s = release_after_s
        self._busy = busy
        self._index = index
        self._bus = bus
        self._wake = threading.Event()
        # Notes changed since the pass began: ends a PDF pass so they go first. Apart from
        # `_wake`, which new PDF text sets too and which must not end a PDF pass: while PDFs
        # are extracted it is set every moment, and no PDF would be embedded until they all were.
        self._notes_changed = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.error: str | None = None
        self.passes = 0

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        self._unsubscribe = self._bus.subscribe(self._on_events)
        self._wake.set()  # a first pass at once: resume whatever a previous run left
        self._thread = threading.Thread(target=self._run, name="weaver-embedding", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        stop_distilling()  # a first start's distillation would hold the stop up to a minute
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._thread is not None:
            self._thread.join(timeout)

    def _wait_for_a_pause(self) -> None:
        """Until the server is not answering calls, the worker stops, or `DEFER_MAX_S`."""
        if self._busy is None:
            return
        deadline = time.monotonic() + DEFER_MAX_S
        while self._busy() and time.monotonic() < deadline and not self._stop.is_set():
            self._stop.wait(DEFER_POLL_S)

    def _release_if_idle(self) -> None:
        """On the safety net's wake-ups (no timer of its own): let the model go when idle."""
        if self._index.release_if_idle(self._release_after_s):
            trim_heap()
            log.info("embedding model unloaded while idle", idle_s=self._release_after_s)

    def _cache_version(self) -> tuple[int | None, tuple[int, int]]:
        """Changes when notes change, or PDF text is stored or forgotten."""
        with self._db.connect() as conn:
            return read.last_updated(conn), attachment_vectors.text_stamp(conn)

    def _on_events(self, _events: Sequence[VaultEvent]) -> None:
        self._notes_changed.set()
        self._wake.set()

    def wake(self) -> None:
        """A pass soon: PDF text was stored (the PDF text worker says so; its changes are no
        bus events)."""
        self._wake.set()

    def _run(self) -> None:
        _lower_priority()
        seen: tuple[int | None, tuple[int, int]] | None = None
        while not self._stop.is_set():
            woken = self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            self._notes_changed.clear()
            if self._stop.is_set():
                return
            if not woken:
                self._release_if_idle()
            # The safety net's pass scans every note's vectors: only when the cache changed
            # since the last pass, not every `POLL_SECONDS` of an idle day.
            version = self._cache_version()
            if not woken and version == seen:
                continue
            seen = version
            try:
                count = embed_pending(
                    self._db,
                    self._index,
                    self._stop.is_set,
                    before_batch=self._wait_for_a_pause,
                    notes_waiting=self._notes_changed.is_set,  # its pass goes first
                )
            except SemanticUnavailableError as exc:
                self.error = str(exc)
                log.warning("semantic search is off", reason=str(exc))
                return  # the model will not appear by itself; a restart retries
            except Exception as exc:  # a bad batch must not end embedding for good
                self.error = f"{type(exc).__name__}: {exc}"
                log.exception("embedding pass failed")
                continue
            self.error = None
            self.passes += 1
            if count:
                log.info("embedded notes and PDFs", count=count)
                trim_heap()  # the batches' texts and vectors, freed: give the memory back
