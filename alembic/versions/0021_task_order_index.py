"""tasks: the due-date index also holds what the plugin's order and groups by file read

`ix_tasks_due_order` replaces `ix_tasks_due` (due date first, as before, so every question
about due dates still reads one range) and adds the status type and every column the default
order (status type, urgency, due, priority, path) and a group by file or folder need. A query
over the week's open tasks then sorts and groups them from the index alone: at 313,000 tasks
the block "not done, due this week, group by filename" read 1,600 table rows from all over the
file, and "not done, sort by due, limit 50" still walks the dates in order and stops early.
`ix_tasks_status_due` stays: counting a large match walks its narrower entries faster.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 13:10:00
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

COLUMNS = ["due", "status_type", "priority", "scheduled", "start", "note_path", "line"]


def upgrade() -> None:
    op.create_index("ix_tasks_due_order", "tasks", COLUMNS)
    op.drop_index("ix_tasks_due", table_name="tasks")


def downgrade() -> None:
    op.create_index("ix_tasks_due", "tasks", ["due"])
    op.drop_index("ix_tasks_due_order", table_name="tasks")
