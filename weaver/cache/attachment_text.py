"""PDF text in the cache: which PDFs wait for extraction, each document's pages stored in one
short transaction, full-text search over them (on SQLite: FTS5 `attachment_doc_fts` ranks
whole documents, `attachment_fts` finds each one's best page), and the PDFs whose text could
not be read (list_problems).

A page's hits show only while its text is fresh: the `attachments` row (written by the
indexer) and the `attachment_texts` row (written once the text is read) must agree on size and
mtime, so a replaced PDF's old text is never found, and a deleted one's vanishes with its
`attachments` row, before `forget_gone` clears its pages. On PostgreSQL the pages are indexed
as `tsvector`s by `cache.pg_attachment_text` and searched by `cache.pg_attachment_search`
(`searchable` is false there: the FTS5 statements here do not run)."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, not_, select, text

from weaver.cache import pg_attachment_text
from weaver.cache.dialect import is_postgres
from weaver.cache.fts import (
    ATTACHMENT_DOC_FTS_TABLE,
    ATTACHMENT_FTS_TABLE,
    SNIPPET_CLOSE,
    SNIPPET_ELLIPSIS,
    SNIPPET_OPEN,
    SNIPPET_TOKENS,
)
from weaver.cache.models import Attachment, AttachmentPage, AttachmentText
from weaver.markdown.cjk import segment, unsegment
from weaver.paging import Page

FTS_TABLE = ATTACHMENT_FTS_TABLE
DOC_FTS_TABLE = ATTACHMENT_DOC_FTS_TABLE
PAGE_BREAK = "\n\nweaverpagebreak\n\n"
_CHUNK = 900


@dataclass(frozen=True, slots=True)
class PendingPdf:
    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class ExtractedPdf:
    """What reading one PDF gave: its pages' text, or the problem that kept text out (both for
    a document read in part: more pages than are read)."""

    path: str
    size: int
    mtime_ns: int
    pages: int | None  # in the document; None: it could not be read
    texts: Sequence[str]
    problem: str | None


@dataclass(frozen=True, slots=True)
class PageHit:
    path: str
    page: int
    snippet: str
    score: float  # -bm25: higher is better


@dataclass(frozen=True, slots=True)
class RankedPdf:
    """A PDF matching a search, ranked but not yet placed at a page (`place_pdfs`)."""

    path: str
    score: float  # -bm25 (ts_rank_cd on PostgreSQL): higher is better


@dataclass(frozen=True, slots=True)
class PdfProblem:
    path: str
    problem: str
    pages: int | None
    indexed_pages: int


def searchable(conn: Connection) -> bool:
    """Whether this module's FTS5 search runs in this cache (SQLite; on PostgreSQL,
    `pg_attachment_search.search_pages` searches)."""
    return conn.dialect.name == "sqlite"


def _is_pdf() -> ColumnElement[bool]:
    return func.lower(Attachment.path).like("%.pdf")


_FRESH = and_(
    AttachmentText.path == Attachment.path,
    AttachmentText.size == Attachment.size,
    AttachmentText.mtime_ns == Attachment.mtime_ns,
)


def pending_pdfs(conn: Connection, limit: int) -> list[PendingPdf]:
    """Up to `limit` PDFs whose text was never read or was read from an older file, the most
    recently changed first (what someone just added is what they will search for)."""
    rows = conn.execute(
        select(Attachment.path, Attachment.size, Attachment.mtime_ns)
        .outerjoin(AttachmentText, _FRESH)
        .where(_is_pdf(), AttachmentText.path.is_(None))
        .order_by(Attachment.mtime_ns.desc(), Attachment.path)
        .limit(limit)
    ).all()
    return [PendingPdf(r.path, r.size, r.mtime_ns) for r in rows]


def count_pending(conn: Connection) -> int:
    return int(
        conn.execute(
            select(func.count())
            .select_from(Attachment)
            .outerjoin(AttachmentText, _FRESH)
            .where(_is_pdf(), AttachmentText.path.is_(None))
        ).scalar_one()
    )


def store_extracted(conn: Connection, extracted: ExtractedPdf, now_ms: int) -> None:
    """Replace the PDF's pages and state with `extracted` (in the caller's transaction). Its
    pages take consecutive ids in page order (one insert; a rowid table gives each row the
    largest id plus one), the first one its `attachment_doc_fts` rowid: the search tells a
    page's document by its id alone (`_best_page_ids`)."""
    _delete_pages(conn, [extracted.path])
    conn.execute(delete(AttachmentText).where(AttachmentText.path == extracted.path))
    conn.execute(
        insert(AttachmentText).values(
            path=extracted.path,
            size=extracted.size,
            mtime_ns=extracted.mtime_ns,
            pages=extracted.pages,
            indexed_pages=len(extracted.texts),
            problem=extracted.problem,
            extracted_at=now_ms,
        )
    )
    # A NUL (a text layer may hold one) becomes a space: PostgreSQL's text refuses it, and a
    # PDF it failed would fail every pass, ahead of those behind it.
    numbered = [
        (number, segment(page_text.replace("\x00", " ")))
        for number, page_text in enumerate(extracted.texts, start=1)
        if page_text.strip()  # a scanned page without a text layer: nothing to find
    ]
    if not numbered:
        return
    rows = [{"path": extracted.path, "page": number, "text": t} for number, t in numbered]
    conn.execute(insert(AttachmentPage), rows)
    if is_postgres(conn):
        pg_attachment_text.insert_pages(conn, extracted.path, numbered)
        return
    conn.exec_driver_sql(
        f"INSERT INTO {FTS_TABLE} (rowid, text) SELECT id, text FROM attachment_pages "
        "WHERE path = ?",
        (extracted.path,),
    )
    first = conn.execute(
        select(func.min(AttachmentPage.id)).where(AttachmentPage.path == extracted.path)
    ).scalar_one()
    conn.exec_driver_sql(
        f"INSERT INTO {DOC_FTS_TABLE} (rowid, text) VALUES (?, ?)",
        (first, _document([t for _, t in numbered])),
    )


