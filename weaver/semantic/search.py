"""Semantic and hybrid search, and similar notes, over the cache's chunk vectors.

`SemanticIndex` belongs to the `App`: it loads the model on first use (never at start, so a base
install or a keyword-only user pays nothing) and keeps the chunk matrix per vectors version. A
note's score is the mean cosine of its best chunks (`note_scores`), so a long note is not found
for one lucky passage among hundreds; the snippet is its best chunk. Hybrid search fuses the
keyword (BM25) ranking with the semantic one by reciprocal rank fusion: each list gives a note
1 / (RRF_K + rank), so a note both lists agree on rises, and neither score scale has to be
calibrated against the other. A note joins the semantic list only at `similarity_floor` or
above, so a word found in one note finds that note, not that note and the nearest dozens; the
floor is calibrated in docs/semantic-search.md.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from weaver.cache import attachment_vectors, fts, read, vectors
from weaver.cache.graph import notes_within
from weaver.cache.vectors import ChunkMatrix, Coverage
from weaver.errors import SemanticUnavailableError
from weaver.semantic.loading import ModelLoader
from weaver.semantic.model import (
    DEFAULT_MODEL,
    EmbeddingModel,
    Vectors,
    enable_hint,
    is_static,
    semantic_installed,
)
from weaver.semantic.model_loader import load_model

if TYPE_CHECKING:  # numpy is imported where vectors are computed: not to start a server
    import numpy as np
    import numpy.typing as npt

RRF_K = 60
# The most PDF chunk rows held in memory (about 60 MB at 384 dimensions): whole PDFs, those
# past it are found by their words only (`attachment_vectors.load_page_vectors`).
MAX_PAGE_ROWS = 40_000
# How long a query waits for the model to load before answering with the progress instead.
LOAD_WAIT_S = 5.0
# Notes changed since the matrix was loaded beyond which it is loaded whole again.
PATCH_LIMIT = 2000
# How deep each ranking is read before fusing: hybrid pages go this far.
FUSION_DEPTH = 100
# Queries are cut here: the model reads 256 tokens, and a 100 KB query must not cost more.
MAX_QUERY_CHARS = 2000
SNIPPET_CHARS = 240
# The least score of a note joining a hybrid answer by meaning, per kind of model (their
# cosines differ in scale): the highest at which hybrid recall@5 on the bench's paraphrase set
# loses at most one query of 46 (docs/semantic-search.md, "How hybrid admits a note").
STATIC_FLOOR = 0.35
TRANSFORMER_FLOOR = 0.30
# A note scores by the mean of its best chunks, this share of them: a list note of 300
# sections averages its best 15, so a passage or two near the query do not carry it. At least
# two for the static model, whose single best chunk is the noisier (paraphrase MRR 0.63 by one,
# 0.67 by two), one for the transformer (recall@5 0.87 by one, 0.83 by two).
BEST_SHARE = 0.05
STATIC_LEAST_CHUNKS = 2
TRANSFORMER_LEAST_CHUNKS = 1


@dataclass(frozen=True, slots=True)
class SemanticHit:
    path: str
    score: float  # mean cosine of the best chunks (semantic) or fused RRF score (hybrid)
    chunk_no: int  # the best chunk; -1 when the note came from the keyword ranking only
    snippet: str


@dataclass(frozen=True, slots=True)
class SemanticPage:
    hits: list[SemanticHit]
    total: int
    coverage: Coverage
    total_exact: bool = True  # False: `total` is an estimate (an upper bound)


class SemanticIndex:
    """The model and the vectors of one cache, loaded on demand; thread-safe."""

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        model_path: Path | None = None,
        threads: int = 1,
        cache_dir: Path | None = None,
        model: EmbeddingModel | None = None,
    ) -> None:
        self.model_id = model.model_id if model is not None else model_id
        self._model_path = model_path
        self._threads = threads
        self._cache_dir = cache_dir  # where a static model's distilled matrix is kept
        self._lock = threading.Lock()  # the matrix
        self._loader = ModelLoader(self._load, model)  # given: the bench's variants
        self._matrix: ChunkMatrix | None = None
        self._version = -1
        # The PDF pages' vectors: a matrix of their own, so that notes rank as before and a
        # PDF embedded never makes the notes' matrix load again.
        self._page_matrix: ChunkMatrix | None = None
        self._page_version = -1
        self._page_cache: (
            tuple[tuple[int, tuple[int, int], int | None], tuple[set[str], Coverage]] | None
        ) = None
        self._last_query: tuple[str, npt.NDArray[np.float32] | None] | None = None
        self._coverage: tuple[tuple[int, int | None], Coverage] | None = None
        self._loaded_at = 0  # the newest `embedded_at` among the loaded vectors
        self._used_at = time.monotonic()  # the last use of the model or the vectors

    def model(
        self, wait: float | None = LOAD_WAIT_S, stopped: Callable[[], bool] | None = None
    ) -> EmbeddingModel:
        """The loaded model, loading it in the background on first use: `ModelLoadingError`
        (with the progress) when it is not ready within `wait` seconds or is being distilled
        (a first start, a minute or more), the load's `SemanticUnavailableError` when it
        failed (kept). The worker waits as long as it takes (None), or until `stopped()`."""
        self._used_at = time.monotonic()
        return self._loader.get(wait, stopped)

    def release_if_idle(self, idle_s: float) -> bool:
        """Let go of the model and the vectors when neither was used for `idle_s` seconds,
        so that a server at rest does not hold them (a hundred megabytes at 10,000 notes);
        the next search or embedding pass loads them again. True if anything was let go."""
        if time.monotonic() - self._used_at < idle_s:
            return False
        with self._lock:
            had_matrix = self._matrix is not None or self._page_matrix is not None
            self._matrix, self._version, self._loaded_at = None, -1, 0
            self._page_matrix, self._page_version = None, -1
        return self._loader.unload() or had_matrix

    @property
    def holds_model(self) -> bool:
        return self._loader.loaded

    def loading_progress(self) -> str | None:
        """What the model's load is doing ("building the embedding model, 40 %"), or None
        when it is not loading."""
        return self._loader.progress() if self._loader.loading else None

    def _load(self, on_progress: Callable[[float], None]) -> EmbeddingModel:
        return load_model(
            self.model_id, self._model_path, self._threads, self._cache_dir, on_progress
        )

    def coverage(self, conn: Connection) -> Coverage:
        """How many notes have current vectors; counted again only when the vectors or the
        notes changed (the count joins every note: a few ms a call at 10,000 notes)."""
        key = (vectors.vectors_version(conn), read.last_updated(conn))
        cached = self._coverage
        if cached is not None and cached[0] == key:
            return cached[1]
        coverage = vectors.count_embedded(conn, self.model_id)
        self._coverage = (key, coverage)
        return coverage

    def matrix(self, conn: Connection) -> ChunkMatrix:
        """Every chunk vector, as of `conn`'s snapshot (open it with `read.read_snapshot`)."""
        version = vectors.vectors_version(conn)
        dimensions = self.model().dimensions
        with self._lock:
            if self._matrix is None or version != self._version:
                self._matrix = self._refresh(conn, self._matrix, dimensions)
                self._version = version
            return self._matrix

    def page_matrix(self, conn: Connection) -> ChunkMatrix:
        """Every PDF chunk vector (up to `MAX_PAGE_ROWS`), as of `conn`'s snapshot; loaded
        whole when they changed (PDFs change seldom, and are a fraction of a vault's chunks)."""
        version = attachment_vectors.vectors_version(conn)
        dimensions = self.model().dimensions
        with self._lock:
            if self._page_matrix is None or version != self._page_version:
                self._page_matrix = None  # let the old one go before the new one is read
                self._page_matrix = attachment_vectors.load_page_vectors(
                    conn, self.model_id, dimensions, MAX_PAGE_ROWS
                )
                self._page_version = version
            return self._page_matrix

    def page_coverage(self, conn: Connection) -> Coverage:
        """How many PDF pages with text have current vectors (counted again only when
        `_page_state` changed: the count joins every page)."""
        return self._page_facts(conn)[1]

    def _page_facts(self, conn: Connection) -> tuple[set[str], Coverage]:
        """The PDFs whose vectors may answer now, and the pages' coverage; read again only
        when the PDF vectors, the PDF text or the cache (the attachment rows) changed."""
        key = (
            attachment_vectors.vectors_version(conn),
            attachment_vectors.text_stamp(conn),
            read.last_updated(conn),
        )
        cached = self._page_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        facts = (
            attachment_vectors.fresh_paths(conn, self.model_id),
            attachment_vectors.count_embedded_pages(conn, self.model_id),
        )
        self._page_cache = (key, facts)
        return facts

    def rank_pages(
        self,
        conn: Connection,
        query: str,
        depth: int,
        directory: str | None,
        hybrid: bool,
    ) -> tuple[list[SemanticHit], int]:
        """The `depth` PDFs nearest in meaning to `query` (those whose vectors are fresh, under
        `directory`), best first, each at its best chunk; and how many were kept. `hybrid`
        keeps only those at `similarity_floor` or above, as for notes."""
        vector = self._query_vector(query)
        if vector is None:
            return [], 0
        matrix = self.page_matrix(conn)
        if not matrix.paths:
            return [], 0
        fresh = self._page_facts(conn)[0]  # stale ones never answer
        if directory:
            fresh = {path for path in fresh if path.startswith(directory + "/")}
        floor = similarity_floor(self.model_id) if hybrid else None
        # A PDF scores by its best chunk: its pages are about many things, and one page that
        # answers is the hit (averaging would sink it among unrelated ones).
        ranking = _Ranking(None, None, depth, floor, (), least=1, share=0.0)
        return _rank(matrix, vector, fresh, ranking)

    def _query_vector(self, query: str) -> npt.NDArray[np.float32] | None:
        """`query`'s vector; the last one is kept, as notes and PDF pages are ranked by it in
        turn."""
        last = self._last_query
        if last is not None and last[0] == query:
            return last[1]
        vector = self.model().embed_query(query[:MAX_QUERY_CHARS]) if query.strip() else None
        self._last_query = (query, vector)
        return vector

    def _refresh(self, conn: Connection, old: ChunkMatrix | None, dimensions: int) -> ChunkMatrix:
        """The matrix brought up to date: the rows of notes embedded since it was loaded are
        read again, those of notes gone are dropped, the rest are kept; loading it all
        again takes a second at 10,000 notes, which every first query after an edit paid."""
        stamps = vectors.embedded_stamps(conn, self.model_id)
        loaded_at = self._loaded_at
        self._loaded_at = max(stamps.values(), default=0)
        if old is None:
            return vectors.load_vectors(conn, self.model_id, dimensions)
        held = set(old.paths)
        changed = sorted(p for p, at in stamps.items() if at >= loaded_at or p not in held)
        if len(changed) > PATCH_LIMIT:
            return vectors.load_vectors(conn, self.model_id, dimensions)
        fresh = vectors.load_vectors(conn, self.model_id, dimensions, changed)
        return _patched(old, set(stamps).difference(changed), fresh)

    # ------------------------------------------------------------ queries

    def search(
        self,
        conn: Connection,
        query: str,
        limit: int,
        offset: int,
        *,
        directory: str | None = None,
        tag: str | None = None,
        pinned: Sequence[str] = (),
    ) -> SemanticPage:
        """Notes nearest in meaning to `query`, best first; `pinned` notes (named exactly as
        searched for) first of all, when the filters keep them."""
        ranked, total = self._rank_query(
            conn, query, self._ranking(directory, tag, offset + limit, None, pinned)
        )
        page = ranked[offset : offset + limit]
        return SemanticPage(self._with_snippets(conn, page), total, self.coverage(conn))

    def hybrid(
        self,
        conn: Connection,
        query: str,
        limit: int,
        offset: int,
        *,
        directory: str | None = None,
        tag: str | None = None,
        pinned: Sequence[str] = (),
    ) -> SemanticPage:
        """The keyword matches and the notes at `similarity_floor` or above, fused (RRF), each
        list read `FUSION_DEPTH` deep; `pinned` notes first. `total` is the notes in either
        list: exact when both were read whole, else an upper bound."""
        floor = similarity_floor(self.model_id)
        ranking = self._ranking(directory, tag, FUSION_DEPTH, floor, pinned)
        semantic, semantic_total = self._rank_query(conn, query, ranking)
        keyword, keyword_total = _keyword_ranking(conn, query, directory, tag)
        scores: dict[str, float] = {}
        best_chunk = {hit.path: hit.chunk_no for hit in semantic}
        for ranked in ([hit.path for hit in semantic], keyword):
            for rank, path in enumerate(ranked, start=1):
                scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank)
        first = [path for path in dict.fromkeys(pinned) if path in scores]
        fused = first + sorted(scores.keys() - set(first), key=lambda p: (-scores[p], p))
        hits = [SemanticHit(p, round(scores[p], 6), best_chunk.get(p, -1), "") for p in fused]
        unread = semantic_total - len(semantic) + keyword_total - len(keyword)
        page = hits[offset : offset + limit]
        return SemanticPage(
            self._with_snippets(conn, page),
            len(hits) + unread,
            self.coverage(conn),
            total_exact=unread == 0,
        )

    def similar(
        self, conn: Connection, path: str, limit: int, exclude: Collection[str] = ()
    ) -> SemanticPage:
        """Notes nearest to `path`'s own (mean of its chunks), leaving out it and `exclude`."""
        import numpy as np

        self.model()  # not installed or not loadable: say so, rather than "no vectors yet"
        matrix = self.matrix(conn)
        try:
            i = matrix.paths.index(path)
        except ValueError:
            raise SemanticUnavailableError(
                f"{path!r} has no vectors yet: it is waiting for the embedding worker"
            ) from None
        rows = matrix.matrix[matrix.starts[i] : matrix.starts[i + 1]]
        centre = rows.mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-12)
        skip = {path, *exclude}
        ranking = self._ranking(None, None, limit + len(skip), None, ())
        ranked, total = _rank(matrix, centre, None, ranking)
        page = [hit for hit in ranked if hit.path not in skip][:limit]
        total = max(total - len(skip), len(page))
        return SemanticPage(self._with_snippets(conn, page), total, self.coverage(conn))

    def _ranking(
        self,
        directory: str | None,
        tag: str | None,
        depth: int,
        floor: float | None,
        pinned: Sequence[str],
    ) -> _Ranking:
        static = is_static(self.model_id)
        least = STATIC_LEAST_CHUNKS if static else TRANSFORMER_LEAST_CHUNKS
        return _Ranking(directory, tag, depth, floor, pinned, least)

    def _rank_query(
        self, conn: Connection, query: str, ranking: _Ranking
    ) -> tuple[list[SemanticHit], int]:
        vector = self._query_vector(query)
        if vector is None:
            return [], 0
        within = notes_within(conn, ranking.directory, ranking.tag)
        return _rank(self.matrix(conn), vector, within, ranking)

    def _with_snippets(self, conn: Connection, hits: list[SemanticHit]) -> list[SemanticHit]:
        keys = [(h.path, h.chunk_no) for h in hits if h.chunk_no >= 0]
        texts = vectors.chunk_texts(conn, keys)
        return [
            SemanticHit(
                h.path, h.score, h.chunk_no, clip_snippet(texts.get((h.path, h.chunk_no), ""))
            )
            for h in hits
        ]


