"""A big first index loads links and tags before building their indexes; the indexes are
always back afterwards: when the load ends or fails, and after Ctrl-C or a dead process at the
next open."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, text

from tests.cache.test_migrations import include_name
from tests.helpers import WriteNotes
from weaver.cache import write
from weaver.cache.bulk import DEFERRED_KEY, indexes_deferred
from weaver.cache.db import open_cache_engine, open_engine
from weaver.config import Settings
from weaver.index import indexer
from weaver.index import workers as parse_workers
from weaver.runtime.app import App, open_app

LINK_AND_TAG_INDEXES = [
    "ix_links_source_path",
    "ix_links_target_key",
    "ix_links_target_source",
    "ix_tags_key_note",
]

DIES_MIDWAY = """
import os, sys
from weaver.cache.bulk import indexes_deferred
from weaver.cache.db import open_cache_engine, open_engine
engine = open_cache_engine(sys.argv[1])
with engine.connect() as conn, indexes_deferred(conn):
    os._exit(3)
"""


def secondary_indexes(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                "AND tbl_name IN ('links', 'tags') ORDER BY name"
            )
        )
        return list(rows.scalars())


def schema_matches_the_models(engine: Engine) -> bool:
    from weaver.cache.models import Base

    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        return compare_metadata(context, Base.metadata) == []


def deferred_state(engine: Engine) -> object:
    with engine.connect() as conn:
        query = text("SELECT value FROM cache_state WHERE key = :k")
        return conn.execute(query, {"k": DEFERRED_KEY}).scalar()


def test_a_big_first_index_ends_with_every_index_and_the_same_links(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer, "BIG_PASS", 10)
    write_notes({f"n{i}.md": f"#t{i % 3} [[n{(i + 1) % 40}]] [[gone]]" for i in range(40)})
    dropped: list[list[str]] = []
    real = indexes_deferred

    @contextmanager
    def spy(conn: Connection) -> Iterator[None]:
        with real(conn):
            dropped.append(secondary_indexes(app.db))
            yield

    monkeypatch.setattr(indexer, "indexes_deferred", spy)
    report = app.indexer.reconcile()
    assert report.added == 40
    assert dropped == [[]]  # the load ran without them...
    assert secondary_indexes(app.db) == LINK_AND_TAG_INDEXES  # ...and they are back
    assert schema_matches_the_models(app.db) and deferred_state(app.db) is None
    with app.db.connect() as conn:
        resolved = conn.execute(text("SELECT count(*) FROM links WHERE target_path IS NOT NULL"))
        assert resolved.scalar() == 40
    # A later pass over a full cache keeps its indexes.
    write_notes({f"m{i}.md": "[[n1]]" for i in range(20)})
    dropped.clear()
    app.indexer.reconcile()
    assert dropped == []


def test_a_failed_load_still_gets_its_indexes_back(app: App) -> None:
    with pytest.raises(RuntimeError), app.db.connect() as conn, indexes_deferred(conn):
        assert secondary_indexes(app.db) == []
        raise RuntimeError("disk full")
    assert secondary_indexes(app.db) == LINK_AND_TAG_INDEXES
    assert deferred_state(app.db) is None


def test_ctrl_c_during_a_first_index_is_finished_by_the_next_run(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer, "BIG_PASS", 10)
    monkeypatch.setattr(indexer, "WRITE_BATCH", 10)
    monkeypatch.setattr(parse_workers, "CHUNK", 10)
    write_notes({f"n{i}.md": f"#t [[n{(i + 1) % 40}]]" for i in range(40)})
    batches = 0
    real = write.replace_notes

    def interrupted_after_one(*args: Any) -> None:
        nonlocal batches
        batches += 1
        if batches == 2:
            raise KeyboardInterrupt
        real(*args)

    monkeypatch.setattr(write, "replace_notes", interrupted_after_one)
    with pytest.raises(KeyboardInterrupt):
        app.indexer.reconcile()
    assert secondary_indexes(app.db) == []  # left to the next run, not built on the way out
    monkeypatch.setattr(write, "replace_notes", real)
    url = app.db.url.render_as_string(hide_password=False)
    app.close()
    rerun = open_app(Settings(vault=app.settings.vault, database_url=url))
    assert secondary_indexes(rerun.db) == LINK_AND_TAG_INDEXES
    report = rerun.indexer.reconcile()
    assert (report.added, report.unchanged) == (30, 10)  # the batch written before Ctrl-C stays
    assert schema_matches_the_models(rerun.db) and deferred_state(rerun.db) is None
    rerun.close()


def test_indexes_dropped_by_a_process_that_died_are_restored_on_open(app: App) -> None:
    url = app.db.url.render_as_string(hide_password=False)
    app.close()
    died = subprocess.run([sys.executable, "-c", DIES_MIDWAY, url], cwd=Path.cwd(), check=False)
    assert died.returncode == 3
    left = open_engine(url)  # as the dead process left it
    assert secondary_indexes(left) == [] and deferred_state(left) is not None
    left.dispose()
    reopened = open_cache_engine(url)
    assert secondary_indexes(reopened) == LINK_AND_TAG_INDEXES
    assert schema_matches_the_models(reopened) and deferred_state(reopened) is None
    reopened.dispose()


def type_and_status_plan(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        plan = conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT path FROM notes "
            "WHERE type = 't3' AND status = 's1' ORDER BY path"
        ).all()
    return [row[-1] for row in plan]


NARROWER = ["SEARCH notes USING INDEX ix_notes_type_path (type=?)"]


def test_a_cache_without_planner_statistics_gets_them_on_start_with_nothing_changed(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache made (or upgraded) before big passes ended with ANALYZE: the next reconcile,
    as every start runs, adds them, though it has nothing to write."""
    monkeypatch.setattr(indexer, "BIG_PASS", 10)
    write_notes(
        {f"n{i}.md": f"---\ntype: t{i % 20}\nstatus: s{i % 2}\n---\nbody" for i in range(40)}
    )
    app.indexer.reconcile()
    with app.db.begin() as conn:
        conn.exec_driver_sql("DROP TABLE sqlite_stat1")
    reopened = open_app(app.settings)  # a fresh connection: no statistics in its planner
    assert type_and_status_plan(reopened.db) != NARROWER
    report = reopened.indexer.reconcile()
    assert report.unchanged == 40 and report.added == report.updated == 0
    reopened.close()
    again = open_app(app.settings)
    assert type_and_status_plan(again.db) == NARROWER
    again.close()


