"""covering indexes for tag and backlink lookups

A lookup by tag key or by link target needs the note path next to it; with it in the index,
SQLite answers from the index alone instead of visiting the table once per match.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 12:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_tags_key", table_name="tags")
    op.create_index("ix_tags_key_note", "tags", ["key", "note_path"])
    op.drop_index("ix_links_target_path", table_name="links")
    op.create_index("ix_links_target_source", "links", ["target_path", "source_path"])


def downgrade() -> None:
    op.drop_index("ix_links_target_source", table_name="links")
    op.create_index("ix_links_target_path", "links", ["target_path"])
    op.drop_index("ix_tags_key_note", table_name="tags")
    op.create_index("ix_tags_key", "tags", ["key"])
