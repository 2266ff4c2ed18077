"""A vault on a real file system that folds case, where this host can mount one.

Tried in order, once per session: a folder with ext4's casefold attribute (`chattr +F`) on a
loop-mounted image made with `-O casefold`, then a loop-mounted vfat image; each needs root,
loop devices and the kernel's support. Where none mounts, every test here is skipped with the
command that failed and its error. `tests/index/test_case_rename.py`, `tests/edits/
test_case_move.py` and `tests/vault/test_case_folding.py` drive the same code with stand-ins,
whatever the host allows.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from sqlalchemy import select

from weaver.cache.models import Note
from weaver.config import Settings
from weaver.edits import notes
from weaver.runtime import cache_sync
from weaver.runtime.app import App, open_app
from weaver.vault.events import NoteMoved, VaultEvent
from weaver.vault.fs import detect_folding

pytestmark = pytest.mark.slow


def _run(command: list[str]) -> str | None:
    """None when `command` worked, else the command and why it did not."""
    if shutil.which(command[0]) is None:
        return f"{command[0]}: not installed"
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    error = (done.stderr or done.stdout).strip().splitlines()
    return f"`{' '.join(command)}`: {error[0] if error else f'exit {done.returncode}'}"


def _mount(image: Path, mount: Path, make: list[str]) -> str | None:
    image.unlink(missing_ok=True)
    with image.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024)
    mount.mkdir(exist_ok=True)
    return _run([*make, str(image)]) or _run(["mount", "-o", "loop", str(image), str(mount)])


def _casefold_ext4(base: Path) -> Path | str:
    mount = base / "ext4"
    problem = _mount(base / "ext4.img", mount, ["mkfs.ext4", "-q", "-O", "casefold"])
    if problem:
        return problem
    folder = mount / "vault"
    folder.mkdir()
    return _run(["chattr", "+F", str(folder)]) or folder


def _vfat(base: Path) -> Path | str:
    mount = base / "vfat"
    return _mount(base / "vfat.img", mount, ["mkfs.vfat"]) or mount


@pytest.fixture(scope="session")
def folding_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty folder on a file system that folds case, or a skip saying why there is none."""
    base = tmp_path_factory.mktemp("folding")
    problems: list[str] = []
    for attempt in (_casefold_ext4, _vfat):
        found = attempt(base)
        if isinstance(found, Path):
            try:
                yield found
            finally:
                mount = found.parent if found.name == "vault" else found
                subprocess.run(["umount", str(mount)], check=False)
            return
        problems.append(found)
        for mount in (base / "ext4", base / "vfat"):  # one that mounted before a later step
            subprocess.run(["umount", str(mount)], capture_output=True, check=False)
    pytest.skip("no case-insensitive file system here: " + "; ".join(problems))


@pytest.fixture
def vault_root(folding_root: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    root = folding_root / request.node.name.replace("[", "-").replace("]", "")
    root.mkdir()
    yield root
    shutil.rmtree(root)


@pytest.fixture
def folding_app(vault_root: Path, tmp_path: Path) -> Iterator[App]:
    """The cache beside the vault, on the host's own file system (vfat has no WAL locking)."""
    app = open_app(Settings(vault=vault_root, database_url=f"sqlite:///{tmp_path / 'cache.db'}"))
    yield app
    app.close()


def note_paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def rename_in_case(root: Path, old: str, new: str) -> None:
    """As a person does on such a system where one rename does nothing (Linux's casefold
    and vfat): through another name."""
    (root / old).rename(root / "between.tmp")
    (root / "between.tmp").rename(root / new)


def test_the_vault_finds_that_its_file_system_folds_case(vault_root: Path) -> None:
    (vault_root / "Note.md").write_text("x")
    assert detect_folding(vault_root) is True
    assert (vault_root / "NOTE.md").read_text() == "x"


@pytest.mark.parametrize("reported", [["Note.md", "note.md"], ["note.md"], ["Note.md"]])
def test_rename_in_case_is_a_move(folding_app: App, vault_root: Path, reported: list[str]) -> None:
    (vault_root / "Note.md").write_text("the note")
    (vault_root / "other.md").write_text("see [[Note]]")
    folding_app.indexer.reconcile()
    rename_in_case(vault_root, "Note.md", "note.md")
    events: list[VaultEvent] = []
    folding_app.bus.subscribe(events.extend)
    folding_app.indexer.apply_paths(reported)
    assert events == [NoteMoved(old_path="Note.md", path="note.md")]
    assert note_paths(folding_app) == ["note.md", "other.md"]


def test_move_note_renames_in_case(folding_app: App, vault_root: Path) -> None:
    (vault_root / "Note.md").write_text("the note")
    folding_app.indexer.reconcile()

    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(folding_app, expected, holds_writer=False)

    result = notes.move_note(folding_app, "Note.md", "note.md", sync)
    assert (result.path, result.old_path) == ("note.md", "Note.md")
    assert sorted(p.name for p in vault_root.iterdir() if p.is_file()) == ["note.md"]
    assert note_paths(folding_app) == ["note.md"]
