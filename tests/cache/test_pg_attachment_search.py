"""PDF text search on a PostgreSQL cache (`cache.pg_attachment_search`), the parts SQLite's
tests do not reach: a PDF is ranked by how much it is about the query, a folder and a page of
hits narrow alike and count every match, a document longer than its document vector holds is
still found by its last page, CJK text is found and marked, and no query text reaches
tsquery's own syntax. Pages are stored as the extractor stores them (`store_extracted`), from
text given here: what is read from a PDF is tested in tests/index/test_attachment_text.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.helpers import write_files
from tests.pg_server import PostgresServer
from weaver.cache import attachment_text, fts, pg_attachment_search
from weaver.cache.attachment_text import ExtractedPdf, PageHit
from weaver.cache.models import Attachment
from weaver.cache.pg_search import INDEX_MAX_CHARS
from weaver.config import Settings
from weaver.paging import Page
from weaver.runtime.app import App, open_app

pytestmark = pytest.mark.postgres


def store(app: App, documents: dict[str, Sequence[str]], problem: str | None = None) -> None:
    """Each PDF recorded by the indexer (its bytes do not matter here) with these pages' text,
    as the extractor would have read it."""
    write_files(app.settings.vault, dict.fromkeys(documents, b"%PDF-1.4 stand-in"))
    app.indexer.reconcile()
    with app.db.begin() as conn:
        files = {
            row.path: row
            for row in conn.execute(
                Attachment.__table__.select().where(Attachment.path.in_(list(documents)))
            )
        }
        for path, pages in documents.items():
            row = files[path]
            pdf = ExtractedPdf(path, row.size, row.mtime_ns, len(pages), pages, problem)
            attachment_text.store_extracted(conn, pdf, 0)


def search(
    app: App, query: str, limit: int = 20, offset: int = 0, directory: str | None = None
) -> Page[PageHit]:
    expression = fts.fts_query(query)
    assert expression is not None
    with app.db.connect() as conn:
        return pg_attachment_search.search_pages(conn, expression, limit, offset, directory)


def found(page: Page[PageHit]) -> list[tuple[str, int]]:
    return [(hit.path, hit.page) for hit in page.items]


def test_the_pdf_most_about_the_query_ranks_first_at_its_best_page(pg_app: App) -> None:
    store(
        pg_app,
        {
            "a.pdf": ["Cover", "One turbine among many other words about the plant"],
            "b.pdf": ["Turbine blades", "The turbine and the turbine housing", "Index"],
            "c.pdf": ["Nothing here"],
        },
    )
    page = search(pg_app, "turbine")
    assert found(page) == [("b.pdf", 2), ("a.pdf", 2)]
    assert page.total == 2
    assert page.items[0].score > page.items[1].score > 0
    assert page.items[0].snippet == "The <mark>turbine</mark> and the <mark>turbine</mark> housing"


def test_ranked_then_placed_is_the_search(pg_app: App) -> None:
    """Hybrid search ranks deep and places only what it shows, as on SQLite."""
    store(
        pg_app,
        {
            "a.pdf": ["Cover", "One turbine among many other words about the plant"],
            "b.pdf": ["Turbine blades", "The turbine and the turbine housing", "Index"],
            "c.pdf": ["turbine", "blades"],
        },
    )
    searched = search(pg_app, "turbine")
    with pg_app.db.connect() as conn:
        ranked = pg_attachment_search.rank_pdfs(conn, '"turbine"', 20, 0)
        placed = pg_attachment_search.place_pdfs(conn, '"turbine"', ranked.items[::-1])
    assert ranked.total == searched.total == 3
    assert [pdf.path for pdf in ranked.items] == [hit.path for hit in searched.items]
    assert placed == searched.items[::-1]


def test_a_folder_and_a_page_of_hits_narrow_alike_and_count_every_match(pg_app: App) -> None:
    store(
        pg_app,
        {
            "Reports/2025/a.pdf": ["ledger closing"],
            "Reports/b.pdf": ["ledger review"],
            "Reportsx/c.pdf": ["ledger elsewhere"],  # a sibling named alike: not in Reports
            "d.pdf": ["ledger at the root"],
        },
    )
    inside = search(pg_app, "ledger", directory="Reports")
    assert sorted(found(inside)) == [("Reports/2025/a.pdf", 1), ("Reports/b.pdf", 1)]
    assert inside.total == 2
    first = search(pg_app, "ledger", limit=3)
    rest = search(pg_app, "ledger", limit=3, offset=3)
    assert (first.total, rest.total) == (4, 4)
    assert len(first.items) == 3 and len(rest.items) == 1
    assert {h.path for h in first.items + rest.items} == {
        "Reports/2025/a.pdf",
        "Reports/b.pdf",
        "Reportsx/c.pdf",
        "d.pdf",
    }
    assert search(pg_app, "ledger", limit=3, offset=9).total == 4  # past the end: still counted


def test_a_document_longer_than_its_vector_holds_is_found_by_its_last_page(pg_app: App) -> None:
    filler = "filler words " * 1500  # ~20,000 characters a page, the reader's bound
    pages = [filler] * (INDEX_MAX_CHARS // len(filler) + 2) + ["the zeppelin hangar"]
    store(pg_app, {"long.pdf": pages})
    assert found(search(pg_app, '"zeppelin hangar"')) == [("long.pdf", len(pages))]


def test_words_spread_over_pages_name_the_first_page_and_phrases_never_cross_one(
    pg_app: App,
) -> None:
    store(pg_app, {"spread.pdf": ["alpha centauri galaxy", "bravo nebula survey"]})
    (hit,) = search(pg_app, "centauri bravo").items
    assert (hit.page, hit.snippet) == (1, "")  # no page holds both
    assert search(pg_app, '"galaxy bravo"').items == []


def test_cjk_text_is_found_and_marked(pg_app: App) -> None:
    store(pg_app, {"zh.pdf": ["前言", "插件系统的设计说明"]})
    (hit,) = search(pg_app, "插件").items
    assert (hit.path, hit.page) == ("zh.pdf", 2)
    assert "<mark>插件</mark>" in hit.snippet


@pytest.mark.parametrize("query", ["it's", "back\\slash", "a:* | b", "(x", "!not", "&", "the"])
def test_no_query_text_reaches_tsquery_syntax(pg_app: App, query: str) -> None:
    store(pg_app, {"doc.pdf": ["it's the back slash, a b x not"]})
    if fts.fts_query(query) is not None:
        answered = search(pg_app, query)  # whatever it finds, it answers
        assert query != "the" or answered.total == 0  # a stop word alone finds nothing


def test_a_replaced_pdf_keeps_no_vector_of_its_old_text(pg_app: App) -> None:
    store(pg_app, {"r.pdf": ["first draft", "old appendix"]})
    store(pg_app, {"r.pdf": ["second draft"]})
    with pg_app.db.connect() as conn:
        rows = conn.execute(
            text("SELECT path, page FROM attachment_page_search ORDER BY page")
        ).all()
        documents = conn.execute(text("SELECT count(*) FROM attachment_doc_search")).scalar()
    assert [tuple(row) for row in rows] == [("r.pdf", 1)]
    assert documents == 1
    assert search(pg_app, "appendix").items == []


def test_pdfs_are_stored_and_found_by_folder_under_a_linguistic_collation(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """On a database sorting by en-US (most servers' default), where `A/x.pdf` sorts between
    `a/` and `a0`: the PDF tables' paths compare in byte order, as every other path column
    does (0017), so they join them and a folder holds its own PDFs only."""
    name = postgres_server.create_icu_database("en-US")
    paths = ["a/b.pdf", "A/x.pdf", "ab.pdf"]
    vault = write_files(tmp_path / "vault", dict.fromkeys(paths, b""))
    app = open_app(Settings(vault=vault, database_url=postgres_server.url(name)))
    try:
        store(app, dict.fromkeys(paths, ("orchard survey",)), problem="only the first pages")
        assert found(search(app, "orchard", directory="a")) == [("a/b.pdf", 1)]
        with app.db.connect() as conn:
            listed = [p.path for p in attachment_text.pdf_problems(conn, 10, 0).items]
            assert attachment_text.count_pending(conn) == 0
        assert listed == sorted(paths)  # byte order: "A/x.pdf" first
    finally:
        app.close()
        postgres_server.drop_database(name)


def test_a_page_holding_nul_characters_is_stored_and_found(pg_app: App) -> None:
    """PostgreSQL's text holds no NUL; a PDF's text layer may. Refused, the PDF would fail
    its pass again and again, holding up every PDF behind it."""
    store(pg_app, {"nul.pdf": ["binary\x00junk then kestrel"]})
    assert found(search(pg_app, "kestrel")) == [("nul.pdf", 1)]
