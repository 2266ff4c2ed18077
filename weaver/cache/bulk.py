"""A first index loads links and tags without their secondary indexes, then builds each once.

Row by row, every link goes into three indexes in random key order (by target, by target key,
by source); once those outgrow the page cache each insert reads and writes pages all over the
file, and a first index slows down as the vault grows. A `CREATE INDEX` over the loaded table
sorts its keys instead.

The dropped indexes' `CREATE` statements are kept in `cache_state` in the same transaction that
drops them, and `restore_indexes` runs them again: at the end of the load (also of a failed
one), and on every open of the cache (`weaver.cache.db`), for a load that was interrupted (Ctrl-C)
or whose process died. Only SQLite caches are loaded this way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from sqlalchemy import Connection, Engine, inspect
from sqlalchemy.exc import SQLAlchemyError

log = structlog.get_logger(__name__)

DEFERRED_KEY = "deferred_indexes"
DEFERRED_TABLES = ("links", "tags", "note_properties", "tasks")


@contextmanager
def indexes_deferred(conn: Connection) -> Iterator[None]:
    """Drop the secondary indexes of links and tags while the block loads them (no open
    transaction on entry or exit; the block commits its own)."""
    if conn.dialect.name != "sqlite":
        yield
        return
    with conn.begin():
        marks = ", ".join("?" * len(DEFERRED_TABLES))
        indexes = conn.exec_driver_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            f"AND tbl_name IN ({marks}) ORDER BY name",
            DEFERRED_TABLES,
        ).all()
        _save(conn, [sql for _name, sql in indexes])
        for name, _sql in indexes:
            conn.exec_driver_sql(f'DROP INDEX "{name}"')
    try:
        yield
    except Exception:
        _restore_after_failure(conn)
        raise
    # Ctrl-C or exit: not here, the next open does it. The interrupted statement may still hold
    # the write lock (its cursor lives in the traceback), and the user asked to stop, not to
    # wait while indexes are built.
    with conn.begin():
        restore_indexes(conn)


def _restore_after_failure(conn: Connection) -> None:
    """Best effort, never hiding the failure itself: what this cannot do, the next open does."""
    try:
        if conn.in_transaction():
            conn.rollback()
        with conn.begin():
            restore_indexes(conn)
    except SQLAlchemyError as exc:
        log.warning("indexes left to restore at the next start", error=str(exc))


def restore_indexes(conn: Connection) -> None:
    """Create again whatever indexes a load deferred (usually none), in the caller's
    transaction."""
    if conn.dialect.name != "sqlite" or not inspect(conn).has_table("cache_state"):
        return
    row = conn.exec_driver_sql(
        "SELECT value FROM cache_state WHERE key = ?", (DEFERRED_KEY,)
    ).first()
    if row is None:
        return
    log.info("building the link and tag indexes")
    for statement in json.loads(row[0]):
        conn.exec_driver_sql(statement.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
    conn.exec_driver_sql("DELETE FROM cache_state WHERE key = ?", (DEFERRED_KEY,))


def restore_indexes_of(engine: Engine) -> None:
    with engine.begin() as conn:
        restore_indexes(conn)


def _save(conn: Connection, statements: list[str]) -> None:
    conn.exec_driver_sql("DELETE FROM cache_state WHERE key = ?", (DEFERRED_KEY,))
    conn.exec_driver_sql(
        "INSERT INTO cache_state (key, value) VALUES (?, ?)", (DEFERRED_KEY, json.dumps(statements))
    )
