"""edit_journal: changes to many notes, recorded so an interrupted one is never half-applied

Renaming a tag across the vault rewrites hundreds of notes, one atomic write each. The journal
records the operation and every note's hash as read and as it will be, before the first write;
at the next start, a run that never finished is completed note by note (a note still as read is
written, one already written is counted, one edited meanwhile is skipped and reported).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 05:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "edit_journal",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("operation", sa.String(), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("started", sa.BigInteger(), nullable=False),
        sa.Column("finished", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_edit_journal_finished", "edit_journal", ["finished"])
    op.create_table(
        "edit_journal_notes",
        sa.Column("journal_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("old_hash", sa.String(), nullable=False),
        sa.Column("new_hash", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["journal_id"], ["edit_journal.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("journal_id", "path"),
    )


def downgrade() -> None:
    op.drop_table("edit_journal_notes")
    op.drop_index("ix_edit_journal_finished", table_name="edit_journal")
    op.drop_table("edit_journal")
