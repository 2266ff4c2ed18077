"""What a path the client got wrong probably meant: "File not found: 'Books.md' (did you mean
'Categories/Books.md'?)", "Folder not found: 'projects' (did you mean 'Projects'?)".

A model names notes the way a person does, without the folder, without `.md` or with a typo;
naming the likely note in the error spares it a `resolve_names` call and a retry. The names
are the ones `resolve_names` looks up (`weaver.views.names`), so the hint and that tool agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import structlog
from sqlalchemy import Connection

from weaver.cache import browse, read
from weaver.errors import (
    FolderNotFoundError,
    InvalidPathError,
    NoteNotFoundError,
    did_you_mean,
    suggest,
)
from weaver.mcp_server.access import current_grant
from weaver.runtime.state import ServerState
from weaver.vault.fs import is_canvas_path
from weaver.views.names import MatchedOn

log = structlog.get_logger(__name__)

MAX_SUGGESTIONS = 3
# A path mistyped is close to a path or a file name; a title or an alias as close (`readme`
# and the alias "read frame") is a coincidence, and would puzzle more than it helps.
FUZZY_KINDS: tuple[MatchedOn, ...] = ("path", "name")
FUZZY_THRESHOLD = 0.75
# A path without `.md` is only ever taken for the note at that very path: a fuzzy guess would
# mislead `create_file`, where the client means a new note.
NOT_A_NOTE = "not a markdown note"


def with_hint(state: ServerState, error: NoteNotFoundError | InvalidPathError) -> str:
    """The error's message, with the notes it may have meant when there are any."""
    message = str(error)
    if isinstance(error, InvalidPathError) and error.reason != NOT_A_NOTE:
        return message
    try:
        suggestions = _suggestions(state, error)
    except Exception as exc:  # the hint is a courtesy: the error stands without it
        log.warning("no hint for a path not found", error=type(exc).__name__)
        return message
    # A client confined to some folders is not told of notes outside them.
    grant = current_grant(state.app.settings)
    suggestions = [path for path in suggestions if grant.may_read(path)]
    if not suggestions:
        return message
    if message.endswith(")"):  # "Invalid path: 'x' (not a markdown note; did you mean ...?)"
        return f"{message[:-1]}; {did_you_mean(suggestions)})"
    return f"{message} ({did_you_mean(suggestions)})"


def _suggestions(state: ServerState, error: NoteNotFoundError | InvalidPathError) -> list[str]:
    with read.read_snapshot(state.app.db) as conn:
        index = state.name_index.get(conn)
    (match,) = index.resolve([error.path], "exact")
    # Only files the tool asked of takes: notes for a note, canvases for a canvas (both are
    # in the name index, as links reach both).
    canvas = isinstance(error, NoteNotFoundError) and is_canvas_path(error.path)
    if isinstance(error, InvalidPathError):
        exact = match.path and match.matched_on == "path" and not is_canvas_path(match.path)
        return [match.path] if exact and match.path else []
    if match.path is None:  # no note of that name: the closest paths and file names
        (match,) = index.resolve([error.path], "fuzzy", FUZZY_THRESHOLD, kinds=FUZZY_KINDS)
    found = [match.path, *match.alternatives] if match.path else []
    kept = [path for path in found if path != error.path and is_canvas_path(path) == canvas]
    return kept[:MAX_SUGGESTIONS]


def tag_hint(conn: Connection, keys: Sequence[str]) -> str | None:
    """For a tag search that found nothing: the tags it probably meant, or None."""
    plain = [key for key in keys if not read.is_wildcard(key)]
    if not plain:
        return None
    known = browse.tag_keys(conn)
    close = list(dict.fromkeys(tag for key in plain for tag in suggest(key, known)))
    if not close:
        return None
    named = ", ".join(repr(key) for key in plain)
    return f"No note carries {named} ({did_you_mean(close[:MAX_SUGGESTIONS])})"


def check_folder(state: ServerState, conn: Connection, folder: str | None) -> None:
    """Raise `FolderNotFoundError` when `folder` names no folder of the vault, with the folders
    it probably meant. For a filter that matched nothing: "no such folder" is worth saying,
    where an empty answer would read as "no such notes"."""
    if not folder or read.holds_folder(conn, folder):
        return
    if state.app.vault.has_files and _on_disk(state.app.vault.root, folder):
        return  # a folder without notes yet
    raise FolderNotFoundError(folder, suggest(folder, read.note_folders(conn), cutoff=0.75))


def _on_disk(root: Path, folder: str) -> bool:
    """Whether `folder` is a folder of the vault on disk, spelt as it is there (a file system
    that ignores case would find `projects` for `Projects`), and not outside the vault."""
    current = root
    for part in folder.split("/"):
        if part == "..":
            return False
        try:
            if part not in {entry.name for entry in current.iterdir()}:
                return False
        except OSError:
            return False
        current = current / part
    return current.is_dir()
