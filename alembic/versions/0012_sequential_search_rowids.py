"""full-text rowids that grow with the notes instead of a hash of each path

Hashed rowids put each batch of a first index all over the full-text tables: FTS5 starts a new
segment whenever a rowid is lower than the one before, and the stored bodies land at random
places in a table as big as the vault. Rowids given in the order notes are written append
instead. The rows are renumbered here, in path order (notes and the FTS table together); the
downgrade gives them back their hashes, computed as `0010` did.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 22:45:00
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

CREATE_RENUMBERED = (
    "CREATE VIRTUAL TABLE notes_fts_renumbered USING fts5("
    "path UNINDEXED, title, body, tokenize = 'porter unicode61 remove_diacritics 2')"
)


def upgrade() -> None:
    op.execute(
        "CREATE TEMP TABLE search_renumbered AS SELECT path, "
        "row_number() OVER (ORDER BY path) AS new FROM notes WHERE search_rowid IS NOT NULL"
    )
    _renumber()


def downgrade() -> None:
    bind = op.get_bind()
    op.execute("CREATE TEMP TABLE search_renumbered (path TEXT PRIMARY KEY, new BIGINT)")
    paths = bind.execute(sa.text("SELECT path FROM notes WHERE search_rowid IS NOT NULL"))
    rows = [{"path": path, "new": _hashed_rowid(path)} for path in paths.scalars()]
    if rows:
        bind.execute(sa.text("INSERT INTO search_renumbered VALUES (:path, :new)"), rows)
    _renumber()


def _renumber() -> None:
    """Give every note the rowid `search_renumbered` holds for its path, in `notes` and in a
    rebuilt FTS table (an FTS5 row cannot change its rowid without being indexed again, so
    the rows go into a new table in the new order). Only SQLite caches have that table."""
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_search_table()
    op.execute(
        "UPDATE notes SET search_rowid = r.new FROM search_renumbered r WHERE notes.path = r.path"
    )
    op.execute("DROP TABLE search_renumbered")


def _rebuild_search_table() -> None:
    op.execute(CREATE_RENUMBERED)
    # The settings made by earlier migrations (0006's hashsize), not FTS5's own "version".
    settings = op.get_bind().execute(sa.text("SELECT k, v FROM notes_fts_config"))
    for key, value in settings:
        if key != "version":
            op.get_bind().execute(
                sa.text(
                    "INSERT INTO notes_fts_renumbered (notes_fts_renumbered, rank) "
                    "VALUES (:key, :value)"
                ),
                {"key": key, "value": value},
            )
    op.execute(
        "INSERT INTO notes_fts_renumbered (rowid, path, title, body) "
        "SELECT r.new, f.path, f.title, f.body FROM search_renumbered r "
        "JOIN notes n ON n.path = r.path JOIN notes_fts f ON f.rowid = n.search_rowid "
        "ORDER BY r.new"
    )
    op.execute("DROP TABLE notes_fts")
    op.execute("ALTER TABLE notes_fts_renumbered RENAME TO notes_fts")


def _hashed_rowid(path: str) -> int:
    digest = hashlib.blake2b(path.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") & ((1 << 63) - 1)
