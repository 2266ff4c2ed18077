"""Changing notes: create, update, move (rewriting every link to it), delete to `.trash/`.

The core behind the write tools; a CLI can call the same functions. Every change goes through
`VaultWriter` (vault-confined paths, temp file + fsync + rename), and the cache is brought up to
date by `sync` before a function returns, so a read right after sees the change:
`sync_cache` applies the touched paths with the indexer when this process may write the cache,
else waits (with a timeout) until the process that does shows the new content hashes.

A write never overwrites what it did not see. `update_note` with `expected_hash` refuses when
the note's bytes on disk hash otherwise, and every write checks again just before its rename
(through the writer's hook) that the file is still the one read, so an edit saved in the editor
meanwhile is never lost: the write is refused with `NoteChangedError` and nothing changes.

    VaultError (weaver.errors)
    ├── NoteChangedError   the note on disk is not the version the caller expected
    ├── NoteEditError      the change cannot be made (bad tag, unparsable frontmatter)
    └── NoteWriteError     the file system refused (permissions, disk full)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from weaver.cache import graph as cache_graph
from weaver.cache import write
from weaver.errors import NoteDecodeError, VaultError
from weaver.host.app import App
from weaver.host.locks import writer_lock_for
from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patterns import is_valid_tag
from weaver.markdown.relink import Move, rewrite_links
from weaver.markdown.resolver import LinkResolver, path_key
from weaver.vault.fs import Vault
from weaver.vault.writer import VaultWriter

BOM = b"\xef\xbb\xbf"
SYNC_TIMEOUT_S = 5.0
SYNC_POLL_S = 0.05
REWRITE_ATTEMPTS = 3
_YAML = ObsidianYAMLHandler()

# Brings the cache in step with {path: content hash, or None when the note is gone}; returns
# False when it could not be confirmed in time.
CacheSync = Callable[[Mapping[str, str | None]], bool]


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
    trash_path: str | None  # None: there was no such note
    cache_synced: bool


def sha256(data: bytes) -> str:
    """A note's content hash, as the indexer stores it and `get_file` reports it."""
    return hashlib.sha256(data).hexdigest()


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
    app: App,
    path: str,
    content: str,
    frontmatter: Mapping[str, Any] | None,
    tags: Sequence[str] | None,
    sync: CacheSync,
) -> Written:
    """Write a new note; fails (VaultError "File already exists") if there is one."""
    data = compose_note(None, content, frontmatter, tags).encode("utf-8")
    writer = VaultWriter(app.vault)
    try:
        clean = writer.write_bytes(path, data, create_only=True)
    except OSError as exc:
        raise NoteWriteError(path, exc) from exc
    digest = sha256(data)
    return Written(clean, digest, len(data), True, sync({clean: digest}))


