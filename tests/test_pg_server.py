"""The PostgreSQL the tests run against: a real server, a fresh database per test."""

from __future__ import annotations

from sqlalchemy import create_engine, text

from tests.pg_server import PostgresServer


def test_a_fresh_database_is_empty_and_writable(postgres_empty_url: str) -> None:
    engine = create_engine(postgres_empty_url)
    try:
        with engine.begin() as conn:
            assert (
                conn.execute(
                    text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
                ).scalar()
                == 0
            )
            conn.execute(text("CREATE TABLE probe (n integer)"))
            conn.execute(text("INSERT INTO probe VALUES (1)"))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT n FROM probe")).scalar() == 1
            version = conn.execute(text("SHOW server_version_num")).scalar()
        assert int(str(version)) >= 130000  # DROP DATABASE ... WITH (FORCE) needs 13
    finally:
        engine.dispose()


def test_each_database_is_its_own(postgres_server: PostgresServer) -> None:
    first, second = postgres_server.create_database(), postgres_server.create_database()
    try:
        assert first != second
        postgres_server.execute("CREATE TABLE only_here (n integer)", database=first)
        engine = create_engine(postgres_server.url(second))
        try:
            with engine.connect() as conn:
                found = conn.execute(text("SELECT to_regclass('only_here')")).scalar()
            assert found is None
        finally:
            engine.dispose()
    finally:
        postgres_server.drop_database(first)
        postgres_server.drop_database(second)