def _document(page_texts: Sequence[str]) -> str:
    """A document's row of `attachment_doc_fts`: its pages in order, a word between them that
    no text holds, so no phrase runs from one page into the next."""
    return PAGE_BREAK.join(page_texts)


def forget_gone(conn: Connection) -> int:
    """Drop the text of PDFs no longer among the attachments (deleted, renamed); how many."""
    gone = list(
        conn.execute(
            select(AttachmentText.path).where(
                not_(select(Attachment.path).where(Attachment.path == AttachmentText.path).exists())
            )
        ).scalars()
    )
    for start in range(0, len(gone), _CHUNK):
        chunk = gone[start : start + _CHUNK]
        _delete_pages(conn, chunk)
        conn.execute(delete(AttachmentText).where(AttachmentText.path.in_(chunk)))
    return len(gone)


def _delete_pages(conn: Connection, paths: Sequence[str]) -> None:
    if not paths:
        return
    if is_postgres(conn):
        pg_attachment_text.delete_pages(conn, paths)
    else:
        _forget_fts(conn, paths)
    conn.execute(delete(AttachmentPage).where(AttachmentPage.path.in_(paths)))


def _forget_fts(conn: Connection, paths: Sequence[str]) -> None:
    # External content and contentless tables: FTS5 forgets a row by being handed the text it
    # indexed, which the pages table still holds until its rows go.
    pages = conn.execute(
        select(AttachmentPage.path, AttachmentPage.id, AttachmentPage.text)
        .where(AttachmentPage.path.in_(paths))
        .order_by(AttachmentPage.path, AttachmentPage.page)
    ).all()
    documents: dict[str, tuple[int, list[str]]] = {}
    for path, page_id, page_text in pages:
        documents.setdefault(path, (page_id, []))[1].append(page_text)
    if documents:
        conn.exec_driver_sql(
            f"INSERT INTO {DOC_FTS_TABLE} ({DOC_FTS_TABLE}, rowid, text) VALUES ('delete', ?, ?)",
            [(first, _document(texts)) for first, texts in documents.values()],
        )
    marks = ", ".join("?" for _ in paths)
    conn.exec_driver_sql(
        f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, text) "
        f"SELECT 'delete', id, text FROM attachment_pages WHERE path IN ({marks})",
        tuple(paths),
    )


