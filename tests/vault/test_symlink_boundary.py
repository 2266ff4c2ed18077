"""The vault's boundary with hostile symlink layouts: the scan, a watcher batch, the tools'
path checks and the writer apply one rule (`Vault.within`), and the real watcher drops what
it hears through a symlinked folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from structlog.testing import capture_logs
from watchfiles import Change

from tests.helpers import WriteNotes, wait_for, write_files
from weaver.cache.models import Note
from weaver.errors import InvalidPathError
from weaver.runtime.app import App
from weaver.vault.fs import Vault
from weaver.vault.watcher import VaultWatcher
from weaver.vault.writer import VaultWriter


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.md").write_text("outside words", encoding="utf-8")
    return folder


def cached_paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def test_a_folder_symlink_out_is_never_indexed_by_a_batch(
    app: App, write_notes: WriteNotes, elsewhere: Path
) -> None:
    write_notes({"a.md": "inside"})
    (app.settings.vault / "ext").symlink_to(elsewhere, target_is_directory=True)
    app.indexer.reconcile()
    (elsewhere / "new.md").write_text("written outside", encoding="utf-8")
    # What the watcher reports when it follows the symlink: paths below `ext/`.
    watcher = VaultWatcher(app.indexer)
    root = app.settings.vault
    watcher.handle_changes(
        {(Change.added, str(root / "ext" / "new.md")), (Change.added, str(root / "ext"))}
    )
    assert cached_paths(app) == ["a.md"]
    assert not app.vault.is_dir("ext")
    assert app.vault.stat("ext/new.md") is None
    with pytest.raises(InvalidPathError, match="symlinked folder"):
        app.vault.note_file("ext/secret.md")


def test_a_symlink_to_a_folder_holding_the_vault_goes_nowhere(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes({"a.md": "inside", "sub/b.md": "b"})
    root = app.settings.vault
    (root / "up").symlink_to(root.parent, target_is_directory=True)
    (root / "self").symlink_to(root, target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root / "sub", target_is_directory=True)
    report = app.indexer.reconcile()
    assert report.added == 2
    app.indexer.apply_paths(["up", "self", "sub/loop", "up/vault/a.md", "self/sub/b.md"])
    assert cached_paths(app) == ["a.md", "sub/b.md"]  # no duplicates under wrong paths


def test_file_symlinks_inside_are_notes_outside_are_not(
    vault_dir: Path, write_notes: WriteNotes, elsewhere: Path
) -> None:
    write_notes({"real/a.md": "a"})
    (vault_dir / "alias.md").symlink_to(vault_dir / "real" / "a.md")
    (vault_dir / "out.md").symlink_to(elsewhere / "secret.md")
    (vault_dir / "dangling.md").symlink_to(vault_dir / "nowhere.md")
    (vault_dir / "via").symlink_to(vault_dir / "real", target_is_directory=True)
    vault = Vault(vault_dir)
    assert sorted(s.path for s in vault.scan()) == ["alias.md", "real/a.md"]
    assert vault.stat("out.md") is None and vault.stat("via/a.md") is None
    assert vault.note_file("alias.md").name == "alias.md"
    for path in ("out.md", "via/a.md"):
        with pytest.raises(InvalidPathError):
            vault.note_file(path)


def test_the_writer_refuses_a_symlinked_folder_inside_too(vault_dir: Path, elsewhere: Path) -> None:
    (vault_dir / "real").mkdir()
    (vault_dir / "via").symlink_to(vault_dir / "real", target_is_directory=True)
    (vault_dir / "ext").symlink_to(elsewhere, target_is_directory=True)
    writer = VaultWriter(Vault(vault_dir))
    for path in ("via/x.md", "ext/x.md", "ext/deeper/x.md"):
        with pytest.raises(InvalidPathError, match="symlinked folder"):
            writer.write_text(path, "x")
    assert not (vault_dir / "real" / "x.md").exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["secret.md"]


def test_the_real_watcher_ignores_writes_through_a_symlinked_folder(
    app: App, write_notes: WriteNotes, elsewhere: Path
) -> None:
    import anyio

    write_notes({"a.md": "inside"})
    (app.settings.vault / "ext").symlink_to(elsewhere, target_is_directory=True)
    watcher = VaultWatcher(app.indexer, debounce_ms=20)

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: watcher.running, timeout=20))
            (elsewhere / "planted.md").write_text("planted outside", encoding="utf-8")
            (app.settings.vault / "b.md").write_text("inside too", encoding="utf-8")
            await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: "b.md" in cached_paths(app), timeout=20)
            )
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert cached_paths(app) == ["a.md", "b.md"]


def make_loops(root: Path) -> None:
    """A file loop, a self-loop, and folder loops (one of each kind a user trips over)."""
    (root / "l1.md").symlink_to(root / "l2.md")
    (root / "l2.md").symlink_to(root / "l1.md")
    (root / "self.md").symlink_to(root / "self.md")
    (root / "d1").symlink_to(root / "d2", target_is_directory=True)
    (root / "d2").symlink_to(root / "d1", target_is_directory=True)
    (root / "itself").symlink_to(root / "itself", target_is_directory=True)


LOOP_NOTES = ["l1.md", "l2.md", "self.md"]


def errors(app: App) -> dict[str, str | None]:
    with app.db.connect() as conn:
        query = select(Note.path, Note.error).where(Note.error.is_not(None))
        return {row.path: row.error for row in conn.execute(query)}


def test_symlink_loops_are_skipped_and_the_scan_goes_on(app: App, write_notes: WriteNotes) -> None:
    write_notes({f"n/{i}.md": f"# {i}" for i in range(200)})
    root = app.settings.vault
    make_loops(root)
    make_loops(root / "n")
    with capture_logs() as logs:
        report = app.indexer.reconcile()
        app.indexer.reconcile(full=True)
    assert report.added == 200 + 2 * len(LOOP_NOTES)
    loops = sorted([*LOOP_NOTES, *(f"n/{name}" for name in LOOP_NOTES)])
    # Listed where broken notes are (list_problems errors), saying why they are empty.
    assert sorted(errors(app)) == loops
    assert all("symbolic links" in (error or "") for error in errors(app).values())
    told = [entry["path"] for entry in logs if "symlink loop" in entry["event"]]
    assert sorted(told) == sorted([*loops, "d1", "d2", "itself", "n/d1", "n/d2", "n/itself"])
    for name in ("l1", "l2", "self"):
        (root / f"{name}.md").unlink()
    app.indexer.reconcile()
    assert sorted(errors(app)) == [f"n/{name}" for name in LOOP_NOTES]


def test_the_watcher_skips_loops_and_heals_when_they_go(app: App, write_notes: WriteNotes) -> None:
    import anyio

    write_notes({"a.md": "inside"})
    root = app.settings.vault
    watcher = VaultWatcher(app.indexer, debounce_ms=20)

    def indexed(expected: list[str]) -> None:
        wait_for(lambda: cached_paths(app) == expected, 20, f"the cache holding {expected}")

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: watcher.running, timeout=20))
            (root / "new").mkdir()
            make_loops(root / "new")  # a folder arriving with loops in it is scanned whole
            write_files(root / "new", {f"{i}.md": f"# {i}" for i in range(20)})
            notes = sorted(["a.md", *(f"new/{i}.md" for i in range(20))])
            loops = [f"new/{name}" for name in LOOP_NOTES]
            await anyio.to_thread.run_sync(indexed, sorted([*notes, *loops]))
            for path in loops:
                (root / path).unlink()
            (root / "b.md").write_text("after the loops went", encoding="utf-8")
            await anyio.to_thread.run_sync(indexed, sorted([*notes, "b.md"]))
            assert not watcher.healing
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert errors(app) == {}
