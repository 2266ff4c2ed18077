"""Inter-process locks on a vault and its cache: file locks (`weaver.file_locks`), released by
the OS on any exit.

- The **daemon lock** (`<vault>/.weaver/daemon.lock`, and a lock on the vault folder itself
  where the platform can lock a folder): one `weaver daemon` per vault; a second one refuses to
  start, even when `.weaver/` was deleted under the first. Windows cannot open a folder to lock
  it, and needs not: there a file held open cannot be deleted, so `.weaver/` cannot go while
  the daemon holds its lock file.
- The **writer lock** (beside the cache database, `<cache>.writer.lock`): one process writes a
  cache at a time. `weaver serve` and the daemon take it before reconciling and watching; a
  process that cannot get it serves the cache read-only and keeps retrying, so it takes over
  when the writer exits.

Each lock file holds its holder's pid, for messages only: the file lock is the truth. On
PostgreSQL the writer lock is a session-level advisory lock instead (`PgWriterLock`, SQL in
`weaver.cache.writer_lock`); `writer_lock_for` picks the kind from the settings, and both answer
the same calls. Why: docs/architecture.md, "runtime/locks.py".
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Protocol

import anyio
import anyio.to_thread
import structlog
from sqlalchemy import Connection, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from weaver import file_locks
from weaver.cache import writer_lock
from weaver.cache.dialect import is_postgres
from weaver.cache.recovery import WRITER_LOCK_SUFFIX
from weaver.config import CACHE_DIR_NAME, Settings
from weaver.errors import DaemonError

log = structlog.get_logger(__name__)

DEFAULT_RETRY_SECONDS = 3.0

# How long a newcomer waits for a daemon to make its deleted writer lock again (`WriterLock`):
# the daemon notices within a second or two; a daemon that never does (stopped writing, its
# cache elsewhere) costs a newcomer this once.
REMAKE_WAIT_SECONDS = 10.0
REMAKE_POLL_SECONDS = 0.05

# Vaults whose daemon lock this process holds: its own daemon is no reason to wait.
_OWN_DAEMON_VAULTS: set[Path] = set()


def _write_pid(handle: IO[str]) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()


def _read_holder(handle: IO[str]) -> str:
    handle.seek(0)
    return handle.read().strip() or "another process"


@contextmanager
def daemon_lock(vault: Path) -> Iterator[Path]:
    """Hold `<vault>/.weaver/daemon.lock` for the life of the daemon (released on any exit)."""
    lock_path = vault / CACHE_DIR_NAME / "daemon.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    folder = _open_folder(vault)
    try:
        with lock_path.open("a+") as handle:
            if not _try_folder(folder) or not file_locks.try_lock(handle):
                owner = _read_holder(handle)
                raise DaemonError(f"a daemon is already running on {vault} (pid {owner})")
            _write_pid(handle)
            _OWN_DAEMON_VAULTS.add(vault.resolve())
            try:
                yield lock_path
            finally:
                _OWN_DAEMON_VAULTS.discard(vault.resolve())
                handle.truncate(0)
                file_locks.unlock(handle)
    finally:
        if folder is not None:
            os.close(folder)  # drops the folder's lock


def daemon_running(vault: Path) -> bool:
    """True while some process holds the daemon lock of this vault."""
    try:
        folder = _open_folder(vault)
    except OSError:
        return False
    try:
        if not _try_folder(folder):
            return True
    finally:
        if folder is not None:
            os.close(folder)
    lock_path = vault / CACHE_DIR_NAME / "daemon.lock"
    if not lock_path.exists():
        return False
    with lock_path.open("a+") as handle:
        if not file_locks.try_lock(handle):
            return True
        file_locks.unlock(handle)
        return False


def _open_folder(vault: Path) -> int | None:
    """The vault folder, opened to be locked; None where a folder cannot be (Windows)."""
    if sys.platform == "win32" or not file_locks.locks_folders():
        return None
    return os.open(vault, os.O_RDONLY | os.O_DIRECTORY)


def _try_folder(folder: int | None) -> bool:
    """Lock the vault folder if it was opened; True when locked or when there is none."""
    return folder is None or file_locks.try_lock(folder)


def writer_lock_path(settings: Settings) -> Path:
    """Beside a SQLite cache file; in the vault's `.weaver/` for any other database."""
    url = make_url(settings.db_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        database = Path(url.database)
        return database.with_name(database.name + WRITER_LOCK_SUFFIX)
    return settings.vault / CACHE_DIR_NAME / ("cache" + WRITER_LOCK_SUFFIX)


class WriterLock:
    """The right to write one cache. Not reentrant; `release()` is always safe to call.

    When the lock file cannot be created at all (a read-only folder), `try_acquire` answers
    True with a warning: refusing would leave nobody to keep the cache fresh, and SQLite still
    serialises the writes.

    `vault`: the vault whose daemon keeps this lock, when the lock lives in its `.weaver/`.
    `rm -rf .weaver` under that daemon deletes the lock file with the cache; until the daemon
    makes both again (`reassert`, `runtime.rebuild`), a newcomer would find no lock, take a new
    one and make an empty cache of its own. It waits for the daemon's instead.
    """

    def __init__(self, path: Path, vault: Path | None = None) -> None:
        self.path = path
        self._vault = vault
        self._handle: IO[str] | None = None
        self._unlocked = False

    @classmethod
    def for_settings(cls, settings: Settings) -> WriterLock:
        path = writer_lock_path(settings)
        kept_in_vault = path.parent == settings.vault / CACHE_DIR_NAME
        return cls(path, settings.vault if kept_in_vault else None)

    @property
    def held(self) -> bool:
        return self._handle is not None or self._unlocked

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks, but for the moment a daemon takes to
        make its deleted lock file again (see the class)."""
        if self.held:
            return True
        self._await_daemons_lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+")
        except OSError as exc:
            log.warning("cannot create the writer lock; writing without it", error=str(exc))
            self._unlocked = True
            return True
        if not file_locks.try_lock(handle):
            handle.close()
            return False
        _write_pid(handle)
        self._handle = handle
        return True

    async def acquire(
        self,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        """Wait until the lock is ours, trying again every `retry_seconds`."""
        while not await anyio.to_thread.run_sync(self.try_acquire):
            if on_wait is not None:
                on_wait(self.holder())
                on_wait = None  # say it once
            await anyio.sleep(retry_seconds)

    def reassert(self) -> bool:
        """Keep the lock where other processes look for it. Deleting the cache's folder takes
        the lock file with it: this process still holds its lock, on a file nobody can
        open any more, and a newcomer would take a new one. Called now and then by the
        holder: the file is created again and locked, before a newcomer does. False when
        one did first (this process must stop writing)."""
        handle = self._handle
        if handle is None:
            return self._unlocked
        try:
            if self.path.stat().st_ino == os.fstat(handle.fileno()).st_ino:
                return True
        except FileNotFoundError:
            pass
        self._handle = None
        handle.close()
        if self.try_acquire():
            log.warning("the writer lock file was deleted; made again", path=str(self.path))
            return True
        return False

    def _await_daemons_lock(self) -> None:
        """While this vault's daemon (another process) runs and the lock file is missing, wait
        up to `REMAKE_WAIT_SECONDS` for the daemon to make it again."""
        vault = self._vault
        if vault is None or self.path.exists() or vault.resolve() in _OWN_DAEMON_VAULTS:
            return
        deadline = time.monotonic() + REMAKE_WAIT_SECONDS
        waited = False
        while not self.path.exists() and daemon_running(vault):
            if time.monotonic() > deadline:
                log.warning(
                    "the vault's daemon has not made its writer lock again; taking it",
                    path=str(self.path),
                )
                return
            if not waited:
                log.info("waiting for the vault's daemon to make its cache again")
                waited = True
            time.sleep(REMAKE_POLL_SECONDS)

    def holder(self) -> str:
        """The pid written by the current holder, for messages."""
        try:
            return self.path.read_text(encoding="utf-8").strip() or "another process"
        except OSError:
            return "another process"

    def release(self) -> None:
        self._unlocked = False
        handle, self._handle = self._handle, None
        if handle is None:
            return
        handle.truncate(0)
        # Closing would drop the lock too, but on Windows only after a while (Microsoft's
        # advice is to unlock first).
        file_locks.unlock(handle)
        handle.close()

    def close(self) -> None:
        self.release()

    def __enter__(self) -> WriterLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


class CacheWriterLock(Protocol):
    """What the writer's code asks of a writer lock, file-based or PostgreSQL's."""

    @property
    def held(self) -> bool: ...

    def try_acquire(self) -> bool: ...

    async def acquire(
        self,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        on_wait: Callable[[str], None] | None = None,
    ) -> None: ...

    def reassert(self) -> bool: ...

    def holder(self) -> str: ...

    def release(self) -> None: ...

    def close(self) -> None: ...


def writer_lock_for(settings: Settings) -> CacheWriterLock:
    """The advisory lock on PostgreSQL, the file lock beside the cache file otherwise."""
    if is_postgres(settings.db_url):
        return PgWriterLock(settings.db_url)
    return WriterLock.for_settings(settings)


class PgWriterLock:
    """The right to write a vault's cache on PostgreSQL: a session-level advisory lock held by
    one dedicated connection for the life of the writer. When that connection dies (the
    process killed, its host gone), the server releases the lock and a standby's next try
    takes it. Not reentrant; `release()` is always safe to call."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.since = datetime.now(UTC)
        since = f"{self.since:%Y-%m-%dT%H:%M:%SZ}"
        name = f"{writer_lock.APPLICATION_PREFIX}{process_name()} since {since}"
        # NullPool: the lock lives in one session; a pooled connection handed back would keep
        # it in a connection nobody uses.
        self._db = create_engine(
            url, poolclass=NullPool, connect_args={"application_name": name[:63]}
        )
        self._conn: Connection | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None

    def try_acquire(self) -> bool:
        if self._conn is not None:
            return True
        conn = self._db.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            taken = writer_lock.try_lock_writer(conn)
        except BaseException:
            conn.close()
            raise
        if not taken:
            conn.close()
            return False
        self._conn = conn
        log.info("writer lock taken", url=make_url(self.url).render_as_string(hide_password=True))
        return True

    async def acquire(
        self,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        while not await anyio.to_thread.run_sync(self._try_quietly):
            if on_wait is not None:
                on_wait(self.holder())
                on_wait = None
            await anyio.sleep(retry_seconds)

    def wait(self, retry_seconds: float, on_wait: Callable[[str], None] | None = None) -> None:
        """`acquire` for a caller outside an event loop (the daemon before it starts one)."""
        while not self._try_quietly():
            if on_wait is not None:
                on_wait(self.holder())
                on_wait = None
            time.sleep(retry_seconds)

    def _try_quietly(self) -> bool:
        """A database that is down (restarting) is a lock not taken yet, not a crash."""
        try:
            return self.try_acquire()
        except SQLAlchemyError as exc:
            log.warning("cannot reach the database for the writer lock", error=_first_line(exc))
            return False

    def reassert(self) -> bool:
        """True while the lock's session is alive and holds it: a server restart or a dropped
        connection loses the lock, and the writer must stop writing."""
        conn = self._conn
        if conn is None:
            return False
        try:
            if writer_lock.holds_writer(conn):
                return True
        except SQLAlchemyError as exc:
            log.error("the writer lock's connection failed", error=_first_line(exc))
        self.release()
        return False

    def holder(self) -> str:
        """Who writes this cache now (host, pid, since when), for messages."""
        try:
            with self._db.connect() as conn:
                found = writer_lock.describe_writer(conn)
        except SQLAlchemyError as exc:
            return f"unknown (cannot ask the database: {_first_line(exc)})"
        return found or "nobody (the lock was just released)"

    def release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            writer_lock.unlock_writer(conn)
        except SQLAlchemyError:
            pass  # the session is gone, and its lock with it
        finally:
            conn.close()

    def close(self) -> None:
        self.release()
        self._db.dispose()

    def __enter__(self) -> PgWriterLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).partition("\n")[0]