# FTS5 writes each transaction's rows as a new segment and merges them only now and then, so
# after a thousand PDFs stored one at a time a search opens every phrase in a dozen segments,
# and pays that again for each rowid it looks up (snippets). Merged into one, a search costs a
# third to a tenth of that. A step writes about this many pages (4 KB each): a short write.
MERGE_STEP_PAGES = 64


def merge_step(conn: Connection) -> bool:
    """Merge a step more of the PDF text indexes' segments towards one (in the caller's
    transaction); whether there was any left to merge."""
    if not searchable(conn):
        return False
    merged = False
    for table in (FTS_TABLE, DOC_FTS_TABLE):
        before = _total_changes(conn)
        conn.exec_driver_sql(
            f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (-MERGE_STEP_PAGES,)
        )
        # FTS5's documented signal: the command itself counts one change, any merging more.
        merged |= _total_changes(conn) - before >= 2
    return merged


def _total_changes(conn: Connection) -> int:
    return int(conn.exec_driver_sql("SELECT total_changes()").scalar_one())


# ---------------------------------------------------------------- search


# Documents are ranked, not pages: BM25 costs each match its time, and a word on every page of
# a thousand PDFs is tens of thousands of pages but a thousand documents. A hit is a document
# at its best page (`_PAGE_SCORES`).
_FRESH_JOIN = """
JOIN attachment_pages AS p ON p.id = {doc}.rowid
JOIN attachments AS a ON a.path = p.path
JOIN attachment_texts AS t ON t.path = a.path AND t.size = a.size AND t.mtime_ns = a.mtime_ns
"""
# The page of documents, each with its first page's id (its row's rowid) and, on each row, how
# many match in all: the ranking already visits every match, so counting them there spares a
# second pass (`_COUNT`) over the same matches. SQLite never flattens a subquery into a query
# holding a window function, so bm25() stays in the FTS5 scan, where it can run.
_RANKED_SQL = f"""
SELECT path, first_id, score, count(*) OVER () AS total
FROM (
    SELECT p.path AS path, p.id AS first_id, bm25({DOC_FTS_TABLE}) AS score
    FROM {DOC_FTS_TABLE} {_FRESH_JOIN.format(doc=DOC_FTS_TABLE)}
    WHERE {DOC_FTS_TABLE} MATCH :expression {{folder}}
)
ORDER BY score, path
LIMIT :limit OFFSET :offset
"""
# Only for a page past the last match, which holds no row to read the count from.
_COUNT_SQL = f"""
SELECT count(*)
FROM {DOC_FTS_TABLE} {_FRESH_JOIN.format(doc=DOC_FTS_TABLE)}
WHERE {DOC_FTS_TABLE} MATCH :expression {{folder}}
"""
_FOLDER = "AND p.path >= :folder_low AND p.path < :folder_high"
# The ranked documents' pages matching on their own, each as its id and score alone: which
# document a page is of is told by its id (`_best_page_ids`), so SQLite neither joins the
# pages to their paths nor sorts them, which cost more than reading the pairs. A document
# counts while its first page is still its own: on a connection outside a snapshot a PDF read
# again since its ranking has new pages, after every other's, which its old first id would
# not tell apart from the document ranked last.
# One FTS5 cursor for all of them: bm25() counts each phrase's matches over the whole table
# once per cursor (and per rowid constraint), so a cursor per document costs that count as
# many times. The match is a walk of the index bounded to the documents' id range; a page is
# kept by its id alone, looked up in the ids of the documents' pages (read from the
# (path, page) index, which holds them), never by reading the page's row, whose text makes it
# wide.
_PAGE_SCORES = text(f"""
WITH wanted AS MATERIALIZED (
    SELECT p.id
    FROM json_each(:documents) AS d
    JOIN attachment_pages AS first
      ON first.id = json_extract(d.value, '$[0]') AND first.path = json_extract(d.value, '$[1]')
    JOIN attachment_pages AS p ON p.path = first.path AND p.id >= first.id
)
SELECT {FTS_TABLE}.rowid, bm25({FTS_TABLE})
FROM {FTS_TABLE}
WHERE {FTS_TABLE} MATCH :expression
  AND {FTS_TABLE}.rowid BETWEEN (SELECT min(id) FROM wanted) AND (SELECT max(id) FROM wanted)
  AND +{FTS_TABLE}.rowid IN (SELECT id FROM wanted)
""")
# Each PDF's first page's id, by path (`place_pdfs`, whose PDFs come without it).
_FIRST_PAGES = text("""
SELECT min(id), path FROM attachment_pages
WHERE path IN (SELECT value FROM json_each(:paths))
GROUP BY path
""")
_SNIPPETS = text(f"""
SELECT {FTS_TABLE}.rowid,
       (SELECT path FROM attachment_pages WHERE id = {FTS_TABLE}.rowid),
       (SELECT page FROM attachment_pages WHERE id = {FTS_TABLE}.rowid),
       snippet({FTS_TABLE}, 0, :open, :close, :ellipsis, :tokens)
FROM {FTS_TABLE}
WHERE {FTS_TABLE} MATCH :expression
  AND {FTS_TABLE}.rowid IN (SELECT value FROM json_each(:ids))
""")
# Built once per filter: a search parses neither again.
_RANKED = {
    by_folder: text(_RANKED_SQL.format(folder=_FOLDER if by_folder else ""))
    for by_folder in (False, True)
}
_COUNT = {
    by_folder: text(_COUNT_SQL.format(folder=_FOLDER if by_folder else ""))
    for by_folder in (False, True)
}
_SNIPPET = {
    "open": SNIPPET_OPEN,
    "close": SNIPPET_CLOSE,
    "ellipsis": SNIPPET_ELLIPSIS,
    "tokens": SNIPPET_TOKENS,
}


