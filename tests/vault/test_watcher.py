"""The watcher: its batch handler on synthetic change sets, and once end to end on real files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from sqlalchemy import select
from watchfiles import Change

from tests.helpers import WriteNotes, wait_for_async
from weaver.cache.models import Link, Note
from weaver.runtime.app import App
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent
from weaver.vault.watcher import VaultWatcher


def paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def target_of(app: App, source: str) -> str | None:
    with app.db.connect() as conn:
        return conn.execute(select(Link.target_path).where(Link.source_path == source)).scalar()


def test_handler_applies_a_synthetic_batch(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a.md": "[[b]]"})
    app.indexer.reconcile()
    write_notes({"b.md": "new"})
    (vault_dir / "a.md").write_text("[[b]] edited")
    watcher = VaultWatcher(app.indexer)
    changes = {
        (Change.added, str(vault_dir / "b.md")),
        (Change.modified, str(vault_dir / "a.md")),
        (Change.modified, str(vault_dir / ".obsidian" / "workspace.json")),
    }
    report = watcher.handle_changes(changes)
    assert report is not None
    assert sorted(map(repr, report.events)) == sorted(
        map(repr, [NoteAdded("b.md"), NoteModified("a.md")])
    )
    assert target_of(app, "a.md") == "b.md"


def test_handler_ignores_batches_of_only_ignored_paths(app: App, vault_dir: Path) -> None:
    watcher = VaultWatcher(app.indexer)
    cache_file = vault_dir / ".weaver" / "cache.db-wal"
    assert watcher.handle_changes({(Change.modified, str(cache_file))}) is None
    assert watcher.batches == 0


def test_atomic_save_is_a_modification(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    """Editors write a temp file and rename it over the note: that is an edit, not a move."""
    write_notes({"n.md": "v1"})
    app.indexer.reconcile()
    temp = vault_dir / ".n.md.swp"
    temp.write_text("v2 #saved")
    temp.replace(vault_dir / "n.md")
    report = VaultWatcher(app.indexer).handle_changes(
        {
            (Change.added, str(temp)),
            (Change.deleted, str(temp)),
            (Change.added, str(vault_dir / "n.md")),
        }
    )
    assert report is not None
    assert report.events == [NoteModified("n.md")]


async def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for the cache to catch up; the timeout only bounds the wait (how fast the watcher
    is, is `make bench`'s freshness figure)."""
    await wait_for_async(check, timeout, "the cache to catch up")


@pytest.mark.slow
def test_real_watcher_follows_the_disk(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({"before.md": "[[later]]", "stale.md": "x"})
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)

    async def scenario() -> None:
        watcher = VaultWatcher(app.indexer, debounce_ms=20)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await wait_until(
                lambda: watcher.watching.is_set() and paths(app) == ["before.md", "stale.md"]
            )
            write_notes({"sub/later.md": "hello"})
            await wait_until(lambda: target_of(app, "before.md") == "sub/later.md")
            (vault_dir / "stale.md").unlink()
            await wait_until(lambda: "stale.md" not in paths(app))
            (vault_dir / "sub").rename(vault_dir / "moved")
            await wait_until(lambda: paths(app) == ["before.md", "moved/later.md"])
            await wait_until(lambda: target_of(app, "before.md") == "moved/later.md")
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert NoteAdded("sub/later.md") in events
    assert NoteDeleted("stale.md") in events
    assert NoteMoved(old_path="sub/later.md", path="moved/later.md") in events


@pytest.mark.slow
def test_watcher_catches_up_on_changes_made_while_down(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a.md": "a"})
    app.indexer.reconcile()
    write_notes({"b.md": "made while nothing watched"})
    (vault_dir / "a.md").unlink()

    async def scenario() -> None:
        watcher = VaultWatcher(app.indexer)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await wait_until(lambda: paths(app) == ["b.md"])
            tg.cancel_scope.cancel()

    anyio.run(scenario)


@pytest.mark.slow
def test_a_change_made_during_the_catch_up_is_not_lost(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    """Watching begins before the reconcile, so an edit saved while it runs is applied after."""
    write_notes({"a.md": "a"})

    async def catch_up_with_an_edit_meanwhile() -> None:
        await anyio.to_thread.run_sync(app.indexer.reconcile)
        write_notes({"during.md": "saved while the reconcile ran"})
        # A catch-up still running when watchfiles reports the edit (the scenario, not a wait):
        # the change is then in the watcher's queue, not in the cache.
        await anyio.sleep(0.1)

    async def scenario() -> None:
        watcher = VaultWatcher(app.indexer, debounce_ms=20)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: watcher.run(catch_up=catch_up_with_an_edit_meanwhile))
            await wait_until(lambda: paths(app) == ["a.md", "during.md"])
            tg.cancel_scope.cancel()

    anyio.run(scenario)


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_does_not_stop_the_watcher(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    """watchfiles raises on such a name and drops the rest of its batch: the watch starts
    again and a reconcile brings in what the batch held; the file itself stays out."""
    write_notes({"a.md": "a"})

    async def scenario() -> None:
        watcher = VaultWatcher(app.indexer, debounce_ms=20)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await wait_until(lambda: watcher.watching.is_set() and paths(app) == ["a.md"])
            (vault_dir / "caf\udce9.md").write_bytes(b"named in Latin-1: b'caf\\xe9.md'")
            write_notes({"same batch.md": "x"})
            await wait_until(lambda: paths(app) == ["a.md", "same batch.md"])
            assert watcher.last_error is not None and "decode" in watcher.last_error
            await wait_until(lambda: not watcher.restarting)
            write_notes({"later.md": "x"})
            await wait_until(lambda: paths(app) == ["a.md", "later.md", "same batch.md"])
            assert watcher.running
            tg.cancel_scope.cancel()

    anyio.run(scenario)


@pytest.mark.slow
def test_a_note_saved_once_the_watcher_says_watching_reaches_the_cache(
    app: App, write_notes: WriteNotes
) -> None:
    """`watching` is the readiness signal: no settling sleep is needed after it is set."""
    write_notes({"a.md": "a"})
    watcher = VaultWatcher(app.indexer, debounce_ms=20)
    assert not watcher.watching.is_set()

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            assert await anyio.to_thread.run_sync(watcher.watching.wait, 10.0)
            assert paths(app) == ["a.md"]  # the catch-up is done by then
            write_notes({"right after.md": "saved the moment it was watching"})
            await wait_until(lambda: paths(app) == ["a.md", "right after.md"])
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert not watcher.watching.is_set()


def test_changes_the_watch_leaves_out_are_handed_to_on_unwatched(app: App) -> None:
    """The cache's own folder is not the vault's, but its writer wants to hear of it."""
    heard: list[str] = []
    watcher = VaultWatcher(app.indexer, on_unwatched=heard.append)
    root = app.vault.root
    cache = str(root / ".weaver" / "cache.db")
    assert not watcher._accept(Change.deleted, cache)
    assert watcher._accept(Change.modified, str(root / "note.md"))
    assert heard == [cache]
