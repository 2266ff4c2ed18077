"""A corrupt cache found while running is rebuilt (`runtime.rebuild`): in-process, the pieces
(the error seen on any connection, the file replaced and refilled, the history salvaged, a
reader's note to the writer); then a real daemon with a reader process, whose cache gets
garbage mid-file while it serves, answering again after the rebuild without a restart."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
from functools import partial
from pathlib import Path

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DatabaseError

from tests.helpers import WriteNotes, free_port, wait_for, write_files
from tests.host.test_daemon import Daemon
from tests.host.test_http_processes import Connection, children_of, health
from weaver.cache import recovery
from weaver.runtime.app import App
from weaver.runtime.rebuild import CacheNudge, CorruptionWatch, rebuild_corrupt_cache

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
    finally:
        daemon.stop(process)


def cache_notes(cache: Path) -> int | None:
    """The notes in the cache file at `cache`, read without ever creating it; None if none."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
            return int(db.execute("SELECT count(*) FROM notes").fetchone()[0])
    except sqlite3.Error:
        return None


def cache_runs(cache: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT count(*) FROM executions").fetchone()[0])


def total_notes(port: int) -> int | None:
    """`query_files`' total as one process on `port` answers it (None while none answers)."""
    connection = Connection(port)
    try:
        return int(connection.call("query_files", limit=1)["data"]["total"])
    except (OSError, KeyError, ValueError, TypeError):
        return None
    finally:
        connection.http.close()


def total_is(port: int, expected: int) -> bool:
    return total_notes(port) == expected


@pytest.mark.slow
def test_a_deleted_cache_is_made_again_by_its_writer_alone(tmp_path: Path) -> None:
    """`rm -rf .weaver` under a running daemon: the daemon makes its cache again within
    seconds, whole (copied from the file it still had open), without a restart; a `weaver
    serve` and a `weaver index` started meanwhile make no empty cache of their own but wait
    for it; a note written afterwards reaches every reader."""
    vault = write_files(tmp_path / "vault", notes(NOTES))
    port, serve_port = free_port(), free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nhttp_processes = 2\nsemantic = false\n'
    )
    daemon = Daemon(vault, config, port, tmp_path / "daemon.log")
    process = daemon.start()
    serve = None
    try:
        wait_for(lambda: children_of(process.pid), 60, "the reader process")
        cache = vault / ".weaver" / "cache.db"
        runs = cache_runs(cache)
        shutil.rmtree(vault / ".weaver")
        with (tmp_path / "serve.log").open("w") as serve_log:
            serve = subprocess.Popen(
                daemon.command("serve", "--transport", "http", "--port", str(serve_port)),
                stdout=serve_log,
                stderr=serve_log,
                env=daemon.env(),
            )
        index = daemon.weaver("index", "--json")
        assert index.returncode == 0, index.stderr
        assert json.loads(index.stdout)["notes"] == NOTES  # the daemon's, whole
        wait_for(lambda: cache_notes(cache) == NOTES, 30, "the daemon's cache made again")
        made = cache.stat().st_ino
        wait_for(lambda: total_notes(serve_port) == NOTES, 60, "the second server answering")
        assert cache_runs(cache) >= runs  # the workflow history kept
        write_files(vault, {"n/new.md": "# New\nwritten after the cache was made again\n"})
        for answering in (port, port, port, serve_port):
            wait_for(partial(total_is, answering, NOTES + 1), 30, "the new note read")
        wait_for(lambda: (health(port) or {}).get("status") == "healthy", 30, "healthy again")
        assert cache.stat().st_ino == made  # nobody put another file in its place
        assert process.poll() is None and serve.poll() is None  # no restart, no crash
        log = daemon.log.read_text()
        assert "made again from the copy still open" in log
        assert "took the writer lock" not in log
        assert sorted(p.name for p in cache.parent.glob("cache.db*")) == [
            "cache.db",
            "cache.db-shm",
            "cache.db-wal",
            "cache.db.writer.lock",
        ]
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(timeout=20)
        daemon.stop(process)


def test_the_watch_is_nudged_at_once_by_its_cache_file_and_the_readers_mark(
    tmp_path: Path,
) -> None:
    """The vault watcher hands over the cache's own changes (`on_unwatched`): a deleted cache
    file or a reader's corruption mark wakes the writer's watch now, not at its next tick."""
    cache = tmp_path / ".weaver" / "cache.db"

    async def woken_after(changed: str) -> float:
        nudge = CacheNudge(cache)
        started = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(nudge.wait, 30.0)
            await anyio.sleep(0.05)
            nudge.on_change(changed)
            nudge.on_change(str(tmp_path / "note.md"))  # anything else: no nudge
        return anyio.current_time() - started

    assert anyio.run(woken_after, str(cache)) < 5
    assert anyio.run(woken_after, str(cache) + recovery.SEEN_SUFFIX) < 5

    async def not_woken() -> bool:
        nudge = CacheNudge(cache)
        with anyio.move_on_after(0.3) as scope:
            nudge.on_change(str(tmp_path / "note.md"))
            await nudge.wait(30.0)
        return scope.cancelled_caught

    assert anyio.run(not_woken)
