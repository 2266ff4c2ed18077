"""Opening the cache database and bringing its schema to head with Alembic.

SQLite runs in WAL mode with a busy timeout so that a CLI command and the daemon can share one
cache: readers never block the writer, and a second writer waits instead of failing.

Alembic is imported only when the cache is not at `SCHEMA_HEAD` (a test keeps that constant
equal to the newest migration): importing it and reading the migration scripts would slow every
start, for a cache that is nearly always up to date already.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from weaver.cache import recovery
from weaver.cache.bulk import restore_indexes_of
from weaver.errors import CacheError
from weaver.file_replace import replace_file
from weaver.vault.fs import path_folder, path_name

if TYPE_CHECKING:
    from alembic.config import Config

log = structlog.get_logger(__name__)

# The newest migration's revision: a cache at it needs no Alembic (a test checks it is head).
SCHEMA_HEAD = "0027"
BUSY_TIMEOUT_MS = 10_000
# How a connection writes a big indexing pass (`bulk_writes`), against SQLite's defaults of a
# 2 MiB page cache and a checkpoint whenever the WAL passes 1,000 pages (4 MiB). Each batch
# commits ~25 MiB of pages, so by default every commit copies them all into the database file,
# FTS5's merged segments again and again; with a 64 MiB threshold most pages are copied once.
# A page cache of 8 MiB keeps the pages being appended to; more made no difference once a first
# index stopped updating the link indexes row by row.
BULK_CACHE_KIB = 8 * 1024
BULK_CHECKPOINT_PAGES = 16 * 1024


# The URLs the cache can live at: SQLite through Python's own driver, PostgreSQL through psycopg
# 3 (`open_engine` passes it psycopg's `prepare_threshold`), with the job system beside it.
def open_engine(url: str, writes: bool = True) -> Engine:
    """An engine for `url`; for a SQLite file, its folder is created and WAL is switched on.
    Without `writes` (a reader process), every connection refuses to write: SQLite's
    `query_only`, so that no code path of a reader can change the writer's cache."""
    parsed = make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if writes and is_sqlite and parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    connect_args: dict[str, Any] = {"timeout": BUSY_TIMEOUT_MS / 1000} if is_sqlite else {}
    if parsed.get_backend_name() == "postgresql":
        # No server-side prepared statements (psycopg prepares a query run 5 times): each
        # statement is planned with its values, as SQLite plans it. Prepared, PostgreSQL went
        # over to a generic plan that cannot see how many notes a tag or a word has, several
        # times slower for filtered searches; planning anew costs far less
        # (docs/benchmarks-notes.md).
        connect_args["prepare_threshold"] = None
    engine = create_engine(url, connect_args=connect_args)
    if is_sqlite:
        event.listen(engine, "connect", _configure_sqlite if writes else _configure_reader)
        path = recovery.sqlite_file(url)
        if path is not None:
            event.listen(engine, "do_connect", partial(_await_cache_file, path))
    elif parsed.get_backend_name() == "postgresql":
        event.listen(engine, "before_cursor_execute", _bound_postgres_statement)
        event.listen(engine, "begin", _forget_statement_timeout)
        if not writes:
            event.listen(engine, "connect", _read_only_session)
    return engine


def commit_stamp(engine: Engine) -> object:
    """Something that changes when any process commits to the cache: the size and time of a
    SQLite cache's file and its WAL (a stat, no query), so that a poll for other processes'
    work can sleep until there is some. None where that cannot be seen (PostgreSQL, memory):
    the caller polls on its own timer."""
    path = recovery.sqlite_file(engine.url.render_as_string(hide_password=False))
    if path is None:
        return None
    stamp: list[tuple[int, int] | None] = []
    for file in (path, path.with_name(path.name + "-wal")):
        try:
            found = file.stat()
        except OSError:
            stamp.append(None)
            continue
        stamp.append((found.st_size, found.st_mtime_ns))
    return tuple(stamp)


class _Deadline(threading.local):
    at: float | None = None


_deadline = _Deadline()
# SQLite virtual-machine steps between looks at the calling thread's deadline (about a
# millisecond of work: docs/benchmarks-notes.md).
DEADLINE_CHECK_STEPS = 20_000


