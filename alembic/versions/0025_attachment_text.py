"""attachment_texts, attachment_pages, attachment_fts: PDF text for search

`attachment_texts` says where each PDF's text extraction stands (the size and mtime it read, its
page count, a problem that kept text out); `attachment_pages` holds each page's text. On SQLite
the FTS5 table `attachment_fts` indexes those pages as external content (no second copy of the
text), and the contentless `attachment_doc_fts` each document's pages together (what search
ranks: a word on every page of a thousand PDFs is a thousand rows to rank, not every page), with
the notes' tokenizer; on PostgreSQL there is no such index yet and attachment text is not
searched (docs/tools.md says so).

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

TOKENIZER = "porter unicode61 remove_diacritics 2"


def upgrade() -> None:
    op.create_table(
        "attachment_texts",
        sa.Column("path", sa.String(), primary_key=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=True),
        sa.Column("indexed_pages", sa.Integer(), nullable=False),
        sa.Column("problem", sa.Text(), nullable=True),
        sa.Column("extracted_at", sa.BigInteger(), nullable=False),
    )
    op.create_index(
        "ix_attachment_texts_problem",
        "attachment_texts",
        ["path"],
        sqlite_where=sa.text("problem IS NOT NULL"),
        postgresql_where=sa.text("problem IS NOT NULL"),
    )
    op.create_table(
        "attachment_pages",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
    )
    op.create_index(
        "ix_attachment_pages_path_page", "attachment_pages", ["path", "page"], unique=True
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE attachment_fts USING fts5(text, content='attachment_pages', "
            f"content_rowid='id', tokenize = '{TOKENIZER}')"
        )
        op.execute(
            f"CREATE VIRTUAL TABLE attachment_doc_fts USING fts5(text, content='', "
            f"tokenize = '{TOKENIZER}')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS attachment_doc_fts")
        op.execute("DROP TABLE IF EXISTS attachment_fts")
    op.drop_index("ix_attachment_pages_path_page", table_name="attachment_pages")
    op.drop_table("attachment_pages")
    op.drop_index("ix_attachment_texts_problem", table_name="attachment_texts")
    op.drop_table("attachment_texts")
