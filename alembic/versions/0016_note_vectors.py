"""vectors of the notes' chunks, for semantic search

`note_embeddings` says from which content hash and by which model a note's chunks were
embedded; `note_chunks` holds each chunk's heading path, text and vector. Plain tables (vectors
as float32 blobs), so the schema needs no SQLite extension and the base install can migrate it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 05:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "note_embeddings",
        sa.Column("note_path", sa.String(), nullable=False),
        sa.Column("content_hash", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("embedded_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("note_path"),
    )
    op.create_index(
        "ix_note_embeddings_content_hash", "note_embeddings", ["content_hash"], unique=False
    )
    op.create_table(
        "note_chunks",
        sa.Column("note_path", sa.String(), nullable=False),
        sa.Column("chunk_no", sa.Integer(), nullable=False),
        sa.Column("heading", sa.String(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("note_path", "chunk_no"),
    )


def downgrade() -> None:
    op.drop_table("note_chunks")
    op.drop_index("ix_note_embeddings_content_hash", table_name="note_embeddings")
    op.drop_table("note_embeddings")
