"""Canvas files read and changed: one edit of `weaver.canvas.operations` per write, through the
same step as a note's (`weaver.edits.steps.write_note`: the file's lock, `expected_hash`, the
journal, the atomic write refused if the file changed since it was read, the cache update).

The vault is the app's, taking `.canvas` paths instead of note paths (`Vault.of_kind`), so a
canvas path is checked as a note path is (inside the vault, not hidden or ignored, no symlink
leading out). A canvas that is not JSON Canvas is refused, never overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine

from weaver.canvas.document import Canvas, read_canvas, write_canvas
from weaver.canvas.operations import Edited
from weaver.edits.steps import CacheSync, NoteChangedError, Notes, sha256, write_note
from weaver.vault.fs import CANVASES, Vault

# An edit of a canvas: the canvas as it is now -> the canvas after it.
Operation = Callable[[Canvas], Edited]


@dataclass(frozen=True, slots=True)
class CanvasFiles:
    """The `Notes` a canvas write goes through: the app's cache, its vault taking canvases."""

    db: Engine
    vault: Vault


def canvas_files(app: Notes) -> CanvasFiles:
    return CanvasFiles(app.db, app.vault.of_kind(CANVASES))


def files_for(app: Notes, path: str) -> Notes:
    """The notes, or the canvases when `path` names one: what the journal's readers (the edit
    history, recovery at start) read a journalled path through."""
    return canvas_files(app) if path.lower().endswith(CANVASES.suffix) else app


@dataclass(frozen=True, slots=True)
class CanvasRead:
    path: str
    canvas: Canvas
    content_hash: str  # the next edit's `expected_hash`


@dataclass(frozen=True, slots=True)
class CanvasEdit:
    path: str
    edited: Edited
    content_hash: str
    changed: bool
    created: bool  # the edit made the file (an added node on a canvas not there yet)
    journal_id: int | None  # None: not journalled (the cache could not be written)
    cache_synced: bool


def read_canvas_file(app: Notes, path: str) -> CanvasRead:
    """The canvas at `path`; `NoteNotFoundError` when absent, `InvalidCanvasError` when it is
    not a JSON Canvas document."""
    vault = canvas_files(app).vault
    clean = vault.note_path(path)
    data = vault.read_note(clean)
    return CanvasRead(clean, read_canvas(data, clean), sha256(data))


def edit_canvas(
    app: Notes,
    path: str,
    operation: Operation,
    *,
    name: str,
    arguments: dict[str, Any],
    expected_hash: str | None,
    sync: CacheSync,
    create: bool = False,
) -> CanvasEdit:
    """Apply `operation` to the canvas at `path` and write it back, one journalled step.
    `create`: a canvas not there yet is started empty (adding a node makes the file)."""
    files = canvas_files(app)
    clean = files.vault.note_path(path)
    seen: dict[str, Any] = {}

    def edit(data: bytes | None) -> bytes:
        if data is None and not create:
            files.vault.note_file(clean)  # raises NoteNotFoundError
            raise NoteChangedError(clean, expected_hash, None)  # removed since that check
        current = read_canvas(data or b"", clean)
        seen["edited"], seen["created"] = operation(current), data is None
        return write_canvas(seen["edited"].canvas)

    change = write_note(
        files,
        clean,
        edit,
        operation=name,
        arguments=arguments,
        expected_hash=expected_hash,
        sync=sync,
    )
    return CanvasEdit(
        path=clean,
        edited=seen["edited"],
        content_hash=change.content_hash,
        changed=change.changed,
        created=seen["created"],
        journal_id=change.journal_id,
        cache_synced=change.cache_synced,
    )
