"""Finishing what an interrupted change to many notes left undone, at the next start.

`rename_tag` records its plan in the edit journal before its first write (see
`weaver.cache.journal`). If the process dies midway (kill -9, power loss), the run stays
unfinished, and `recover_edits` settles each of its notes by what is on disk now: a note that
already hashes as planned was written; one still as it was read is rewritten now (the same pure
transform gives the same bytes); one that hashes as neither was edited meanwhile and is skipped,
never overwritten. Every note's fate is logged and stored in the journal, and returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from weaver.cache import journal
from weaver.edits.notes import BOM, CacheSync, NoteChangedError, guarded_write, sha256
from weaver.edits.patches import decode_text, encode_text
from weaver.edits.tags import FAILED, RENAME_TAG, SKIPPED, WRITTEN, NoteOutcome
from weaver.errors import VaultError
from weaver.host.app import App
from weaver.markdown.retag import rename_tag_in_text

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Recovered:
    journal_id: int
    operation: str
    arguments: Mapping[str, object]
    outcomes: tuple[NoteOutcome, ...]
    cache_synced: bool


def recover_edits(app: App, sync: CacheSync) -> list[Recovered]:
    """Finish every unfinished journalled run; see the module docstring."""
    with app.db.connect() as conn:
        runs = journal.unfinished_runs(conn)
    recovered = []
    for run in runs:
        outcomes = [_settle(app, run.operation, run.arguments, note) for note in run.notes]
        with app.db.begin() as conn:
            journal.finish_run(conn, run.id, [(o.path, o.status, o.detail) for o in outcomes])
        hashes: dict[str, str | None] = {
            note.path: note.new_hash
            for note, outcome in zip(run.notes, outcomes, strict=True)
            if outcome.status == WRITTEN
        }
        synced = sync(hashes) if hashes else True
        for outcome in outcomes:
            log.warning(
                "interrupted edit settled",
                run=run.id,
                operation=run.operation,
                path=outcome.path,
                status=outcome.status,
                why=outcome.detail,
            )
        recovered.append(Recovered(run.id, run.operation, run.arguments, tuple(outcomes), synced))
    return recovered


def _settle(
    app: App, operation: str, arguments: Mapping[str, object], note: journal.JournalNote
) -> NoteOutcome:
    if note.status != journal.PENDING:
        return NoteOutcome(note.path, note.status, note.detail)
    try:
        data = app.vault.read_note(note.path)
    except (VaultError, OSError) as exc:
        return NoteOutcome(note.path, SKIPPED, f"unreadable at recovery: {exc}")
    actual = sha256(data)
    if actual == note.new_hash:
        return NoteOutcome(note.path, WRITTEN, "written before the interruption")
    if actual != note.old_hash or operation != RENAME_TAG:
        return NoteOutcome(note.path, SKIPPED, "edited since it was read; not overwritten")
    try:
        text, crlf = decode_text(note.path, data)
        result = rename_tag_in_text(text, str(arguments["from"]), str(arguments["to"]))
        new = encode_text(result.text, crlf, data.startswith(BOM))
        if sha256(new) != note.new_hash:
            return NoteOutcome(note.path, SKIPPED, "the rename now gives other text; left alone")
        guarded_write(app.vault, note.path, new, expected=actual)
    except NoteChangedError:
        return NoteOutcome(note.path, SKIPPED, "edited since it was read; not overwritten")
    except (VaultError, OSError) as exc:
        return NoteOutcome(note.path, FAILED, str(exc))
    return NoteOutcome(note.path, WRITTEN, "written at recovery")
