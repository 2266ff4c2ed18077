"""The vectors of PDF pages' chunks, for semantic search: every SQL statement about them.

`attachment_embeddings` records, per PDF, which extraction of its text (`attachment_texts.
extracted_at`) and which model its chunks were embedded from; `attachment_chunks` holds the
chunks (page, text, vector as little-endian float32), as `note_chunks` does for notes.

A PDF's vectors answer only while they are fresh: made from the text now stored, by this
model, and that text read from the file as it is now (`attachments` agrees on size and mtime,
as for the full-text hits). So a replaced PDF's old pages never answer, even before the worker
drops them; `sync_page_embeddings` drops the rows of PDFs gone or read again, and of other
models, before each pass. Their version counter is apart from the notes' (`VERSION_KEY`): a
PDF embedded never makes a reader load the notes' matrix again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, delete, func, insert, select, text

from weaver.cache import read
from weaver.cache.models import (
    AttachmentChunk,
    AttachmentEmbedding,
    AttachmentPage,
    AttachmentText,
)
from weaver.cache.vectors import ChunkMatrix, Coverage, bump_counter
from weaver.markdown.cjk import unsegment

if TYPE_CHECKING:  # numpy is imported where vectors are computed: not to start a server
    import numpy as np
    import numpy.typing as npt

VERSION_KEY = "attachment_vectors_version"
_CHUNK = 900


@dataclass(frozen=True, slots=True)
class PdfSource:
    """What a PDF's chunks are made from: its pages' text, page numbers from 1."""

    path: str
    extracted_at: int
    pages: Sequence[tuple[int, str]]


@dataclass(frozen=True, slots=True)
class PageChunkVector:
    page: int
    body: str
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class EmbeddedPdf:
    path: str
    extracted_at: int
    chunks: Sequence[PageChunkVector]


# ---------------------------------------------------------------- before a pass

# The text now stored for a PDF, read from the file as it is now (`attachment_text._FRESH`).
_FRESH_TEXT = (
    "SELECT t.path, t.extracted_at, a.mtime_ns FROM attachment_texts t "
    "JOIN attachments a ON a.path = t.path AND a.size = t.size AND a.mtime_ns = t.mtime_ns"
)
_STALE = (
    "SELECT e.path FROM attachment_embeddings e WHERE e.model != :model OR NOT EXISTS "
    "(SELECT 1 FROM attachment_texts t WHERE t.path = e.path AND t.extracted_at = e.extracted_at)"
)
_DROP_STALE_CHUNKS = text(f"DELETE FROM attachment_chunks WHERE path IN ({_STALE})")
_DROP_STALE = text(f"DELETE FROM attachment_embeddings WHERE path IN ({_STALE})")
# PDFs whose fresh text has pages and no vectors of it by this model: the newest file first
# (what someone just added is what they will search for, as the extractor reads them).
_PENDING = text(
    f"SELECT f.path FROM ({_FRESH_TEXT}) f "
    "LEFT JOIN attachment_embeddings e ON e.path = f.path AND e.extracted_at = f.extracted_at "
    "AND e.model = :model "
    "WHERE e.path IS NULL AND EXISTS (SELECT 1 FROM attachment_pages p WHERE p.path = f.path) "
    "ORDER BY f.mtime_ns DESC, f.path"
)


def sync_page_embeddings(conn: Connection, model_id: str) -> list[str]:
    """Drop the vectors of PDFs gone or read again and of other models; the PDFs left to
    embed, newest first. Commits."""
    values = {"model": model_id}
    conn.execute(_DROP_STALE_CHUNKS, values)
    if conn.execute(_DROP_STALE, values).rowcount:
        bump_counter(conn, VERSION_KEY)  # readers reload their matrix only when it changed
    conn.commit()
    return list(conn.execute(_PENDING, values).scalars())


_PAGES = (
    select(
        AttachmentText.path, AttachmentText.extracted_at, AttachmentPage.page, AttachmentPage.text
    )
    .join(AttachmentPage, AttachmentPage.path == AttachmentText.path)
    .where(
        AttachmentText.path.in_(bindparam("paths", expanding=True)),
        AttachmentPage.page <= bindparam("max_page"),
    )
    .order_by(AttachmentText.path, AttachmentPage.page)
)


def pdf_sources(conn: Connection, paths: Sequence[str], max_page: int) -> list[PdfSource]:
    """The text of pages 1 to `max_page` of each PDF in `paths` still extracted (one query),
    as it reads (without the index's CJK segmentation)."""
    found: dict[str, tuple[int, list[tuple[int, str]]]] = {}
    values = {"paths": list(paths), "max_page": max_page}
    for path, extracted_at, page, page_text in conn.execute(_PAGES, values):
        found.setdefault(path, (extracted_at, []))[1].append((page, unsegment(page_text)))
    return [PdfSource(path, at, pages) for path, (at, pages) in found.items()]


# ---------------------------------------------------------------- writes


def store_page_embeddings(conn: Connection, pdfs: Sequence[EmbeddedPdf], model_id: str) -> None:
    """Replace these PDFs' chunks and records, in one transaction (commits). A PDF whose text
    was read again meanwhile is stored all the same: it is stale, never answers, and the next
    pass drops it and embeds the new text."""
    if not pdfs:
        return
    paths = [p.path for p in pdfs]
    conn.execute(delete(AttachmentChunk).where(AttachmentChunk.path.in_(paths)))
    conn.execute(delete(AttachmentEmbedding).where(AttachmentEmbedding.path.in_(paths)))
    rows = [
        {
            "path": p.path,
            "chunk_no": i,
            "page": c.page,
            "body": c.body,
            "vector": c.vector.astype("<f4").tobytes(),
        }
        for p in pdfs
        for i, c in enumerate(p.chunks)
    ]
    if rows:
        conn.execute(insert(AttachmentChunk), rows)
    now = int(time.time() * 1000)
    conn.execute(
        insert(AttachmentEmbedding),
        [
            {
                "path": p.path,
                "extracted_at": p.extracted_at,
                "model": model_id,
                "chunk_count": len(p.chunks),
                "embedded_at": now,
            }
            for p in pdfs
        ],
    )
    bump_counter(conn, VERSION_KEY)
    conn.commit()


# ---------------------------------------------------------------- reads


def vectors_version(conn: Connection) -> int:
    """A counter raised by every change to the PDF vectors."""
    return read.counter(conn, VERSION_KEY)


def text_stamp(conn: Connection) -> tuple[int, int]:
    """How many PDFs have text and the newest extraction: changes when the extractor stores
    or forgets one (the embedding worker's safety net looks at it)."""
    row = conn.execute(text("SELECT count(*), max(extracted_at) FROM attachment_texts")).one()
    return int(row[0]), int(row[1] or 0)


_FRESH_EMBEDDED = text(
    f"SELECT f.path FROM ({_FRESH_TEXT}) f JOIN attachment_embeddings e "
    "ON e.path = f.path AND e.extracted_at = f.extracted_at AND e.model = :model"
)


def fresh_paths(conn: Connection, model_id: str) -> set[str]:
    """The PDFs whose vectors by this model may answer now (one query)."""
    return set(conn.execute(_FRESH_EMBEDDED, {"model": model_id}).scalars())


_PAGE_COUNTS = text(
    f"SELECT count(*), count(e.path) FROM ({_FRESH_TEXT}) f "
    "JOIN attachment_pages p ON p.path = f.path "
    "LEFT JOIN attachment_embeddings e ON e.path = f.path AND e.extracted_at = f.extracted_at "
    "AND e.model = :model"
)


def count_embedded_pages(conn: Connection, model_id: str) -> Coverage:
    """PDF pages with text (fresh) and how many of them have current vectors (one query)."""
    total, embedded = conn.execute(_PAGE_COUNTS, {"model": model_id}).one()
    return Coverage(int(embedded), int(total))


_ALL_CHUNKS = (
    select(AttachmentChunk.path, AttachmentChunk.chunk_no, AttachmentChunk.vector)
    .join(AttachmentEmbedding, AttachmentEmbedding.path == AttachmentChunk.path)
    .where(AttachmentEmbedding.model == bindparam("model"))
    .order_by(AttachmentChunk.path, AttachmentChunk.chunk_no)
)


def load_page_vectors(
    conn: Connection, model_id: str, dimensions: int, max_rows: int
) -> ChunkMatrix:
    """Every PDF chunk's vector by this model, rows grouped by PDF, at most `max_rows` of
    them (whole PDFs: the last one that would pass the bound is left out, and those after
    it). Streamed into a matrix allocated once, as `vectors.load_vectors`."""
    import numpy as np

    values: dict[str, object] = {"model": model_id}
    count = conn.execute(select(func.count()).select_from(_ALL_CHUNKS.subquery()), values)
    size = min(count.scalar_one(), max_rows)
    matrix = np.empty((size, dimensions), dtype=np.float32)
    chunk_nos = np.empty(size, dtype=np.int64)
    found: list[str] = []
    starts: list[int] = []
    i = 0
    # Per statement: `Connection.execution_options` would set it for the rest of the snapshot.
    result = conn.execute(_ALL_CHUNKS, values, execution_options={"yield_per": 2000})
    for path, chunk_no, vector in result:
        if not found or found[-1] != path:
            found.append(path)
            starts.append(i)
        if i == size:  # past the bound (or rows written since the count): this PDF is left out
            i = starts.pop()
            found.pop()
            break
        matrix[i] = np.frombuffer(vector, dtype="<f4")
        chunk_nos[i] = chunk_no
        i += 1
    result.close()
    starts.append(i)
    return ChunkMatrix(found, np.array(starts, dtype=np.intp), chunk_nos[:i], matrix[:i])


_CHUNK_PAGES = select(
    AttachmentChunk.path, AttachmentChunk.chunk_no, AttachmentChunk.page, AttachmentChunk.body
)


def chunk_pages(
    conn: Connection, keys: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], tuple[int, str]]:
    """The page and text of each (path, chunk_no) asked for (one query per 900 keys). Asked
    as paths and chunk numbers, each a list, so the primary key finds them (SQLite scans the
    table for a list of pairs); the few extra rows are dropped here."""
    found: dict[tuple[str, int], tuple[int, str]] = {}
    wanted = sorted(set(keys))
    for start in range(0, len(wanted), _CHUNK):
        pairs = wanted[start : start + _CHUNK]
        asked = set(pairs)
        rows = conn.execute(
            _CHUNK_PAGES.where(
                AttachmentChunk.path.in_({path for path, _ in pairs}),
                AttachmentChunk.chunk_no.in_({number for _, number in pairs}),
            )
        )
        for row in rows:
            if (key := (row.path, row.chunk_no)) in asked:
                found[key] = (row.page, row.body)
    return found
