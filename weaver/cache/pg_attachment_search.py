"""PDF text search on a PostgreSQL cache: what `cache.attachment_text` does with FTS5 on
SQLite, in `tsvector`s (migration `0026`), with the notes' query language and configuration
(`cache.pg_search`).

Each PDF has a document vector and one vector per page (`cache.pg_attachment_text` writes
them). Search matches and ranks documents, not pages, as on SQLite: a hit is a PDF at its best
page (the page ranking best on its own; a PDF whose words are spread over pages, none holding
them all, is named at page 1). A document vector holds a document's first
`pg_search.INDEX_MAX_CHARS`; a PDF matching only past them is still found through its pages,
ranked by what its document vector holds.

Hits show only while the text is fresh (`attachment_texts` agrees with `attachments` on size
and mtime), as on SQLite. Snippets are the notes' (`fts.bounded_snippet`) over the best page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, TextClause, bindparam, text
from sqlalchemy.types import Text

from weaver.cache import attachment_text, pg_search
from weaver.cache.fts import SNIPPET_CLOSE, SNIPPET_OPEN, bounded_snippet
from weaver.cache.pg_attachment_text import DOC_TABLE, PAGE_TABLE
from weaver.cache.pg_search import CONFIG, filter_values, to_tsquery_text
from weaver.markdown.cjk import unsegment
from weaver.paging import Page

# The documents matching: by their document vector, or (past its first INDEX_MAX_CHARS) by a
# page of theirs, both through the GIN indexes, and fresh. The query is MATERIALIZED so the
# planner finds the matches through the indexes (as `pg_search._search_statements` explains).
_MATCHED = f"""
WITH query AS MATERIALIZED (SELECT to_tsquery('{CONFIG}', :query) AS q),
matched AS (
    SELECT d.path FROM {DOC_TABLE} AS d, query WHERE d.document @@ query.q
    UNION
    SELECT p.path FROM {PAGE_TABLE} AS p, query WHERE p.document @@ query.q
)
{{select}}
FROM matched AS m
JOIN {DOC_TABLE} AS d ON d.path = m.path
JOIN attachments AS a ON a.path = m.path
JOIN attachment_texts AS t ON t.path = a.path AND t.size = a.size AND t.mtime_ns = a.mtime_ns
CROSS JOIN query
{{folder}}
"""
_RANKED_SELECT = "SELECT m.path, ts_rank_cd(d.document, query.q) AS rank, count(*) OVER () AS total"
_RANKED_ORDER = "ORDER BY rank DESC, m.path LIMIT :limit OFFSET :offset"
_FOLDER = "WHERE m.path >= :folder_low AND m.path < :folder_high"
# Each ranked document's best page matching on its own, and that page's text.
_BEST_PAGES = text(f"""
WITH query AS MATERIALIZED (SELECT to_tsquery('{CONFIG}', :query) AS q)
SELECT DISTINCT ON (p.path) p.path, p.page, pages.text
FROM {PAGE_TABLE} AS p
JOIN attachment_pages AS pages ON pages.path = p.path AND pages.page = p.page
CROSS JOIN query
WHERE p.path IN :paths AND p.document @@ query.q
ORDER BY p.path, ts_rank_cd(p.document, query.q) DESC, p.page
""").bindparams(bindparam("paths", expanding=True), bindparam("query", type_=Text))


def _statement(select: str, by_folder: bool, tail: str = "") -> TextClause:
    sql = _MATCHED.format(select=select, folder=_FOLDER if by_folder else "") + tail
    return text(sql).bindparams(bindparam("query", type_=Text))


# Built once per filter: a search parses neither again.
_RANKED = {f: _statement(_RANKED_SELECT, f, _RANKED_ORDER) for f in (False, True)}
_COUNT = {f: _statement("SELECT count(*)", f) for f in (False, True)}


def search_pages(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None = None
) -> Page[attachment_text.PageHit]:
    """PDFs matching an FTS5 `expression` (from `fts.fts_query`), best first, each at its best
    page with a snippet, as `attachment_text.search_pages` answers on SQLite; `directory`
    narrows to a folder and its subfolders."""
    with pg_search.index_scans(conn):
        ranked = _rank(conn, expression, limit, offset, directory)
        hits = _place(conn, expression, ranked.items)
    return Page(hits, ranked.total, offset, limit)


def rank_pdfs(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None = None
) -> Page[attachment_text.RankedPdf]:
    """The PDFs `search_pages` answers, ranked alike, without their pages (as
    `attachment_text.rank_pdfs`)."""
    with pg_search.index_scans(conn):
        return _rank(conn, expression, limit, offset, directory)


def place_pdfs(
    conn: Connection, expression: str, ranked: Sequence[attachment_text.RankedPdf]
) -> list[attachment_text.PageHit]:
    """Each of `ranked` (from `rank_pdfs`, with the same `expression`) at its best page, as
    `search_pages` places it."""
    with pg_search.index_scans(conn):
        return _place(conn, expression, ranked)


def _rank(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None
) -> Page[attachment_text.RankedPdf]:
    values: dict[str, Any] = {"query": to_tsquery_text(expression)}
    values |= filter_values(directory, None)
    ranked = conn.execute(
        _RANKED[bool(directory)], values | {"limit": limit, "offset": offset}
    ).all()
    if ranked:
        total = int(ranked[0].total)
    elif offset == 0:
        total = 0
    else:  # past the last match: the window counted nothing
        total = int(conn.execute(_COUNT[bool(directory)], values).scalar_one())
    pdfs = [attachment_text.RankedPdf(row.path, round(float(row.rank), 6) + 0.0) for row in ranked]
    return Page(pdfs, total, offset, limit)


def _place(
    conn: Connection, expression: str, ranked: Sequence[attachment_text.RankedPdf]
) -> list[attachment_text.PageHit]:
    paths = [pdf.path for pdf in ranked]
    best = _best_pages(conn, expression, to_tsquery_text(expression), paths)
    return [
        attachment_text.PageHit(pdf.path, *best.get(pdf.path, (1, "")), pdf.score) for pdf in ranked
    ]


def _best_pages(
    conn: Connection, expression: str, query: str, paths: list[str]
) -> dict[str, tuple[int, str]]:
    """For each of `paths`, its best page matching `query` (the tsquery spelling of
    `expression`) on its own, and that page's snippet."""
    if not paths:
        return {}
    rows = conn.execute(_BEST_PAGES, {"query": query, "paths": paths}).all()
    return {row.path: (row.page, _snippet(row.text, expression)) for row in rows}


def _snippet(page_text: str, expression: str) -> str:
    # Marks of neighbouring CJK characters joined into one, as `fts` does for notes.
    snippet = unsegment(bounded_snippet(page_text, expression))
    return snippet.replace(SNIPPET_CLOSE + SNIPPET_OPEN, "")