def _patched(old: ChunkMatrix, keep: set[str], fresh: ChunkMatrix) -> ChunkMatrix:
    """`old`'s rows of the notes in `keep`, then all of `fresh`'s."""
    import numpy as np

    kept = [i for i, path in enumerate(old.paths) if path in keep]
    spans = [np.arange(old.starts[i], old.starts[i + 1]) for i in kept]
    rows = np.concatenate(spans) if spans else np.zeros(0, dtype=np.intp)
    lengths = [int(old.starts[i + 1] - old.starts[i]) for i in kept]
    lengths += np.diff(fresh.starts).tolist()
    starts = np.concatenate(([0], np.cumsum(lengths, dtype=np.intp))).astype(np.intp)
    return ChunkMatrix(
        paths=[old.paths[i] for i in kept] + fresh.paths,
        starts=starts,
        chunk_nos=np.concatenate((old.chunk_nos[rows], fresh.chunk_nos)),
        matrix=np.concatenate((old.matrix[rows], fresh.matrix)),
    )


def describe_coverage(coverage: Coverage) -> str:
    """`embedded 8,200 of 10,000 notes` (with why it matters when partial)."""
    text = f"embedded {coverage.embedded:,} of {coverage.total:,} notes"
    return text if coverage.complete else text + "; results cover the embedded notes only"


