"""The vault on disk: which files belong to it, reading them, and keeping paths inside it.

Every path that crosses this module's boundary is vault-relative and `/`-separated, as the cache
stores it. Not part of the vault: files and folders whose name starts with `.` (`.obsidian`,
`.git`, `.trash`, Weaver's own `.weaver`), anything matching an ignore pattern from config, a
file or folder whose name is not valid UTF-8 (logged and left out until renamed).

Symlinks, one rule for the scan, the watcher, every tool and the writer (`Vault.within`): a
symlinked *folder* is never entered, wherever it points, so no path below one is part of the
vault (the watcher's changes below one are dropped here); a symlinked *file* is part of the
vault under its own name when its target is a file inside the vault, and never when it leads
out. Why: docs/architecture.md, "vault/fs.py".

Case: a vault on a file system that folds case (macOS's and Windows's defaults) finds `Note.md`
under `note.md` too, so a path that reaches the disk is first spelled as its folder lists it
(`Vault.spelled`): the cache then keys a note by the one name Obsidian shows, whichever
spelling a watcher event, a client or a link used.
"""

from __future__ import annotations

import copy
import errno
import os
import stat
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

import structlog

from weaver.errors import InvalidPathError, NoFilesError, NoteNotFoundError, NoteTooLargeError

log = structlog.get_logger(__name__)

NOTE_SUFFIX = ".md"
# Far beyond any note a person writes (a long daily log is a few MB; a 20 MB note is indexed
# in full), and small enough that a stray dump or export named `.md` cannot exhaust memory
# while it is parsed, indexed or sent to a client: bigger files are listed, with an error,
# but never read.
MAX_NOTE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileKind:
    """The files a `Vault` takes by path from a client: their suffix, and what an error calls
    one that has another."""

    suffix: str
    name: str


NOTES = FileKind(NOTE_SUFFIX, "a markdown note")
CANVASES = FileKind(".canvas", "a canvas (.canvas)")
BASES = FileKind(".base", "a base (.base)")
# Any file name passes the suffix check; `Vault.attachment_file` refuses notes itself.
ATTACHMENTS = FileKind("", "an attachment")


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a directory walk learns about one file without reading it."""

    path: str
    size: int
    mtime_ns: int
    created_ns: int

    @property
    def is_note(self) -> bool:
        return is_note_path(self.path)

    @property
    def is_indexed(self) -> bool:
        return is_indexed_path(self.path)


def is_note_path(path: str) -> bool:
    return path.lower().endswith(NOTE_SUFFIX)


def is_canvas_path(path: str) -> bool:
    return path.lower().endswith(CANVASES.suffix)


def is_indexed_path(path: str) -> bool:
    """Whether the indexer reads the file (a note or a canvas), rather than only listing it
    as an attachment that links can resolve to."""
    return is_note_path(path) or is_canvas_path(path)


def is_utf8(name: str) -> bool:
    r"""False for a name the file system gave with bytes that are not UTF-8, which Python keeps
    as lone surrogates (`b"caf\xe9.md"` from a Latin-1 system is `"caf\udce9.md"`)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def split_path(path: str) -> tuple[str, str]:
    """`a/b/c.md` -> (`a/b`, `c.md`); a note at the root has folder ``""``."""
    folder, _, name = path.rpartition("/")
    return folder, name


def path_folder(path: str | None) -> str | None:
    """A vault path's folder with its trailing "/" (`a/b/` for `a/b/c.md`), as the Tasks plugin
    names folders; None at the root. Also a SQL function of the cache (`weaver.cache.db`)."""
    if path is None:
        return None
    cut = path.rfind("/")  # not split_path: called for every task of a grouped query
    return path[: cut + 1] if cut >= 0 else None


def path_name(path: str | None) -> str | None:
    """A vault path's file name (`c.md` for `a/b/c.md`); also a SQL function of the cache."""
    return None if path is None else path[path.rfind("/") + 1 :]