def test_after_a_big_pass_query_files_walks_the_narrower_of_two_filter_indexes(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the planner's statistics a type (20 values) beats a status (2) for `query_files`
    with both; without them SQLite took the status index and read half the notes."""
    monkeypatch.setattr(indexer, "BIG_PASS", 10)
    write_notes(
        {f"n{i}.md": f"---\ntype: t{i % 20}\nstatus: s{i % 2}\n---\nbody" for i in range(40)}
    )
    app.indexer.reconcile()
    assert type_and_status_plan(app.db) == NARROWER


def test_a_first_big_index_leaves_statistics_for_the_task_indexes(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task indexes are built at the end of a first big index; statistics taken before
    that described a table without indexes, and "open, due before X" took 44 ms, not 6."""
    monkeypatch.setattr(indexer, "BIG_PASS", 10)
    write_notes(
        {f"n{i}.md": f"- [{' x'[i % 2]}] task {i} 📅 2026-12-{1 + i % 28:02d}\n" for i in range(40)}
    )
    app.indexer.reconcile()
    with app.db.connect() as conn:
        analyzed = conn.exec_driver_sql("SELECT idx FROM sqlite_stat1 WHERE tbl = 'tasks'").all()
    assert {"ix_tasks_status_due", "ix_tasks_due_order"} <= {row[0] for row in analyzed}
