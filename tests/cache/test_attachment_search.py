"""The PDF page search (`cache.attachment_text.search_pages`) answers exactly what the plain
reading of its rule gives, on a small corpus of PDFs stored straight into a cache: documents
ranked by BM25 over their whole text (ties by path), `total` the documents matching, each at
the page ranking best on its own (ties by page; page 1 when no page holds every word), only
PDFs whose text is fresh, a folder narrowing them. The search is quicker than that plain
reading (one cursor for the best pages, the count read off the ranking), never different.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Connection, event, insert, text, update

from weaver.cache import attachment_text, fts
from weaver.cache.attachment_text import ExtractedPdf, PageHit
from weaver.cache.models import Attachment
from weaver.config import Settings
from weaver.runtime.app import App, open_app

WORDS = ["valve", "pump", "pipe", "seal", "flow", "gauge", "relief", "pressure", "steam", "boiler"]


def _pages(rng: random.Random) -> list[str]:
    count = rng.choice((1, 1, 2, 3, 5, 8))
    pages = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(count)]
    if count > 2 and rng.random() < 0.3:
        pages[1] = "   "  # a page without a text layer: the pages after it keep their number
    return pages


# Pages that tie: the best of them is the earliest, here page 2, not page 1.
TIED_PAGES = ["seal gauge", "valve pump valve", "valve pump valve", "valve pump valve", "pipe"]


@pytest.fixture
def corpus(vault_dir: Path) -> Iterator[App]:
    """Forty PDFs in three folders, one of them changed on disk since its text was read, two
    read again after the others (their pages now last of all), one with tied pages."""
    app = open_app(Settings(vault=vault_dir))
    rng = random.Random(38)
    with app.db.begin() as conn:
        for i in range(40):
            path = f"{('manuals', 'manuals/old', 'reports')[i % 3]}/doc-{i:02d}.pdf"
            conn.execute(insert(Attachment).values(path=path, size=100 + i, mtime_ns=i))
            _store(conn, path, 100 + i, i, _pages(rng))
        _store_tied(conn)
        # Changed since it was read: its old text is found no more.
        conn.execute(
            update(Attachment).where(Attachment.path == "reports/doc-02.pdf").values(size=1)
        )
        # Replaced, and read again: the new text only is found, its pages after all others.
        for path in ("manuals/doc-00.pdf", "manuals/old/doc-04.pdf"):
            conn.execute(update(Attachment).where(Attachment.path == path).values(size=7))
            _store(conn, path, 7, 0, ["flow boiler", "valve valve steam valve", "pump"])
    yield app
    app.close()


def _store(conn: Connection, path: str, size: int, mtime_ns: int, pages: list[str]) -> None:
    extracted = ExtractedPdf(path, size, mtime_ns, len(pages), pages, None)
    attachment_text.store_extracted(conn, extracted, 0)


def _store_tied(conn: Connection) -> None:
    path = "manuals/tied.pdf"
    conn.execute(insert(Attachment).values(path=path, size=1, mtime_ns=1))
    _store(conn, path, 1, 1, TIED_PAGES)


def plain_search(
    conn: Connection, expression: str, limit: int, offset: int, directory: str | None
) -> tuple[list[tuple[str, int, float]], int]:
    """The rule read plainly: every fresh matching document ranked, every page of each scored."""
    documents = conn.execute(
        text("""
        SELECT p.path, bm25(attachment_doc_fts) AS score
        FROM attachment_doc_fts
        JOIN attachment_pages AS p ON p.id = attachment_doc_fts.rowid
        JOIN attachments AS a ON a.path = p.path
        JOIN attachment_texts AS t
          ON t.path = a.path AND t.size = a.size AND t.mtime_ns = a.mtime_ns
        WHERE attachment_doc_fts MATCH :expression
        ORDER BY score, p.path
        """),
        {"expression": expression},
    ).all()
    if directory:
        documents = [d for d in documents if d.path.startswith(directory + "/")]
    pages = conn.execute(
        text("""
        SELECT p.path, p.page, bm25(attachment_fts) AS score
        FROM attachment_fts JOIN attachment_pages AS p ON p.id = attachment_fts.rowid
        WHERE attachment_fts MATCH :expression
        ORDER BY p.path, score, p.page
        """),
        {"expression": expression},
    ).all()
    best: dict[str, int] = {}
    for path, page, _score in pages:
        best.setdefault(path, page)
    hits = [
        (d.path, best.get(d.path, 1), round(-d.score, 6) + 0.0)
        for d in documents[offset : offset + limit]
    ]
    return hits, len(documents)


def found(hits: list[PageHit]) -> list[tuple[str, int, float]]:
    return [(h.path, h.page, h.score) for h in hits]


QUERIES = [
    "valve",
    "pump seal",
    "steam OR boiler",
    '"relief pressure"',
    "gauge -flow",
    "boil*",
    "valve pump pipe seal flow",  # words spread over pages, no page holding them all
    "nothingatall",
]


@pytest.mark.parametrize("words", QUERIES)
def test_every_page_of_answers_is_what_the_plain_rule_gives(corpus: App, words: str) -> None:
    expression = fts.fts_query(words)
    assert expression is not None
    with corpus.db.connect() as conn:
        for directory in (None, "manuals", "reports"):
            for limit, offset in ((3, 0), (3, 3), (5, 10), (50, 0), (4, 60)):
                want, total = plain_search(conn, expression, limit, offset, directory)
                page = attachment_text.search_pages(conn, expression, limit, offset, directory)
                where = (words, directory, limit, offset)
                assert (found(page.items), page.total) == (want, total), where


@pytest.mark.parametrize("words", QUERIES)
def test_ranked_then_placed_is_the_search(corpus: App, words: str) -> None:
    """Hybrid search ranks deep and places only what it shows: placing any of the ranked PDFs,
    in any order, names each at the page the search names it at."""
    expression = fts.fts_query(words)
    assert expression is not None
    with corpus.db.connect() as conn:
        for directory in (None, "manuals"):
            searched = attachment_text.search_pages(conn, expression, 50, 0, directory)
            ranked = attachment_text.rank_pdfs(conn, expression, 50, 0, directory)
            assert (ranked.total, [p.path for p in ranked.items]) == (
                searched.total,
                [h.path for h in searched.items],
            )
            assert attachment_text.place_pdfs(conn, expression, ranked.items) == searched.items
            some = ranked.items[::-3]  # every third, last first
            assert attachment_text.place_pdfs(conn, expression, some) == searched.items[::-3]


def test_a_pdf_read_again_meanwhile_never_lends_its_pages_to_another(corpus: App) -> None:
    """Outside a snapshot a PDF may be read again between its ranking and its placing: its new
    pages, after every other's, are never taken for the PDF ranked last's."""
    expression = fts.fts_query("valve")
    assert expression is not None
    first_pages = text("SELECT min(id), path FROM attachment_pages GROUP BY path")
    with corpus.db.connect() as conn:
        ranked = {int(first): str(path) for first, path in conn.execute(first_pages)}
    with corpus.db.begin() as conn:
        _store(conn, "manuals/doc-03.pdf", 103, 3, ["seal", "pump", "valve valve valve"])
    with corpus.db.connect() as conn:
        now = {int(first): str(path) for first, path in conn.execute(first_pages)}
        fresh = attachment_text._best_pages(conn, expression, now)
        stale = attachment_text._best_pages(conn, expression, ranked)
    assert fresh["manuals/doc-03.pdf"][0] == 3
    assert "manuals/doc-03.pdf" not in stale  # named at its first page, as if no page matched
    assert stale == {path: place for path, place in fresh.items() if path in stale}
    assert len(stale) == len(fresh) - 1


def test_the_corpus_holds_what_the_comparison_needs(corpus: App) -> None:
    """Ties, several pages, blank pages, a stale PDF: else the comparison proves little."""
    with corpus.db.connect() as conn:
        hits = attachment_text.search_pages(conn, "valve", 50, 0).items
        spread = attachment_text.search_pages(
            conn, fts.fts_query("valve pump pipe seal flow") or "", 50, 0
        )
    assert len({h.score for h in hits}) < len(hits)  # some documents tie
    assert any(h.page > 2 for h in hits)  # a best page past the first ones
    assert "reports/doc-02.pdf" not in {h.path for h in hits}
    assert any(h.page == 1 and h.snippet == "" for h in spread.items)  # no page holds them all
    by_path = {h.path: h for h in hits}
    assert by_path["manuals/tied.pdf"].page == 2  # the first of three tied pages
    assert by_path["manuals/doc-00.pdf"].page == 2  # read again: its new text's best page


def test_a_pages_document_is_told_by_its_id(corpus: App) -> None:
    """What the search relies on: a PDF's pages hold consecutive ids in page order, the
    first its whole-document row's, and reading a PDF again gives its new pages new ids."""
    with corpus.db.connect() as conn:
        rows = conn.execute(text("SELECT path, page, id FROM attachment_pages ORDER BY id")).all()
        documents = conn.execute(text("SELECT id FROM attachment_doc_fts_docsize")).all()
    by_path: dict[str, list[tuple[int, int]]] = {}
    for path, page, page_id in rows:
        by_path.setdefault(path, []).append((page, page_id))
    for path, pages in by_path.items():
        ids = [page_id for _, page_id in pages]
        assert ids == list(range(ids[0], ids[0] + len(ids))), path
        assert [page for page, _ in pages] == sorted(page for page, _ in pages), path
    assert sorted(r.id for r in documents) == sorted(p[0][1] for p in by_path.values())
    assert rows[-1].path == "manuals/old/doc-04.pdf"


