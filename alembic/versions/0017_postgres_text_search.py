"""note_texts: each note's text and a weighted tsvector, for a PostgreSQL cache

On PostgreSQL the cache holds what SQLite keeps in its FTS5 table (`0003`, `0014`), and the
note's frontmatter block as written too, so that a reader on another host, without the files,
answers `get_file_content` and `search_notes` from the database alone:

- `note_texts`: the frontmatter block (`front`) and the text after it (`body`): `front || body`
  is the note as it was read; `document`, the note's `tsvector` with weights (title A, other
  names B, headings C, body D), with a GIN index.
- `weaver_search`: a text search configuration, English stemming with accents removed
  (`unaccent`, when the server has it), as FTS5's `porter unicode61 remove_diacritics 2`.

- Every text column compares in byte order (`COLLATE "C"`), as SQLite's BINARY does: the
  cache finds a folder's notes as the range `folder/` <= path < `folder0`, and orders pages by
  path. Under a database's linguistic collation (`en_US.UTF-8`, an ICU locale: most servers'
  default) `A/x.md` sorts between `a/` and `a0`, so `directory="a"` answered it.

SQLite caches get nothing here: their files are always beside them (a SQLite cache is one
file that one machine opens), and FTS5 already holds each note's body.

Backfill: the texts come from the notes on disk, so the next reconcile re-reads every note
(`reparse_pending`, as `0003` explains); no events are published.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 07:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Spelled out rather than imported: a migration must keep doing what it did when written.
CONFIG = "weaver_search"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _create_search_config()
    op.create_table(
        "note_texts",
        sa.Column(
            "note_path",
            sa.String(),
            sa.ForeignKey("notes.path", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("front", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("document", postgresql.TSVECTOR(), nullable=False),
        sa.PrimaryKeyConstraint("note_path"),
    )
    op.create_index("ix_note_texts_document", "note_texts", ["document"], postgresql_using="gin")
    _collate_text_columns("C")
    op.execute("DELETE FROM cache_state WHERE key = 'reparse_pending'")
    op.execute("INSERT INTO cache_state (key, value) VALUES ('reparse_pending', 'true')")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _collate_text_columns("default")
    op.drop_index("ix_note_texts_document", table_name="note_texts")
    op.drop_table("note_texts")
    op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {CONFIG}")


def _collate_text_columns(collation: str) -> None:
    """Every varchar and text column of the cache's tables compared under `collation`."""
    columns = op.get_bind().execute(
        sa.text(
            "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
            "AND c.data_type IN ('character varying', 'text') "
            "AND c.table_name != 'alembic_version' ORDER BY 1, 2"
        )
    )
    for table, column, data_type in columns.all():
        kind = "varchar" if data_type == "character varying" else "text"
        op.execute(
            f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE {kind} COLLATE "{collation}"'
        )


def _create_search_config() -> None:
    """English stemming; accents folded when `unaccent` can be had (a trusted extension
    since PostgreSQL 13, so the database's owner may create it; Debian ships it with the
    server). Without it, accents count, and docs/postgres.md says so."""
    op.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {CONFIG}")
    op.execute(f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = pg_catalog.english)")
    bind = op.get_bind()
    available = bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'unaccent'")
    ).first()
    if available is None:
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    op.execute(
        f"ALTER TEXT SEARCH CONFIGURATION {CONFIG} ALTER MAPPING FOR "
        "hword, hword_part, word WITH unaccent, english_stem"
    )
