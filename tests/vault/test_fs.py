"""Which files are part of the vault, and the path checks behind every client-supplied path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import WriteNotes
from weaver.errors import InvalidPathError, NoFilesError, NoteNotFoundError
from weaver.vault.fs import CANVASES, CacheOnlyVault, Vault


def test_scan_skips_hidden_ignored_and_symlinked_folders(
    vault_dir: Path, write_notes: WriteNotes, tmp_path: Path
) -> None:
    write_notes(
        {
            "a.md": "a",
            "sub/b.MD": "b",
            "img/pic.png": b"\x89PNG",
            ".obsidian/app.md": "x",
            ".trash/old.md": "x",
            "sub/.hidden.md": "x",
            "templates/t.md": "x",
        }
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("s")
    (vault_dir / "loop").symlink_to(vault_dir)  # a symlink loop must not hang the walk
    (vault_dir / "out.md").symlink_to(outside / "secret.md")
    found = sorted(s.path for s in Vault(vault_dir, ignore=["templates"]).scan())
    assert found == ["a.md", "img/pic.png", "sub/b.MD"]


@pytest.mark.parametrize(
    "path",
    [
        "../secret.md",
        "/etc/passwd.md",
        "sub/../../x.md",
        ".obsidian/workspace.md",
        ".weaver/cache.md",
        "notes/image.png",
        "",
        "a\x00.md",
        "..\\x.md",
        "C:\\x.md",
        "caf\udce9.md",  # the bytes b"caf\xe9.md" as Python names them: not UTF-8
    ],
)
def test_client_paths_outside_the_notes_are_invalid(vault_dir: Path, path: str) -> None:
    with pytest.raises(InvalidPathError):
        Vault(vault_dir).note_file(path)


def test_symlink_leading_outside_is_invalid(vault_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("s")
    (vault_dir / "link.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(InvalidPathError, match="outside the vault"):
        Vault(vault_dir).note_file("link.md")


def test_missing_note_is_not_found_and_present_one_is_served(
    vault_dir: Path, write_notes: WriteNotes
) -> None:
    write_notes({"dir/n.md": "hello"})
    vault = Vault(vault_dir)
    assert vault.note_file("./dir/n.md") == vault_dir.resolve() / "dir" / "n.md"
    with pytest.raises(NoteNotFoundError):
        vault.note_file("dir/absent.md")


def test_a_canvas_view_takes_canvas_paths_with_every_rule_of_note_paths(
    vault_dir: Path, tmp_path: Path, write_notes: WriteNotes
) -> None:
    write_notes({"Boards/Plan.canvas": "{}", "Plan.md": "x"})
    (tmp_path / "secret.canvas").write_text("{}")
    (vault_dir / "link.canvas").symlink_to(tmp_path / "secret.canvas")
    vault = Vault(vault_dir)
    canvases = vault.of_kind(CANVASES)
    assert canvases.read_note("./Boards/Plan.canvas") == b"{}"
    with pytest.raises(InvalidPathError, match=r"not a canvas \(\.canvas\)"):
        canvases.read_note("Plan.md")
    with pytest.raises(InvalidPathError, match="outside the vault"):
        canvases.read_note("link.canvas")
    with pytest.raises(InvalidPathError, match="hidden or ignored"):
        canvases.check_note_path(".obsidian/x.canvas")
    # The vault it was made from still takes notes only.
    with pytest.raises(InvalidPathError, match="not a markdown note"):
        vault.read_note("Boards/Plan.canvas")


def test_stat_sees_only_vault_files(vault_dir: Path, write_notes: WriteNotes) -> None:
    write_notes({"n.md": "x", ".git/config.md": "x"})
    vault = Vault(vault_dir)
    found = vault.stat("n.md")
    assert found is not None
    assert found.size == 1
    assert found.mtime_ns == (vault_dir / "n.md").stat().st_mtime_ns
    assert vault.stat(".git/config.md") is None
    assert vault.stat("gone.md") is None


def test_names_that_are_not_utf8_are_left_out(vault_dir: Path, write_notes: WriteNotes) -> None:
    """A Latin-1 name from another system cannot be stored or sent as JSON: it is skipped,
    with its folder's contents, rather than failing the whole index."""
    write_notes({"ok.md": "x"})
    # Python names the bytes b"caf\xe9.md" "caf\udce9.md" and opens them by that name.
    (vault_dir / "caf\udce9.md").write_bytes(b"x")
    (vault_dir / "d\udce9j\udce0").mkdir()
    (vault_dir / "d\udce9j\udce0" / "inside.md").write_bytes(b"x")
    vault = Vault(vault_dir)
    assert [s.path for s in vault.scan()] == ["ok.md"]
    assert vault.stat("caf\udce9.md") is None


def test_an_attachment_file_gets_the_checks_a_note_does(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "assets").mkdir(parents=True)
    (root / "assets" / "photo.JPG").write_bytes(b"\xff\xd8")
    (root / "Note.md").write_text("# note\n")
    (tmp_path / "secret.png").write_bytes(b"png")
    (root / "leak.png").symlink_to(tmp_path / "secret.png")
    vault = Vault(root)
    assert vault.attachment_file("assets/photo.JPG") == root / "assets" / "photo.JPG"
    with pytest.raises(InvalidPathError, match="a markdown note, not an attachment"):
        vault.attachment_file("Note.MD")
    with pytest.raises(InvalidPathError, match=r"'\.\.' is not accepted"):
        vault.attachment_file("assets/../../secret.png")
    with pytest.raises(InvalidPathError, match="hidden or ignored folder"):
        vault.attachment_file(".obsidian/workspace.json")
    with pytest.raises(InvalidPathError, match="leads outside the vault"):
        vault.attachment_file("leak.png")
    with pytest.raises(NoteNotFoundError):
        vault.attachment_file("assets/missing.png")


def test_a_reader_has_no_attachment_files(tmp_path: Path) -> None:
    with pytest.raises(NoFilesError, match=r"reading 'assets/photo\.jpg'"):
        CacheOnlyVault(tmp_path).attachment_file("assets/photo.jpg")
