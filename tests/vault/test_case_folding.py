"""Paths on a file system that folds case (macOS's and Windows's defaults), driven on Linux.

Two stand-ins for such a file system: the vault told that its file system folds case
(`Vault(folds_case=True)`), so that it spells paths as its folders list them; and a hard link
`a.md` beside `A.md`, which is what a folding file system shows at the system calls that
matter to a rename: both names find one file, and renaming one to the other does nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.errors import VaultError
from weaver.vault.fs import Vault, detect_folding
from weaver.vault.writer import VaultWriter


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    write_files(tmp_path, {"Projects/Plan.md": "plan", "Note.md": "note"})
    return Vault(tmp_path, folds_case=True)


def test_paths_are_spelled_as_on_disk(vault: Vault) -> None:
    assert vault.spelled("projects/PLAN.md") == "Projects/Plan.md"
    assert vault.spelled("projects/new/Idea.md") == "Projects/new/Idea.md"  # from the missing
    assert vault.note_path("note.md") == "Note.md"
    assert vault.note_path("projects/plan.md", name_as_given=True) == "Projects/plan.md"


def test_stat_and_scan_give_the_name_on_disk(vault: Vault) -> None:
    found = vault.stat("NOTE.md")
    assert found is not None and found.path == "Note.md"
    assert [s.path for s in vault.scan("projects")] == ["Projects/Plan.md"]
    assert vault.is_dir("PROJECTS")
    assert vault.read_note("projects/plan.md") == b"plan"


def test_a_case_sensitive_vault_takes_paths_as_given(tmp_path: Path) -> None:
    write_files(tmp_path, {"Note.md": "note"})
    vault = Vault(tmp_path)
    assert vault.folds_case is False  # Linux's file systems here keep case apart
    assert vault.stat("note.md") is None
    assert vault.spelled("note.md") == "note.md"


def test_folding_is_told_by_the_vault_own_entries(tmp_path: Path) -> None:
    assert detect_folding(tmp_path) is None  # nothing to tell it by yet
    (tmp_path / "Note.md").write_text("x")
    assert detect_folding(tmp_path) is False
    (tmp_path / "note.md").write_text("y")  # two names listed: two files
    assert detect_folding(tmp_path) is False


def test_two_spellings_name_one_file_only_where_it_is_one(vault: Vault) -> None:
    assert not vault.names_same_file("Note.md", "note.md")  # no such second name here
    os.link(vault.root / "Note.md", vault.root / "note.md")
    assert vault.names_same_file("Note.md", "note.md")
    os.link(vault.root / "Note.md", vault.root / "Other.md")
    assert not vault.names_same_file("Note.md", "Other.md")  # a hard link is no spelling


def test_writer_renames_in_case_where_the_destination_is_the_source(vault: Vault) -> None:
    """Where `note.md` finds `Note.md` (the hard link stands for that), the destination
    exists and a direct rename does nothing: the note still ends up as `note.md` alone."""
    os.link(vault.root / "Note.md", vault.root / "note.md")
    assert VaultWriter(vault).move("Note.md", "note.md") == "note.md"
    assert sorted(p.name for p in vault.root.iterdir() if p.is_file()) == ["note.md"]
    assert (vault.root / "note.md").read_text() == "note"


def test_writer_still_refuses_another_file_at_the_destination(vault: Vault) -> None:
    (vault.root / "note.md").write_text("another note")
    with pytest.raises(VaultError, match="already exists"):
        VaultWriter(vault).move("Note.md", "note.md")
    assert (vault.root / "Note.md").read_text() == "note"


def test_writer_writes_a_note_under_its_name_on_disk(vault: Vault) -> None:
    """An update through another spelling does not rename the note (macOS keeps the name a
    rename is given, so replacing `Note.md` through `note.md` would)."""
    assert VaultWriter(vault).write_text("NOTE.md", "edited") == "Note.md"
    assert (vault.root / "Note.md").read_text() == "edited"
    assert not (vault.root / "NOTE.md").exists()
