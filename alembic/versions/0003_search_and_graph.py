"""full-text search over notes (FTS5), filled by one re-parse of the vault

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 10:00:00

The FTS5 table is created with raw SQL: it is a virtual table, outside `Base.metadata`, and
`alembic/env.py` keeps autogenerate away from it and its shadow tables (`is_search_table`).
The graph tools need no schema: they read `links`, whose `relation` column exists since 0001.

Backfill: the note bodies live on disk, not in the cache, so the migration cannot fill the
index itself. It sets `reparse_pending` in `cache_state` instead, and the next reconcile
(every `weaver serve`, `daemon` and `index` starts with one) re-reads every note, as
`weaver index --full` does, then clears it. Resetting `mtime_ns` alone would not do: a note
whose bytes hash as before is only touched, never parsed again. And unlike clearing
`content_hash`, a re-parse publishes no events for unchanged notes, so no workflow fires
because of the upgrade.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Spelled out rather than imported: a migration must keep doing what it did when written.
CREATE_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5("
    "path UNINDEXED, title, body, tokenize = 'porter unicode61 remove_diacritics 2')"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return  # another database gets its own search index in its own migration
    op.execute(CREATE_FTS)
    op.execute("DELETE FROM cache_state WHERE key = 'reparse_pending'")
    op.execute("INSERT INTO cache_state (key, value) VALUES ('reparse_pending', 'true')")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE IF EXISTS notes_fts")
    op.execute("DELETE FROM cache_state WHERE key = 'reparse_pending'")
