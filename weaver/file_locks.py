"""Advisory whole-file locks between processes, with what the platform has.

- **POSIX** (`FlockLocks`): `fcntl.flock`. The lock belongs to the open file: the OS drops it
  when the last descriptor of it is closed, whatever ends the process (kill -9 included). The
  daemon, writer and note locks rest on that: a killed holder never leaves a lock behind.
- **Windows** (`MsvcrtLocks`): `msvcrt.locking` on one byte. The OS drops it when the handle is
  closed or the process ends (after a time that Microsoft says depends on the system's load, so
  a killed holder's lock may outlive it by a moment: holders unlock before closing). A folder
  cannot be opened with `os.open` there, so it cannot be locked (`locks_folders()` is False;
  `runtime.locks` says why the daemon needs no folder lock there). Windows has no shared lock
  (`LK_RLCK` is `LK_LOCK`): a shared try takes the lock exclusively, so two probes at the same
  instant may each see the other as the holder. A locked range is mandatory there (another
  handle cannot read it), so the byte locked lies past anything written: the pid a lock file
  holds stays readable by whoever wants to name the holder (SQLite locks bytes at 1 GiB for the
  same reason).

`platform_locks()` picks flock when `fcntl` can be imported, msvcrt otherwise; the environment
variable `WEAVER_FILE_LOCKS` (`flock` or `msvcrt`) forces one, for tests. Neither `fcntl` nor
`msvcrt` is imported at module level: each exists on one platform only.
"""

from __future__ import annotations

import errno
import importlib
import os
from typing import Protocol, cast

FORCE_ENV = "WEAVER_FILE_LOCKS"
# The byte `MsvcrtLocks` locks: beyond any lock file's content (see the module docstring).
MSVCRT_LOCKED_BYTE = 1 << 30
# errno of `msvcrt.locking` when the range is locked by another handle: EACCES for a
# non-blocking try, EDEADLOCK when the blocking mode gave up after its ten tries of a second.
# (`errno.EDEADLOCK` is not defined on every platform; EDEADLK is its POSIX name.)
_MSVCRT_BUSY = frozenset({errno.EACCES, getattr(errno, "EDEADLOCK", errno.EDEADLK)})


class _Fcntl(Protocol):
    """What is used of `fcntl` (typed here: its stubs are empty on Windows)."""

    LOCK_EX: int
    LOCK_SH: int
    LOCK_NB: int
    LOCK_UN: int

    def flock(self, fd: int, operation: int, /) -> None: ...


class _Msvcrt(Protocol):
    """What is used of `msvcrt` (typed here: its stubs are empty outside Windows)."""

    LK_UNLCK: int
    LK_LOCK: int
    LK_NBLCK: int

    def locking(self, fd: int, mode: int, nbytes: int, /) -> None: ...


def _fcntl() -> _Fcntl:
    return cast(_Fcntl, importlib.import_module("fcntl"))


def _msvcrt() -> _Msvcrt:
    return cast(_Msvcrt, importlib.import_module("msvcrt"))


class HasFileno(Protocol):
    def fileno(self) -> int: ...


File = int | HasFileno


class FileLocks(Protocol):
    """Whole-file locks on an open descriptor or file object (one with `fileno()`)."""

    @property
    def locks_folders(self) -> bool:
        """Whether a folder opened with `os.open` can be locked like a file."""
        ...

    def try_lock(self, file: File) -> bool:
        """Take the lock exclusively if nobody holds it; False when someone does."""
        ...

    def lock(self, file: File) -> None:
        """Take the lock exclusively, waiting as long as someone holds it."""
        ...

    def try_lock_shared(self, file: File) -> bool:
        """Take the lock shared if nobody holds it exclusively; False when someone does."""
        ...

    def unlock(self, file: File) -> None:
        """Release a lock this descriptor holds."""
        ...


def _fd(file: File) -> int:
    return file if isinstance(file, int) else file.fileno()


