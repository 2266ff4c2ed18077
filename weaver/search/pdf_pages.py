"""PDF pages by meaning: the `attachments` list of a semantic or hybrid search.

As notes are, PDFs are ranked whole (a document by its best chunks, `note_scores`) and each hit
named at its best page. Semantic mode ranks the PDFs whose pages have current vectors; hybrid
fuses that ranking, kept to `similarity_floor` and above, with the words' (BM25) one by
reciprocal rank fusion, each read `FUSION_DEPTH` deep, as `SemanticIndex.hybrid` fuses notes.
A hybrid hit the words found is named at the page holding them, with their highlighted
snippet; one found by meaning alone at its nearest chunk's page.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy import Connection, Engine

from weaver.cache import attachment_text, attachment_vectors, fts, pg_attachment_search
from weaver.cache.attachment_text import PageHit, RankedPdf
from weaver.cache.dialect import is_postgres
from weaver.cache.read import read_snapshot
from weaver.paging import Page
from weaver.search.results import SearchRequest
from weaver.semantic.search import (
    FUSION_DEPTH,
    MAX_QUERY_CHARS,
    RRF_K,
    SemanticHit,
    SemanticIndex,
    clip_snippet,
)

# PDF word searches run beside their notes' (`pdf_words_beside`), a few at once; past that a
# search runs its own after its notes rather than queue behind another's.
BESIDE_THREADS = 4
_BESIDE = ThreadPoolExecutor(BESIDE_THREADS, thread_name_prefix="pdf-words")
_BESIDE_SLOTS = threading.BoundedSemaphore(BESIDE_THREADS)


def pages_by_meaning(
    index: SemanticIndex,
    conn: Connection,
    query: str,
    limit: int,
    offset: int,
    directory: str | None,
) -> Page[PageHit]:
    """PDFs nearest in meaning to `query`, best first, each at its best page."""
    ranked, total = index.rank_pages(conn, query, offset + limit, directory, hybrid=False)
    return Page(_named_at_pages(conn, ranked[offset : offset + limit]), total, offset, limit)


def pages_by_hybrid(
    index: SemanticIndex,
    conn: Connection,
    query: str,
    limit: int,
    offset: int,
    directory: str | None,
) -> Page[PageHit]:
    """The PDFs holding the query's words and those near it in meaning, fused (RRF). The
    total counts both lists, those beyond `FUSION_DEPTH` as well (an upper bound then). Only
    the PDFs shown are placed at their pages: a ranking read `FUSION_DEPTH` deep would
    otherwise score every page of a hundred PDFs for a page of twenty."""
    semantic, semantic_total = index.rank_pages(conn, query, FUSION_DEPTH, directory, hybrid=True)
    expression = fts.fts_query(query[:MAX_QUERY_CHARS])
    keyword: Page[RankedPdf] = Page([], 0, 0, FUSION_DEPTH)
    if expression is not None:
        keyword = rank_by_words(conn, expression, FUSION_DEPTH, 0, directory)
    scores = _fused([hit.path for hit in semantic], [pdf.path for pdf in keyword.items])
    fused = sorted(scores, key=lambda p: (-scores[p], p))
    page = fused[offset : offset + limit]
    by_words = {pdf.path: pdf for pdf in keyword.items}
    by_meaning = {hit.path: hit for hit in semantic if hit.path not in by_words}
    shown = [by_words[p] for p in page if p in by_words]
    placed = place_by_words(conn, expression, shown) if shown and expression is not None else []
    placed += _named_at_pages(conn, [by_meaning[p] for p in page if p in by_meaning])
    named = {hit.path: hit for hit in placed}
    hits = [
        PageHit(path, *_place(named[path]), round(scores[path], 6))
        for path in page
        if path in named  # a PDF's vectors replaced since the load: not named by meaning
    ]
    unread = semantic_total - len(semantic) + keyword.total - len(keyword.items)
    return Page(hits, len(fused) + unread, offset, limit)


def _fused(*rankings: list[str]) -> dict[str, float]:
    """Each path's reciprocal rank fusion score over `rankings` (best first)."""
    scores: dict[str, float] = {}
    for ranked in rankings:
        for rank, path in enumerate(ranked, start=1):
            scores[path] = scores.get(path, 0.0) + 1.0 / (RRF_K + rank)
    return scores


def _place(hit: PageHit) -> tuple[int, str]:
    return hit.page, hit.snippet


def pdf_words_beside(db: Engine, request: SearchRequest) -> Future[Page[PageHit]] | None:
    """The PDFs holding `request`'s words, searched on a thread of their own while the caller
    searches the notes (None: nothing to search for, or no thread free, and the caller searches
    them after the notes as before). The two indexes are apart, and SQLite lets go of the GIL
    while it steps through one, so on two cores the answer takes about the longer of the two
    rather than both. Its own connection: a snapshot of its own, taken with the notes'."""
    expression = fts.fts_query(request.query)
    if expression is None or request.tag is not None or not _BESIDE_SLOTS.acquire(False):
        return None
    try:
        return _BESIDE.submit(_pages_in_snapshot, db, expression, request)
    except BaseException:  # not started (the pool shut down at exit): the slot is not taken
        _BESIDE_SLOTS.release()
        raise


def _pages_in_snapshot(db: Engine, expression: str, request: SearchRequest) -> Page[PageHit]:
    try:
        with read_snapshot(db) as conn:
            args = (request.limit, request.offset, request.directory)
            return pages_by_words(conn, expression, *args)
    finally:  # before the answer is handed over: the next search finds the thread free
        _BESIDE_SLOTS.release()


def pages_by_words(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None
) -> Page[PageHit]:
    """PDFs matching an FTS expression: the same answer from each backend's own index (FTS5
    on SQLite, tsvectors on PostgreSQL)."""
    if is_postgres(conn):
        return pg_attachment_search.search_pages(conn, expression, limit, offset, directory)
    return attachment_text.search_pages(conn, expression, limit, offset, directory)


def rank_by_words(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None
) -> Page[RankedPdf]:
    """The PDFs `pages_by_words` answers, ranked, without their pages (`place_by_words`)."""
    if is_postgres(conn):
        return pg_attachment_search.rank_pdfs(conn, expression, limit, offset, directory)
    return attachment_text.rank_pdfs(conn, expression, limit, offset, directory)


def place_by_words(conn: Connection, expression: str, ranked: list[RankedPdf]) -> list[PageHit]:
    """Each of `ranked` at the page holding the words best, with their snippet."""
    if is_postgres(conn):
        return pg_attachment_search.place_pdfs(conn, expression, ranked)
    return attachment_text.place_pdfs(conn, expression, ranked)


def _named_at_pages(conn: Connection, hits: list[SemanticHit]) -> list[PageHit]:
    """Each hit at the page of its best chunk, that chunk's text its snippet (one query)."""
    places = attachment_vectors.chunk_pages(conn, [(h.path, h.chunk_no) for h in hits])
    return [
        PageHit(h.path, places[key][0], clip_snippet(places[key][1]), h.score)
        for h in hits
        if (key := (h.path, h.chunk_no)) in places  # a PDF's vectors replaced since the load
    ]
