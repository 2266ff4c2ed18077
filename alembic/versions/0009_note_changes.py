"""note_changes: which notes each indexing pass changed, by cache version

The graph tools, `resolve_names` and the tag lookups keep an index built from the whole cache
(the link graph, every note's names, the notes under each tag) and rebuilt it whenever the
cache's version moved, after each edit of a note. The writer
now records the notes each pass changed, so that a reader updates those alone. The table
starts empty: a reader's first index is a full build, as before.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 19:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "note_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=True),
        sa.Column("path", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_note_changes_version", "note_changes", ["version"])


def downgrade() -> None:
    op.drop_index("ix_note_changes_version", table_name="note_changes")
    op.drop_table("note_changes")
    # What the rows covered goes with them: upgraded again, readers start from a full build.
    op.execute("DELETE FROM cache_state WHERE key = 'changes_since'")
