"""The vault's boundary with hostile symlink layouts: the scan, a watcher batch, the tools'
path checks and the writer apply one rule (`Vault.within`), and the real watcher drops what
it hears through a symlinked folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from watchfiles import Change

from tests.conftest import WriteNotes
from tests.helpers import wait_for
from weaver.cache.models import Note
from weaver.errors import InvalidPathError
from weaver.host.app import App
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