class FlockLocks:
    """`fcntl.flock`: POSIX."""

    locks_folders = True

    def try_lock(self, file: File) -> bool:
        return self._try(file, _fcntl().LOCK_EX)

    def lock(self, file: File) -> None:
        fcntl = _fcntl()
        fcntl.flock(_fd(file), fcntl.LOCK_EX)

    def try_lock_shared(self, file: File) -> bool:
        return self._try(file, _fcntl().LOCK_SH)

    def unlock(self, file: File) -> None:
        fcntl = _fcntl()
        fcntl.flock(_fd(file), fcntl.LOCK_UN)

    @staticmethod
    def _try(file: File, kind: int) -> bool:
        fcntl = _fcntl()
        try:
            fcntl.flock(_fd(file), kind | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


class MsvcrtLocks:
    """`msvcrt.locking` on `MSVCRT_LOCKED_BYTE`: Windows. A folder cannot be opened with
    `os.open` there, so it cannot be locked."""

    locks_folders = False

    def try_lock(self, file: File) -> bool:
        try:
            _at_locked_byte(_fd(file), _msvcrt().LK_NBLCK)
        except OSError as exc:
            if exc.errno in _MSVCRT_BUSY:
                return False
            raise
        return True

    def lock(self, file: File) -> None:
        # LK_LOCK gives up after ten tries a second apart; a holder may keep the lock for
        # minutes (a model being distilled), so try again until it is ours.
        while True:
            try:
                _at_locked_byte(_fd(file), _msvcrt().LK_LOCK)
            except OSError as exc:
                if exc.errno not in _MSVCRT_BUSY:
                    raise
            else:
                return

    def try_lock_shared(self, file: File) -> bool:
        return self.try_lock(file)  # no shared lock on Windows

    def unlock(self, file: File) -> None:
        _at_locked_byte(_fd(file), _msvcrt().LK_UNLCK)


def _at_locked_byte(fd: int, mode: int) -> None:
    """`msvcrt.locking` acts from the file's position: move there, then back where the caller
    was (a lock file's reader or writer keeps its own position)."""
    position = os.lseek(fd, 0, os.SEEK_CUR)
    os.lseek(fd, MSVCRT_LOCKED_BYTE, os.SEEK_SET)
    try:
        _msvcrt().locking(fd, mode, 1)
    finally:
        os.lseek(fd, position, os.SEEK_SET)


BACKENDS: dict[str, type[FlockLocks] | type[MsvcrtLocks]] = {
    "flock": FlockLocks,
    "msvcrt": MsvcrtLocks,
}


def platform_locks() -> FileLocks:
    """The backend `WEAVER_FILE_LOCKS` names, else flock where `fcntl` exists, else msvcrt."""
    forced = os.environ.get(FORCE_ENV, "")
    if forced:
        if forced not in BACKENDS:
            raise ValueError(f"{FORCE_ENV}={forced!r}: expected one of {', '.join(BACKENDS)}")
        return BACKENDS[forced]()
    try:
        _fcntl()
    except ImportError:
        return MsvcrtLocks()
    return FlockLocks()


def try_lock(file: File) -> bool:
    """Take `file`'s lock exclusively if nobody holds it (never waits)."""
    return platform_locks().try_lock(file)


def lock(file: File) -> None:
    """Take `file`'s lock exclusively, waiting for it."""
    platform_locks().lock(file)


def try_lock_shared(file: File) -> bool:
    """Take `file`'s lock shared (exclusive on Windows) if nobody holds it exclusively."""
    return platform_locks().try_lock_shared(file)


def unlock(file: File) -> None:
    """Release `file`'s lock before closing it (closing releases it too)."""
    platform_locks().unlock(file)


def locks_folders() -> bool:
    """Whether this platform's locks can be taken on a folder (not on Windows)."""
    return platform_locks().locks_folders
