"""A new SQLite cache in the tests starts as a copy of one migrated once per session.

Every `open_app` over a new vault, every in-process `weaver index` and every served vault makes
a new SQLite cache, and migrating one from nothing to head runs every Alembic script: a fifth of
the time of the tests that open an app, measured under coverage. The copy is made with SQLite's
backup API into the very file and engine the code under test opened, so the schema it then works
on is the one the same migrations made, byte for byte. Only a database with no table at all is
copied into; a cache at an older revision, a PostgreSQL one, and the tests marked
`real_migrations` (the migrations' own tests) run Alembic as users do. Processes the tests start
are not concerned: they migrate their caches themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from sqlalchemy import Engine, text

from weaver.cache import recovery
from weaver.cache.db import create_cache_file

Upgrade = Callable[[Engine], None]


def make_template(path: Path) -> Path:
    """A cache at head at `path`, made by the real migrations (before any patch)."""
    create_cache_file(path)
    return path


def upgrade_from_template(template: Path, migrate: Upgrade) -> Upgrade:
    """`upgrade_to_head` for the tests: an empty SQLite file gets `template`'s pages; anything
    else goes to `migrate`, the real one."""

    def upgrade(engine: Engine) -> None:
        if recovery.sqlite_file(engine.url.render_as_string()) is None or _has_tables(engine):
            migrate(engine)
            return
        with closing(sqlite3.connect(template)) as source, closing(engine.raw_connection()) as to:
            source.backup(to.driver_connection)  # type: ignore[arg-type]

    return upgrade


def _has_tables(engine: Engine) -> bool:
    with engine.connect() as connection:
        return connection.execute(text("SELECT 1 FROM sqlite_master LIMIT 1")).first() is not None
