"""workflow records: what built-in and plugin workflows keep for later queries

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_records",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("workflow_id", sa.String(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("recorded_at", sa.BigInteger(), nullable=False),
        sa.Column("execution_id", sa.String(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("workflow_records", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_records_workflow_key_recorded",
            ["workflow_id", "key", "recorded_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_workflow_records_workflow_recorded", ["workflow_id", "recorded_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("workflow_records", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_records_workflow_recorded")
        batch_op.drop_index("ix_workflow_records_workflow_key_recorded")
    op.drop_table("workflow_records")
