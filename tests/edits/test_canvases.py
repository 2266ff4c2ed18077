"""A canvas edit is a journalled step like a note's: refused over a save it did not see,
settled at the next start when the process died after its write, undone by restore_edit; a
note's move retargets the canvases showing it, in the same journalled change."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.canvas.test_document import EVERY_KIND
from tests.edits.test_integrity import sync_for
from tests.helpers import WriteNotes
from weaver.cache import read
from weaver.cache.models import EditJournal, EditJournalNote
from weaver.canvas import operations
from weaver.canvas.document import Canvas, read_canvas
from weaver.edits import canvases, history, notes, steps
from weaver.edits.interrupted import recover_edits
from weaver.runtime.app import App

BOARD = "Boards/Sprint.canvas"
TEXT = "b0000000000000b2"


def remove_text(canvas: Canvas) -> operations.Edited:
    return operations.remove_node(canvas, TEXT)


def edit(app: App, expected_hash: str | None = None) -> canvases.CanvasEdit:
    return canvases.edit_canvas(
        app,
        BOARD,
        remove_text,
        name="edit_canvas",
        arguments={},
        expected_hash=expected_hash,
        sync=sync_for(app),
    )


def test_an_edit_over_a_save_it_did_not_see_is_refused(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({BOARD: EVERY_KIND})
    saved = EVERY_KIND.replace(b"Sprint 12", b"Sprint 13")
    (root / BOARD).write_bytes(saved)
    with pytest.raises(steps.NoteChangedError):
        edit(app, expected_hash=steps.sha256(EVERY_KIND))
    assert (root / BOARD).read_bytes() == saved


def test_an_edit_killed_after_its_write_is_settled_at_the_next_start(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_notes({BOARD: EVERY_KIND})

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the process dies here: the journal never hears of the write

    monkeypatch.setattr(steps, "finish_run", die)
    with pytest.raises(KeyboardInterrupt):
        edit(app)
    monkeypatch.undo()
    assert read_canvas((root / BOARD).read_bytes()).get_node(TEXT) is None
    [recovered] = recover_edits(app, sync_for(app))
    (outcome,) = recovered.outcomes
    assert (outcome.path, outcome.status) == (BOARD, "written")
    assert outcome.detail == "written before the interruption"
    # Settled as written, the edit is undone like any other.
    (last, *_) = history.list_edits(app, BOARD, limit=5, offset=0).edits
    assert last.restorable and last.current
    history.restore_edit(app, BOARD, last.edit_id, expected_hash=None, sync=sync_for(app))
    assert (root / BOARD).read_bytes() == EVERY_KIND


MOVED_BOARD = (
    b'{\n\t"nodes":[\n'
    b'\t\t{"id":"n1","type":"file","file":"Notes/Plan.md","subpath":"#Goals","x":0,"y":0,'
    b'"width":250,"height":60,"color":"4"},\n'
    b'\t\t{"id":"n2","type":"text","text":"See [[Plan|the plan]] and [[Other]]","x":300,"y":0,'
    b'"width":250,"height":60},\n'
    b'\t\t{"id":"n3","type":"file","file":"Other.md","x":0,"y":300,"width":250,"height":60}\n'
    b'\t],\n\t"edges":[\n'
    b'\t\t{"id":"e1","fromNode":"n1","toNode":"n2","label":"why"}\n'
    b"\t]\n}"
)


def test_move_file_retargets_the_cards_of_a_canvas_and_its_backlinks(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes(
        {BOARD: MOVED_BOARD, "Notes/Plan.md": "# Plan\n## Goals\n", "Other.md": "other\n"}
    )
    app.indexer.reconcile()
    moved = notes.move_note(app, "Notes/Plan.md", "Archive/Plan 2024.md", sync_for(app))
    assert moved.rewritten == {BOARD: 2} and moved.failed == ()
    after = (root / BOARD).read_bytes()
    # Only what named the note changed; every other byte of the board is as it was.
    assert after == MOVED_BOARD.replace(b'"Notes/Plan.md"', b'"Archive/Plan 2024.md"').replace(
        b"[[Plan|the plan]]", b"[[Plan 2024|the plan]]"
    )
    with read.read_snapshot(app.db) as conn:
        detail = read.get_file(conn, "Archive/Plan 2024.md")
    assert detail is not None and detail.incoming == [BOARD]
    # The move is one journalled change, the board's rewrite with it (undone with it).
    with app.db.connect() as conn:
        entries = conn.execute(
            select(EditJournalNote.path)
            .join(EditJournal)
            .where(EditJournal.operation == "move_file")
        ).scalars()
        assert BOARD in set(entries)
