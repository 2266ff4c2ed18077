"""A corrupt cache is moved aside with one line, rebuilt from the notes, its workflow history
salvaged where readable; no CLI path prints a traceback."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tests.helpers import statements_run, write_files
from weaver.cache import db, executions, recovery
from weaver.cli import main
from weaver.config import Settings
from weaver.edits import history, patches
from weaver.errors import CacheError
from weaver.runtime.app import open_app
from weaver.runtime.locks import WriterLock


@pytest.fixture
def config(tmp_path: Path, vault_dir: Path) -> Path:
    write_files(vault_dir, {f"notes/n{i}.md": f"# Note {i}\n" + "words " * 400 for i in range(150)})
    path = tmp_path / "weaver.toml"
    path.write_text(f'vault = "{vault_dir}"\nlog_level = "warning"\n', encoding="utf-8")
    return path


def build_cache(vault_dir: Path) -> Path:
    """A cache with the notes indexed and one execution on record."""
    app = open_app(Settings(vault=vault_dir))
    try:
        app.indexer.reconcile()
        with app.db.begin() as conn:
            executions.insert_execution(
                conn,
                execution_id="wf_exec_kept",
                workflow_id="wf",
                workflow_name="Wf",
                trigger_kind="manual",
                trigger_detail={"via": "test"},
                input={},
                created=1,
            )
    finally:
        app.close()
    cache = vault_dir / ".weaver" / "cache.db"
    assert cache.exists()
    return cache


def damage(cache: Path, offset: int, size: int = 8192) -> None:
    with cache.open("r+b") as handle:
        handle.seek(offset)
        handle.write(b"\xa5" * size)


def note_count_and_runs(vault_dir: Path) -> tuple[int, list[str]]:
    app = open_app(Settings(vault=vault_dir))
    try:
        with app.db.connect() as conn:
            notes = conn.exec_driver_sql("SELECT count(*) FROM notes").scalar_one()
            runs = list(conn.exec_driver_sql("SELECT id FROM executions").scalars())
    finally:
        app.close()
    return notes, runs


def test_garbage_mid_file_is_moved_aside_rebuilt_and_history_kept(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = build_cache(vault_dir)
    damage(cache, cache.stat().st_size // 2)
    assert main(["--config", str(config), "index"]) == 0
    err = capsys.readouterr().err
    assert "the cache was corrupt" in err and "Traceback" not in err
    assert len(list(cache.parent.glob("cache.db.corrupt-*"))) == 1
    assert note_count_and_runs(vault_dir) == (150, ["wf_exec_kept"])


def test_the_edit_history_survives_a_corrupt_cache(config: Path, vault_dir: Path) -> None:
    """What an edit replaced cannot be read back from the notes: it is salvaged too."""
    cache = build_cache(vault_dir)
    app = open_app(Settings(vault=vault_dir))
    try:
        transform = patches.insert_transform("append", "an assistant's line")
        patches.patch_note(app, "notes/n1.md", transform, expected_hash=None, sync=lambda _: True)
    finally:
        app.close()
    damage(cache, cache.stat().st_size // 2)
    assert main(["--config", str(config), "index"]) == 0
    app = open_app(Settings(vault=vault_dir))
    try:
        [edit] = history.list_edits(app, "notes/n1.md", limit=5, offset=0).edits
        history.restore_edit(
            app, "notes/n1.md", edit.edit_id, expected_hash=None, sync=lambda _: True
        )
    finally:
        app.close()
    assert (vault_dir / "notes/n1.md").read_text() == "# Note 1\n" + "words " * 400


def test_salvaged_feed_cursors_start_again_with_the_new_feed(config: Path, vault_dir: Path) -> None:
    cache = build_cache(vault_dir)
    with contextlib.closing(sqlite3.connect(cache)) as db, db:
        db.execute("INSERT INTO event_cursors VALUES ('workflow-engine', 5000, 0)")
    damage(cache, cache.stat().st_size // 2)
    assert main(["--config", str(config), "index"]) == 0
    with contextlib.closing(sqlite3.connect(cache)) as db:
        assert db.execute("SELECT position FROM event_cursors").fetchall() == [(0,)]
        assert db.execute("SELECT count(*) FROM vault_events").fetchone() == (150,)


def test_a_file_that_is_no_database_is_rebuilt_and_says_what_was_lost(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = build_cache(vault_dir)
    damage(cache, 0, 100)
    assert main(["--config", str(config), "index", "--full"]) == 0
    err = capsys.readouterr().err
    assert "not a database" in err and "Traceback" not in err
    assert "lost" in err and "executions" in err
    assert note_count_and_runs(vault_dir) == (150, [])


def test_other_commands_on_a_corrupt_cache_say_so_in_one_line(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = build_cache(vault_dir)
    damage(cache, 0, 100)
    assert main(["--config", str(config), "history"]) == 1
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("weaver: ")
    assert "weaver index" in err


def test_a_damaged_table_keeps_every_row_sqlite_can_still_read(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three leaf pages of a 6,000-run history overwritten: the runs on them are lost, every
    other one is kept (the salvage used to give up the whole table at the first bad page)."""
    cache = build_cache(vault_dir)
    with contextlib.closing(sqlite3.connect(cache)) as db, db:
        db.executemany(
            "INSERT INTO executions (id, workflow_id, workflow_name, trigger_kind, "
            "trigger_detail, input, status, created, attempt, progress, message) "
            "VALUES (?, 'wf', 'Wf', 'manual', '{}', '{}', 'completed', ?, 1, 100, ?)",
            [(f"run{i:05}", i, "done " * 20) for i in range(6_000)],
        )
    with contextlib.closing(sqlite3.connect(cache)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        leaves = [
            page
            for (page,) in db.execute(
                "SELECT pageno FROM dbstat WHERE name = 'executions' AND pagetype = 'leaf' "
                "ORDER BY pageno"
            )
        ]
    middle = len(leaves) // 2
    for page in leaves[middle : middle + 3]:
        damage(cache, (page - 1) * page_size, page_size)
    assert main(["--config", str(config), "index"]) == 0
    notes, runs = note_count_and_runs(vault_dir)
    assert notes == 150
    assert 5_800 < len(runs) < 6_001, len(runs)
    (said,) = [
        json.loads(line)
        for line in capsys.readouterr().err.splitlines()
        if "workflow history salvaged" in line
    ]
    assert (said["kept"]["executions"], said["lost"]) == (
        len(runs),
        {"executions": 6_001 - len(runs)},
    )


def test_a_readable_table_is_copied_in_one_statement(vault_dir: Path, tmp_path: Path) -> None:
    """Set-based where nothing is damaged: one INSERT per table, whatever its size."""
    cache = build_cache(vault_dir)
    old = tmp_path / "old.db"
    shutil.copy(cache, old)
    app = open_app(Settings(vault=tmp_path / "other", database_url=f"sqlite:///{tmp_path}/new.db"))
    try:
        with statements_run(app.db) as statements:
            salvaged = recovery.salvage(app.db, old)
    finally:
        app.close()
    assert salvaged["executions"] == recovery.Salvaged(1, 0)
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert len(inserts) == 1  # and none for the empty tables


@pytest.fixture
def writer_elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A cache path whose writer lock is held, as by another process (its pid in the file),
    and no cache file: the state after `rm -rf .weaver` under a daemon."""
    cache = tmp_path / "cache" / "cache.db"
    lock = WriterLock(Path(str(cache) + ".writer.lock"))
    assert lock.try_acquire()
    lock.path.write_text("4242")
    yield cache
    lock.release()


def test_no_other_process_makes_the_cache_its_writer_lost(
    writer_elsewhere: Path, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 300)
    settings = Settings(vault=vault_dir, database_url=f"sqlite:///{writer_elsewhere}")
    for opening in (
        lambda: open_app(settings, check=True),
        lambda: open_app(settings, files=False),
        lambda: db.schema_revision(db.open_engine(settings.db_url)),
    ):
        with pytest.raises((CacheError, OperationalError), match="being rebuilt"):
            opening()
        assert not writer_elsewhere.exists()


def test_a_cache_being_made_again_is_waited_for(writer_elsewhere: Path, vault_dir: Path) -> None:
    """Every opening waits for the writer's file rather than make an empty one beside it."""
    settings = Settings(vault=vault_dir, database_url=f"sqlite:///{writer_elsewhere}")
    maker = threading.Timer(0.5, db.create_cache_file, (writer_elsewhere,))
    maker.start()
    try:
        app = open_app(settings, check=True)
        reader = open_app(settings, files=False)
    finally:
        maker.join()
    made = writer_elsewhere.stat().st_ino
    try:
        with app.db.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM notes").scalar_one() == 0
        assert db.schema_revision(reader.db) == db.SCHEMA_HEAD
    finally:
        app.close()
        reader.close()
    assert writer_elsewhere.stat().st_ino == made
