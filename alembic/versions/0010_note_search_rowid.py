"""notes.search_rowid: the rowid of each note's full-text row, for the search filters

`search_notes` with `directory=` or `tag=` checked each match's path, and reading the path of an
FTS5 row loads its whole stored body (1-3 KB a note): with words most notes contain, the
filters cost more than the search. Each note now carries its FTS rowid, indexed with its path,
so a match's path is one index lookup. The rowid is a hash of the path (written out here, as
`cache.sqlite.search_rowid` computes it, so that this step stays what it was).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 20:00:00
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("notes", sa.Column("search_rowid", sa.BigInteger(), nullable=True))
    bind = op.get_bind()
    paths = bind.execute(sa.text("SELECT path FROM notes")).scalars().all()
    if paths:
        bind.execute(
            sa.text("UPDATE notes SET search_rowid = :rowid WHERE path = :path"),
            [{"rowid": _search_rowid(path), "path": path} for path in paths],
        )
    op.create_index("ix_notes_search_rowid_path", "notes", ["search_rowid", "path"])


def downgrade() -> None:
    op.drop_index("ix_notes_search_rowid_path", table_name="notes")
    # In place (SQLite 3.35+), not by batch mode's copy of the table: dropping the old `notes`
    # would cascade to every tag and link row.
    op.execute("ALTER TABLE notes DROP COLUMN search_rowid")


def _search_rowid(path: str) -> int:
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") & ((1 << 63) - 1)
