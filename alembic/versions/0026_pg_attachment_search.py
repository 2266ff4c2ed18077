"""attachment_doc_search, attachment_page_search: PDF text search on a PostgreSQL cache

What FTS5's `attachment_doc_fts` and `attachment_fts` (`0025`) are to a SQLite cache:
- `attachment_doc_search`: each PDF's `tsvector`, its pages in order with a word no text holds
  between them (no phrase runs from one page into the next), what search matches and ranks;
- `attachment_page_search`: each page's `tsvector`, what finds a PDF's best page;
both in the `weaver_search` configuration of `0017`, with a GIN index. Paths compare in byte
order (`COLLATE "C"`, as `0017` set for every table then; `0025`'s `attachment_texts` and
`attachment_pages` too): a folder is the range `folder/` <= path < `folder0`, and PDFs are
listed in SQLite's order. Nothing on SQLite.

Backfill: none is needed. Before this revision a PostgreSQL cache extracted no PDF text, so
its `attachment_texts` are emptied: every PDF is pending, and the extractor reads it again.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29 09:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_table(
        "attachment_doc_search",
        sa.Column("path", sa.String(collation="C"), nullable=False),
        sa.Column("document", postgresql.TSVECTOR(), nullable=False),
        sa.PrimaryKeyConstraint("path"),
    )
    op.create_index(
        "ix_attachment_doc_search_document",
        "attachment_doc_search",
        ["document"],
        postgresql_using="gin",
    )
    op.create_table(
        "attachment_page_search",
        sa.Column("path", sa.String(collation="C"), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("document", postgresql.TSVECTOR(), nullable=False),
        sa.PrimaryKeyConstraint("path", "page"),
    )
    op.create_index(
        "ix_attachment_page_search_document",
        "attachment_page_search",
        ["document"],
        postgresql_using="gin",
    )
    op.execute("DELETE FROM attachment_pages")
    op.execute("DELETE FROM attachment_texts")
    _collate_paths("C")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _collate_paths("default")
    op.drop_index("ix_attachment_page_search_document", table_name="attachment_page_search")
    op.drop_table("attachment_page_search")
    op.drop_index("ix_attachment_doc_search_document", table_name="attachment_doc_search")
    op.drop_table("attachment_doc_search")


def _collate_paths(collation: str) -> None:
    """`0025`'s path columns in byte order, as `0017` made every path column then: problems
    are listed by path in SQLite's order."""
    for table in ("attachment_texts", "attachment_pages"):
        op.execute(f'ALTER TABLE {table} ALTER COLUMN path TYPE varchar COLLATE "{collation}"')
