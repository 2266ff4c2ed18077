"""A canvas edit is a journalled step like a note's: refused over a save it did not see,
settled at the next start when the process died after its write, undone by restore_edit."""

from __future__ import annotations

import pytest

from tests.canvas.test_document import EVERY_KIND
from tests.edits.test_integrity import sync_for
from tests.helpers import WriteNotes
from weaver.canvas import operations
from weaver.canvas.document import Canvas, read_canvas
from weaver.edits import canvases, history, steps
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