def search_pages(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None = None
) -> Page[PageHit]:
    """PDFs matching an FTS5 `expression` (from `fts.fts_query`), best first, each at its best
    page with a snippet; `directory` narrows to a folder and its subfolders. A document whose
    words are spread over several pages, none holding them all, is named at its first page."""
    if not searchable(conn):
        return Page([], 0, offset, limit)
    ranked, total = _ranked(conn, expression, limit, offset, directory)
    best = _best_pages(conn, expression, {first: pdf.path for first, pdf in ranked})
    return Page([_at_best_page(pdf, best) for _, pdf in ranked], total, offset, limit)


def rank_pdfs(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None = None
) -> Page[RankedPdf]:
    """The PDFs `search_pages` answers, ranked alike, without their pages: for a ranking read
    deeper than what is shown (hybrid search fuses it), whose shown PDFs `place_pdfs` places."""
    if not searchable(conn):
        return Page([], 0, offset, limit)
    ranked, total = _ranked(conn, expression, limit, offset, directory)
    return Page([pdf for _, pdf in ranked], total, offset, limit)


def place_pdfs(conn: Connection, expression: str, ranked: Sequence[RankedPdf]) -> list[PageHit]:
    """Each of `ranked` (from `rank_pdfs`, with the same `expression`) at its best page, as
    `search_pages` places it."""
    best: dict[str, tuple[int, str]] = {}
    if ranked and searchable(conn):
        paths = json.dumps([pdf.path for pdf in ranked])
        firsts = conn.execute(_FIRST_PAGES, {"paths": paths})
        best = _best_pages(conn, expression, {int(first): str(path) for first, path in firsts})
    return [_at_best_page(pdf, best) for pdf in ranked]


