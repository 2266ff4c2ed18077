"""note_texts.head and lead, narrow rows: ranking a common word on PostgreSQL cheaply

`ts_rank_cd` must read every matching note's `tsvector`, which a GIN index cannot rank: a word
most of 10,000 notes hold took ~30 ms to rank. `cache.pg_search` now ranks fully only the best
candidates, chosen by what each row holds cheaply; this migration gives the rows that:

- `head`: the note's title (weight A), other names (B) and headings (C) alone, a small
  `tsvector` kept in the row (storage MAIN), copied from `document`'s weighted lexemes;
- `lead`: `head` and the body's first 512 characters (`pg_search.LEAD_CHARS`), weighted as
  in `document`, also in the row: `ts_rank_cd` over it is the cheap score the candidates are
  chosen by, equal to the full one for a body that short. Here it is made from the stored
  body as `to_tsvector` splits it; the writer's own (FTS5's word splitting, CJK characters a
  token each) replaces it when the note is next written, and differs only for such words;
- narrow rows: `toast_tuple_target` 512 moves the body and the document out of line
  (`document` EXTERNAL: never compressed, since pglz gains nothing on a `tsvector` and
  would only cost its reading), so the matches' rows are a few hundred pages to visit, not
  thousands; `note_path` PLAIN, so it never leaves the row (a toasted path made every
  comparison of a sort fetch it: 143 ms to sort 4,532 paths).

Every row is rewritten here (`UPDATE`), so the storage applies to rows already there; no
events, no reparse. SQLite caches get nothing: FTS5's BM25 ranks there.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 10:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# `pg_search.LEAD_CHARS` when this was written (a migration keeps its own constants).
LEAD_CHARS = 512


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "ALTER TABLE note_texts ADD COLUMN head tsvector NOT NULL DEFAULT '', "
        "ADD COLUMN lead tsvector NOT NULL DEFAULT ''"
    )
    op.execute(
        "ALTER TABLE note_texts ALTER COLUMN note_path SET STORAGE PLAIN, "
        "ALTER COLUMN head SET STORAGE MAIN, ALTER COLUMN lead SET STORAGE MAIN, "
        "ALTER COLUMN document SET STORAGE EXTERNAL"
    )
    op.execute("ALTER TABLE note_texts SET (toast_tuple_target = 512)")
    # Title, names and headings are the lexemes weighted A, B and C; `||` numbers the body's
    # words after them, as in `document`.
    op.execute(
        "UPDATE note_texts SET head = ts_filter(document, '{a,b,c}'), "
        "lead = ts_filter(document, '{a,b,c}') || setweight(to_tsvector("
        f"'weaver_search', left(body, {LEAD_CHARS})), 'D')"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE note_texts RESET (toast_tuple_target)")
    op.execute(
        "ALTER TABLE note_texts ALTER COLUMN note_path SET STORAGE EXTENDED, "
        "ALTER COLUMN document SET STORAGE EXTENDED"
    )
    op.execute("ALTER TABLE note_texts DROP COLUMN head, DROP COLUMN lead")
