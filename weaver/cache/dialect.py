"""Which database a cache lives in: the one question asked of a URL, an engine or a connection."""

from __future__ import annotations

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import make_url


def is_postgres(where: str | Engine | Connection) -> bool:
    """Whether `where` (a database URL, an engine or a connection) is PostgreSQL."""
    if isinstance(where, str):
        return make_url(where).get_backend_name() == "postgresql"
    return where.dialect.name == "postgresql"
