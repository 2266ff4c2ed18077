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

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import structlog

from weaver.cache import journal, tag_queries
from weaver.edits.notes import (
    BOM,
    CacheSync,
    NoteChangedError,
    NoteEditError,
    NoteWriteError,
    guarded_write,
    sha256,
)
from weaver.edits.patches import Patched, decode_text, encode_text, patch_note, tags_transform
from weaver.errors import VaultError
from weaver.host.app import App
from weaver.markdown.patterns import is_valid_tag, normalize_tag
from weaver.markdown.retag import LineChange, rename_tag_in_text
from weaver.vault.writer import VaultWriter

log = structlog.get_logger(__name__)

RENAME_TAG = "rename_tag"
WRITE_THREADS = 16
WRITTEN, SKIPPED, FAILED = "written", "skipped", "failed"


@dataclass(frozen=True, slots=True)
class TagChange:
    path: str
    line: int
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class NoteOutcome:
    path: str
    status: str  # written, skipped (edited meanwhile, unreadable), failed (the write failed)
    detail: str | None = None


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
    path: str
    old_hash: str
    new_data: bytes
    changes: tuple[LineChange, ...]


@dataclass(frozen=True, slots=True)
class TagCount:
    tag: str
    notes: int  # notes carrying it or a tag nested below it
    own: int  # notes carrying exactly this tag


def list_tags(app: App) -> list[TagCount]:
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
    app: App,
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
    changes = tuple(TagChange(p.path, c.line, c.before, c.after) for p in plan for c in p.changes)
    if dry_run:
        outcomes = [NoteOutcome(p.path, "planned") for p in plan] + unreadable
        return TagRename(old_clean, new_clean, True, changes, tuple(outcomes), None, True)
    arguments = {"from": old_clean, "to": new_clean}
    with app.db.begin() as conn:
        entries = [(p.path, p.old_hash, sha256(p.new_data)) for p in plan]
        run_id = journal.begin_run(conn, RENAME_TAG, arguments, entries)
    # Each write waits on its own fsync; run side by side, the file
    # system commits them together, which is what keeps 1,000 notes within seconds.
    with ThreadPoolExecutor(max_workers=WRITE_THREADS) as pool:
        outcomes = list(pool.map(lambda p: _write_planned(app, p, on_written), plan))
    # Each folder's fsync once, before the journal says done: a rename lost in a crash before
    # this leaves its note as read, and the next start writes it again.
    VaultWriter(app.vault).sync_folders(o.path for o in outcomes if o.status == WRITTEN)
    with app.db.begin() as conn:
        journal.finish_run(conn, run_id, [(o.path, o.status, o.detail) for o in outcomes])
    hashes: dict[str, str | None] = {
        p.path: sha256(p.new_data)
        for p, o in zip(plan, outcomes, strict=True)
        if o.status == WRITTEN
    }
    synced = sync(hashes) if hashes else True
    _log_outcomes(run_id, outcomes)
    return TagRename(
        old_clean, new_clean, False, changes, tuple(outcomes + unreadable), run_id, synced
    )


def _candidates(app: App, old: str) -> list[str]:
    with app.db.connect() as conn:
        return tag_queries.retag_candidates(conn, normalize_tag(old))


def _plan(app: App, old: str, new: str) -> tuple[list[_Planned], list[NoteOutcome]]:
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
            plan.append(_Planned(path, sha256(data), new_data, result.changes))
    return plan, unreadable


def _write_planned(
    app: App, planned: _Planned, on_written: Callable[[str], None] | None
) -> NoteOutcome:
    try:
        guarded_write(
            app.vault, planned.path, planned.new_data, expected=planned.old_hash, sync_folder=False
        )
    except NoteChangedError:
        return NoteOutcome(planned.path, SKIPPED, "edited since it was read; not overwritten")
    except (NoteWriteError, VaultError, OSError) as exc:
        return NoteOutcome(planned.path, FAILED, str(exc))
    if on_written is not None:
        on_written(planned.path)
    return NoteOutcome(planned.path, WRITTEN)


def _log_outcomes(run_id: int, outcomes: Sequence[NoteOutcome]) -> None:
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
    app: App,
    paths: Sequence[str],
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    sync: CacheSync,
) -> list[NoteTagsResult]:
    """Add and/or remove frontmatter tags on each note; an error on one does not stop the rest."""
    transform = tags_transform(add, remove)
    hashes: dict[str, str | None] = {}

    def collect(expected: Mapping[str, str | None]) -> bool:
        hashes.update(expected)
        return True

    results = []
    for path in paths:
        try:
            patched = patch_note(app, path, transform, expected_hash=None, sync=collect)
        except VaultError as exc:
            results.append(NoteTagsResult(path, None, str(exc)))
            continue
        results.append(NoteTagsResult(patched.path, patched, None))
    synced = sync(hashes) if hashes else True
    return [
        replace(r, patched=replace(r.patched, cache_synced=synced)) if r.patched else r
        for r in results
    ]
