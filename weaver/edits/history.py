"""A note's edits by Weaver, and putting back what one of them replaced (undo; a move is
undone by moving the note back).

Every write is journalled with the bytes it replaced (`weaver.edits.steps`); this module lists
them per note and restores one. A restore is itself an edit, journalled like any other (so it
can be undone in turn), and it never overwrites what it did not see: unless the caller names
the hash the note must have now, the note must still be exactly as that edit left it, so an
"undo" cannot silently throw away what was written since (by the person or by Weaver).

What is kept: 30 days, and 256 MiB of replaced text in all, the oldest dropped first
(`weaver.cache.journal`); an edit whose text was dropped is still listed, not restorable.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from weaver.cache import journal
from weaver.edits.canvases import files_for
from weaver.edits.notes import MOVE_FILE, move_note
from weaver.edits.steps import (
    ABSENT,
    CacheSync,
    Change,
    NoteChangedError,
    NoteEditError,
    Notes,
    digest,
    write_note,
)
from weaver.errors import VaultError

RESTORE_EDIT = "restore_edit"


@dataclass(frozen=True, slots=True)
class NoteEdit:
    edit_id: int
    operation: str
    at: str  # ISO 8601, UTC
    old_hash: str | None  # None: the edit created the note
    new_hash: str | None  # None: the edit removed (or moved) the note
    restorable: bool
    current: bool  # the note is exactly as this edit left it


@dataclass(frozen=True, slots=True)
class NoteEdits:
    path: str
    edits: tuple[NoteEdit, ...]
    total: int
    current_hash: str | None


def list_edits(app: Notes, path: str, *, limit: int, offset: int) -> NoteEdits:
    """The writes of the note (or canvas) at `path` by Weaver, newest first, a page at a time."""
    app = files_for(app, path)
    clean = app.vault.note_path(path)
    with app.db.connect() as conn:
        rows, total = journal.list_note_edits(conn, clean, limit, offset)
    current = _current_hash(app, clean)
    edits = tuple(
        NoteEdit(
            edit_id=row.journal_id,
            operation=row.operation,
            at=_iso(row.written_at),
            old_hash=row.old_hash or None,
            new_hash=row.new_hash or None,
            restorable=row.restorable or row.old_hash == ABSENT or row.operation == MOVE_FILE,
            current=(row.new_hash or None) == current,
        )
        for row in rows
    )
    return NoteEdits(clean, edits, total, current)


def restore_edit(
    app: Notes, path: str, edit_id: int, *, expected_hash: str | None, sync: CacheSync
) -> Change:
    """Put the note back as it was before edit `edit_id` (a note that edit created goes to
    `.trash/`, one it removed comes back). Refused when the note is no longer as that edit
    left it, unless `expected_hash` names what it is now."""
    app = files_for(app, path)
    clean = app.vault.note_path(path)
    with app.db.connect() as conn:
        found = journal.get_replaced_text(conn, edit_id, clean)
    if found is None:
        raise NoteEditError(
            f"no edit {edit_id} of {clean!r} by Weaver is recorded (list them with list_edits)"
        )
    edit, replaced = found
    if edit.operation == MOVE_FILE:
        return _move_back(app, edit, sync)
    if replaced is None and edit.old_hash != ABSENT:
        raise NoteEditError(
            f"what edit {edit_id} replaced in {clean!r} is no longer kept (the edit history "
            "keeps 30 days and 256 MiB of replaced text)"
        )
    expected = expected_hash if expected_hash is not None else edit.new_hash
    try:
        return write_note(
            app,
            clean,
            lambda _current: replaced,
            operation=RESTORE_EDIT,
            arguments={"edit": edit_id},
            expected_hash=expected,
            sync=sync,
        )
    except NoteChangedError as exc:
        if expected_hash is not None:
            raise
        raise NoteEditError(
            f"{clean!r} has changed since edit {edit_id} (by Weaver or by you): restoring "
            "would throw those changes away, so nothing was written. Read it, then pass its "
            "contentHash as expectedHash to restore it anyway"
        ) from exc


def _move_back(app: Notes, edit: journal.NoteEdit, sync: CacheSync) -> Change:
    """Undo a move: the note goes back where it was, its links rewritten again. Nothing is
    lost by it, so it needs no hash: it is refused only if the note is gone from where the
    move put it, or another note took its old place."""
    source, target = str(edit.arguments["from"]), str(edit.arguments["to"])
    moved = move_note(app, target, source, sync)
    data = app.vault.read_note(moved.path)
    return Change(moved.path, None, data, True, None, None, moved.cache_synced)


def _current_hash(app: Notes, path: str) -> str | None:
    try:
        return digest(app.vault.read_note(path))
    except (VaultError, OSError):  # gone, or a reader without the files: not known here
        return None


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")
