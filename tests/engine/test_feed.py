"""The durable change feed: changes applied by any process reach the workflows exactly once,
across processes, crashes and restarts; the first index's adds keep their `initial` flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import EngineFactory, WriteNotes
from weaver.cache import executions, feed
from weaver.config import Settings
from weaver.engine import FileTrigger, OnFile, Workflow, WorkflowContext, workflow
from weaver.engine.engine import FEED_CONSUMER
from weaver.index import indexer as indexer_module
from weaver.runtime.app import App, open_app
from weaver.vault.events import NoteAdded, NoteModified, NoteMoved

pytestmark = pytest.mark.both_backends


def recorder() -> tuple[Workflow, list[tuple[str, ...]]]:
    runs: list[tuple[str, ...]] = []

    def record(ctx: WorkflowContext[Any]) -> None:
        assert isinstance(ctx.trigger, FileTrigger)
        runs.append(
            tuple(
                f"{e.kind}:{e.path}"
                + (":initial" if isinstance(e, NoteAdded) and e.initial else "")
                for e in ctx.trigger.events
            )
        )

    return workflow(id="rec", triggers=[OnFile("**")])(record), runs


def file_runs(app: App) -> int:
    with app.db.connect() as conn:
        records = executions.list_executions(conn, None, 1000, 0)[0]
    return sum(r.trigger_kind == "file" for r in records)


def test_an_index_without_an_engine_reaches_the_next_engine_once(
    settings: Settings, write_notes: WriteNotes, make_engine: EngineFactory, app: App
) -> None:
    write_notes({"a.md": "one"})
    # `weaver index` in another process, with no engine anywhere: a first index, then an edit.
    other = open_app(settings)
    try:
        other.indexer.reconcile()
        write_notes({"a.md": "one, edited"})
        report = other.indexer.reconcile()
        assert report.updated == 1
    finally:
        other.close()
    rec, runs = recorder()
    engine = make_engine(rec)
    assert runs == [("add:a.md:initial", "modify:a.md")]
    # A restart (a new engine over the same cache) does not run them again.
    engine.stop()
    make_engine(rec)
    assert len(runs) == 1
    # New changes still arrive, once.
    write_notes({"b.md": "two"})
    app.indexer.apply_paths(["b.md"])
    assert runs[1:] == [("add:b.md",)]
    assert file_runs(app) == 2


def test_a_move_is_one_event(app: App, write_notes: WriteNotes, make_engine: EngineFactory) -> None:
    write_notes({"x/a.md": "the same words"})
    app.indexer.reconcile()
    rec, runs = recorder()
    make_engine(rec)
    runs.clear()
    root = app.settings.vault
    (root / "y").mkdir()
    (root / "x" / "a.md").rename(root / "y" / "a.md")
    app.indexer.apply_paths(["x/a.md", "y/a.md"])
    assert runs == [("move:y/a.md",)]
    with app.db.connect() as conn:
        last = feed.read_after(conn, 0, 100)[-1].event
    assert last == NoteMoved(old_path="x/a.md", path="y/a.md")


def test_a_pass_that_dies_midway_leaves_its_events_for_the_next(
    app: App, write_notes: WriteNotes, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({"a.md": "one"})
    app.indexer.reconcile()
    rec, runs = recorder()
    make_engine(rec)
    runs.clear()
    write_notes({"a.md": "one, edited", "b.md": "two"})

    def crash(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("killed before the end of the pass")

    # The notes are written (and committed), the pass's end never comes.
    monkeypatch.setattr(indexer_module.Indexer, "_finish", crash)
    with pytest.raises(RuntimeError):
        app.indexer.reconcile()
    monkeypatch.undo()
    with app.db.connect() as conn:
        assert feed.read_after(conn, 0, 100)[-1].event == NoteAdded("a.md", initial=True)
    # The next pass finds nothing to write (the cache has the notes) but seals their events.
    report = app.indexer.reconcile()
    assert not report.changed
    assert sorted(runs[0]) == ["add:b.md", "modify:a.md"]


def test_two_engines_share_one_cursor(
    app: App, write_notes: WriteNotes, make_engine: EngineFactory
) -> None:
    rec, runs = recorder()
    first = make_engine(rec, subscribe=False)
    second = make_engine(rec, subscribe=False)
    write_notes({"a.md": "one"})
    app.indexer.reconcile()
    assert len(first.consume_feed()) == 1
    assert second.consume_feed() == []
    assert len(runs) == 1


def test_a_cursor_moved_by_another_process_rolls_back_the_runs(
    app: App, write_notes: WriteNotes, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec, _runs = recorder()
    engine = make_engine(rec, subscribe=False)
    write_notes({"a.md": "one"})
    app.indexer.reconcile()
    monkeypatch.setattr(feed, "advance_cursor", lambda *_args: False)
    assert engine.consume_feed() == []
    assert file_runs(app) == 0  # the run queued in that transaction went with it
    monkeypatch.undo()
    assert len(engine.consume_feed()) == 1


def test_retention_keeps_the_newest_rows_and_drops_old_ones(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "MAX_EVENTS", 3)
    write_notes({f"n{i}.md": str(i) for i in range(5)})
    app.indexer.reconcile()
    with app.db.connect() as conn:
        kept = [entry.event.path for entry in feed.read_after(conn, 0, 100)]
    assert kept == ["n2.md", "n3.md", "n4.md"]
    with app.db.begin() as conn:
        assert feed.prune(conn, now=feed._now_ms() + feed.RETAIN_MS + 1) == 3
        assert feed.read_after(conn, 0, 100) == []


def test_a_backlog_is_counted_after_a_position_up_to_a_bound(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes({f"n{i}.md": str(i) for i in range(5)})
    app.indexer.reconcile()
    with app.db.connect() as conn:
        first = feed.read_after(conn, 0, 1)[0].id
        assert feed.count_after(conn, 0, 100) == 5
        assert feed.count_after(conn, 0, 3) == 3  # a burst's size is all the engine asks
        assert feed.count_after(conn, first, 100) == 4


def test_a_cursor_behind_retention_skips_what_went(
    app: App, write_notes: WriteNotes, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "MAX_EVENTS", 2)
    with app.db.begin() as conn:
        feed.advance_cursor(conn, FEED_CONSUMER, None, 0)
    write_notes({f"n{i}.md": str(i) for i in range(4)})
    app.indexer.reconcile()
    rec, runs = recorder()
    make_engine(rec)
    assert runs == [("add:n2.md:initial", "add:n3.md:initial")]


def test_events_and_notes_commit_together(app: App, write_notes: WriteNotes) -> None:
    """The event rows of an edit are there as soon as the note's row is: no window where a
    crash keeps one and loses the other."""
    write_notes({"a.md": "one"})
    app.indexer.reconcile()
    write_notes({"a.md": "two"})
    app.indexer.apply_paths(["a.md"])
    with app.db.connect() as conn:
        events = [entry.event for entry in feed.read_after(conn, 0, 100)]
    assert events == [NoteAdded("a.md", initial=True), NoteModified("a.md")]


def test_the_cli_index_feeds_the_daemon(tmp_path: Path, vault_dir: Path) -> None:
    """`weaver index` as its own process, then an engine: the edit reaches the workflows."""
    import subprocess
    import sys

    (vault_dir / "a.md").write_text("one", encoding="utf-8")
    config = tmp_path / "weaver.toml"
    config.write_text(f'vault = "{vault_dir}"\nlog_level = "error"\n', encoding="utf-8")
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "weaver", "--config", str(config), "index"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        (vault_dir / "a.md").write_text("one, edited", encoding="utf-8")
    app = open_app(Settings(vault=vault_dir))
    try:
        with app.db.connect() as conn:
            events = [entry.event for entry in feed.read_after(conn, 0, 100)]
    finally:
        app.close()
    assert events == [NoteAdded("a.md", initial=True), NoteModified("a.md")]
