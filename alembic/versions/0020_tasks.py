"""tasks: every checkbox list item with the Tasks plugin's fields; notes keep inline fields

- `tasks`: one row per task of a note (see `weaver.cache.models.Task`), replaced with the
  note's other rows on every write, with indexes for the questions people ask first: what is
  open and due by a date, what is scheduled, what was done when.
- `notes.inline_fields`: the note's Dataview `key:: value` fields, shown by `get_file`.

Notes already in the cache have no tasks until they are read again: the parser version rises
with this change, so the first start after the upgrade re-reads every note once.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 09:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "note_path",
            sa.String(),
            sa.ForeignKey("notes.path", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("parent_line", sa.Integer(), nullable=True),
        sa.Column("heading", sa.String(), nullable=True),
        sa.Column("block_id", sa.String(), nullable=True),
        sa.Column("status_char", sa.String(), nullable=False),
        sa.Column("status_type", sa.String(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("due", sa.String(), nullable=True),
        sa.Column("scheduled", sa.String(), nullable=True),
        sa.Column("start", sa.String(), nullable=True),
        sa.Column("created", sa.String(), nullable=True),
        sa.Column("done", sa.String(), nullable=True),
        sa.Column("cancelled", sa.String(), nullable=True),
        sa.Column("recurrence", sa.String(), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("depends_on", sa.JSON(), nullable=False),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
    )
    op.create_index("ix_tasks_note_line", "tasks", ["note_path", "line"])
    op.create_index("ix_tasks_status_due", "tasks", ["status_type", "due"])
    op.create_index("ix_tasks_due", "tasks", ["due"])
    op.create_index("ix_tasks_scheduled", "tasks", ["scheduled"])
    op.create_index("ix_tasks_done", "tasks", ["done"])
    op.add_column("notes", sa.Column("inline_fields", sa.JSON(), nullable=True))


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite 3.35+): a batch copy of `notes` would cascade to its links.
    op.drop_column("notes", "inline_fields")
    op.drop_table("tasks")