class Vault:
    """A vault root plus the rules that decide which files under it are part of it."""

    has_files = True  # False for a reader's `CacheOnlyVault`

    def __init__(
        self, root: Path, ignore: Sequence[str] = (), folds_case: bool | None = None
    ) -> None:
        """`folds_case`: whether the vault's file system finds a name in any case; None
        finds out from the vault's own entries (`detect_folding`)."""
        self.root = root.resolve()
        self.ignore = tuple(ignore)
        self.kind = NOTES  # the files `check_note_path` and what builds on it take
        self._root_prefix = str(self.root) + os.sep  # for reads without building a Path
        self._loops_told: set[str] = set()  # symlink loops already warned of, once each
        self._folds_case = folds_case

    @property
    def folds_case(self) -> bool:
        """Whether the vault's file system finds `Note.md` under `note.md` too. Known once an
        entry of the root has a letter in its name; until then, as if it did (a nearly empty
        vault is cheap to look at that way)."""
        if self._folds_case is None:
            found = detect_folding(self.root)
            if found is None:
                return True
            self._folds_case = found
        return self._folds_case

    def spelled(self, path: str) -> str:
        """`path` with each part that exists spelled as its folder lists it, where the file
        system folds case (the name Obsidian shows; `note.md` finds `Note.md`); as given
        elsewhere, and from the first part that does not exist."""
        if not path or not self.folds_case:
            return path
        parts = path.split("/")
        folder = self.root
        for i, part in enumerate(parts):
            listed = _listed_name(folder, part)
            if listed is None:
                break
            parts[i] = listed
            folder = folder / listed
        return "/".join(parts)

    def names_same_file(self, path: str, other: str) -> bool:
        """Whether two spellings of a path are one existing file: only where the file system
        folds case, and only for names that differ in nothing else (a hard link is two names
        of one file too, yet moving one over the other is no rename)."""
        if not self.folds_case or _fold(path) != _fold(other):
            return False
        try:
            return (self.root / path).samefile(self.root / other)
        except OSError:
            return False

    def of_kind(self, kind: FileKind) -> Vault:
        """The same vault (same rules, same files) taking paths of `kind` where it takes note
        paths: what the canvas tools read and write through, with every check the notes get."""
        view = copy.copy(self)
        view.kind = kind
        return view

    def is_ignored(self, path: str) -> bool:
        """Hidden components, or the path or one of its folders matching an ignore pattern."""
        parts = PurePosixPath(path).parts
        if any(part.startswith(".") for part in parts):
            return True
        prefixes = ("/".join(parts[: i + 1]) for i in range(len(parts)))
        return any(fnmatchcase(p, pattern) for p in prefixes for pattern in self.ignore)

    def scan(self, under: str = "") -> Iterator[FileStat]:
        """Every file of the vault below `under` (the whole vault by default)."""
        if under and self.is_ignored(under):
            return
        under = self.spelled(under)
        start = self.root / under if under else self.root
        yield from self._walk(start, under)

    def _walk(self, folder: Path, rel_folder: str) -> Iterator[FileStat]:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return  # vanished or unreadable while walking: the next event or scan sees it
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            # `is_ignored(rel)`, knowing that the folders above passed it on the way down: only
            # the last component can be hidden, and only the whole path is new to the patterns.
            if entry.name.startswith(".") or any(fnmatchcase(rel, p) for p in self.ignore):
                continue
            if not is_utf8(entry.name):
                _log_not_utf8(rel)
                continue
            try:
                # Never descend through a symlinked folder: that is how walks loop forever.
                if entry.is_dir(follow_symlinks=False):
                    yield from self._walk(Path(entry.path), rel)
                    continue
                file_stat = self._stat_entry(entry, rel)
            except OSError:
                continue
            if file_stat is not None:
                yield file_stat

    def _stat_entry(self, entry: os.DirEntry[str], rel: str) -> FileStat | None:
        try:
            st = entry.stat(follow_symlinks=True)
            if entry.is_symlink() and not self._inside(Path(entry.path).resolve()):
                return None
        except (OSError, RuntimeError) as exc:  # 3.11's resolve raises RuntimeError on a loop
            if not _is_loop(exc):
                raise
            return self._looping(rel, entry.stat(follow_symlinks=False))
        return _file_stat(rel, st) if stat.S_ISREG(st.st_mode) else None

    def _looping(self, rel: str, link: os.stat_result) -> FileStat | None:
        """A symlink that leads back to itself (`l -> l`, `a -> b -> a`, folders alike) is
        no file: one warning names it, and the walk goes on. Named as a note, it is listed
        (the indexer records it with its read error, as `list_problems` shows broken notes),
        so that it is seen, and dropped from the cache once removed or repaired."""
        if rel not in self._loops_told:
            self._loops_told.add(rel)
            log.warning("symlink loop: not indexed until it is removed or repaired", path=rel)
        return _file_stat(rel, link) if is_note_path(rel) else None

    def stat(self, path: str) -> FileStat | None:
        """The file at `path` if it is part of the vault and exists now, else None."""
        if self.is_ignored(path) or not is_utf8(path):
            return None
        path = self.spelled(path)
        full = self.root / path
        try:
            if not self.within(full):
                return self._loop_at(path, full)
            st = full.stat()
        except OSError as exc:
            return self._loop_at(path, full) if _is_loop(exc) else None
        return _file_stat(path, st) if stat.S_ISREG(st.st_mode) else None

    def _loop_at(self, path: str, full: Path) -> FileStat | None:
        """What `stat` finds at a symlink loop: what the walk finds there (`_looping`)."""
        try:
            if full.parent.resolve() != full.parent or not full.is_symlink():
                return None
            full.stat()
        except (OSError, RuntimeError) as exc:
            return self._looping(path, full.lstat()) if _is_loop(exc) else None
        return None

    def is_dir(self, path: str) -> bool:
        """A real folder of the vault (not a symlink, nor below one)."""
        full = self.root / self.spelled(path)
        try:
            return full.is_dir() and full.resolve() == full
        except OSError:
            return False

    def within(self, full: Path) -> bool:
        """The module's symlink rule for `full` (under `root`, not yet checked to exist): no
        folder on its way is a symlink, and the file, if a symlink, resolves inside."""
        try:
            if full.parent.resolve() != full.parent:
                return False
            return not full.is_symlink() or self._inside(full.resolve())
        except (OSError, RuntimeError):  # a symlink loop
            return False

    def read_bytes(self, path: str) -> bytes:
        with open(self._root_prefix + path, "rb") as handle:  # noqa: PTH123 - the hot path
            return handle.read()

    def read_note(self, path: str) -> bytes:
        """The bytes of the note a client named, checked as `note_file` checks it. Raises
        `NoteTooLargeError` for a file over `MAX_NOTE_BYTES` rather than reading it."""
        full = self.note_file(path)
        with full.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # Not read(MAX_NOTE_BYTES + 1): that allocates the whole bound for every note.
            data = b"" if size > MAX_NOTE_BYTES else handle.read()
        size = max(size, len(data))  # it may have grown since the fstat
        if size > MAX_NOTE_BYTES:
            raise NoteTooLargeError(self.check_note_path(path), size, MAX_NOTE_BYTES)
        return data

    def relative(self, absolute: Path | str) -> str | None:
        """The vault-relative path of `absolute`, or None when it is outside the vault."""
        try:
            return Path(absolute).relative_to(self.root).as_posix()
        except ValueError:
            return None

    def note_file(self, path: str) -> Path:
        """The file behind a note path a client sent, after every safety check.

        Raises `InvalidPathError` for anything that is not a note inside the vault (absolute
        paths, `..`, hidden or ignored folders, symlinks leading out, other file types) and
        `NoteNotFoundError` when it is acceptable but absent.
        """
        clean = self.check_note_path(path)
        full = self.root / self.spelled(clean)
        if not self.within(full):
            raise InvalidPathError(path, "leads outside the vault or through a symlinked folder")
        if not full.is_file():
            raise NoteNotFoundError(clean)
        return full

    def attachment_file(self, path: str) -> Path:
        """The file behind an attachment path a client sent (any file of the vault but a
        note), after every check `note_file` makes: no absolute path, no `..`, no hidden or
        ignored folder, no symlink leading out."""
        if is_note_path(path):
            raise InvalidPathError(path, "a markdown note, not an attachment: read it as a note")
        return self.of_kind(ATTACHMENTS).note_file(path)

    def note_path(self, path: str, *, name_as_given: bool = False) -> str:
        """`check_note_path`, spelled as on disk (`spelled`): the path a change to the note
        is made, locked, journalled and cached under. `name_as_given`: only its folders are
        (a move's destination, whose name in another case is a rename, not the same note)."""
        clean = self.check_note_path(path)
        if not name_as_given:
            return self.spelled(clean)
        folder, name = split_path(clean)
        return f"{self.spelled(folder)}/{name}" if folder else name

    def check_note_path(self, path: str) -> str:
        """Validate a client-supplied note path (of this vault's `kind`: a note, unless it is
        a view made by `of_kind`) and return it normalised (no I/O)."""
        if not path or "\x00" in path:
            raise InvalidPathError(path, "empty or contains NUL")
        if not is_utf8(path):
            raise InvalidPathError(path, "not valid UTF-8")
        posix = path.replace("\\", "/")
        pure = PurePosixPath(posix)
        if pure.is_absolute() or (len(posix) > 1 and posix[1] == ":"):
            raise InvalidPathError(path, "absolute paths are not accepted")
        if ".." in pure.parts:
            raise InvalidPathError(path, "'..' is not accepted")
        clean = "/".join(part for part in pure.parts if part != ".")
        if self.is_ignored(clean):
            raise InvalidPathError(path, "hidden or ignored folder")
        if not clean.lower().endswith(self.kind.suffix):
            raise InvalidPathError(path, f"not {self.kind.name}")
        return clean

    def _inside(self, resolved: Path) -> bool:
        return resolved == self.root or self.root in resolved.parents


