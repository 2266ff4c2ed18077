"""tag_counts: how many notes each tag covers, kept by the writer

Counting the notes under a broad tag read every tag row below it and removed the notes that
carry two of them (in every `search_tags`, `query_files tag=` and `random_file tags=`). The
writer now keeps the counts; this migration fills them from the tags already cached. The
counting is written out here rather than imported, so that this step stays what it was
whatever the writer becomes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 16:00:00
"""

from __future__ import annotations

from collections import Counter

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    counts = op.create_table(
        "tag_counts",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("notes", sa.Integer(), nullable=False),
        sa.Column("own", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    rows = op.get_bind().execute(sa.text("SELECT note_path, key FROM tags")).all()
    keys_by_note: dict[str, set[str]] = {}
    for path, key in rows:
        keys_by_note.setdefault(path, set()).add(key)
    notes: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for keys in keys_by_note.values():
        own.update(keys)
        notes.update(_with_ancestors(keys))
    op.bulk_insert(
        counts, [{"key": key, "notes": n, "own": own.get(key, 0)} for key, n in notes.items()]
    )


def downgrade() -> None:
    op.drop_table("tag_counts")


def _with_ancestors(keys: set[str]) -> set[str]:
    """{`a/b/c`} -> {`a`, `a/b`, `a/b/c`}."""
    found = set(keys)
    for key in keys:
        parts = key.split("/")
        found.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return found
