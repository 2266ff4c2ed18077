"""Changing notes: create, update, move (rewriting every link to it), delete to `.trash/`.

The core behind the write tools; a CLI can call the same functions. Each change is one step of
`weaver.edits.steps` (the note locked across processes, its hash checked, the write journalled
and atomic, the cache brought along before the function returns, so a read right after sees
it): `sync_cache` applies the touched paths with the indexer when this process may write the
cache, else waits (with a timeout) until the process that does shows the new content hashes.

A write never overwrites what it did not see. `update_note` with `expected_hash` refuses when
the note's bytes on disk hash otherwise, and every write checks again just before its rename
that the file is still the one read, so an edit saved in the editor meanwhile is never lost:
the write is refused with `NoteChangedError` and nothing changes. A move is journalled with
every link it rewrites, so a move killed midway is finished at the next start
(`weaver.edits.interrupted`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from weaver.cache import graph as cache_graph
from weaver.cache import journal, write
from weaver.cache import read as cache_read
from weaver.canvas.document import read_canvas, write_canvas
from weaver.canvas.relink import relink_canvas
from weaver.edits import gate
from weaver.edits.canvases import files_for
from weaver.edits.steps import ABSENT as ABSENT
from weaver.edits.steps import BOM as BOM
from weaver.edits.steps import CacheSync as CacheSync
from weaver.edits.steps import NoteChangedError as NoteChangedError
from weaver.edits.steps import NoteEditError as NoteEditError
from weaver.edits.steps import (
    NoteOutcome,
    Notes,
    Planned,
    begin_run,
    check_size,
    finish_outcomes,
    finish_run,
    hold_notes,
    sync_safely,
    unchanged_check,
    write_note,
    write_planned,
)
from weaver.edits.steps import NoteWriteError as NoteWriteError
from weaver.edits.steps import guarded_write as guarded_write
from weaver.edits.steps import sha256 as sha256
from weaver.errors import InvalidCanvasError, NoteDecodeError, NoteNotFoundError, VaultError
from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patterns import is_valid_tag
from weaver.markdown.relink import Move, rewrite_links
from weaver.markdown.resolver import LinkResolver, path_key
from weaver.vault.fs import Vault, is_canvas_path
from weaver.vault.writer import VaultWriter

MOVE_FILE = "move_file"
_YAML = ObsidianYAMLHandler()


@dataclass(frozen=True, slots=True)
class Written:
    path: str
    content_hash: str
    size: int
    changed: bool  # False: the note already had exactly this content
    cache_synced: bool


@dataclass(frozen=True, slots=True)
class Moved:
    path: str
    old_path: str
    content_hash: str
    rewritten: dict[str, int]  # note (as it is now) -> links rewritten in it
    failed: tuple[str, ...]  # notes that kept changing or could not be written: not rewritten
    cache_synced: bool


@dataclass(frozen=True, slots=True)
class Trashed:
    path: str
    trash_path: str
    cache_synced: bool


@dataclass(frozen=True, slots=True)
class MovePreview:
    """What `move_note` would do now: the paths, and the links it would rewrite in each other
    note (or canvas) linking to the moved one."""

    path: str
    new_path: str
    rewrites: dict[str, int]  # note -> links that would be rewritten in it


@dataclass(frozen=True, slots=True)
class DeletePreview:
    """What `delete_note` would do now: the note to the trash, the notes whose links to it
    would break."""

    path: str
    linked_from: tuple[str, ...]


# ---------------------------------------------------------------- composing text


def compose_note(
    current: str | None,
    content: str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
) -> str:
    """The new text of a note. Pure.

    `content` replaces the text: if it has a frontmatter block of its own, entirely; otherwise
    the body only, keeping the current block byte for byte. `frontmatter` then patches the
    block (keys merged, a None value deletes the key) and `tags` sets its `tags` list (inline
    #tags in the body stay). Only a patched block is written anew (as YAML, comments dropped).
    """
    text = current or ""
    if content is not None:
        text = content if _YAML.detect(content) else _block(text) + content
    if frontmatter is None and tags is None:
        return text
    data, body = _split(text)
    for key, value in (frontmatter or {}).items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    if tags is not None:
        key = next((k for k in data if k.casefold() == "tags"), "tags")
        clean = clean_tags(tags)
        if clean:
            data[key] = clean
        else:
            data.pop(key, None)
    if not data:
        return body
    dumped = yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000
    )
    return f"---\n{dumped}---\n{body}"


def clean_tags(tags: Sequence[str]) -> list[str]:
    """Tags without '#', first spelling kept; raises NoteEditError for one Obsidian rejects."""
    seen: dict[str, str] = {}
    for tag in tags:
        clean = tag.strip().removeprefix("#")
        if not is_valid_tag(clean):
            raise NoteEditError(f"{tag!r} is not a valid tag (no spaces or punctuation but _ - /)")
        seen.setdefault(clean.casefold(), clean)
    return list(seen.values())


def _block(text: str) -> str:
    """The frontmatter block of `text` as written (closing line included), or ""."""
    if not _YAML.detect(text):
        return ""
    _, body = _YAML.split(text)
    return text[: len(text) - len(body)]


def _split(text: str) -> tuple[dict[str, Any], str]:
    if not _YAML.detect(text):
        return {}, text
    source, body = _YAML.split(text)
    try:
        data = _YAML.load(source)
    except Exception as exc:  # YAML errors, alias bombs: the block cannot be patched
        raise NoteEditError(f"the note's frontmatter is not valid YAML ({exc})") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise NoteEditError("the note's frontmatter is not a mapping of keys to values")
    return data, body


# ---------------------------------------------------------------- the four changes


def create_note(
    app: Notes,
    path: str,
    content: str,
    frontmatter: Mapping[str, Any] | None,
    tags: Sequence[str] | None,
    sync: CacheSync,
) -> Written:
    """Write a new note; fails (VaultError "File already exists") if there is one."""
    data = compose_note(None, content, frontmatter, tags).encode("utf-8")

    def create(old: bytes | None) -> bytes:
        if old is not None:
            raise VaultError(f"File already exists: {app.vault.check_note_path(path)!r}")
        return data

    change = write_note(
        app, path, create, operation="create_file", arguments={}, expected_hash=None, sync=sync
    )
    return Written(change.path, change.content_hash, len(data), True, change.cache_synced)


def update_note(
    app: Notes,
    path: str,
    *,
    content: str | None = None,
    frontmatter: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    expected_hash: str | None = None,
    sync: CacheSync,
) -> Written:
    """Replace content, patch frontmatter and/or set tags (see `compose_note`)."""
    if content is None and frontmatter is None and tags is None:
        raise NoteEditError("nothing to change: give content, frontmatter or tags")
    clean = app.vault.note_path(path)

    def update(data: bytes | None) -> bytes:
        if data is None:
            app.vault.note_file(clean)  # raises NoteNotFoundError, with the hint's path
            raise NoteChangedError(clean, expected_hash, None)
        try:
            text = data.removeprefix(BOM).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NoteDecodeError(clean, f"invalid byte at offset {exc.start}") from None
        new = compose_note(text, content, frontmatter, tags).encode("utf-8")
        return BOM + new if data.startswith(BOM) else new

    change = write_note(
        app,
        clean,
        update,
        operation="update_file",
        arguments={},
        expected_hash=expected_hash,
        sync=sync,
    )
    new = change.new or b""
    return Written(clean, change.content_hash, len(new), change.changed, change.cache_synced)


def move_note(app: Notes, path: str, new_path: str, sync: CacheSync) -> Moved:
    """Rename or move a note and rewrite every link across the vault that pointed to it.

    `new_path` ending in '/' is a folder: the note keeps its file name. Every linking note is
    read and rewritten in memory first (see `weaver.markdown.relink`) and the whole plan is
    journalled; then the file is renamed and each linking note written, a note edited
    meanwhile computed again from what it holds (listed in `failed` if it keeps changing).
    """
    source, target = _move_paths(app, path, new_path)
    with hold_notes(app, [source, target]):
        moving = app.vault.read_note(source)
        # Where the file system folds case, `a.md` finds `A.md`: renaming one to the other
        # is no collision.
        if (app.vault.root / target).exists() and not app.vault.names_same_file(source, target):
            raise VaultError(f"File already exists: {target!r}")
        move, linking = _plan_move(app, source, target)
        own = _rewritten(move, source, moving)
        plan = _plan_rewrites(app, linking - {source}, move)
        gate.commit_point()
        run_id = begin_run(
            app,
            MOVE_FILE,
            {"from": source, "to": target},
            _move_entries(source, target, moving, own, plan),
        )
        _rename(app, run_id, source, target, moving)
        outcomes = [NoteOutcome(source, journal.WRITTEN, None, None)]
        outcomes.append(_rewrite_own(app.vault, target, moving, own))
    # A canvas showing the note is written through the canvases' vault (`files_for`).
    outcomes += [write_planned(files_for(app, p.path), p, replan=_relinker(move)) for p in plan]
    finish_outcomes(app, run_id, outcomes)
    hashes: dict[str, str | None] = {source: None}
    hashes |= {o.path: o.new_hash for o in outcomes[1:] if o.status == journal.WRITTEN}
    counts = {p.path: _count_links(move, p.path, p.old) for p in plan}
    if own is not None:
        counts[target] = _count_links(move, source, moving)
    written = {o.path for o in outcomes[1:] if o.status == journal.WRITTEN}
    rewritten = {p: n for p, n in counts.items() if p in written and n}
    failed = tuple(o.path for o in outcomes[1:] if o.status != journal.WRITTEN and o.path in counts)
    synced = sync_safely(sync, hashes)
    return Moved(target, source, hashes.get(target) or sha256(moving), rewritten, failed, synced)


def preview_move(app: Notes, path: str, new_path: str) -> MovePreview:
    """`move_note`'s plan without its writes (no lock, no journal): the rewrites it would make
    if called now, for a person to confirm first. Raises what `move_note` would for a bad or
    missing path or an occupied destination."""
    source, target = _move_paths(app, path, new_path)
    app.vault.note_file(source)  # NoteNotFoundError, as the move would raise
    if (app.vault.root / target).exists() and not app.vault.names_same_file(source, target):
        raise VaultError(f"File already exists: {target!r}")
    move, linking = _plan_move(app, source, target)
    plan = _plan_rewrites(app, linking - {source}, move)
    return MovePreview(source, target, {p.path: _count_links(move, p.path, p.old) for p in plan})


def preview_delete(app: Notes, path: str) -> DeletePreview:
    """What `delete_note` would do if called now (see `DeletePreview`)."""
    clean = app.vault.note_path(path)
    app.vault.note_file(clean)  # NoteNotFoundError, as the deletion would raise
    with app.db.connect() as conn:
        linking = cache_read.notes_linking_to(conn, clean)
    return DeletePreview(clean, tuple(sorted(linking - {clean})))


def _move_paths(app: Notes, path: str, new_path: str) -> tuple[str, str]:
    """The source and target of a move, as `move_note` reads its arguments."""
    source = app.vault.note_path(path)
    if new_path.replace("\\", "/").endswith("/"):
        new_path += source.rsplit("/", 1)[-1]
    target = app.vault.note_path(new_path, name_as_given=True)
    if target == source:
        raise NoteEditError(f"{source!r} is already at that path")
    return source, target


def _plan_move(app: Notes, source: str, target: str) -> tuple[Move, set[str]]:
    with app.db.connect() as conn:
        paths = set(write.load_all_paths(conn)) | {source}
        linking = cache_graph.move_sources(conn, source, path_key(target))
    after = LinkResolver(paths)
    after.remove(source)
    after.add(target)
    return Move(source, target, LinkResolver(paths), after), set(linking)


def _rewritten(move: Move, note: str, data: bytes) -> bytes | None:
    """The note's (or canvas's) bytes with its links to the moved note rewritten; None when
    none needed it (or it is not text)."""
    if is_canvas_path(note):
        return _rewritten_canvas(move, note, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    new_text, count = rewrite_links(text, note, move)
    if count == 0:
        return None
    new = new_text.encode("utf-8")
    check_size(note, new)
    return new


def _rewritten_canvas(move: Move, path: str, data: bytes) -> bytes | None:
    """A canvas's bytes with its cards retargeted (`canvas.relink`); None when no card needed
    it, or the file is not a canvas the app could show (never written over)."""
    try:
        relinked, count = relink_canvas(read_canvas(data, path), path, move)
    except InvalidCanvasError:
        return None
    if count == 0:
        return None
    new = write_canvas(relinked)
    check_size(path, new)
    return new


def _count_links(move: Move, note: str, data: bytes) -> int:
    if is_canvas_path(note):
        try:
            return relink_canvas(read_canvas(data, note), note, move)[1]
        except InvalidCanvasError:
            return 0
    return rewrite_links(data.decode("utf-8", "replace"), note, move)[1]


def _plan_rewrites(app: Notes, linking: set[str], move: Move) -> list[Planned]:
    plan = []
    for note in sorted(linking):
        try:
            data = files_for(app, note).vault.read_note(note)
        except (VaultError, OSError):
            continue  # gone, or unreadable: it holds no link the cache can rewrite
        new = _rewritten(move, note, data)
        if new is not None:
            plan.append(Planned(note, data, new))
    return plan


def _relinker(move: Move) -> Any:
    def replan(note: str, data: bytes) -> bytes | None:
        return _rewritten(move, note, data)

    return replan


def _move_entries(
    source: str, target: str, moving: bytes, own: bytes | None, plan: Sequence[Planned]
) -> list[journal.PlannedNote]:
    """The source goes; the target holds the moved bytes (its own links rewritten, when it
    links to itself); every linking note gets its planned text."""
    moved = sha256(moving)
    entries = [
        journal.PlannedNote(source, moved, ABSENT),
        journal.PlannedNote(
            target,
            moved,
            sha256(own) if own is not None else moved,
            old_data=moving if own is not None else None,
            new_data=own,
        ),
    ]
    entries += [
        journal.PlannedNote(p.path, sha256(p.old), sha256(p.new), old_data=p.old, new_data=p.new)
        for p in plan
    ]
    return entries


def _rename(app: Notes, run_id: int | None, source: str, target: str, moving: bytes) -> None:
    writer = VaultWriter(app.vault, on_write=unchanged_check(app.vault, {source: sha256(moving)}))
    try:
        writer.move(source, target)
    except (VaultError, OSError) as exc:
        error = exc if isinstance(exc, VaultError) else NoteWriteError(source, exc)
        status = journal.SKIPPED if isinstance(exc, NoteChangedError) else journal.FAILED
        finish_run(app, run_id, [(source, status, str(error)), (target, status, str(error))])
        raise error from None


def _rewrite_own(vault: Vault, target: str, moving: bytes, own: bytes | None) -> NoteOutcome:
    if own is None:
        return NoteOutcome(target, journal.WRITTEN, None, sha256(moving))
    try:
        guarded_write(vault, target, own, sha256(moving))
    except VaultError as exc:
        return NoteOutcome(target, journal.FAILED, str(exc), None)
    return NoteOutcome(target, journal.WRITTEN, None, sha256(own))


def delete_note(app: Notes, path: str, sync: CacheSync) -> Trashed:
    """Move a note to the vault's `.trash/` (recoverable). A missing note is an error, as for
    every other call on a path: a misspelt path must not read as a done deletion."""
    clean = app.vault.note_path(path)

    def trash(old: bytes | None) -> None:
        if old is None:  # checked under the note's lock: it was not there
            raise NoteNotFoundError(clean)

    change = write_note(app, clean, trash, operation="delete_file", arguments={}, sync=sync)
    assert change.trash_path is not None  # a note that was there went to the trash
    return Trashed(change.path, change.trash_path, change.cache_synced)
