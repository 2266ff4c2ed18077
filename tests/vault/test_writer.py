"""VaultWriter: confined to the vault's notes, atomic, and announcing each write before it lands."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from weaver.errors import InvalidPathError, NoteNotFoundError, VaultError
from weaver.vault.fs import Vault
from weaver.vault.writer import DELETED, VaultWriter


@pytest.fixture
def heard() -> list[tuple[str, str]]:
    return []


@pytest.fixture
def writer(vault_dir: Path, heard: list[tuple[str, str]]) -> VaultWriter:
    return VaultWriter(Vault(vault_dir), on_write=lambda path, digest: heard.append((path, digest)))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_write_creates_folders_and_announces_the_hash(
    writer: VaultWriter, vault_dir: Path, heard: list[tuple[str, str]]
) -> None:
    assert writer.write_text("./a/b/note.md", "héllo") == "a/b/note.md"
    assert (vault_dir / "a/b/note.md").read_text(encoding="utf-8") == "héllo"
    assert heard == [("a/b/note.md", sha("héllo"))]
    assert writer.read_text("a/b/note.md") == "héllo"
    assert oct((vault_dir / "a/b/note.md").stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in (vault_dir / "a/b").iterdir()] == ["note.md"]  # no temp file left


def test_replace_keeps_the_mode_and_create_only_refuses(
    writer: VaultWriter, vault_dir: Path
) -> None:
    note = vault_dir / "n.md"
    note.write_text("v1")
    note.chmod(0o600)
    writer.write_text("n.md", "v2")
    assert note.read_text() == "v2"
    assert note.stat().st_mode & 0o777 == 0o600
    with pytest.raises(VaultError, match="already exists"):
        writer.write_text("n.md", "v3", create_only=True)


@pytest.mark.parametrize(
    "path", ["../outside.md", "/etc/passwd.md", ".obsidian/x.md", "notes/data.json", "a/../../b.md"]
)
def test_paths_outside_the_notes_are_refused(
    writer: VaultWriter, path: str, heard: list[tuple[str, str]]
) -> None:
    with pytest.raises(InvalidPathError):
        writer.write_text(path, "x")
    assert heard == []


def test_symlinks_cannot_lead_writes_out(
    writer: VaultWriter, vault_dir: Path, tmp_path: Path, heard: list[tuple[str, str]]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault_dir / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidPathError, match="outside the vault"):
        writer.write_text("escape/x.md", "x")
    with pytest.raises(InvalidPathError, match="outside the vault"):
        writer.write_text("escape/new/deeper.md", "x")
    (outside / "target.md").write_text("t")
    (vault_dir / "link.md").symlink_to(outside / "target.md")
    with pytest.raises(InvalidPathError, match="symlink"):
        writer.write_text("link.md", "x")
    assert list(outside.iterdir()) == [outside / "target.md"]
    assert heard == []


def test_a_failed_announcement_stops_the_write(vault_dir: Path) -> None:
    def refuse(_path: str, _digest: str) -> None:
        raise RuntimeError("not now")

    writer = VaultWriter(Vault(vault_dir), on_write=refuse)
    (vault_dir / "keep.md").write_text("original")
    with pytest.raises(RuntimeError):
        writer.write_text("keep.md", "replacement")
    assert (vault_dir / "keep.md").read_text() == "original"
    assert [p.name for p in vault_dir.iterdir()] == ["keep.md"]


def test_delete_and_move(
    writer: VaultWriter, vault_dir: Path, heard: list[tuple[str, str]]
) -> None:
    writer.write_text("a.md", "A")
    writer.write_text("b.md", "B")
    heard.clear()
    assert writer.move("a.md", "archive/a.md") == "archive/a.md"
    assert (vault_dir / "archive/a.md").read_text() == "A"
    assert not (vault_dir / "a.md").exists()
    assert heard == [("archive/a.md", sha("A")), ("a.md", DELETED)]
    with pytest.raises(VaultError, match="already exists"):
        writer.move("b.md", "archive/a.md")
    writer.delete("b.md")
    assert not (vault_dir / "b.md").exists()
    assert heard[-1] == ("b.md", DELETED)
    with pytest.raises(NoteNotFoundError):
        writer.delete("b.md")
    assert not writer.exists("b.md") and writer.exists("archive/a.md")