def detect_folding(root: Path) -> bool | None:
    """Whether the file system under `root` finds a name in any case, tried on an entry of the
    root with a letter in its name (the vault's own, as `root` may be a mount point on a file
    system of its own); None when there is none yet."""
    try:
        names = listed_names(root)
    except OSError:
        return None
    for name in sorted(names):
        other = name.swapcase()
        if other == name:
            continue
        if other in names:  # both spellings listed: two files
            return False
        try:
            return (root / name).samefile(root / other)
        except OSError:
            return False
    return None


def listed_names(folder: Path) -> set[str]:
    """The names `folder` lists, each spelled as stored (whatever the file system folds)."""
    with os.scandir(folder) as entries:
        return {entry.name for entry in entries}


def _listed_name(folder: Path, part: str) -> str | None:
    """The name under which `folder` lists the entry that `part` finds on a file system that
    folds case; None when it lists none (or several: a case-sensitive folder, where `part`
    finds only itself, which is then not there)."""
    try:
        names = listed_names(folder)
    except OSError:
        return None
    if part in names:
        return part
    folded = _fold(part)
    found = [name for name in names if _fold(name) == folded]
    return found[0] if len(found) == 1 else None


def _fold(name: str) -> str:
    """A name as a case-folding file system compares it. `lower` rather than `casefold`: NTFS
    and APFS map letters one to one, so `Straße` and `STRASSE` are two files there."""
    return unicodedata.normalize("NFC", name).lower()


