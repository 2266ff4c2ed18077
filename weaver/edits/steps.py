"""Every write by Weaver as one step: serialised per note, journalled, truthful, bounded.

`write_note` is the step behind each edit of one note, `write_planned` behind each note of a
change to many (a move's link rewrites, a tag renamed or added across notes):

1. the note's lock is taken (`weaver.vault.note_locks`: one writer per note across every thread
   and process), so the read, the `expected_hash` check, the write and the cache update are
   never interleaved with another Weaver write of the same note;
2. the new bytes are computed and bounded (`MAX_NOTE_BYTES`: no write makes a note bigger than
   the indexer would read);
3. `gate.commit_point()`: from here the write is finished whatever the call's deadline;
4. the journal records the run (what the note held: the edit history; what a run of many notes
   will write: its recovery) before the file changes;
5. the file is written atomically, refused if it no longer hashes as read (a save made meanwhile
   by another program is never overwritten);
6. the journal says what became of it, and the cache is brought along.

A cache that cannot be written (disk full) does not undo a write that landed: the answer says
so, the cache catches up, and, when the journal could not be written either, the edit cannot be
undone.

    VaultError (weaver.errors)
    ├── NoteChangedError   the note on disk is not the version the caller expected
    ├── NoteEditError      the change cannot be made (bad tag, unparsable frontmatter, too big)
    └── NoteWriteError     the file system refused (permissions, disk full)

It stays whole at ~525 lines: the steps, the errors they raise and `JournalledWriter` are one
protocol, read in one place.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from weaver.cache import graph as cache_graph
from weaver.cache import journal
from weaver.edits import gate
from weaver.edits.attribution import Actor, current_actor
from weaver.errors import NoteNotFoundError, VaultError
from weaver.vault.fs import MAX_NOTE_BYTES, Vault
from weaver.vault.note_locks import NoteLocks
from weaver.vault.writer import VaultWriter

log = structlog.get_logger(__name__)

BOM = b"\xef\xbb\xbf"
ABSENT = ""  # the hash the journal records for a note that does not exist
# A note another program changed more recently than this may be in the middle of its save.
SETTLE_S = 0.1
SETTLE_MAX_S = 2.0  # a note still being saved after this long refuses the edit

# Brings the cache in step with {path: content hash, or None when the note is gone}; returns
# False when it could not be confirmed in time.
CacheSync = Callable[[Mapping[str, str | None]], bool]
# A note's bytes (None: absent) -> its new bytes (None: remove it).
Edit = Callable[[bytes | None], bytes | None]


class NoteChangedError(VaultError):
    """The note on disk is not the version the caller expected: nothing was written."""

    def __init__(self, path: str, expected: str | None, actual: str | None) -> None:
        found = f"its hash is now {actual}" if actual else "it no longer exists"
        super().__init__(
            f"File changed on disk: {path!r} (expected hash {expected}, but {found}); "
            "nothing was written. Read it again and retry."
        )
        self.path = path


class NoteEditError(VaultError):
    """The change asked for cannot be made to this note."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Cannot make this edit: {reason}")


class NoteWriteError(VaultError):
    """The file system refused the write; the note is as it was."""

    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(f"Cannot write file: {path!r} ({exc.strerror or type(exc).__name__})")
        self.path = path


def sha256(data: bytes) -> str:
    """A note's content hash, as the indexer stores it and `get_file` reports it."""
    return hashlib.sha256(data).hexdigest()


def digest(data: bytes | None) -> str:
    return ABSENT if data is None else sha256(data)


def check_size(path: str, data: bytes) -> None:
    if len(data) > MAX_NOTE_BYTES:
        raise NoteEditError(
            f"{path!r} would be {len(data):,} bytes, over the {MAX_NOTE_BYTES:,} bytes a note may "
            "have; nothing was written"
        )


class Notes(Protocol):
    """What a step needs of its surroundings: the vault's files and the cache (an `Notes`, or
    the workflow engine's pair)."""

    @property
    def db(self) -> Engine: ...

    @property
    def vault(self) -> Vault: ...


@cache
def note_locks(root: Path) -> NoteLocks:
    """One set of note locks per vault and process, so its threads queue in order."""
    return NoteLocks(root)


def hold_notes(app: Notes, paths: Iterable[str]) -> AbstractContextManager[None]:
    return note_locks(app.vault.root).hold(paths, check=gate.check)


# ---------------------------------------------------------------- one note


@dataclass(frozen=True, slots=True)
class Change:
    """What `write_note` did to one note."""

    path: str
    old: bytes | None  # None: the note did not exist
    new: bytes | None  # None: it was removed
    changed: bool
    journal_id: int | None
    trash_path: str | None
    cache_synced: bool

    @property
    def content_hash(self) -> str:
        return digest(self.new)


