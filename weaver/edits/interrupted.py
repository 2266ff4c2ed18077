"""Finishing what an interrupted write left undone, at the next start.

Every write is journalled before it lands (`weaver.edits.steps`). If the process dies midway
(kill -9, power loss), its run stays unfinished, and `recover_edits` settles each of its notes
by what is on disk now, under the note's lock:

- a note that already hashes as planned was written;
- a change to many notes (a move and its link rewrites, a tag renamed or added across notes)
  is finished: a note still as read gets the text planned for it (kept in the journal), and a
  moved note not yet renamed is renamed first, so no link is left pointing nowhere;
- a single note's edit interrupted before its write is not applied: its caller was never
  answered, and a retry must not apply it twice;
- a note that hashes as neither was edited meanwhile and is skipped, never overwritten.

Every note's fate is logged and stored in the journal, and returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from weaver.cache import journal
from weaver.edits.canvases import files_for
from weaver.edits.notes import MOVE_FILE
from weaver.edits.steps import (
    ABSENT,
    CacheSync,
    NoteChangedError,
    NoteOutcome,
    Notes,
    digest,
    guarded_write,
    hold_notes,
    sync_safely,
    unchanged_check,
)
from weaver.errors import NoteNotFoundError, VaultError
from weaver.vault.writer import VaultWriter

log = structlog.get_logger(__name__)

EDITED = "edited since it was read; not overwritten"


@dataclass(frozen=True, slots=True)
class Recovered:
    journal_id: int
    operation: str
    arguments: Mapping[str, object]
    outcomes: tuple[NoteOutcome, ...]
    cache_synced: bool


def recover_edits(app: Notes, sync: CacheSync) -> list[Recovered]:
    """Finish every unfinished journalled run; see the module docstring."""
    with app.db.connect() as conn:
        runs = journal.unfinished_runs(conn)
    return [_recover_run(app, run, sync) for run in runs]


def _recover_run(app: Notes, run: journal.JournalRun, sync: CacheSync) -> Recovered:
    if run.operation == MOVE_FILE:
        _finish_rename(app, run)
    # A note's new text first, its removal last: a moved note is never absent from both.
    ordered = sorted(run.notes, key=lambda n: n.new_hash == ABSENT)
    outcomes = [_settle(app, note) for note in ordered]
    with app.db.begin() as conn:
        journal.finish_run(conn, run.id, [(o.path, o.status, o.detail) for o in outcomes])
    hashes: dict[str, str | None] = {
        o.path: (o.new_hash or None) for o in outcomes if o.status == journal.WRITTEN
    }
    synced = sync_safely(sync, hashes) if hashes else True
    _log_settled(run, outcomes)
    return Recovered(run.id, run.operation, run.arguments, tuple(outcomes), synced)


def _log_settled(run: journal.JournalRun, outcomes: list[NoteOutcome]) -> None:
    """One line for the run (what was finished), one more per note left as it was."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    log.warning(
        "interrupted edit settled",
        run=run.id,
        operation=run.operation,
        arguments=run.arguments,
        **counts,
    )
    for outcome in outcomes:
        if outcome.status != journal.WRITTEN:
            log.warning(
                "interrupted edit: note left as it was",
                run=run.id,
                path=outcome.path,
                status=outcome.status,
                why=outcome.detail,
            )


def _finish_rename(app: Notes, run: journal.JournalRun) -> None:
    """A move killed before its rename: do the rename, if both files are as planned."""
    source, target = str(run.arguments["from"]), str(run.arguments["to"])
    planned = next((n for n in run.notes if n.path == source), None)
    if planned is None or planned.status != journal.PENDING:
        return
    with hold_notes(app, [source, target]):
        if _hash_on_disk(app, target) != ABSENT or _hash_on_disk(app, source) != planned.old_hash:
            return
        writer = VaultWriter(
            app.vault, on_write=unchanged_check(app.vault, {source: planned.old_hash})
        )
        try:
            writer.move(source, target)
        except (VaultError, OSError) as exc:
            log.warning("interrupted move not finished", source=source, target=target, why=str(exc))


def _settle(app: Notes, note: journal.JournalNote) -> NoteOutcome:
    if note.status != journal.PENDING:
        return NoteOutcome(note.path, note.status, note.detail)
    with hold_notes(app, [note.path]):
        try:
            actual = _hash_on_disk(app, note.path)
        except (VaultError, OSError) as exc:
            return NoteOutcome(note.path, journal.SKIPPED, f"unreadable at recovery: {exc}")
        if actual == note.new_hash:
            return NoteOutcome(
                note.path, journal.WRITTEN, "written before the interruption", actual
            )
        if actual != note.old_hash:
            return NoteOutcome(note.path, journal.SKIPPED, EDITED)
        return _redo(app, note, actual)


def _redo(app: Notes, note: journal.JournalNote, actual: str) -> NoteOutcome:
    if note.new_data is None:  # one note's edit, or a move's source not renamed
        return NoteOutcome(note.path, journal.SKIPPED, "interrupted before its write; not applied")
    try:
        guarded_write(files_for(app, note.path).vault, note.path, note.new_data, expected=actual)
    except NoteChangedError:
        return NoteOutcome(note.path, journal.SKIPPED, EDITED)
    except (VaultError, OSError) as exc:
        return NoteOutcome(note.path, journal.FAILED, str(exc))
    return NoteOutcome(note.path, journal.WRITTEN, "written at recovery", note.new_hash)


def _hash_on_disk(app: Notes, path: str) -> str:
    """The hash of the file at `path`, spelled so: where the file system folds case, `note.md`
    also opens `Note.md`, which is no file at `note.md` (a rename in case between the two)."""
    vault = files_for(app, path).vault
    if vault.spelled(path) != path:
        return ABSENT
    try:
        return digest(vault.read_note(path))
    except NoteNotFoundError:
        return ABSENT
