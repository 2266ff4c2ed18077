"""vault_events + event_cursors: a durable change feed with a cursor per consumer

The file events of a pass lived only in the memory of the process that applied it: a change
applied by `weaver index` (or by a daemon that died before its workflows ran) never reached the
workflows. Each pass now writes its events into `vault_events` in the transaction that applies
them, and each consumer (the workflow engine) keeps its position in `event_cursors`, advanced in
the transaction that queues the runs. Rows start with `sealed = 0` while the pass that wrote
them is under way; consumers read sealed rows only.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 05:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vault_events",
        # AUTOINCREMENT: an id is never reused after its row is pruned, so a cursor stays true.
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("old_path", sa.String(), nullable=True),
        sa.Column("initial", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("sealed", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_vault_events_sealed", "vault_events", ["sealed"])
    op.create_table(
        "event_cursors",
        sa.Column("consumer", sa.String(), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("updated", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("consumer"),
    )


def downgrade() -> None:
    op.drop_table("event_cursors")
    op.drop_index("ix_vault_events_sealed", table_name="vault_events")
    op.drop_table("vault_events")
