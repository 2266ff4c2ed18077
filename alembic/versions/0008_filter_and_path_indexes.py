"""type and status indexes ordered by path within each value

`query_files type=` (or `status=`) lists notes in path order. With an index on the value
alone, SQLite reads every note of that value and sorts them before it can return the first
50, a cost that grows with the vault. With the path
in the index, the notes of a value come out in path order and the page stops at its end.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for column in ("type", "status"):
        op.drop_index(f"ix_notes_{column}", table_name="notes")
        op.create_index(f"ix_notes_{column}_path", "notes", [column, "path"])


def downgrade() -> None:
    for column in ("type", "status"):
        op.drop_index(f"ix_notes_{column}_path", table_name="notes")
        op.create_index(f"ix_notes_{column}", "notes", [column])