def test_the_best_page_is_the_lowest_score_then_the_earliest() -> None:
    """Scores arrive in any order; a page belongs to the document whose first id is the
    nearest at or below its own."""
    firsts = [10, 20, 35]
    scores = [(36, -1.0), (22, -2.0), (11, -3.0), (21, -2.0), (12, -3.0), (35, -1.0), (37, -4.0)]
    assert attachment_text._best_page_ids(firsts, scores) == {10: 11, 20: 21, 35: 37}
    assert attachment_text._best_page_ids(firsts, []) == {}


@contextmanager
def statements(conn: Connection) -> Iterator[list[str]]:
    """The SQL statements `conn` runs meanwhile."""
    seen: list[str] = []

    def record(*args: object) -> None:
        seen.append(str(args[2]))

    event.listen(conn, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(conn, "before_cursor_execute", record)


def test_a_full_page_is_counted_by_its_ranking_not_a_second_pass(corpus: App) -> None:
    with corpus.db.connect() as conn, statements(conn) as seen:
        page = attachment_text.search_pages(conn, "valve", 3, 0)
    assert len(page.items) == 3 and page.total > 3
    # The ranking (with the count), the best pages, their snippets: nothing counts them again.
    assert len(seen) == 3, seen
    assert not any(sql.lstrip().startswith("SELECT count(*)") for sql in seen)