@contextmanager
def query_deadline(seconds: float | None) -> Iterator[None]:
    """Cache queries made by this thread within the block are stopped by SQLite (raising
    `OperationalError: interrupted`) once `seconds` have passed: a tool call that overruns
    its time gives its thread back rather than running on unseen. On PostgreSQL each
    statement gets the time left as its `statement_timeout`."""
    previous = _deadline.at
    _deadline.at = None if seconds is None else time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline.at = previous


def lift_deadline() -> None:
    """No deadline for this thread's queries until its `query_deadline` block ends: a write
    that has begun must be finished (its cache update included), not stopped half way."""
    _deadline.at = None


def deadline_passed() -> bool:
    at = _deadline.at
    return at is not None and time.monotonic() > at


# A transaction's `statement_timeout` is set again only once this much time has passed since
# it was set: so a statement may run at most this long past the deadline, and a call's many
# short statements pay one round trip for it, not one each.
TIMEOUT_SLACK_S = 0.05
TIMEOUT_SET_KEY = "weaver.statement_timeout_set"  # (deadline, when set), in the connection's info


def _bound_postgres_statement(
    conn: Connection, cursor: Any, _statement: str, _params: Any, _context: Any, many: bool
) -> None:
    """PostgreSQL's side of `query_deadline`: the statement may run until the thread's
    deadline (`statement_timeout`, local to the transaction, so it goes with it); past it the
    server cancels it and the driver raises `OperationalError`, as SQLite's interrupt does.
    One round trip more per transaction (and per `TIMEOUT_SLACK_S` within it), only while a
    deadline is set."""
    at = _deadline.at
    if at is None:
        return
    now = time.monotonic()
    last = conn.info.get(TIMEOUT_SET_KEY)
    if last is not None and last[0] == at and now - last[1] < TIMEOUT_SLACK_S:
        return
    remaining_ms = max(1, int((at - now) * 1000))
    cursor.execute("SELECT set_config('statement_timeout', %s, true)", (f"{remaining_ms}ms",))
    if conn.in_transaction() and not _autocommit(conn):
        conn.info[TIMEOUT_SET_KEY] = (at, now)


def _forget_statement_timeout(conn: Connection) -> None:
    """A new transaction: the last one's `statement_timeout` went with it."""
    conn.info.pop(TIMEOUT_SET_KEY, None)


def _autocommit(conn: Connection) -> bool:
    return conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT"


def _await_cache_file(path: Path, *_connect: Any) -> None:
    """Before SQLite opens (and so would create) the cache file: a file missing while a writer
    holds the writer lock is the writer's to make again (its folder deleted under it), not an
    empty cache for this connection to make beside it; wait for it (`BUSY_TIMEOUT_MS`, as
    for a lock). None: connect as usual."""
    recovery.wait_for_cache_file(path, BUSY_TIMEOUT_MS / 1000)


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _regexp(pattern: str | None, value: str | None) -> bool | None:
    """SQLite's REGEXP operator, which it leaves to the application (the Tasks queries'
    `regex matches`); Python's syntax, close to JavaScript's for the patterns queries use."""
    if pattern is None or value is None:
        return None
    return _compiled(pattern).search(value) is not None


