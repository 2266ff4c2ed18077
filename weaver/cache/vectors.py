"""The vectors of the notes' chunks, for semantic search: every SQL statement about them.

`note_embeddings` records, per note, the content hash and the model its chunks were embedded
from; `note_chunks` holds the chunks (heading path, text, vector as little-endian float32).
`sync_embeddings` brings the two tables in line with `notes` before a pass of the embedding
worker, and returns the notes left to embed:

- rows made by another model go (a changed model re-embeds everything);
- a note whose path vanished while a note with the same content hash and no vectors appeared was
  moved: its rows are re-keyed, not embedded again;
- rows of notes that are gone are dropped;
- a note with no row, or whose content hash changed, is pending.

`store_embeddings` replaces a batch of notes' chunks in one transaction, so a pass stopped at
any point leaves each note either fully embedded or pending, never with duplicate chunks.
`load_vectors` reads them as one matrix for `weaver.semantic.search`. A PostgreSQL cache runs
the same SQL, the vectors as `bytea`. Why no vector extension: docs/architecture.md,
"cache/vectors.py".
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, bindparam, delete, func, insert, select, text

from weaver.cache import fts, read
from weaver.cache.models import CacheState, Note, NoteChunk, NoteEmbedding

if TYPE_CHECKING:  # numpy is imported where vectors are computed: not to start a server
    import numpy as np
    import numpy.typing as npt

VERSION_KEY = "vectors_version"
_CHUNK = 900


@dataclass(frozen=True, slots=True)
class NoteSource:
    """What a note's chunks are made from."""

    path: str
    content_hash: str
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    body: str


@dataclass(frozen=True, slots=True)
class ChunkVector:
    heading: str
    body: str
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class EmbeddedNote:
    path: str
    content_hash: str
    chunks: Sequence[ChunkVector]


@dataclass(frozen=True, slots=True)
class Coverage:
    embedded: int  # notes whose vectors match their current content, by this model
    total: int

    @property
    def complete(self) -> bool:
        return self.embedded >= self.total


@dataclass(frozen=True, slots=True)
class ChunkMatrix:
    """Every chunk's vector, rows grouped by note: note i owns rows starts[i]:starts[i + 1]."""

    paths: list[str]
    starts: npt.NDArray[np.intp]
    chunk_nos: npt.NDArray[np.int64]
    matrix: npt.NDArray[np.float32]


# ---------------------------------------------------------------- before a pass


_OTHER_MODEL = select(NoteEmbedding.note_path).where(NoteEmbedding.model != bindparam("model"))
_GONE_CHUNKS = text("DELETE FROM note_chunks WHERE note_path NOT IN (SELECT path FROM notes)")
_GONE_NOTES = text("DELETE FROM note_embeddings WHERE note_path NOT IN (SELECT path FROM notes)")
_MOVES = text(
    "SELECT e.note_path AS old, n.path AS new FROM note_embeddings e "
    "JOIN notes n ON n.content_hash = e.content_hash "
    "WHERE e.model = :model "
    "AND e.note_path NOT IN (SELECT path FROM notes) "
    "AND n.path NOT IN (SELECT note_path FROM note_embeddings) "
    "ORDER BY e.note_path, n.path"
)
_PENDING = text(
    "SELECT n.path FROM notes n LEFT JOIN note_embeddings e ON e.note_path = n.path "
    "WHERE e.note_path IS NULL OR e.content_hash != n.content_hash OR e.model != :model "
    "ORDER BY n.path"
)


def sync_embeddings(conn: Connection, model_id: str) -> list[str]:
    """Drop other models' and gone notes' rows, re-key moved notes; the paths left to embed.
    Commits."""
    values = {"model": model_id}
    changed = conn.execute(
        delete(NoteChunk).where(NoteChunk.note_path.in_(_OTHER_MODEL)), values
    ).rowcount
    changed += conn.execute(delete(NoteEmbedding).where(NoteEmbedding.model != model_id)).rowcount
    moves = _unique_moves(conn.execute(_MOVES, values).all())
    if moves:
        pairs = [{"old": old, "new": new} for old, new in moves]
        for table in ("note_embeddings", "note_chunks"):
            conn.execute(text(f"UPDATE {table} SET note_path = :new WHERE note_path = :old"), pairs)
    changed += len(moves) + conn.execute(_GONE_CHUNKS).rowcount
    changed += conn.execute(_GONE_NOTES).rowcount
    if changed:  # a new version makes every reader reload the matrix: only when it changed
        bump_counter(conn, VERSION_KEY)
    conn.commit()
    return list(conn.execute(_PENDING, values).scalars())


