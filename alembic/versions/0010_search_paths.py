"""search_paths: the note behind each full-text row, for the search filters

`search_notes` with `directory=` or `tag=` checked each match's path, and reading the path of an
FTS5 row loads its whole stored body (1-3 KB a note): with words most notes contain, the
filters cost more than the search. The same paths in a narrow table keyed by the FTS rowid
are a lookup each. Filled here from the FTS rows themselves.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_paths",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("INSERT INTO search_paths (id, path) SELECT rowid, path FROM notes_fts")


def downgrade() -> None:
    op.drop_table("search_paths")
