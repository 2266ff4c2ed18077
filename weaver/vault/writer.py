"""Safe writes to the vault: confined to its notes, atomic, and announced before they land.

Every path goes through `Vault.check_note_path` (no absolute paths, no `..`, no hidden or ignored
folders, markdown notes only), and the folder it lands in must resolve inside the vault, so a
symlinked folder cannot lead a write outside; a note that is itself a symlink is refused rather
than silently replaced by a plain file.

A write goes to a hidden temp file in the target's own folder (same file system, and ignored by
the watcher), is flushed and fsynced, then `os.replace`d over the note: a reader (Obsidian, the
indexer) sees the old bytes or the new ones, never half. `on_write(path, sha256)` is called
before the file changes (`DELETED` for a removal): the workflow engine records there what it is
about to write, so the file event it causes is recognised as its own even in another process.
A hook that raises stops the change (a write's temp file is removed): `weaver.edits.notes` uses that
to refuse a write when the note changed on disk meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from itertools import count
from pathlib import Path

from weaver.errors import InvalidPathError, NoteNotFoundError, VaultError
from weaver.file_replace import replace_file
from weaver.vault.fs import Vault, listed_names

# What `on_write` receives as the content hash of a note that was deleted.
DELETED = ""
NEW_FILE_MODE = 0o644
# Obsidian's own trash folder ("Move to Obsidian trash"): hidden, so never indexed.
TRASH_FOLDER = ".trash"

WriteHook = Callable[[str, str], None]


class VaultWriter:
    """Writes notes of one vault; `on_write` hears of each change just before it happens."""

    def __init__(self, vault: Vault, on_write: WriteHook | None = None) -> None:
        self.vault = vault
        self._on_write = on_write

    def read_text(self, path: str) -> str:
        return self.vault.note_file(path).read_text(encoding="utf-8")

    def exists(self, path: str) -> bool:
        return self._target(path)[1].exists()

    def write_text(self, path: str, text: str, *, create_only: bool = False) -> str:
        """Create or replace a note with `text` (UTF-8); returns its clean vault path."""
        return self.write_bytes(path, text.encode("utf-8"), create_only=create_only)

    def write_bytes(
        self, path: str, data: bytes, *, create_only: bool = False, sync_folder: bool = True
    ) -> str:
        """Create or replace a note. `sync_folder=False` leaves the rename's durability to a
        later `sync_folders` (one fsync per folder for a batch of writes)."""
        clean, full = self._target(path)
        if create_only and full.exists():
            raise VaultError(f"File already exists: {clean!r}")
        self._make_folder(clean, full.parent)
        self._atomic_write(clean, full, data, sync_folder)
        return clean

    def delete(self, path: str) -> str:
        clean, full = self._target(path)
        if not full.is_file():
            raise NoteNotFoundError(clean)
        self._announce(clean, DELETED)
        full.unlink()
        return clean

    def trash(self, path: str) -> str:
        """Move a note into the vault's `.trash/`, under the folders it was in, never over an
        earlier trashed file (`Note.md`, then `Note 1.md`, ...); returns its trash path."""
        clean, full = self._target(path)
        if not full.is_file():
            raise NoteNotFoundError(clean)
        folder = clean.rpartition("/")[0]
        trash_clean = f"{TRASH_FOLDER}/{folder}" if folder else TRASH_FOLDER
        trash_dir = self.vault.root / trash_clean
        if not self._real(_deepest_existing(trash_dir)):
            raise InvalidPathError(trash_clean, "leads outside the vault")
        self._make_folder(trash_clean, trash_dir)
        self._announce(clean, DELETED)
        for n in count():
            name = full.name if n == 0 else f"{full.stem} {n}{full.suffix}"
            if _rename_no_replace(full, trash_dir / name):
                _fsync_folder(trash_dir)
                return f"{trash_clean}/{name}"
        raise AssertionError("unreachable")  # pragma: no cover

    def move(self, source: str, destination: str, *, overwrite: bool = False) -> str:
        """Rename a note (creating folders as needed); returns the destination's clean path.

        Where the file system folds case, `Note.md` to `note.md` is the one file renamed: its
        destination "exists" (it is the source), which is no collision."""
        src_clean, src_full = self._target(source)
        dst_clean, dst_full = self._target(destination, name_as_given=True)
        if not src_full.is_file():
            raise NoteNotFoundError(src_clean)
        recased = self.vault.names_same_file(src_clean, dst_clean)
        if dst_full.exists() and not overwrite and not recased:
            raise VaultError(f"File already exists: {dst_clean!r}")
        self._make_folder(dst_clean, dst_full.parent)
        self._announce(dst_clean, _sha256(src_full.read_bytes()))
        self._announce(src_clean, DELETED)
        replace_file(src_full, dst_full)
        if recased and src_full.name in listed_names(src_full.parent):
            _rename_through_temp(src_full, dst_full)
        _fsync_folder(dst_full.parent)
        return dst_clean

    def _target(self, path: str, *, name_as_given: bool = False) -> tuple[str, Path]:
        clean = self.vault.note_path(path, name_as_given=name_as_given)
        full = self.vault.root / clean
        if full.is_symlink():
            raise InvalidPathError(path, "is a symlink")
        if not self._real(_deepest_existing(full.parent)):
            raise InvalidPathError(path, "leads outside the vault or through a symlinked folder")
        return clean, full

    def _make_folder(self, clean: str, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if not self._real(folder):
            raise InvalidPathError(clean, "leads outside the vault or through a symlinked folder")

    def sync_folders(self, paths: Iterable[str]) -> None:
        """Make the renames of notes written with `sync_folder=False` durable."""
        for folder in sorted({path.rpartition("/")[0] for path in paths}):
            _fsync_folder(self.vault.root / folder)

    def _atomic_write(self, clean: str, full: Path, data: bytes, sync_folder: bool) -> None:
        try:
            mode = stat.S_IMODE(full.stat().st_mode)
        except FileNotFoundError:
            mode = NEW_FILE_MODE
        handle, temp_name = tempfile.mkstemp(
            prefix=f".{full.name}.", suffix=".weaver-tmp", dir=full.parent
        )
        temp = Path(temp_name)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            temp.chmod(mode)
            self._announce(clean, _sha256(data))
            replace_file(temp, full)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        if sync_folder:
            _fsync_folder(full.parent)

    def _announce(self, clean: str, content_hash: str) -> None:
        if self._on_write is not None:
            self._on_write(clean, content_hash)

    def _real(self, folder: Path) -> bool:
        """An existing folder of the vault reached without a symlink (`Vault.within`'s rule:
        a symlinked folder is never part of the vault, wherever it points)."""
        return folder.resolve() == folder and self._inside(folder)

    def _inside(self, resolved: Path) -> bool:
        root = self.vault.root
        return resolved == root or root in resolved.parents


def _sha256(data: bytes) -> str:
    """The same digest the indexer stores as a note's `content_hash`."""
    return hashlib.sha256(data).hexdigest()


def _rename_no_replace(source: Path, destination: Path) -> bool:
    """Rename unless `destination` exists (False then). A hard link fails atomically on an
    existing name; where links are not supported, check first and rename."""
    try:
        os.link(source, destination)
    except FileExistsError:
        return False
    except OSError:
        if destination.exists():
            return False
        source.rename(destination)
        return True
    source.unlink()
    return True


def _rename_through_temp(source: Path, destination: Path) -> None:
    """A rename in case only that left the old name (Linux's casefolded ext4 and vfat find
    the destination to be the source, and do nothing): through a hidden name in between,
    which the watcher and the scan ignore. Should the second rename fail, the first is
    undone, so the note is never left under the hidden name."""
    temp = destination.with_name(f".{destination.name}.weaver-recase")
    source.rename(temp)
    try:
        temp.rename(destination)
    except BaseException:
        temp.rename(source)
        raise
    # A destination that still names the file (a hard link, on a file system that keeps
    # case apart) made that rename a no-op too: the hidden name goes, the note stays.
    if temp.exists():
        temp.unlink()


def _deepest_existing(folder: Path) -> Path:
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable; some platforms cannot open a folder, which is fine."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
