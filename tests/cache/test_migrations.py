"""The schema belongs to Alembic: head equals the models, and an old cache upgrades in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from tests.helpers import write_files
from tests.pg_server import PostgresServer
from weaver.cache import read
from weaver.cache.db import (
    SCHEMA_HEAD,
    alembic_config,
    open_cache_engine,
    open_engine,
    pending_migrations,
    upgrade_to_head,
)
from weaver.cache.fts import is_search_table
from weaver.cache.models import Base
from weaver.cache.read import FileFilters, read_snapshot
from weaver.config import Settings
from weaver.runtime.app import open_app

pytestmark = [pytest.mark.both_backends, pytest.mark.real_migrations]


def include_name(name: str | None, type_: str, _parents: object) -> bool:
    return not (type_ == "table" and name is not None and is_search_table(name))


def test_upgrade_from_first_migration_to_head_equals_the_models(empty_db_url: str) -> None:
    engine = open_engine(empty_db_url)
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
    assert pending_migrations(engine)  # an old cache, with migrations to apply
    upgrade_to_head(engine)
    assert pending_migrations(engine) == []
    with engine.connect() as conn:
        # The FTS5 tables are raw SQL outside the models (see alembic/env.py).
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []
    engine.dispose()


def test_every_migration_downgrades_and_upgrades_again(empty_db_url: str) -> None:
    engine = open_engine(empty_db_url)
    upgrade_to_head(engine)
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
        assert inspect(conn).get_table_names() == ["alembic_version"]
    upgrade_to_head(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        assert compare_metadata(context, Base.metadata) == []
        if conn.dialect.name == "sqlite":
            config_rows: dict[str, object] = dict(
                conn.execute(text("SELECT k, v FROM notes_fts_config")).all()
            )
            assert config_rows["hashsize"] == 8 * 1024 * 1024
        else:
            assert "note_texts" in inspect(conn).get_table_names()
    engine.dispose()


def test_old_cache_keeps_its_rows_when_upgraded(empty_db_url: str) -> None:
    engine = open_engine(empty_db_url)
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(text("INSERT INTO cache_state (key, value) VALUES ('last_updated', '1')"))
    upgrade_to_head(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM cache_state")).scalar() == "1"
        assert "notes" in inspect(conn).get_table_names()
    engine.dispose()


@pytest.mark.sqlite_only
def test_cache_runs_in_wal_mode(tmp_path: Path) -> None:
    engine = open_engine(f"sqlite:///{tmp_path / 'sub' / 'cache.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    engine.dispose()


def test_schema_head_names_the_newest_migration() -> None:
    """A cache at `SCHEMA_HEAD` is opened without Alembic: were it not head, a new migration
    would never be applied."""
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == SCHEMA_HEAD


def test_an_old_cache_is_upgraded_on_open_and_a_current_one_opened_without_alembic(
    empty_db_url: str,
) -> None:
    url = empty_db_url
    engine = open_engine(url)
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0010")
    engine.dispose()
    open_cache_engine(url).dispose()
    reopened = open_engine(url)
    assert pending_migrations(reopened) == []
    reopened.dispose()
    # In a process of its own: is Alembic (and the mako and pygments it imports) left out?
    probe = (
        "import sys, weaver.cache.db as db; db.open_cache_engine(sys.argv[1]).dispose(); "
        "print('alembic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, url], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


@pytest.mark.postgres
def test_folders_are_byte_ranges_under_a_linguistic_collation(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """Under en-US, `A/x.md` sorts between `a/` and `a0`: the cache's text columns compare in
    byte order (0017), so a folder's range holds its own notes only, in SQLite's order."""
    name = postgres_server.create_icu_database("en-US")
    files = {"a/b.md": "b", "A/x.md": "x", "a b.md": "s", "a-c.md": "d", "ab.md": "e"}
    app = open_app(
        Settings(vault=write_files(tmp_path / "v", files), database_url=postgres_server.url(name))
    )
    try:
        app.indexer.reconcile()
        with read_snapshot(app.db) as conn:
            in_a = read.query_files(conn, FileFilters(directory="a"), 50, 0)
            every = read.query_files(conn, FileFilters(), 50, 0)
    finally:
        app.close()
        postgres_server.drop_database(name)
    assert [f.path for f in in_a.items] == ["a/b.md"]
    assert [f.path for f in every.items] == sorted(files)
