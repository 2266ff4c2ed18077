"""titles as Obsidian shows them, frontmatter properties indexed, weighted and CJK search

- `notes.heading`: the first H1, kept beside the title, which is now the frontmatter `title`
  or the file name (no longer the first H1: a footer heading or `[[link|markup]]` made titles
  no reader would recognise).
- `note_properties`: a row per frontmatter scalar and list element, indexed by (key, text) and
  (key, num), for `query_files where=`.
- `ix_notes_error_path`: a partial index of the notes indexed with an error (list_problems).
- `notes_fts` gains `names` (file name, aliases, first H1) and `headings` columns, weighted
  above the body, and holds Chinese and Japanese text one character a token (see
  `weaver.cache.fts`).

Backfill: headings, properties and the search rows come from the notes' text, so the next
reconcile re-reads every note (`reparse_pending`, as `0003` explains); no events are published.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 05:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Spelled out rather than imported: a migration must keep doing what it did when written.
TOKENIZER = "tokenize = 'porter unicode61 remove_diacritics 2'"
NEW_COLUMNS = "path UNINDEXED, title, names, headings, body"
OLD_COLUMNS = "path UNINDEXED, title, body"


def upgrade() -> None:
    op.add_column("notes", sa.Column("heading", sa.String(), nullable=True))
    op.create_table(
        "note_properties",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "note_path",
            sa.String(),
            sa.ForeignKey("notes.path", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=True),
        sa.Column("num", sa.Float(), nullable=True),
    )
    op.create_index("ix_note_properties_key_text", "note_properties", ["key", "text", "note_path"])
    op.create_index("ix_note_properties_key_num", "note_properties", ["key", "num", "note_path"])
    op.create_index("ix_note_properties_note", "note_properties", ["note_path"])
    op.create_index(
        "ix_notes_error_path",
        "notes",
        ["path"],
        sqlite_where=sa.text("error IS NOT NULL"),
        postgresql_where=sa.text("error IS NOT NULL"),
    )
    _replace_search_table(NEW_COLUMNS, "rowid, path, title, '', '', body")


def downgrade() -> None:
    op.drop_index("ix_notes_error_path", table_name="notes")
    op.drop_table("note_properties")
    # A plain DROP COLUMN (SQLite 3.35+): a batch copy of `notes` would cascade to its links.
    op.drop_column("notes", "heading")
    _replace_search_table(OLD_COLUMNS, "rowid, path, title, body")


def _replace_search_table(columns: str, copied: str) -> None:
    """A search table with `columns`, holding the old one's rows (`copied`: what to select
    from them) and settings (0006's hashsize), until the re-parse writes them anew."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"CREATE VIRTUAL TABLE notes_fts_new USING fts5({columns}, {TOKENIZER})")
        settings = op.get_bind().execute(sa.text("SELECT k, v FROM notes_fts_config"))
        for key, value in settings.all():
            if key != "version":
                op.get_bind().execute(
                    sa.text("INSERT INTO notes_fts_new (notes_fts_new, rank) VALUES (:k, :v)"),
                    {"k": key, "v": value},
                )
        names = "rowid, " + columns.replace(" UNINDEXED", "")
        op.execute(
            f"INSERT INTO notes_fts_new ({names}) SELECT {copied} FROM notes_fts ORDER BY rowid"
        )
        op.execute("DROP TABLE notes_fts")
        op.execute("ALTER TABLE notes_fts_new RENAME TO notes_fts")
    op.execute("DELETE FROM cache_state WHERE key = 'reparse_pending'")
    op.execute("INSERT INTO cache_state (key, value) VALUES ('reparse_pending', 'true')")