def _is_loop(exc: BaseException) -> bool:
    """Whether following a symlink failed because it leads back to itself: ELOOP from the
    system, or the RuntimeError Python 3.11's `Path.resolve` raises instead."""
    return isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP


def _log_not_utf8(path: str) -> None:
    shown = os.fsencode(path).decode("utf-8", "backslashreplace")  # b"caf\xe9" -> "caf\xe9"
    log.warning("name is not valid UTF-8: left out of the vault until renamed", path=shown)


def _file_stat(path: str, st: os.stat_result) -> FileStat:
    # Linux has no birth time in os.stat; the earlier of ctime and mtime is the best guess.
    created = getattr(st, "st_birthtime_ns", None) or min(st.st_ctime_ns, st.st_mtime_ns)
    return FileStat(path=path, size=st.st_size, mtime_ns=st.st_mtime_ns, created_ns=created)


class CacheOnlyVault(Vault):
    """The vault of a process without the files (a reader, `weaver serve --no-vault`; a worker
    on a host without them): its rules still check the paths clients send, but its files are
    never opened (the folder may not exist here). A note's text comes from `texts` (the
    cache's copy, where the cache keeps one: `None` when it does not); without it, reading
    raises `NoFilesError`, saying `why` there are no files. A scan finds nothing."""

    has_files = False

    def __init__(
        self,
        root: Path,
        ignore: Sequence[str] = (),
        texts: Callable[[str], str | None] | None = None,
        why: str = NoFilesError.READER,
    ) -> None:
        super().__init__(root, ignore, folds_case=False)  # its paths never reach a disk
        self._texts = texts
        self._why = why

    def scan(self, under: str = "") -> Iterator[FileStat]:
        return iter(())

    def stat(self, path: str) -> FileStat | None:
        return None

    def is_dir(self, path: str) -> bool:
        return False

    def read_bytes(self, path: str) -> bytes:
        return self.read_note(path)

    def read_note(self, path: str) -> bytes:
        clean = self.check_note_path(path)
        text = self._texts(clean) if self._texts is not None else None
        if text is None:
            raise NoFilesError(f"reading {clean!r}", self._why)
        return text.encode("utf-8")

    def note_file(self, path: str) -> Path:
        raise NoFilesError(f"reading {self.check_note_path(path)!r}", self._why)
