"""A note renamed only in case, on a file system that folds case (macOS's and Windows's
defaults): a move, whichever way the change is reported.

Linux's file systems do not fold case here, so these tests force the vault's folding
(`Vault(folds_case=True)`): the vault then spells every path as its folder lists it, as it
does on such a file system, and the watcher's batches are those such a system reports (the
old name alone, the new name alone, or both). `tests/vault/test_folding_fs.py` runs the same
on a real case-insensitive file system where the host can mount one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from watchfiles import Change

from tests.helpers import WriteNotes
from weaver.cache.models import Link, Note
from weaver.runtime.app import App
from weaver.vault.events import NoteMoved, VaultEvent
from weaver.vault.fs import Vault
from weaver.vault.watcher import VaultWatcher

pytestmark = pytest.mark.both_backends


@pytest.fixture
def folding(app: App, vault_dir: Path) -> App:
    """`app` over a vault that folds case, as on macOS or Windows."""
    app.vault = app.indexer.vault = Vault(vault_dir, folds_case=True)
    return app


def note_paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def backlinks(app: App, target: str) -> list[str]:
    with app.db.connect() as conn:
        rows = conn.execute(select(Link.source_path).where(Link.target_path == target))
        return sorted(rows.scalars())


def recorded(app: App) -> list[VaultEvent]:
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)
    return events


@pytest.mark.parametrize(
    "reported",
    [["Note.md", "note.md"], ["note.md"], ["Note.md"]],
    ids=["both-names", "new-name-only", "old-name-only"],
)
def test_rename_in_case_is_a_move_however_reported(
    folding: App, write_notes: WriteNotes, vault_dir: Path, reported: list[str]
) -> None:
    write_notes({"Note.md": "the note", "other.md": "see [[Note]]"})
    folding.indexer.reconcile()
    (vault_dir / "Note.md").rename(vault_dir / "note.md")
    events = recorded(folding)
    report = folding.indexer.apply_paths(reported)
    assert events == [NoteMoved(old_path="Note.md", path="note.md")]
    assert (report.moved, report.added, report.removed) == (1, 0, 0)
    assert note_paths(folding) == ["note.md", "other.md"]
    assert backlinks(folding, "note.md") == ["other.md"]


@pytest.mark.parametrize(
    "changes",
    [
        [(Change.deleted, "Note.md"), (Change.added, "note.md")],  # Windows, FSEvents
        [(Change.modified, "Note.md")],  # the old name still stats as a file there
        [(Change.added, "note.md")],
    ],
    ids=["deleted-added", "modified-old-name", "added-new-name"],
)
def test_watcher_batch_of_a_rename_in_case_is_a_move(
    folding: App, write_notes: WriteNotes, vault_dir: Path, changes: list[tuple[Change, str]]
) -> None:
    write_notes({"Note.md": "the note"})
    folding.indexer.reconcile()
    (vault_dir / "Note.md").rename(vault_dir / "note.md")
    batch = {(change, str(folding.vault.root / path)) for change, path in changes}
    report = VaultWatcher(folding.indexer).handle_changes(batch)
    assert report is not None and report.events == [NoteMoved(old_path="Note.md", path="note.md")]
    assert note_paths(folding) == ["note.md"]


def test_event_under_a_stale_spelling_keeps_the_name_on_disk(
    folding: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    """An edit reported under a name the file no longer has (`NOTE.md` for `Note.md`) is the
    note's edit, not a second note."""
    write_notes({"Note.md": "v1"})
    folding.indexer.reconcile()
    (vault_dir / "Note.md").write_text("v2 and longer")
    report = folding.indexer.apply_paths(["NOTE.md"])
    assert (report.updated, report.added) == (1, 0)
    assert note_paths(folding) == ["Note.md"]


@pytest.mark.parametrize("reported", [["Projects", "projects"], ["projects"], ["Projects"]])
def test_folder_renamed_in_case_moves_its_notes(
    folding: App, write_notes: WriteNotes, vault_dir: Path, reported: list[str]
) -> None:
    write_notes({"Projects/Plan.md": "plan", "Projects/deep/Step.md": "step", "x.md": "[[Plan]]"})
    folding.indexer.reconcile()
    (vault_dir / "Projects").rename(vault_dir / "projects")
    events = recorded(folding)
    folding.indexer.apply_paths(reported)
    assert sorted(events, key=str) == [
        NoteMoved(old_path="Projects/Plan.md", path="projects/Plan.md"),
        NoteMoved(old_path="Projects/deep/Step.md", path="projects/deep/Step.md"),
    ]
    assert note_paths(folding) == ["projects/Plan.md", "projects/deep/Step.md", "x.md"]
    assert backlinks(folding, "projects/Plan.md") == ["x.md"]


def test_catch_up_after_a_rename_in_case_is_a_move(
    folding: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    """Renamed while no watcher ran: the start's reconcile finds the name on disk."""
    write_notes({"Note.md": "the note"})
    folding.indexer.reconcile()
    (vault_dir / "Note.md").rename(vault_dir / "NOTE.md")
    events = recorded(folding)
    folding.indexer.reconcile()
    assert events == [NoteMoved(old_path="Note.md", path="NOTE.md")]
    assert note_paths(folding) == ["NOTE.md"]


def test_two_notes_differing_in_case_stay_two_where_case_matters(
    app: App, write_notes: WriteNotes
) -> None:
    """On a file system that keeps case apart (Linux), `Note.md` and `note.md` are two notes:
    an event for one leaves the other alone."""
    write_notes({"Note.md": "one", "note.md": "two"})
    app.indexer.reconcile()
    write_notes({"note.md": "two, edited"})
    report = app.indexer.apply_paths(["note.md"])
    assert (report.updated, report.removed, report.moved) == (1, 0, 0)
    assert note_paths(app) == ["Note.md", "note.md"]
