"""drop two indexes no query uses; let full-text indexing buffer more before flushing

`ix_links_relation` and `ix_notes_content_hash` were never read: the graph loads relations
with every link, and move detection compares hashes in memory. Each cost every insert a
B-tree update, and the cache the space of two indexes.

FTS5 flushes its pending terms to a new segment whenever they pass `hashsize` (1 MB by
default) and merges segments as it goes; with 8 MB it flushes an eighth as often, and a first
index spends less time in FTS5 (the memory is only held during a write transaction).
The setting lives in the FTS table's own config, so it belongs to the schema.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 14:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

FTS_HASHSIZE = 8 * 1024 * 1024
FTS_DEFAULT_HASHSIZE = 1024 * 1024


def upgrade() -> None:
    op.drop_index("ix_links_relation", table_name="links")
    op.drop_index("ix_notes_content_hash", table_name="notes")
    _set_fts_hashsize(FTS_HASHSIZE)


def downgrade() -> None:
    _set_fts_hashsize(FTS_DEFAULT_HASHSIZE)
    op.create_index("ix_notes_content_hash", "notes", ["content_hash"])
    op.create_index("ix_links_relation", "links", ["relation"])


def _set_fts_hashsize(size: int) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return  # no FTS5 table there (see 0003)
    op.execute(f"INSERT INTO notes_fts(notes_fts, rank) VALUES('hashsize', {size})")
