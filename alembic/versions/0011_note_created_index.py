"""an index on notes.created, for query_files sorted by creation time

`query_files sortBy=created` pages through notes newest first. Without an index SQLite reads
and sorts every note for each page; `modified` has had its index
from the start.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 19:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_notes_created", "notes", ["created"])


def downgrade() -> None:
    op.drop_index("ix_notes_created", table_name="notes")
