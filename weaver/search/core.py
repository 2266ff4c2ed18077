"""`find_notes`: a page of notes by words or by meaning, ranked and filtered the same for every
edge (the `search_notes` tool, `weaver search`, the dashboard). In every mode a note named
exactly what was searched for comes first."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from sqlalchemy import Connection

from weaver.attachments.images import INSTALL_HINT
from weaver.attachments.pdf_text import pdf_available
from weaver.cache import fts, read, vectors
from weaver.cache.attachment_text import PageHit
from weaver.errors import ModelLoadingError
from weaver.markdown.cjk import unsegment
from weaver.paging import Page
from weaver.search.modes import choose_mode
from weaver.search.pdf_pages import (
    pages_by_hybrid,
    pages_by_meaning,
    pages_by_words,
    pdf_words_beside,
)
from weaver.search.results import NoteHit, SearchRequest, SearchResults, SearchSources
from weaver.semantic.search import (
    SemanticPage,
    describe_coverage,
    describe_embedding,
    describe_page_coverage,
)

MAX_NAME = 200  # longer text is no note's name


def find_notes(sources: SearchSources, request: SearchRequest) -> SearchResults:
    """One page of notes matching `request`, best first, in the mode it asks for (or the
    default, `choose_mode`'s)."""
    # One snapshot for the mode, the page and its tags: on PostgreSQL each is a connection's
    # transaction (and round trips) of its own.
    with read.read_snapshot(sources.db) as conn:
        mode = choose_mode(sources, conn, request.mode)
        if mode == "keyword":
            beside = pdf_words_beside(sources.db, request)
            found = _by_keyword(sources, conn, request)
            pages = beside.result() if beside is not None else None
        else:
            found, pages = _by_meaning(sources, conn, request, mode), None
        return _with_attachments(sources, conn, request, found, pages)


def _with_attachments(
    sources: SearchSources,
    conn: Connection,
    request: SearchRequest,
    found: SearchResults,
    pages: Page[PageHit] | None = None,
) -> SearchResults:
    """`found` with the PDF pages found as the notes were: by their words, by meaning, or
    both fused (`pages`, where they were searched already). A tag filter leaves them out: an
    attachment has no tags."""
    if request.tag is not None:
        return found
    if pages is None:
        pages = _attachment_pages(sources, conn, request, found.mode)
    if pages is None:
        return found
    if found.mode != "keyword":
        found = replace(found, coverage=_with_page_coverage(sources, conn, found.coverage))
    # Hits were read by the library: only an answer without any asks whether it is there.
    why = None if pages.items or pdf_available() else f"PDF text is not searched: {INSTALL_HINT}"
    return replace(
        found, attachment_hits=pages.items, attachment_total=pages.total, attachment_text=why
    )


def _attachment_pages(
    sources: SearchSources,
    conn: Connection,
    request: SearchRequest,
    mode: Literal["keyword", "semantic", "hybrid"],
) -> Page[PageHit] | None:
    """The PDFs matching `request` in `mode` (the one the notes ran in); None when the query
    has no words to match (keyword mode)."""
    args = (request.query, request.limit, request.offset, request.directory)
    if mode != "keyword":
        by_meaning = pages_by_meaning if mode == "semantic" else pages_by_hybrid
        try:
            return by_meaning(sources.semantic, conn, *args)
        except ModelLoadingError:  # let go since the notes were ranked: their words, then
            pass
    expression = fts.fts_query(request.query)
    if expression is None:
        return None
    return pages_by_words(conn, expression, request.limit, request.offset, request.directory)


def _with_page_coverage(
    sources: SearchSources, conn: Connection, coverage: str | None
) -> str | None:
    """The notes' coverage, and the PDF pages' where there are any."""
    pages = sources.semantic.page_coverage(conn)
    if pages.total == 0:
        return coverage
    said = f"PDF pages: {describe_page_coverage(pages)}"
    return f"{coverage}; {said}" if coverage else said


def _by_keyword(sources: SearchSources, conn: Connection, request: SearchRequest) -> SearchResults:
    expression = fts.fts_query(request.query)
    if expression is None:  # no words to search for
        return _page(request, [], 0, "keyword")
    page = fts.search(
        conn,
        expression,
        request.limit,
        request.offset,
        directory=request.directory,
        tag=request.tag,
        pinned=named(sources, conn, request.query),
    )
    tags = read.tags_of(conn, [h.path for h in page.hits])
    hits = [
        NoteHit(h.path, h.title, h.snippet, h.score, tags.get(h.path, ()), h.modified)
        for h in page.hits
    ]
    return _page(request, hits, page.total, "keyword", fts_query=unsegment(expression))


def named(sources: SearchSources, conn: Connection, query: str) -> list[str]:
    """The notes named exactly `query` (title, file name, alias or path, ignoring case): they
    rank first when they match it, where BM25 alone could put them anywhere."""
    words = " ".join(query.replace('"', " ").split())
    if not words or len(words) > MAX_NAME:
        return []
    (match,) = sources.names(conn).resolve([words], "exact")
    return [match.path, *match.alternatives] if match.path else []


def _by_meaning(
    sources: SearchSources,
    conn: Connection,
    request: SearchRequest,
    mode: Literal["semantic", "hybrid"],
) -> SearchResults:
    run = sources.semantic.search if mode == "semantic" else sources.semantic.hybrid
    try:
        page = run(
            conn,
            request.query,
            request.limit,
            request.offset,
            directory=request.directory,
            tag=request.tag,
            pinned=named(sources, conn, request.query),
        )
    except ModelLoadingError as exc:
        return _while_loading(sources, conn, request, mode, exc.progress)
    coverage = describe_coverage(page.coverage)
    hits = list_hits(conn, page)
    return _page(
        request,
        hits,
        page.total,
        mode,
        coverage=coverage,
        complete=page.coverage.complete,
        total_exact=page.total_exact,
        progress=describe_embedding(page.coverage),
    )


def _while_loading(
    sources: SearchSources,
    conn: Connection,
    request: SearchRequest,
    mode: Literal["semantic", "hybrid"],
    progress: str,
) -> SearchResults:
    """The answer while the model is built or loaded: hybrid gives the keyword results
    meanwhile (its `mode` says keyword ran), semantic nothing; both say how far it is."""
    if mode == "hybrid":
        found = _by_keyword(sources, conn, request)
        return replace(found, progress=progress + "; keyword results meanwhile", complete=False)
    return _page(request, [], 0, mode, complete=False, progress=progress)


def list_hits(conn: Connection, page: SemanticPage) -> list[NoteHit]:
    """A page of vector hits with each note's title, tags and time."""
    paths = [hit.path for hit in page.hits]
    listing = vectors.note_listing(conn, paths)
    tags = read.tags_of(conn, paths)
    return [
        NoteHit(
            path=hit.path,
            title=listing[hit.path][0],
            snippet=hit.snippet,
            score=hit.score,
            tags=tags.get(hit.path, ()),
            modified=listing[hit.path][1],
        )
        for hit in page.hits
        if hit.path in listing  # a note deleted since its vectors were loaded
    ]


def _page(
    request: SearchRequest,
    hits: list[NoteHit],
    total: int,
    mode: Literal["keyword", "semantic", "hybrid"],
    *,
    fts_query: str | None = None,
    coverage: str | None = None,
    complete: bool = True,
    total_exact: bool = True,
    progress: str | None = None,
) -> SearchResults:
    return SearchResults(
        request.query,
        hits,
        total,
        request.limit,
        request.offset,
        mode,
        fts_query=fts_query,
        coverage=coverage,
        complete=complete,
        total_exact=total_exact,
        progress=progress,
    )
