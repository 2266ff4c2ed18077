"""workflow executions, and the notes the workflow engine wrote

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 09:33:08.351548
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "executions",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("workflow_id", sa.String(), nullable=False),
        sa.Column("workflow_name", sa.String(), nullable=False),
        sa.Column("trigger_kind", sa.String(), nullable=False),
        sa.Column("trigger_detail", sa.JSON(), nullable=False),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("progress", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started", sa.BigInteger(), nullable=True),
        sa.Column("finished", sa.BigInteger(), nullable=True),
        sa.Column("duration", sa.BigInteger(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("traceback", sa.Text(), nullable=True),
        sa.Column("process", sa.String(), nullable=True),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.create_index("ix_executions_created", ["created"], unique=False)
        batch_op.create_index(
            "ix_executions_status_workflow", ["status", "workflow_id"], unique=False
        )
        batch_op.create_index(
            "ix_executions_workflow_created", ["workflow_id", "created"], unique=False
        )

    op.create_table(
        "workflow_writes",
        sa.Column("path", sa.String(), nullable=False),
        sa.Column("content_hash", sa.String(), nullable=False),
        sa.Column("execution_id", sa.String(), nullable=True),
        sa.Column("written", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("path", "content_hash"),
    )
    with op.batch_alter_table("workflow_writes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_workflow_writes_written"), ["written"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workflow_writes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_writes_written"))
    op.drop_table("workflow_writes")
    with op.batch_alter_table("executions", schema=None) as batch_op:
        batch_op.drop_index("ix_executions_workflow_created")
        batch_op.drop_index("ix_executions_status_workflow")
        batch_op.drop_index("ix_executions_created")
    op.drop_table("executions")
