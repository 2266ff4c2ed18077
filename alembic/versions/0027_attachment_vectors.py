"""attachment_embeddings, attachment_chunks: PDF pages' vectors for semantic search

`attachment_embeddings` says from which extraction of a PDF's text (`attachment_texts.
extracted_at`) and by which model its chunks were embedded; `attachment_chunks` holds each
chunk's page, text and vector, as `note_chunks` does for notes. Plain tables, as in 0016, so
both SQLite and PostgreSQL migrate them.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-29 09:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attachment_embeddings",
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("extracted_at", sa.BigInteger(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("embedded_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("path"),
    )
    op.create_table(
        "attachment_chunks",
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("chunk_no", sa.Integer(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("path", "chunk_no"),
    )


def downgrade() -> None:
    op.drop_table("attachment_chunks")
    op.drop_table("attachment_embeddings")