def describe_page_coverage(coverage: Coverage) -> str:
    """`embedded 300 of 1,200` PDF pages (those with text)."""
    return f"embedded {coverage.embedded:,} of {coverage.total:,}"


def describe_embedding(coverage: Coverage) -> str | None:
    """`embedding notes, 1,200 of 6,571` while some notes wait for their vectors; else None."""
    if coverage.complete:
        return None
    return f"embedding notes, {coverage.embedded:,} of {coverage.total:,}"


def embedding_status(index: SemanticIndex, conn: Connection, enabled: bool) -> str:
    """What `get_stats` and `health_check` say about semantic search."""
    if not semantic_installed():
        return f"semantic search not installed: {enable_hint()}"
    if not enabled:
        return "semantic search turned off (semantic = false)"
    said = describe_coverage(index.coverage(conn))
    pages = index.page_coverage(conn)
    return said if pages.total == 0 else f"{said}; PDF pages: {describe_page_coverage(pages)}"


@functools.cache
def one_blas_thread() -> None:
    """OpenBLAS on one thread in this process. Its threads wake for even a small product and
    then wait for cores busy with the rest of the server (the indexer, other calls); one
    thread is quicker than numpy's own loop (`einsum`) too (docs/benchmarks-notes.md)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


@dataclass(frozen=True, slots=True)
class _Ranking:
    """What a ranking keeps: the notes under the filters, the `depth` best of them, those at
    `floor` or above (None: all), `pinned` ones first."""

    directory: str | None = None
    tag: str | None = None
    depth: int = FUSION_DEPTH
    floor: float | None = None
    pinned: Sequence[str] = ()
    least: int = STATIC_LEAST_CHUNKS  # the fewest chunks a note scores by: 1 or 2
    share: float = BEST_SHARE  # of its chunks a long note scores by (0: `least` alone)


def similarity_floor(model_id: str) -> float:
    """The least score of a note joining a hybrid answer by meaning, for this model."""
    return STATIC_FLOOR if is_static(model_id) else TRANSFORMER_FLOOR


def _keyword_ranking(
    conn: Connection, query: str, directory: str | None, tag: str | None
) -> tuple[list[str], int]:
    """The best `FUSION_DEPTH` keyword matches, and how many match in all (counted only when
    there are more than were read)."""
    expression = fts.fts_query(query[:MAX_QUERY_CHARS])
    if expression is None:
        return [], 0
    paths = fts.ranked_paths(conn, expression, FUSION_DEPTH, directory=directory, tag=tag)
    if len(paths) < FUSION_DEPTH:
        return paths, len(paths)
    return paths, fts.count_matches(conn, expression, directory=directory, tag=tag)


def note_scores(
    scores: npt.NDArray[np.float32],
    starts: npt.NDArray[np.intp],
    least: int = 2,
    share: float = BEST_SHARE,
) -> Vectors:
    """Each note's score from its chunks' (`starts` opens each note's run, plus the end): the
    mean of its best `share` of chunks, `least` (1 or 2) at least, as many as it has."""
    import numpy as np

    firsts = starts[:-1]
    lengths = np.diff(starts)
    best = np.maximum.reduceat(scores, firsts)
    result: Vectors = best.astype(np.float32)
    if least > 1:
        at_best = scores == np.repeat(best, lengths)
        second = np.maximum.reduceat(np.where(at_best, -np.inf, scores), firsts)
        # Two chunks may tie for best (a note's windows overlap): then the second is as good.
        second = np.where(np.add.reduceat(at_best, firsts) > 1, best, second)
        result = np.where(lengths > 1, (best + second) / 2, best).astype(np.float32)
    # Few notes are long enough to average more: those one at a time.
    for i in np.flatnonzero(lengths * share > least):
        counted = math.ceil(lengths[i] * share)
        result[i] = np.sort(scores[starts[i] : starts[i + 1]])[-counted:].mean()
    return result


def _rank(
    matrix: ChunkMatrix,
    vector: npt.NDArray[np.float32],
    within: Collection[str] | None,
    ranking: _Ranking,
) -> tuple[list[SemanticHit], int]:
    """The `ranking.depth` best notes by `note_scores`, best first; and how many it kept."""
    import numpy as np

    if not matrix.paths:
        return [], 0
    one_blas_thread()
    scores = matrix.matrix @ vector
    notes = note_scores(scores, matrix.starts, ranking.least, ranking.share)
    kept = np.ones(len(matrix.paths), dtype=bool)
    if within is not None:
        kept = np.fromiter((p in within for p in matrix.paths), bool, len(matrix.paths))
    pinned = _indexes(matrix.paths, ranking.pinned)
    if ranking.floor is not None:
        pinned_mask = np.zeros_like(kept)
        pinned_mask[pinned] = True
        kept &= (notes >= ranking.floor) | pinned_mask
    order = np.where(kept, notes, -np.inf)
    order[[i for i in pinned if kept[i]]] = np.inf  # named as searched for: first
    total = int(kept.sum())
    depth = min(ranking.depth, total)
    top = np.argpartition(-order, depth - 1)[:depth] if depth else np.array([], dtype=np.intp)
    top = top[np.lexsort((top, -order[top]))]
    hits = []
    for i in top:
        start, end = matrix.starts[i], matrix.starts[i + 1]
        chunk_no = int(matrix.chunk_nos[start + int(np.argmax(scores[start:end]))])
        hits.append(SemanticHit(matrix.paths[i], round(float(notes[i]), 6), chunk_no, ""))
    return hits, total


def _indexes(paths: list[str], wanted: Sequence[str]) -> list[int]:
    found = []
    for path in wanted:
        try:
            found.append(paths.index(path))
        except ValueError:  # not embedded (yet)
            continue
    return found


def clip_snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
