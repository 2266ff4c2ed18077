"""edit_journal_notes keep what a write replaced and what it will write: undo and recovery

Every write by Weaver is now journalled, one note or many, before it lands:

- `old_data`: the note's bytes as they were before the write (NULL for a note the write
  created, and once pruned): what `restore_edit` and `weaver undo` put back. Kept for 30 days
  and within a total size (`weaver.cache.journal.HISTORY_MAX_BYTES`), the oldest dropped first.
- `new_data`: the bytes a change to many notes will write, kept only until the run finishes,
  so that a run killed midway is finished at the next start with exactly the planned text.
- `old_size`: the length of `old_data` (NULL with it), indexed: the size cap is checked with
  a sum over the index, never by reading the texts.
- `written_at`: when the note was written (NULL until then).
- an index on `path`: a note's own edits are listed without scanning every run.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28 00:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("edit_journal_notes") as batch:
        batch.add_column(sa.Column("old_data", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("old_size", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("new_data", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("written_at", sa.BigInteger(), nullable=True))
    op.create_index("ix_edit_journal_notes_path", "edit_journal_notes", ["path"])
    op.create_index("ix_edit_journal_notes_old_size", "edit_journal_notes", ["old_size"])


def downgrade() -> None:
    op.drop_index("ix_edit_journal_notes_old_size", table_name="edit_journal_notes")
    op.drop_index("ix_edit_journal_notes_path", table_name="edit_journal_notes")
    with op.batch_alter_table("edit_journal_notes") as batch:
        batch.drop_column("written_at")
        batch.drop_column("new_data")
        batch.drop_column("old_size")
        batch.drop_column("old_data")
