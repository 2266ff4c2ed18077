"""Tags across the vault: rename one everywhere (journalled), add or remove tags on some notes.

`rename_tag` plans first: the notes the cache knows carry the tag (or one nested below it), plus
those whose frontmatter `tags` is a string (the comma form, which the index cannot read), are
read, and each new text computed by `weaver.markdown.retag`. A dry run answers that plan. A
real run records it in the edit journal (every note's hash as read and as it will be) before
the first write, writes each note atomically with its hash checked just before the rename (a
note edited meanwhile is skipped and reported, never overwritten), then records what became of
each note. A run killed midway is finished or reported note by note by `recover_edits` at the
next start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import structlog

from weaver.cache import journal, tag_queries
from weaver.edits import gate
from weaver.edits.patches import Patched, Transform, decode_text, encode_text, tags_transform
from weaver.edits.steps import (
    BOM,
    CacheSync,
    NoteEditError,
    NoteOutcome,
    Notes,
    Planned,
    begin_run,
    check_size,
    finish_outcomes,
    planned_entries,
    sha256,
    sync_outcomes,
    write_planned,
)
from weaver.errors import VaultError
from weaver.markdown import patch
from weaver.markdown.patterns import is_valid_tag, normalize_tag
from weaver.markdown.retag import LineChange, rename_tag_in_text
from weaver.vault.writer import VaultWriter

log = structlog.get_logger(__name__)

RENAME_TAG = "rename_tag"
WRITE_THREADS = 16
WRITTEN, SKIPPED, FAILED = journal.WRITTEN, journal.SKIPPED, journal.FAILED
PLANNED = "planned"  # a dry run's outcome for a note it would write


@dataclass(frozen=True, slots=True)
class TagChange:
    path: str
    line: int
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class TagRename:
    old: str
    new: str
    dry_run: bool
    changes: tuple[TagChange, ...]
    outcomes: tuple[NoteOutcome, ...]  # every note planned; in a dry run all "planned"
    journal_id: int | None
    cache_synced: bool


@dataclass(frozen=True, slots=True)
class _Planned:
    note: Planned
    changes: tuple[LineChange, ...]


@dataclass(frozen=True, slots=True)
class TagCount:
    tag: str
    notes: int  # notes carrying it or a tag nested below it
    own: int  # notes carrying exactly this tag


def list_tags(app: Notes) -> list[TagCount]:
    """Every tag of the vault with its note counts, by name."""
    with app.db.connect() as conn:
        return [TagCount(*row) for row in tag_queries.list_tag_counts(conn)]


def check_tag_name(name: str) -> str:
    clean = name.strip().removeprefix("#")
    if not is_valid_tag(clean):
        raise NoteEditError(
            f"{name!r} is not a valid tag (letters, digits, _ - / only; not only digits)"
        )
    return clean


def rename_tag(
    app: Notes,
    old: str,
    new: str,
    *,
    dry_run: bool,
    sync: CacheSync,
    on_written: Callable[[str], None] | None = None,
) -> TagRename:
    """Rename tag `old` (and its children) to `new` in every note; see the module docstring.
    `on_written(path)` hears of each note written (progress; tests stop a run midway there)."""
    old_clean, new_clean = check_tag_name(old), check_tag_name(new)
    if old_clean == new_clean:
        raise NoteEditError(f"{old!r} and {new!r} are the same tag")
    plan, unreadable = _plan(app, old_clean, new_clean)
    changes = tuple(
        TagChange(p.note.path, c.line, c.before, c.after) for p in plan for c in p.changes
    )
    if dry_run:
        outcomes = [NoteOutcome(p.note.path, PLANNED) for p in plan] + unreadable
        return TagRename(old_clean, new_clean, True, changes, tuple(outcomes), None, True)
    arguments = {"from": old_clean, "to": new_clean}
    notes = [p.note for p in plan]
    gate.commit_point()
    run_id = begin_run(app, RENAME_TAG, arguments, planned_entries(notes))
    # Each write waits on its own fsync; run side by side, the file
    # system commits them together, which is what keeps 1,000 notes within seconds.
    with ThreadPoolExecutor(max_workers=WRITE_THREADS) as pool:
        outcomes = list(pool.map(lambda n: _write_one(app, n, on_written), notes))
    # Each folder's fsync once, before the journal says done: a rename lost in a crash before
    # this leaves its note as read, and the next start writes it again.
    VaultWriter(app.vault).sync_folders(o.path for o in outcomes if o.status == WRITTEN)
    finish_outcomes(app, run_id, outcomes)
    synced = sync_outcomes(sync, outcomes)
    _log_outcomes(run_id, outcomes)
    return TagRename(
        old_clean, new_clean, False, changes, tuple(outcomes + unreadable), run_id, synced
    )


def _candidates(app: Notes, old: str) -> list[str]:
    with app.db.connect() as conn:
        return tag_queries.retag_candidates(conn, normalize_tag(old))


def _plan(app: Notes, old: str, new: str) -> tuple[list[_Planned], list[NoteOutcome]]:
    plan: list[_Planned] = []
    unreadable: list[NoteOutcome] = []
    for path in _candidates(app, old):
        try:
            data = app.vault.read_note(path)
            text, crlf = decode_text(path, data)
        except (VaultError, OSError) as exc:
            unreadable.append(NoteOutcome(path, SKIPPED, str(exc)))
            continue
        result = rename_tag_in_text(text, old, new)
        if result.changes:
            new_data = encode_text(result.text, crlf, data.startswith(BOM))
            check_size(path, new_data)
            plan.append(_Planned(Planned(path, data, new_data), result.changes))
    return plan, unreadable


def _write_one(app: Notes, note: Planned, on_written: Callable[[str], None] | None) -> NoteOutcome:
    outcome = write_planned(app, note, sync_folder=False)
    if outcome.status == WRITTEN and on_written is not None:
        on_written(note.path)
    return outcome


def _log_outcomes(run_id: int | None, outcomes: Sequence[NoteOutcome]) -> None:
    for outcome in outcomes:
        if outcome.status != WRITTEN:
            log.warning("note not retagged", run=run_id, path=outcome.path, why=outcome.detail)


# ---------------------------------------------------------------- tags on given notes


@dataclass(frozen=True, slots=True)
class NoteTagsResult:
    path: str
    patched: Patched | None
    error: str | None


def change_note_tags(
    app: Notes,
    paths: Sequence[str],
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    sync: CacheSync,
) -> list[NoteTagsResult]:
    """Add and/or remove frontmatter tags on each note, as one journalled run (finished after
    a crash); an error on one note does not stop the rest."""
    transform = tags_transform(add, remove)
    planned: dict[str, tuple[Planned, Patched]] = {}
    results: dict[str, NoteTagsResult] = {}
    for path in paths:
        try:
            note, patched = _plan_tags(app, path, transform)
        except VaultError as exc:
            results[path] = NoteTagsResult(path, None, str(exc))
            continue
        if note is None:
            results[path] = NoteTagsResult(patched.path, patched, None)
        else:
            planned[path] = (note, patched)
    operation = (
        "add_tags" if add and not remove else "remove_tags" if remove and not add else "change_tags"
    )
    notes = [note for note, _ in planned.values()]
    outcomes: dict[str, NoteOutcome] = {}
    if notes:
        gate.commit_point()
        run_id = begin_run(
            app, operation, {"add": list(add), "remove": list(remove)}, planned_entries(notes)
        )
        replan = _retagger(transform)
        outcomes = {n.path: write_planned(app, n, replan=replan) for n in notes}
        finish_outcomes(app, run_id, list(outcomes.values()))
    synced = sync_outcomes(sync, list(outcomes.values()))
    for path, (note, patched) in planned.items():
        outcome = outcomes[note.path]
        if outcome.status == WRITTEN:
            done = replace(patched, content_hash=outcome.new_hash or patched.content_hash)
            results[path] = NoteTagsResult(note.path, replace(done, cache_synced=synced), None)
        else:
            results[path] = NoteTagsResult(note.path, None, outcome.detail)
    return [
        replace(r, patched=replace(r.patched, cache_synced=synced)) if r.patched else r
        for r in (results[path] for path in paths)
    ]


def preview_note_tags(
    app: Notes, paths: Sequence[str], *, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> list[str]:
    """The notes `change_note_tags` would write if called now (those it would find already so,
    or could not edit, left out), without writing."""
    transform = tags_transform(add, remove)
    changing = []
    for path in paths:
        try:
            note, _ = _plan_tags(app, path, transform)
        except VaultError:
            continue  # answered as this note's error by the call itself
        if note is not None:
            changing.append(note.path)
    return changing


def _plan_tags(app: Notes, path: str, transform: Transform) -> tuple[Planned | None, Patched]:
    """The note's new bytes (None when the tags are already so) and what the answer says."""
    clean = app.vault.note_path(path)
    data = app.vault.read_note(clean)
    text, crlf = decode_text(clean, data)
    try:
        new_text, matches = transform(text)
    except patch.TextEditError as exc:
        raise NoteEditError(f"{exc} ({clean})") from None
    new = encode_text(new_text, crlf, data.startswith(BOM))
    check_size(clean, new)
    diff = patch.summarize_diff(text, new_text)
    patched = Patched(clean, sha256(new), len(new), new != data, matches, diff, True)
    return (Planned(clean, data, new) if new != data else None), patched


def _retagger(transform: Transform) -> Callable[[str, bytes], bytes | None]:
    def replan(path: str, data: bytes) -> bytes | None:
        text, crlf = decode_text(path, data)
        new = encode_text(transform(text)[0], crlf, data.startswith(BOM))
        return new if new != data else None

    return replan