def write_note(
    app: Notes,
    path: str,
    edit: Edit,
    *,
    operation: str,
    arguments: dict[str, Any],
    expected_hash: str | None = None,
    sync: CacheSync,
) -> Change:
    """Read the note at `path`, check `expected_hash`, write what `edit` makes of it (a new
    note when it was absent, to `.trash/` when `edit` gives None): see the module docstring."""
    clean = app.vault.note_path(path)
    with hold_notes(app, [clean]):
        old = read_settled(app, clean)
        if expected_hash is not None and expected_hash.strip().lower() != digest(old):
            raise NoteChangedError(clean, expected_hash, digest(old) or None)
        new = edit(old)
        if new is not None:
            check_size(clean, new)
        if new == old:
            return Change(
                clean, old, new, False, None, None, sync_safely(sync, {clean: digest(new) or None})
            )
        gate.commit_point()
        planned = journal.PlannedNote(clean, digest(old), digest(new), old_data=old)
        run_id = begin_run(app, operation, arguments, [planned])
        try:
            trash_path = _apply(app.vault, clean, old, new)
        except NoteChangedError as exc:
            finish_run(app, run_id, [(clean, journal.SKIPPED, str(exc))])
            raise
        except VaultError as exc:
            finish_run(app, run_id, [(clean, journal.FAILED, str(exc))])
            raise
        finish_run(app, run_id, [(clean, journal.WRITTEN, None)])
        synced = sync_safely(sync, {clean: digest(new) or None})
    return Change(clean, old, new, True, run_id, trash_path, synced)


def _read_or_none(vault: Vault, path: str) -> bytes | None:
    try:
        return vault.read_note(path)
    except NoteNotFoundError:
        return None


def read_settled(app: Notes, path: str) -> bytes | None:
    """The note's bytes, once another program has finished saving it. An editor saving in
    place truncates the file, then writes it: read in between, an empty or half file would
    be taken as the note, and the edit made on it would drop the save. Bytes the cache already
    holds are settled (Weaver's own writes, the indexed note); other bytes changed less than
    `SETTLE_S` ago are read again once the file has been quiet that long."""
    with app.db.connect() as conn:
        known = cache_graph.note_hashes(conn, [path]).get(path)
    give_up = time.monotonic() + SETTLE_MAX_S
    while True:
        data = _read_or_none(app.vault, path)
        if data is None or sha256(data) == known:
            return data
        quiet = _quiet_for(app.vault, path)
        if quiet >= SETTLE_S:
            return data
        if time.monotonic() > give_up:
            raise NoteChangedError(path, None, "still being saved by another program")
        gate.check()
        time.sleep(SETTLE_S - quiet)


def _quiet_for(vault: Vault, path: str) -> float:
    """Seconds since the file last changed (a vault without files: settled)."""
    try:
        changed = vault.note_file(path).stat().st_mtime_ns
    except (VaultError, OSError):
        return SETTLE_S
    return max(0.0, (time.time_ns() - changed) / 1e9)


def _apply(vault: Vault, path: str, old: bytes | None, new: bytes | None) -> str | None:
    """Make the file at `path` hold `new` (None: trash it), refused if it is no longer `old`.
    Returns the trash path of a removed note."""
    if new is not None:
        guarded_write(vault, path, new, expected=digest(old))
        return None
    writer = VaultWriter(vault, on_write=unchanged_check(vault, {path: digest(old)}))
    try:
        return writer.trash(path)
    except OSError as exc:
        raise NoteWriteError(path, exc) from exc


# ---------------------------------------------------------------- many notes


@dataclass(frozen=True, slots=True)
class Planned:
    """A note of a change to many, read and computed before the first write."""

    path: str
    old: bytes
    new: bytes


@dataclass(frozen=True, slots=True)
class NoteOutcome:
    path: str
    status: str  # written, skipped (edited meanwhile, unreadable), failed (the write failed)
    detail: str | None = None
    new_hash: str | None = None  # written: the note's hash now


# Re-reads a note that changed since it was planned and computes it anew (None: nothing to do).
Replan = Callable[[str, bytes], bytes | None]


def write_planned(
    app: Notes, planned: Planned, *, replan: Replan | None = None, sync_folder: bool = True
) -> NoteOutcome:
    """Write one planned note under its lock, only if it still holds what was read. A note
    changed meanwhile is skipped, or with `replan` computed anew from what it holds now."""
    with hold_notes(app, [planned.path]):
        gate.commit_point()
        try:
            guarded_write(
                app.vault, planned.path, planned.new, sha256(planned.old), sync_folder=sync_folder
            )
        except NoteChangedError:
            if replan is None:
                return NoteOutcome(
                    planned.path, journal.SKIPPED, "edited since it was read; not overwritten"
                )
            return _write_replanned(app, planned.path, replan, sync_folder)
        except VaultError as exc:
            return NoteOutcome(planned.path, journal.FAILED, str(exc))
    return NoteOutcome(planned.path, journal.WRITTEN, None, sha256(planned.new))