def _add_functions(dbapi_connection: Any) -> None:
    dbapi_connection.create_function("regexp", 2, _regexp, deterministic=True)
    # SQLite has no "after the last slash": the pure-SQL form (rtrim by the path's own
    # characters) cost three times these calls in a task query grouped by file.
    dbapi_connection.create_function("path_folder", 1, path_folder, deterministic=True)
    dbapi_connection.create_function("path_name", 1, path_name, deterministic=True)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.set_progress_handler(deadline_passed, DEADLINE_CHECK_STEPS)
    _add_functions(dbapi_connection)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    # WAL with NORMAL sync is durable across application crashes; it can lose the last
    # transactions on power loss, which a cache rebuilt from disk can afford.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _configure_reader(dbapi_connection: Any, record: Any) -> None:
    dbapi_connection.set_progress_handler(deadline_passed, DEADLINE_CHECK_STEPS)
    _add_functions(dbapi_connection)
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _read_only_session(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cursor.close()
    dbapi_connection.commit()


@contextmanager
def bulk_writes(conn: Connection) -> Iterator[None]:
    """This connection set up for a big pass while the block runs, then as usual again (which
    gives the cache memory back). The WAL is checkpointed at the end, so the pass's own cost
    is paid in the pass."""
    if conn.dialect.name != "sqlite":
        yield
        return
    usual = {
        pragma: conn.exec_driver_sql(f"PRAGMA {pragma}").scalar()
        for pragma in ("cache_size", "wal_autocheckpoint")
    }
    conn.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
    conn.exec_driver_sql(f"PRAGMA wal_autocheckpoint={BULK_CHECKPOINT_PAGES}")
    conn.commit()  # the PRAGMA began a transaction; let the caller begin its own
    try:
        yield
    except Exception:
        with suppress(SQLAlchemyError):  # never hide the failure itself
            _end_bulk_writes(conn, usual)
        raise
    # Not after Ctrl-C or exit: the process and its connection are going away.
    _end_bulk_writes(conn, usual)


def _end_bulk_writes(conn: Connection, usual: dict[str, Any]) -> None:
    conn.rollback()  # whatever the block left open, if it failed midway
    for pragma, value in usual.items():
        conn.exec_driver_sql(f"PRAGMA {pragma}={value}")
    conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
    conn.commit()


def migrations_dir() -> Path:
    """The Alembic scripts: the repository's `alembic/`, in the wheel as `weaver.migrations`.

    Found as a folder, never imported: Alembic loads the scripts by path. The folder has no
    `__init__.py` (one would shadow the alembic library for code run from the checkout), so an
    editable install's import hook cannot map it; from a checkout it is beside the package.
    """
    package = Path(str(importlib.resources.files("weaver")))
    installed = package / "migrations"
    return installed if installed.is_dir() else package.parent / "alembic"


def alembic_config(engine: Engine | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    if engine is not None:
        config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def upgrade_to_head(engine: Engine) -> None:
    """Create or upgrade the cache schema in place; raises `CacheError` if it cannot."""
    from alembic import command

    config = alembic_config(engine)
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot migrate the cache at {engine.url}: {exc}") from exc


def pending_migrations(engine: Engine) -> list[str]:
    """Revisions between the database's current one and head (empty when up to date)."""
    current = schema_revision(engine)
    if current == SCHEMA_HEAD:
        return []
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return [rev.revision for rev in script.iterate_revisions("head", current)]


def _recover_if_corrupt(engine: Engine, path: Path) -> Engine:
    try:
        problem = recovery.check_cache(engine)
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot read the cache at {path}: {exc}") from exc
    if problem is not None:
        replace_corrupt_cache(engine, path, problem)
    return engine


def replace_corrupt_cache(engine: Engine, path: Path, problem: str) -> recovery.Recovery:
    """Move the corrupt cache file aside (one line in the log says why and where), and make a
    new one at `path` through the same `engine`, its workflow history salvaged where readable;
    the notes are the indexer's to fill in. At start (`open_cache_engine`) and while running
    (`runtime.rebuild`). Raises `CacheError` when the file cannot be moved."""
    engine.dispose()  # connections open on the old file are not reused
    try:
        moved = recovery.move_aside(path)
    except OSError as exc:
        raise CacheError(f"the cache at {path} is corrupt ({problem}) and cannot be moved") from exc
    log.error(
        f"the cache was corrupt ({problem}): moved to {moved.name}, rebuilt from the notes",
        cache=str(path),
    )
    create_cache_file(path, replace=True)
    engine.dispose()  # a connection that made an empty file meanwhile is not reused
    salvaged = recovery.salvage(engine, moved)
    log.warning(
        "workflow history salvaged from the corrupt cache",
        kept={table: found.kept for table, found in salvaged.items()},
        lost={
            table: "unknown" if found.lost is None else found.lost
            for table, found in salvaged.items()
            if found.lost != 0
        }
        or None,
    )
    return recovery.Recovery(problem, moved, salvaged)


def create_cache_file(path: Path, replace: bool = False) -> None:
    """Make a new, empty cache at `path` in one step: migrated beside it, then moved into
    place, so that whoever waits for the file (`recovery.wait_for_cache_file`) never opens it
    half made. Without `replace`, a file someone made meanwhile is kept."""
    fresh = _fresh_file(path)
    engine = open_engine(f"sqlite:///{fresh}")
    try:
        upgrade_to_head(engine)
    finally:
        engine.dispose()  # the last connection: its WAL goes into the file
    _put_in_place(fresh, path, replace)


def remake_deleted_cache(engine: Engine, path: Path, kept: sqlite3.Connection | None) -> bool:
    """The writer's cache file was deleted (its folder with it) while `kept`, a connection
    opened on it before, still reads it: copy it whole from there into a new file at `path`
    (notes, workflow history, change feed: nothing lost but what was written after the
    copy), or without `kept` make an empty one for the notes to fill. `engine`'s connections
    to the deleted file are dropped. True when the copy was made."""
    fresh = _fresh_file(path)
    copied = False
    if kept is not None:
        try:
            with closing(sqlite3.connect(fresh)) as target:
                kept.backup(target)
            copied = True
        except sqlite3.Error as exc:
            log.warning("the deleted cache cannot be copied from its open file", error=str(exc))
            _remove_file(fresh)
    if copied:
        _put_in_place(fresh, path, replace=True)
    else:
        create_cache_file(path, replace=True)
    engine.dispose()
    if copied:
        log.warning(
            "the cache file was deleted: made again from the copy still open, then brought "
            "up to date with the notes",
            cache=str(path),
        )
    else:
        log.warning(
            "the cache file was deleted: made again and rebuilt from the notes; the workflow "
            "history it held is lost",
            cache=str(path),
        )
    return copied


def _fresh_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f"{path.name}.new-{os.getpid()}")
    _remove_file(fresh)  # a leftover of a process that died making it
    return fresh


def _put_in_place(fresh: Path, path: Path, replace: bool) -> None:
    """`fresh` becomes the cache at `path` at once (its WAL, if any, was emptied into it)."""
    if replace:
        for suffix in ("-wal", "-shm"):  # of a file made by another process meanwhile
            Path(str(path) + suffix).unlink(missing_ok=True)
        replace_file(fresh, path)
        return
    try:
        os.link(fresh, path)  # fails if the file is there: never over someone else's
    except FileExistsError:
        pass
    finally:
        _remove_file(fresh)


def _remove_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def schema_revision(engine: Engine) -> str | None:
    """The cache's Alembic revision, read without Alembic (None for a new cache)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def open_reader_engine(url: str) -> Engine:
    """Open the cache as a reader (`weaver serve --no-vault`): never created, migrated or
    written here; a cache that is missing or not at this Weaver's schema is the writer's to
    make or migrate first."""
    path = recovery.sqlite_file(url)
    if path is not None and not path.exists():
        try:  # its writer may be making it again: waited for, as any connection does
            recovery.wait_for_cache_file(path, BUSY_TIMEOUT_MS / 1000)
        except sqlite3.OperationalError as exc:
            raise CacheError(str(exc)) from exc
    if path is not None and not path.exists():
        raise CacheError(
            f"no cache at {path}: a reader serves the cache a writer keeps; start the writer "
            "(weaver daemon, or weaver index) on the vault first"
        )
    engine = open_engine(url, writes=False)
    try:
        current = schema_revision(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise CacheError(f"cannot open the cache at {engine.url}: {exc}") from exc
    if current != SCHEMA_HEAD:
        engine.dispose()
        raise CacheError(
            f"the cache at {engine.url} is at schema {current or 'none'}, this Weaver reads "
            f"{SCHEMA_HEAD}: the writer (weaver daemon) of the same version migrates it"
        )
    return engine


def open_cache_engine(url: str, check: bool = False) -> Engine:
    """Open and migrate: the one call every entry point makes. With `check` (the daemon,
    `serve`, `weaver index`), a corrupt SQLite cache is first moved aside and rebuilt
    (`cache.recovery`)."""
    path = recovery.sqlite_file(url)
    if path is not None and not path.exists() and recovery.writer_of(path) == str(os.getpid()):
        # This process writes the cache (`weaver index`): its connections wait for the file
        # like everyone's, so it makes the file itself first.
        create_cache_file(path)
    engine = open_engine(url)
    if check and path is not None and path.exists():
        engine = _recover_if_corrupt(engine, path)
    # Before migrating: migrations expect the indexes a first index may have left dropped.
    try:
        restore_indexes_of(engine)
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot restore the indexes of the cache at {engine.url}: {exc}") from exc
    try:
        current = schema_revision(engine)
    except SQLAlchemyError as exc:
        raise CacheError(f"cannot open the cache at {engine.url}: {exc}") from exc
    if current != SCHEMA_HEAD:
        upgrade_to_head(engine)
    return engine
