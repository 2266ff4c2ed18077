"""The writer lock on PostgreSQL: one writer per vault across hosts, a standby takes over."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from weaver.config import Settings
from weaver.errors import DaemonError
from weaver.host.daemon import take_writer_lock
from weaver.runtime.locks import PgWriterLock, WriterLock, writer_lock_for


def _terminate(url: str, lock: PgWriterLock) -> None:
    """End the lock's session from outside, as the server does when its process is killed."""
    assert lock._conn is not None
    backend = lock._conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    parsed = make_url(url)
    conninfo = f"host={parsed.host} port={parsed.port} user={parsed.username} dbname=postgres"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (backend,))


def test_a_second_writer_is_refused_and_told_who_writes(postgres_url: str) -> None:
    with PgWriterLock(postgres_url) as first, PgWriterLock(postgres_url) as second:
        assert first.try_acquire()
        assert not second.try_acquire()
        holder = second.holder()
        assert f"{socket.gethostname()}:{os.getpid()} since " in holder
        assert first.reassert()
        first.release()
        assert second.try_acquire()
        assert "nobody" not in first.holder()


def test_a_dead_writer_session_frees_the_lock_and_the_holder_knows(postgres_url: str) -> None:
    with PgWriterLock(postgres_url) as first, PgWriterLock(postgres_url) as standby:
        assert first.try_acquire()
        _terminate(postgres_url, first)
        assert standby.try_acquire()
        assert not first.reassert()  # its session is gone: it must stop writing
        assert not first.held


def test_the_daemon_refuses_beside_a_writer_unless_standing_by(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(vault=tmp_path, database_url=postgres_url)
    with PgWriterLock(postgres_url) as first:
        assert first.try_acquire()
        with pytest.raises(DaemonError, match=r"another writer .*since .*--standby"):
            take_writer_lock(settings, standby=False)
        first.release()
    taken = take_writer_lock(settings, standby=True)
    try:
        assert taken.held
    finally:
        taken.close()


def test_the_lock_kind_follows_the_database(postgres_url: str, tmp_path: Path) -> None:
    assert isinstance(writer_lock_for(Settings(vault=tmp_path)), WriterLock)
    on_pg = writer_lock_for(Settings(vault=tmp_path, database_url=postgres_url))
    assert isinstance(on_pg, PgWriterLock)
    on_pg.close()