def _write_replanned(app: Notes, path: str, replan: Replan, sync_folder: bool) -> NoteOutcome:
    """Under the note's lock already: Weaver's own writes are excluded, so only another
    program's save can come between this read and the write."""
    try:
        data = read_settled(app, path)
        if data is None:
            return NoteOutcome(path, journal.SKIPPED, "removed meanwhile; nothing left to do")
        new = replan(path, data)
        if new is None:
            return NoteOutcome(path, journal.SKIPPED, "changed meanwhile; nothing left to do")
        check_size(path, new)
        guarded_write(app.vault, path, new, sha256(data), sync_folder=sync_folder)
    except NoteChangedError:
        return NoteOutcome(path, journal.SKIPPED, "edited while it was written; not overwritten")
    except (VaultError, OSError) as exc:
        return NoteOutcome(path, journal.FAILED, str(exc))
    return NoteOutcome(path, journal.WRITTEN, "changed meanwhile; computed again", sha256(new))


def planned_entries(plan: Sequence[Planned]) -> list[journal.PlannedNote]:
    return [
        journal.PlannedNote(p.path, sha256(p.old), sha256(p.new), old_data=p.old, new_data=p.new)
        for p in plan
    ]


def finish_outcomes(app: Notes, run_id: int | None, outcomes: Sequence[NoteOutcome]) -> None:
    corrected = {
        o.path: o.new_hash for o in outcomes if o.new_hash is not None and o.detail is not None
    }
    finish_run(app, run_id, [(o.path, o.status, o.detail) for o in outcomes], corrected)


# ---------------------------------------------------------------- the journal and the cache


def begin_run(
    app: Notes,
    operation: str,
    arguments: dict[str, Any],
    notes: Sequence[journal.PlannedNote],
    actor: Actor | None = None,
) -> int | None:
    """Journal a run before its first write, with its audit rows (for `actor`, by default
    whoever the edge says is writing); None (and a warning) when the cache cannot be written:
    the write still goes ahead, and the answer says it cannot be undone."""
    who = actor or current_actor()
    if not who.tool:  # an edge that named no tool: the operation says what wrote
        who = Actor(who.kind, who.client_id, who.name, operation)
    try:
        with app.db.begin() as conn:
            return journal.begin_run(conn, operation, arguments, notes, who)
    except SQLAlchemyError as exc:
        gate.warn(
            f"the edit history could not be written ({_reason(exc)}): this change cannot be "
            "undone, and is not finished by a restart if it is interrupted"
        )
        return None


def finish_run(
    app: Notes,
    run_id: int | None,
    outcomes: Sequence[tuple[str, str, str | None]],
    new_hashes: dict[str, str] | None = None,
) -> None:
    if run_id is None:
        return
    try:
        with app.db.begin() as conn:
            journal.finish_run(conn, run_id, outcomes, new_hashes=new_hashes)
    except SQLAlchemyError as exc:
        # The run stays unfinished: the next start settles it by what is on disk.
        log.warning("edit journal not finished", run=run_id, why=_reason(exc))


def sync_safely(sync: CacheSync, expected: Mapping[str, str | None]) -> bool:
    """Bring the cache along; a cache that cannot be written says so without undoing the
    write (the watcher and the indexer's retries catch up)."""
    try:
        return sync(expected)
    except SQLAlchemyError as exc:
        gate.warn(
            f"the note was written, but the cache could not be updated ({_reason(exc)}); it "
            "catches up by itself once it can be written: until then reads may show the "
            "note as it was"
        )
        return False


def sync_outcomes(sync: CacheSync, outcomes: Sequence[NoteOutcome]) -> bool:
    hashes: dict[str, str | None] = {
        o.path: o.new_hash for o in outcomes if o.status == journal.WRITTEN
    }
    return sync_safely(sync, hashes) if hashes else True


def _reason(exc: SQLAlchemyError) -> str:
    return str(getattr(exc, "orig", None) or exc).partition("\n")[0]


# ---------------------------------------------------------------- guarded writes


def guarded_write(
    vault: Vault, path: str, data: bytes, expected: str, *, sync_folder: bool = True
) -> None:
    writer = VaultWriter(vault, on_write=unchanged_check(vault, {path: expected}))
    try:
        writer.write_bytes(path, data, sync_folder=sync_folder)
    except OSError as exc:
        raise NoteWriteError(path, exc) from exc


