"""A corrupt cache found while running is rebuilt (`host.rebuild`): in-process, the pieces
(the error seen on any connection, the file replaced and refilled, the history salvaged, a
reader's note to the writer); then a real daemon with a reader process, whose cache gets
garbage mid-file while it serves, answering again after the rebuild without a restart."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DatabaseError

from tests.conftest import WriteNotes, write_files
from tests.helpers import wait_for
from tests.host.test_daemon import Daemon
from tests.host.test_http_processes import Connection, children_of, health
from tests.mcp_server.test_transports import free_port
from weaver.cache import recovery
from weaver.host.app import App
from weaver.host.rebuild import CorruptionWatch, rebuild_corrupt_cache

NOTES = 1_500


def notes(count: int) -> dict[str, str | bytes]:
    return {
        f"n/{i:04}.md": f"# Note {i}\nwords about topic{i % 7} " * 20 + f"\n#tag{i % 5}\n"
        for i in range(count)
    }


def spoil(cache: Path) -> None:
    """Garbage over the middle half of the file, as a disk or a stray write would leave it."""
    size = cache.stat().st_size
    with cache.open("r+b") as handle:
        handle.seek(size // 4)
        handle.write(b"\xa5" * (size // 2))


def checkpointed(cache: Path) -> bool:
    """Whether the WAL was emptied into the file (not while the daemon writes: its workflows'
    first pass), so that garbage in the file is what the next reads meet."""
    with contextlib.closing(sqlite3.connect(cache)) as db:
        busy, frames, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return busy == 0 and frames == 0


def read_everything(app: App) -> None:
    with app.db.connect() as conn:
        conn.execute(text("SELECT count(*), sum(length(body)) FROM notes_fts")).all()
        conn.execute(text("SELECT * FROM notes")).all()
        conn.execute(text("SELECT * FROM links")).all()


def test_a_corruption_error_is_seen_and_the_cache_rebuilt(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes(notes(300))
    app.indexer.reconcile()
    cache = recovery.sqlite_file(app.settings.db_url)
    assert cache is not None
    watch = CorruptionWatch(app.db)
    app.db.dispose()  # nothing cached: the next reads meet the garbage
    spoil(cache)
    with pytest.raises(DatabaseError):
        read_everything(app)
    cause = watch.take()
    assert cause is not None and "malformed" in cause
    assert watch.take() is None

    assert rebuild_corrupt_cache(app, cause)
    read_everything(app)  # answers again, from the new file
    with app.db.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM notes")).scalar() == 300
    assert list(cache.parent.glob("cache.db.corrupt-*"))
    assert not rebuild_corrupt_cache(app, "a stale error")  # sound now: left alone
    watch.close()


def test_a_readers_note_reaches_the_writer_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache.db"
    assert recovery.take_corrupt_mark(cache) is None
    recovery.mark_corrupt(cache, "database disk image is malformed")
    assert recovery.take_corrupt_mark(cache) == "database disk image is malformed"
    assert recovery.take_corrupt_mark(cache) is None


def test_the_daemon_rebuilds_a_cache_spoilt_while_it_serves(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", notes(NOTES))
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nhttp_processes = 2\nsemantic = false\n'
    )
    daemon = Daemon(vault, config, port, tmp_path / "daemon.log")
    process = daemon.start()
    try:
        wait_for(lambda: children_of(process.pid), 60, "the reader process")
        cache = vault / ".weaver" / "cache.db"
        wait_for(lambda: checkpointed(cache), 60, "every page in the file itself", every=0.2)
        spoil(cache)
        statuses: set[str] = set()
        last: dict[str, object] = {}  # what was seen last, for the message of a timeout

        def answering_again() -> bool:
            body = health(port)
            if body is not None:
                statuses.add(body["status"])
            last["health"] = body
            connection = Connection(port)
            try:
                found = connection.call("query_files", directory="n", limit=1)
                stats = connection.call("search_notes", query="topic3", limit=1)
            except (OSError, KeyError, json.JSONDecodeError) as exc:
                last["error"] = repr(exc)
                return False
            finally:
                connection.http.close()
            total = found.get("data", {}).get("total")
            last.update(total=total, found=str(found)[:300], search=str(stats)[:300])
            return (
                total == NOTES
                and bool(stats.get("success"))
                and body is not None
                and (body["status"] == "healthy")
            )

        try:
            wait_for(answering_again, 90, "tools answering from the rebuilt cache", every=0.1)
        except AssertionError as timeout:
            tail = daemon.log.read_text(errors="replace")[-4000:]
            raise AssertionError(f"{timeout}; last seen {last}; daemon log ends:\n{tail}") from None
        assert process.poll() is None  # no restart
        log = daemon.log.read_text()
        assert "the cache was corrupt" in log and "moved to cache.db.corrupt-" in log
        assert list(cache.parent.glob("cache.db.corrupt-*"))
        assert statuses - {"healthy"}, statuses  # the fault was reported meanwhile
        for _ in range(10):  # every process answers from the new file
            connection = Connection(port)
            assert connection.call("get_stats")["success"]
            connection.http.close()
        time.sleep(0.1)
    finally:
        daemon.stop(process)
