"""The editing tools on a vault whose file system folds case (macOS's, Windows's), on Linux.

The vault is told that its file system folds case (`Vault(folds_case=True)`); where a test
needs `note.md` to find `Note.md` as such a file system does, a hard link `note.md` beside
`Note.md` stands for it (both names one file; renaming one to the other does nothing).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.edits.test_notes import sync_for
from tests.helpers import WriteNotes
from weaver.cache import journal, read
from weaver.cache.models import Note
from weaver.edits import history, interrupted, notes
from weaver.edits.steps import ABSENT, begin_run, sha256
from weaver.runtime.app import App
from weaver.vault.events import NoteMoved, VaultEvent
from weaver.vault.fs import Vault


@pytest.fixture
def folding(app: App, vault_dir: Path, write_notes: WriteNotes) -> App:
    write_notes({"Note.md": "the note", "other.md": "see [[Note]]"})
    app.vault = app.indexer.vault = Vault(vault_dir, folds_case=True)
    app.indexer.reconcile()
    return app


def note_paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def on_disk(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_file())


def test_move_to_the_same_name_in_another_case_renames_the_note(
    folding: App, vault_dir: Path
) -> None:
    os.link(vault_dir / "Note.md", vault_dir / "note.md")  # `note.md` finds the note
    events: list[VaultEvent] = []
    folding.bus.subscribe(events.extend)
    result = notes.move_note(folding, "Note.md", "note.md", sync_for(folding))
    assert (result.path, result.old_path, result.failed) == ("note.md", "Note.md", ())
    assert on_disk(vault_dir) == ["note.md", "other.md"]
    assert note_paths(folding) == ["note.md", "other.md"]
    assert NoteMoved(old_path="Note.md", path="note.md") in events
    with read.read_snapshot(folding.db) as conn:
        detail = read.get_file(conn, "note.md")
    assert detail is not None and detail.incoming == ["other.md"]
    # One edit, journalled under the note's new name, as any move.
    assert [
        e.operation for e in history.list_edits(folding, "note.md", limit=5, offset=0).edits
    ] == ["move_file"]


def test_update_through_another_spelling_keeps_the_name_on_disk(
    folding: App, vault_dir: Path
) -> None:
    written = notes.update_note(folding, "NOTE.md", content="edited", sync=sync_for(folding))
    assert written.path == "Note.md"
    assert on_disk(vault_dir) == ["Note.md", "other.md"]
    assert (vault_dir / "Note.md").read_text() == "edited"
    assert note_paths(folding) == ["Note.md", "other.md"]


def test_move_by_another_spelling_of_the_source_moves_the_note(
    folding: App, vault_dir: Path
) -> None:
    result = notes.move_note(folding, "note.md", "Archive/Note.md", sync_for(folding))
    assert (result.path, result.old_path) == ("Archive/Note.md", "Note.md")
    assert note_paths(folding) == ["Archive/Note.md", "other.md"]


def test_a_rename_in_case_killed_before_its_rename_is_finished_at_start(
    folding: App, vault_dir: Path
) -> None:
    """The journal holds the planned rename; `note.md` finds the note only through another
    spelling, which is not a file already at the destination."""
    moved = sha256((vault_dir / "Note.md").read_bytes())
    planned = [
        journal.PlannedNote("Note.md", moved, ABSENT),
        journal.PlannedNote("note.md", moved, moved),
    ]
    begin_run(folding, notes.MOVE_FILE, {"from": "Note.md", "to": "note.md"}, planned)
    [recovered] = interrupted.recover_edits(folding, sync_for(folding))
    assert {(o.path, o.status) for o in recovered.outcomes} == {
        ("Note.md", journal.WRITTEN),
        ("note.md", journal.WRITTEN),
    }
    assert on_disk(vault_dir) == ["note.md", "other.md"]
    assert note_paths(folding) == ["note.md", "other.md"]