def unchanged_check(vault: Vault, expected: Mapping[str, str]) -> Callable[[str, str], None]:
    """A writer hook refusing the change when a file no longer hashes as when it was read: it
    runs just before the rename, the last moment a concurrent save can be noticed. The file is
    stat'ed before and after it is hashed, so a save landing during the read is seen too."""

    def check(path: str, _new_hash: str) -> None:
        if path not in expected:
            return
        full = vault.root / path
        try:
            before = _identity(full)
            actual: str | None = sha256(full.read_bytes())
            if _identity(full) != before:
                actual = "changing"
        except FileNotFoundError:
            actual = None
        if (actual or ABSENT) != expected[path]:
            raise NoteChangedError(path, expected[path] or None, actual)

    return check


def _identity(full: Path) -> tuple[int, int, int]:
    st = full.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


# ---------------------------------------------------------------- writes by workflows


@dataclass(frozen=True, slots=True)
class VaultAndCache:
    db: Engine
    vault: Vault


class JournalledWriter(VaultWriter):
    """The `VaultWriter` a workflow writes through: each change a step like the tools' (the
    note's lock, a settled read, the size bound, the journal keeping what it replaced), so a
    workflow's edit is serialised with every other write of the note and can be undone.
    `actor`: who the audit names for its writes (a workflow; by default whoever is writing)."""

    def __init__(
        self,
        notes: Notes,
        operation: str,
        arguments: dict[str, Any],
        on_write: Callable[[str, str], None] | None = None,
        actor: Actor | None = None,
    ) -> None:
        super().__init__(notes.vault, on_write=on_write)
        self._notes = notes
        self._operation = operation
        self._arguments = arguments
        self._actor = actor

    def write_bytes(
        self, path: str, data: bytes, *, create_only: bool = False, sync_folder: bool = True
    ) -> str:
        clean = self.vault.note_path(path)
        check_size(clean, data)
        with hold_notes(self._notes, [clean]):
            old = read_settled(self._notes, clean)
            if create_only and old is not None:
                raise VaultError(f"File already exists: {clean!r}")
            writer = VaultWriter(self.vault, on_write=self._guarded(clean, old))
            return self._journalled(
                clean,
                old,
                data,
                lambda: writer.write_bytes(
                    clean, data, create_only=create_only, sync_folder=sync_folder
                ),
            )

    def _guarded(self, path: str, old: bytes | None) -> Callable[[str, str], None]:
        """The engine's hook, after the check that the note is still as read."""
        check, announce = unchanged_check(self.vault, {path: digest(old)}), self._on_write

        def hook(changed: str, content_hash: str) -> None:
            check(changed, content_hash)
            if announce is not None:
                announce(changed, content_hash)

        return hook

    def delete(self, path: str) -> str:
        return self._remove(path, lambda clean: super(JournalledWriter, self).delete(clean))

    def trash(self, path: str) -> str:
        return self._remove(path, lambda clean: super(JournalledWriter, self).trash(clean))

    def move(self, source: str, destination: str, *, overwrite: bool = False) -> str:
        src = self.vault.note_path(source)
        dst = self.vault.note_path(destination, name_as_given=True)
        with hold_notes(self._notes, [src, dst]):
            moving = _read_or_none(self.vault, src)
            # A rename in case only, where the file system folds case, replaces nothing.
            same = self.vault.names_same_file(src, dst)
            replaced = None if same else _read_or_none(self.vault, dst)
            entries = [
                journal.PlannedNote(src, digest(moving), ABSENT, old_data=moving),
                journal.PlannedNote(dst, digest(replaced), digest(moving), old_data=replaced),
            ]
            arguments = self._arguments | {"from": src, "to": dst}
            run_id = begin_run(self._notes, self._operation, arguments, entries, self._actor)
            try:
                moved = super().move(src, dst, overwrite=overwrite)
            except BaseException as exc:
                finish_run(
                    self._notes,
                    run_id,
                    [(src, journal.FAILED, str(exc)), (dst, journal.FAILED, str(exc))],
                )
                raise
            finish_run(
                self._notes, run_id, [(src, journal.WRITTEN, None), (dst, journal.WRITTEN, None)]
            )
            return moved

    def _remove(self, path: str, remove: Callable[[str], str]) -> str:
        clean = self.vault.note_path(path)
        with hold_notes(self._notes, [clean]):
            old = _read_or_none(self.vault, clean)
            return self._journalled(clean, old, None, lambda: remove(clean))

    def _journalled(
        self, path: str, old: bytes | None, new: bytes | None, write: Callable[[], str]
    ) -> str:
        planned = journal.PlannedNote(path, digest(old), digest(new), old_data=old)
        run_id = begin_run(self._notes, self._operation, self._arguments, [planned], self._actor)
        try:
            result = write()
        except BaseException as exc:
            finish_run(self._notes, run_id, [(path, journal.FAILED, str(exc))])
            raise
        finish_run(self._notes, run_id, [(path, journal.WRITTEN, None)])
        return result
