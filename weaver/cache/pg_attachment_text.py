"""PDF text as `tsvector`s on a PostgreSQL cache (migration `0026`), written beside
`attachment_pages` in the extractor's transaction (`attachment_text.store_extracted`) and
forgotten with them: a document vector (`attachment_doc_search`: its pages in order, a word no
text holds between them, so no phrase runs from one page into the next; its first
`pg_search.INDEX_MAX_CHARS`, a `tsvector` holding at most 1 MiB) and one per page
(`attachment_page_search`), in the notes' configuration and word splitting (`pg_search`).
`pg_attachment_search` searches them."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sqlalchemy import Connection, TextClause, bindparam, text
from sqlalchemy.types import Text

from weaver.cache import pg_search
from weaver.cache.fts import PG_ATTACHMENT_TABLES
from weaver.cache.pg_search import CONFIG, INDEX_MAX_CHARS

PAGE_TABLE, DOC_TABLE = PG_ATTACHMENT_TABLES
# Between two pages in a document vector: a word no page holds, so `<->` never joins them.
PAGE_BREAK = " weaverpagebreak "
_CHUNK = 900


_INSERT_PAGE = text(
    f"INSERT INTO {PAGE_TABLE} (path, page, document) "
    f"VALUES (:path, :page, to_tsvector('{CONFIG}', :words))"
).bindparams(bindparam("words", type_=Text))
_INSERT_DOCUMENT = text(
    f"INSERT INTO {DOC_TABLE} (path, document) "
    f"VALUES (:path, to_tsvector('{CONFIG}', left(:words, {INDEX_MAX_CHARS})))"
).bindparams(bindparam("words", type_=Text))


def insert_pages(conn: Connection, path: str, pages: Sequence[tuple[int, str]]) -> None:
    """Index the PDF at `path`: its (page number, text) pairs, the text as stored in
    `attachment_pages` (CJK segmented). Its old vectors must be gone (`delete_pages`)."""
    if not pages:
        return
    words = [(page, pg_search.words_only(page_text)) for page, page_text in pages]
    conn.execute(_INSERT_PAGE, [{"path": path, "page": p, "words": w} for p, w in words])
    document = PAGE_BREAK.join(w for _, w in words)
    conn.execute(_INSERT_DOCUMENT, {"path": path, "words": document})


def delete_pages(conn: Connection, paths: Sequence[str]) -> None:
    """Forget these PDFs' vectors (both tables)."""
    for start in range(0, len(paths), _CHUNK):
        chunk = list(paths[start : start + _CHUNK])
        for table in (PAGE_TABLE, DOC_TABLE):
            conn.execute(_delete(table), {"paths": chunk})


@functools.cache
def _delete(table: str) -> TextClause:
    return text(f"DELETE FROM {table} WHERE path IN :paths").bindparams(
        bindparam("paths", expanding=True)
    )
