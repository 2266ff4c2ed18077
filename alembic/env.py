"""Alembic environment: uses the connection Weaver hands over, else the configured URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine

from weaver.cache.fts import is_search_table
from weaver.cache.models import Base

target_metadata = Base.metadata


def include_name(name: str | None, type_: str, _parents: object) -> bool:
    # The FTS5 table (and its shadow tables) is created by raw SQL in 0003, not by the models:
    # without this, autogenerate would propose dropping it.
    return not (type_ == "table" and name is not None and is_search_table(name))


def run_with(connection: Connection) -> None:
    # SQLite cannot ALTER most things in place: batch mode copies the table instead.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    run_with(connection)
else:
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as own_connection:
        run_with(own_connection)
