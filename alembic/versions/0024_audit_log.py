"""audit_log: which client made each write by Weaver

One row per note of an edit-journal run: who wrote (the caller's kind, its stable client id and
the name a person reads), with which tool or command, when, the run's id (the edit history's
entry, which `restore_edit` takes) and what became of the write. The row is inserted in the
transaction that journals the run (outcome `pending`) and settled in the one that finishes it,
so it never claims a write that did not land. No foreign key to `edit_journal`: the audit is
kept longer than the history (`audit_retention_days`).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("caller_kind", sa.String(), nullable=False),
        sa.Column("client_id", sa.String(), nullable=False),
        sa.Column("client_name", sa.String(), nullable=False),
        sa.Column("tool", sa.String(), nullable=False),
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("edit_id", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_client_at", "audit_log", ["client_id", "at"])
    op.create_index("ix_audit_log_client_name_at", "audit_log", ["client_name", "at"])
    op.create_index("ix_audit_log_path_at", "audit_log", ["path", "at"])
    op.create_index("ix_audit_log_edit_id", "audit_log", ["edit_id"])


def downgrade() -> None:
    op.drop_index("ix_audit_log_edit_id", table_name="audit_log")
    op.drop_index("ix_audit_log_path_at", table_name="audit_log")
    op.drop_index("ix_audit_log_client_name_at", table_name="audit_log")
    op.drop_index("ix_audit_log_client_at", table_name="audit_log")
    op.drop_index("ix_audit_log_at", table_name="audit_log")
    op.drop_table("audit_log")