def _unique_moves(rows: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """One new path per old one and the reverse (copies of one note share a hash)."""
    taken_old: set[str] = set()
    taken_new: set[str] = set()
    moves = []
    for old, new in rows:
        if old not in taken_old and new not in taken_new:
            moves.append((old, new))
            taken_old.add(old)
            taken_new.add(new)
    return moves


_SOURCES = select(Note.path, Note.content_hash, Note.title, Note.aliases).where(
    Note.path.in_(bindparam("paths", expanding=True))
)


def note_sources(conn: Connection, paths: Sequence[str]) -> list[NoteSource]:
    """Title, aliases, tags and body of each note in `paths` still in the cache (3 queries)."""
    rows = conn.execute(_SOURCES, {"paths": list(paths)}).all()
    found = [row.path for row in rows]
    bodies = fts.note_bodies(conn, found)
    tags = read.tags_of(conn, found)
    return [
        NoteSource(
            path=row.path,
            content_hash=row.content_hash,
            title=row.title,
            aliases=tuple(str(a) for a in row.aliases or ()),
            tags=tags.get(row.path, ()),
            body=bodies.get(row.path, ""),
        )
        for row in rows
    ]


# ---------------------------------------------------------------- writes


def store_embeddings(conn: Connection, notes: Sequence[EmbeddedNote], model_id: str) -> None:
    """Replace these notes' chunks and records, in one transaction (commits)."""
    if not notes:
        return
    paths = [n.path for n in notes]
    conn.execute(delete(NoteChunk).where(NoteChunk.note_path.in_(paths)))
    conn.execute(delete(NoteEmbedding).where(NoteEmbedding.note_path.in_(paths)))
    chunk_rows = [
        {
            "note_path": n.path,
            "chunk_no": i,
            "heading": c.heading,
            "body": c.body,
            "vector": c.vector.astype("<f4").tobytes(),
        }
        for n in notes
        for i, c in enumerate(n.chunks)
    ]
    if chunk_rows:
        conn.execute(insert(NoteChunk), chunk_rows)
    now = int(time.time() * 1000)
    conn.execute(
        insert(NoteEmbedding),
        [
            {
                "note_path": n.path,
                "content_hash": n.content_hash,
                "model": model_id,
                "chunk_count": len(n.chunks),
                "embedded_at": now,
            }
            for n in notes
        ],
    )
    bump_counter(conn, VERSION_KEY)
    conn.commit()


def bump_counter(conn: Connection, key: str) -> None:
    """Raise the vectors' counter `key` by one (the notes' `VERSION_KEY`, or the PDFs'), in
    the caller's transaction: a reader holding a matrix of an older count loads it again."""
    raised = read.counter(conn, key) + 1
    conn.execute(delete(CacheState).where(CacheState.key == key))
    conn.execute(insert(CacheState).values(key=key, value=json.dumps(raised)))


# ---------------------------------------------------------------- reads


def vectors_version(conn: Connection) -> int:
    """A counter raised by every change to the vectors: a loaded matrix is current while it
    holds."""
    return read.counter(conn, VERSION_KEY)


_COVERED = (
    select(func.count())
    .select_from(NoteEmbedding)
    .join(Note, Note.path == NoteEmbedding.note_path)
    .where(NoteEmbedding.model == bindparam("model"))
    .where(NoteEmbedding.content_hash == Note.content_hash)
)


def count_embedded(conn: Connection, model_id: str) -> Coverage:
    embedded = conn.execute(_COVERED, {"model": model_id}).scalar_one()
    total = conn.execute(select(func.count()).select_from(Note)).scalar_one()
    return Coverage(embedded, total)


_ALL_CHUNKS = (
    select(NoteChunk.note_path, NoteChunk.chunk_no, NoteChunk.vector)
    .join(NoteEmbedding, NoteEmbedding.note_path == NoteChunk.note_path)
    .where(NoteEmbedding.model == bindparam("model"))
    .order_by(NoteChunk.note_path, NoteChunk.chunk_no)
)


_STAMPS = select(NoteEmbedding.note_path, NoteEmbedding.embedded_at).where(
    NoteEmbedding.model == bindparam("model")
)


def embedded_stamps(conn: Connection, model_id: str) -> dict[str, int]:
    """When each note with vectors by this model was embedded (epoch ms; one query)."""
    rows = conn.execute(_STAMPS, {"model": model_id})
    return {row.note_path: row.embedded_at for row in rows}


def load_vectors(
    conn: Connection, model_id: str, dimensions: int, paths: Sequence[str] | None = None
) -> ChunkMatrix:
    """Every chunk's vector made by this model (of the notes in `paths`, when given), as one
    matrix (two queries). The rows are streamed into a matrix allocated once: holding them all
    first, then joining their bytes, would need three times the matrix's memory at the peak."""
    import numpy as np

    values: dict[str, object] = {"model": model_id}
    statement = _ALL_CHUNKS
    if paths is not None:
        statement = statement.where(NoteChunk.note_path.in_(bindparam("paths", expanding=True)))
        values["paths"] = list(paths)
    count = conn.execute(select(func.count()).select_from(statement.subquery()), values)
    size = count.scalar_one()
    matrix = np.empty((size, dimensions), dtype=np.float32)
    chunk_nos = np.empty(size, dtype=np.int64)
    found: list[str] = []
    starts: list[int] = []
    i = 0
    # Per statement: `Connection.execution_options` would set it for the rest of the snapshot.
    result = conn.execute(statement, values, execution_options={"yield_per": 2000})
    for path, chunk_no, vector in result:
        if i == size:
            break  # rows written since the count (a reader's snapshot makes this rare)
        if not found or found[-1] != path:
            found.append(path)
            starts.append(i)
        matrix[i] = np.frombuffer(vector, dtype="<f4")
        chunk_nos[i] = chunk_no
        i += 1
    result.close()
    starts.append(i)
    return ChunkMatrix(found, np.array(starts, dtype=np.intp), chunk_nos[:i], matrix[:i])


_CHUNK_TEXT = select(NoteChunk.note_path, NoteChunk.chunk_no, NoteChunk.heading, NoteChunk.body)


def chunk_texts(conn: Connection, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """`heading: body` of each (path, chunk_no) asked for (one query per 900 notes)."""
    found: dict[tuple[str, int], str] = {}
    wanted = set(keys)
    paths = sorted({path for path, _ in keys})
    for start in range(0, len(paths), _CHUNK):
        rows = conn.execute(
            _CHUNK_TEXT.where(NoteChunk.note_path.in_(paths[start : start + _CHUNK]))
        )
        for row in rows:
            key = (row.note_path, row.chunk_no)
            if key in wanted:
                found[key] = f"{row.heading}: {row.body}" if row.heading else row.body
    return found


_LISTING = select(Note.path, Note.title, Note.modified).where(
    Note.path.in_(bindparam("paths", expanding=True))
)


def note_listing(conn: Connection, paths: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Title and modified time (epoch ms) of each note in `paths` (one query)."""
    rows = conn.execute(_LISTING, {"paths": list(paths)}).all()
    return {row.path: (row.title, row.modified) for row in rows}


_LINKED = text(
    "SELECT target_path FROM links WHERE source_path = :path AND target_path IS NOT NULL "
    "UNION SELECT source_path FROM links WHERE target_path = :path"
)


def linked_paths(conn: Connection, path: str) -> set[str]:
    """Notes `path` links to or is linked from (one query)."""
    return set(conn.execute(_LINKED, {"path": path}).scalars())
