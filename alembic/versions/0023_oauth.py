"""oauth_clients and oauth_tokens: Weaver's own OAuth 2.1 authorization server

With `oauth = true` the HTTP transport registers clients (RFC 7591) and issues authorization
codes, access tokens and refresh tokens for them. They must outlive a restart, so they are kept
here: a client's registration, and each code or token as the SHA-256 of its value (never the
value), grouped by `grant_id` (one consent and everything issued from it), so that revoking a
token revokes its whole grant. Deleting the cache logs every OAuth client out.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(), primary_key=True),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column("registered_at", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "oauth_tokens",
        sa.Column("token_hash", sa.String(), primary_key=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column(
            "client_id",
            sa.String(),
            sa.ForeignKey("oauth_clients.client_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("grant_id", sa.String(), nullable=False),
        sa.Column("scopes", sa.String(), nullable=False),
        sa.Column("resource", sa.String(), nullable=True),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("issued_at", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=True),
    )
    op.create_index("ix_oauth_tokens_client_id", "oauth_tokens", ["client_id"])
    op.create_index("ix_oauth_tokens_grant_id", "oauth_tokens", ["grant_id"])


def downgrade() -> None:
    op.drop_index("ix_oauth_tokens_grant_id", table_name="oauth_tokens")
    op.drop_index("ix_oauth_tokens_client_id", table_name="oauth_tokens")
    op.drop_table("oauth_tokens")
    op.drop_table("oauth_clients")
