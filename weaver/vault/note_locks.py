"""One writer per note at a time, across every thread and process of Weaver on a vault.

A write reads the note, checks the hash the caller expects, writes and updates the cache: done
by two callers at once, both checks pass and one edit is lost. `NoteLocks.hold(paths)` makes
that one step. Each note maps to one of `STRIPES` lock files in `<vault>/.weaver/note-locks/`
(two notes may share one: they then wait for each other, which costs a few milliseconds and
is never wrong). Inside a process, threads queue on a `threading.Lock` per stripe; between
processes, the stripe's file is locked (`weaver.file_locks`: released by the OS on any exit,
so a killed writer never leaves a note locked).

A caller holding several notes (a move: the note and where it goes) takes their stripes in
one sorted order, so two callers never wait for each other in a cycle.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from weaver import file_locks
from weaver.config import CACHE_DIR_NAME

STRIPES = 256
LOCK_FOLDER = "note-locks"
# Between two tries for a stripe another process holds: short, as a write takes milliseconds.
POLL_S = 0.002


def stripe_of(path: str) -> int:
    """The stripe of a vault path; case-folded, so two spellings of one note on a
    case-insensitive file system share it."""
    return hashlib.blake2b(path.casefold().encode(), digest_size=4).digest()[0] % STRIPES


class NoteLocks:
    """The note locks of one vault (one instance per process is enough; any number works)."""

    def __init__(self, vault_root: Path) -> None:
        self.folder = vault_root / CACHE_DIR_NAME / LOCK_FOLDER
        self._threads = [threading.Lock() for _ in range(STRIPES)]

    @contextmanager
    def hold(
        self, paths: Iterable[str], *, check: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Hold every note of `paths` for the block. `check` is called while waiting (it may
        raise to give up: a call whose deadline passed before its write began)."""
        with ExitStack() as stack:
            for stripe in sorted({stripe_of(p) for p in paths}):
                stack.enter_context(self._stripe(stripe, check))
            yield

    @contextmanager
    def _stripe(self, stripe: int, check: Callable[[], None] | None) -> Iterator[None]:
        lock = self._threads[stripe]
        while not lock.acquire(timeout=0.05):
            if check is not None:
                check()
        try:
            fd = self._lock_file(stripe, check)
            try:
                yield
            finally:
                file_locks.unlock(fd)
                os.close(fd)
        finally:
            lock.release()

    def _lock_file(self, stripe: int, check: Callable[[], None] | None) -> int:
        path = self.folder / f"{stripe:03d}.lock"
        while True:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if file_locks.try_lock(fd) and _still_there(path, fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            if check is not None:
                check()
            time.sleep(POLL_S)


def _still_there(path: Path, fd: int) -> bool:
    """The locked file is still the one at `path`: a lock on a file deleted meanwhile (the
    `.weaver` folder removed) would exclude no one who opens the path afresh."""
    try:
        return path.stat().st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