def _ranked(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None
) -> tuple[list[tuple[int, RankedPdf]], int]:
    """The page of PDFs ranked, each with its first page's id, and how many match in all."""
    by_folder = bool(directory)
    values: dict[str, object] = {"expression": expression}
    if directory:
        values |= {"folder_low": directory + "/", "folder_high": directory + "0"}
    rows = conn.execute(_RANKED[by_folder], values | {"limit": limit, "offset": offset}).all()
    ranked = [
        (row.first_id, RankedPdf(row.path, round(-float(row.score or 0.0), 6) + 0.0))
        for row in rows
    ]
    if rows:
        return ranked, int(rows[0].total)
    if offset == 0:
        return ranked, 0
    # Past the last match: no row said how many there are.
    return ranked, int(conn.execute(_COUNT[by_folder], values).scalar_one())


def _at_best_page(pdf: RankedPdf, best: dict[str, tuple[int, str]]) -> PageHit:
    # No page of its own holds every word (they are spread over pages): its first page.
    return PageHit(pdf.path, *best.get(pdf.path, (1, "")), pdf.score)


def _best_pages(
    conn: Connection, expression: str, documents: dict[int, str]
) -> dict[str, tuple[int, str]]:
    """For each document (its path by its first page's id), its best page matching
    `expression` and that page's snippet."""
    if not documents:
        return {}
    rows = conn.execute(
        _PAGE_SCORES,
        {"expression": expression, "documents": json.dumps(list(documents.items()))},
    )
    best = _best_page_ids(sorted(documents), rows)
    found = conn.execute(
        _SNIPPETS, {"expression": expression, "ids": json.dumps(list(best.values()))} | _SNIPPET
    )
    pages = {page_id: (path, page, snippet) for page_id, path, page, snippet in found}
    placed: dict[str, tuple[int, str]] = {}
    for first, page_id in best.items():
        path, page, snippet = pages.get(page_id, (None, 1, None))
        # Its document's still, unless a write came between the two statements (a connection
        # outside a snapshot): that PDF is then named at its first page, as one whose words
        # no page of its own holds.
        if path == documents[first]:
            placed[path] = (page, unsegment(snippet or ""))
    return placed


def _best_page_ids(firsts: list[int], scores: Iterable[tuple[int, float]]) -> dict[int, int]:
    """Of pages scored (id, bm25: lower is better), the best of each document, by its first
    page's id (`firsts`, ascending): the lowest score, then the lowest id. A document's pages
    are stored together in page order (`store_extracted`), so a page belongs to the document
    starting at the nearest first id at or below its own, and a lower id is an earlier page."""
    best: dict[int, tuple[float, int]] = {}
    for page_id, score in scores:
        first = firsts[bisect_right(firsts, page_id) - 1]
        held = best.get(first)
        if held is None or (score, page_id) < held:
            best[first] = (score, page_id)
    return {first: page_id for first, (_, page_id) in best.items()}


# ---------------------------------------------------------------- problems


def pdf_problems(conn: Connection, limit: int, offset: int) -> Page[PdfProblem]:
    """The PDFs (still in the vault, as they are now) whose text could not all be read."""
    where = [AttachmentText.problem.is_not(None)]
    fresh = select(AttachmentText).join(Attachment, _FRESH).where(*where)
    total = conn.execute(select(func.count()).select_from(fresh.subquery())).scalar_one()
    rows = conn.execute(
        select(
            AttachmentText.path,
            AttachmentText.problem,
            AttachmentText.pages,
            AttachmentText.indexed_pages,
        )
        .join(Attachment, _FRESH)
        .where(*where)
        .order_by(AttachmentText.path)
        .limit(limit)
        .offset(offset)
    ).all()
    items = [PdfProblem(r.path, r.problem or "", r.pages, r.indexed_pages) for r in rows]
    return Page(items, int(total), offset, limit)