def update_note(
    app: App,
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
    clean = app.vault.check_note_path(path)
    data = app.vault.read_note(clean)
    actual = sha256(data)
    if expected_hash is not None and expected_hash.strip().lower() != actual:
        raise NoteChangedError(clean, expected_hash, actual)
    try:
        text = data.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteDecodeError(clean, f"invalid byte at offset {exc.start}") from None
    new = compose_note(text, content, frontmatter, tags).encode("utf-8")
    if data.startswith(BOM):
        new = BOM + new
    if new != data:
        guarded_write(app.vault, clean, new, expected=actual)
    digest = sha256(new)
    return Written(clean, digest, len(new), new != data, sync({clean: digest}))


def move_note(app: App, path: str, new_path: str, sync: CacheSync) -> Moved:
    """Rename or move a note and rewrite every link across the vault that pointed to it.

    `new_path` ending in '/' is a folder: the note keeps its file name. The file is renamed
    first, then each linking note is rewritten (see `weaver.markdown.relink`); a note edited
    meanwhile is read again, and listed in `failed` if it keeps changing.
    """
    source = app.vault.check_note_path(path)
    if new_path.replace("\\", "/").endswith("/"):
        new_path += source.rsplit("/", 1)[-1]
    target = app.vault.check_note_path(new_path)
    if target == source:
        raise NoteEditError(f"{source!r} is already at that path")
    moving = app.vault.read_note(source)
    with app.db.connect() as conn:
        paths = set(write.load_all_paths(conn)) | {source}
        linking = cache_graph.move_sources(conn, source, path_key(target))
    after = LinkResolver(paths)
    after.remove(source)
    after.add(target)
    move = Move(source, target, LinkResolver(paths), after)
    writer = VaultWriter(app.vault, on_write=_unchanged_check(app.vault, {source: sha256(moving)}))
    try:
        writer.move(source, target)
    except OSError as exc:
        raise NoteWriteError(source, exc) from exc
    hashes: dict[str, str | None] = {source: None, target: sha256(moving)}
    rewritten: dict[str, int] = {}
    failed: list[str] = []
    for note in sorted(linking | {source}):
        on_disk = target if note == source else note
        try:
            result = _rewrite_file(app.vault, on_disk, note, move)
        except (VaultError, OSError):
            failed.append(on_disk)
            continue
        if result is not None:
            hashes[on_disk], rewritten[on_disk] = result
    return Moved(target, source, hashes[target] or "", rewritten, tuple(failed), sync(hashes))


def delete_note(app: App, path: str, sync: CacheSync) -> Trashed:
    """Move a note to the vault's `.trash/` (recoverable); a missing note is no error."""
    clean = app.vault.check_note_path(path)
    if not (app.vault.root / clean).is_file():
        return Trashed(clean, None, True)
    try:
        trash_path = VaultWriter(app.vault).trash(clean)
    except OSError as exc:
        raise NoteWriteError(clean, exc) from exc
    return Trashed(clean, trash_path, sync({clean: None}))


def _rewrite_file(vault: Vault, on_disk: str, note: str, move: Move) -> tuple[str, int] | None:
    """Rewrite the links of the file at `on_disk` (the note `note` before the move): its new
    hash and the count, or None when no link needed it. Raises NoteChangedError when the file
    changed under every attempt."""
    for _ in range(REWRITE_ATTEMPTS):
        try:
            data = (vault.root / on_disk).read_bytes()
            text = data.decode("utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return None  # gone meanwhile, or not text: it holds no link the cache knows
        new_text, count = rewrite_links(text, note, move)
        if count == 0:
            return None
        new = new_text.encode("utf-8")
        try:
            guarded_write(vault, on_disk, new, expected=sha256(data))
        except NoteChangedError:
            continue
        return sha256(new), count
    raise NoteChangedError(on_disk, None, None)


def guarded_write(
    vault: Vault, path: str, data: bytes, expected: str, *, sync_folder: bool = True
) -> None:
    writer = VaultWriter(vault, on_write=_unchanged_check(vault, {path: expected}))
    try:
        writer.write_bytes(path, data, sync_folder=sync_folder)
    except OSError as exc:
        raise NoteWriteError(path, exc) from exc


def _unchanged_check(vault: Vault, expected: Mapping[str, str]) -> Callable[[str, str], None]:
    """A writer hook refusing the change when a file no longer hashes as when it was read: it
    runs just before the rename, the last moment a concurrent save can be noticed."""

    def check(path: str, _new_hash: str) -> None:
        if path not in expected:
            return
        try:
            actual: str | None = sha256((vault.root / path).read_bytes())
        except FileNotFoundError:
            actual = None
        if actual != expected[path]:
            raise NoteChangedError(path, expected[path], actual)

    return check


# ---------------------------------------------------------------- keeping the cache in step


def sync_cache(
    app: App,
    expected: Mapping[str, str | None],
    *,
    holds_writer: bool,
    timeout: float = SYNC_TIMEOUT_S,
) -> bool:
    """Bring these paths into the cache now if this process may write it (it holds the writer
    lock, or takes it for the moment), else wait for the writer to show `expected`."""
    if holds_writer:
        app.indexer.apply_paths_together(expected)
        return True
    lock = writer_lock_for(app.settings)
    try:
        if lock.try_acquire():
            app.indexer.apply_paths(expected)
            return True
    finally:
        lock.close()
    return wait_for_cache(app, expected, timeout)


def wait_for_cache(app: App, expected: Mapping[str, str | None], timeout: float) -> bool:
    """Poll until the cache holds each path with its expected hash (None: absent)."""
    deadline = time.monotonic() + timeout
    paths = list(expected)
    while True:
        with app.db.connect() as conn:
            current = cache_graph.note_hashes(conn, paths)
        if all(current.get(path) == digest for path, digest in expected.items()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(SYNC_POLL_S)
