"""A corrupt cache: found, moved aside with a one-line explanation, rebuilt, history salvaged.

The cache is derived from the notes, except for what the workflows made: execution history,
their records, what they wrote (to know their own changes), the change feed's cursors. So a
cache SQLite calls corrupt (garbage in the file, a truncated file, "file is not a database")
is not repaired in place: it is renamed `cache.db.corrupt-<time>` (with its WAL), a new one is
created and filled from the notes by the first index, and the workflow tables are copied
over from the old file, row by row as far as SQLite can still read them (a damaged page of
rows costs its own rows, not the table's); the log says per table how many rows were kept and
lost.

`check_cache` runs SQLite's `quick_check` (which reads every page: a fraction of a second
for a 10,000-note cache): the long-running entry points (daemon, serve, `weaver index`) run
it at start. While running, a query failing with a corruption error makes `health_check`
report the cache `corrupt` (unhealthy); the next start moves it aside.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, SQLAlchemyError

from weaver import file_locks

log = structlog.get_logger(__name__)

# Words of SQLite's messages that mean the file itself is damaged (not busy, not full).
CORRUPTION_MARKERS = ("not a database", "malformed", "corrupt")
# The tables not rebuilt from the notes, copied from a corrupt cache where readable.
# The edit journal too: what Weaver's edits replaced (undo) cannot be read back from the notes.
SALVAGED_TABLES = (
    "executions",
    "workflow_writes",
    "workflow_records",
    "event_cursors",
    "edit_journal",
    "edit_journal_notes",
)


@dataclass(frozen=True, slots=True)
class Recovery:
    """What happened to a corrupt cache."""

    cause: str
    moved_to: Path
    salvaged: dict[str, Salvaged]


def is_corruption(exc: BaseException) -> bool:
    """Whether `exc` says the database file is damaged."""
    if not isinstance(exc, (DatabaseError, OSError)) and "sqlite3" not in type(exc).__module__:
        return False
    message = str(exc).lower()
    return any(marker in message for marker in CORRUPTION_MARKERS)


def sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database)


# Beside a SQLite cache, the file whose lock makes one process its writer (`runtime.locks`).
WRITER_LOCK_SUFFIX = ".writer.lock"


def writer_of(path: Path) -> str | None:
    """The pid (as its lock file says) of the process holding the writer lock of the cache at
    `path`, this one included; None when nobody holds it. Probes without creating anything:
    the lock is taken for an instant (shared) when free."""
    try:
        fd = os.open(str(path) + WRITER_LOCK_SUFFIX, os.O_RDONLY)
    except OSError:
        return None
    try:
        if file_locks.try_lock_shared(fd):
            file_locks.unlock(fd)
            return None
        os.lseek(fd, 0, os.SEEK_SET)  # not `os.pread`: Windows has none
        return os.read(fd, 32).decode(errors="replace").strip() or "another process"
    finally:
        os.close(fd)


def file_identity(path: Path | None) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none: a file deleted or
    replaced has another identity than the one a connection opened."""
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


# How often a connection waiting for its writer to make a missing cache file again looks.
MISSING_POLL_S = 0.05


def wait_for_cache_file(path: Path, timeout_s: float) -> None:
    """Return once the cache file at `path` exists, or at once when no process writes it (the
    caller may create it). While a writer holds the lock (this process too), no connection
    makes the file: the writer makes it, whole, by its own means (`create_cache_file`,
    `runtime.rebuild`), and this waits up to `timeout_s` for it, then raises
    `sqlite3.OperationalError` saying so. Never creates anything."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        holder = writer_of(path)
        if holder is None:
            return
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError(
                f"the cache file {path} is missing and its writer (process {holder}) has not "
                "made it again yet: it is being rebuilt, try again in a moment"
            )
        time.sleep(MISSING_POLL_S)


# Beside the cache: a reader process that met a corruption error leaves the cause here for the
# writer, which alone may replace the file (`runtime.rebuild`).
SEEN_SUFFIX = ".corrupt-seen"


def mark_corrupt(path: Path, cause: str) -> None:
    """Tell the writer its cache looks corrupt (a reader's note; nothing if it cannot)."""
    with suppress(OSError):
        Path(str(path) + SEEN_SUFFIX).write_text(cause + "\n", encoding="utf-8")


def take_corrupt_mark(path: Path) -> str | None:
    """What a reader noted (see `mark_corrupt`), removing the note; None when none."""
    mark = Path(str(path) + SEEN_SUFFIX)
    try:
        cause = mark.read_text(encoding="utf-8").strip()
        mark.unlink()
    except OSError:
        return None
    return cause or "seen by a reader process"


def check_cache(engine: Engine) -> str | None:
    """None when SQLite finds the file sound, else the first thing it found wrong."""
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("PRAGMA quick_check").scalars().all()
    except SQLAlchemyError as exc:
        if is_corruption(exc) or isinstance(exc, DatabaseError):
            return str(getattr(exc, "orig", exc)).partition("\n")[0]
        raise
    if found == ["ok"]:
        return None
    return str(found[0]) if found else "quick_check answered nothing"


def move_aside(path: Path) -> Path:
    """Rename the cache and its WAL and shared-memory files; returns the cache's new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("-wal", "-shm", ""):
        source = Path(str(path) + suffix)
        if source.exists():
            source.rename(Path(str(target) + suffix))
    return target


def salvage(engine: Engine, old: Path) -> dict[str, Salvaged]:
    """Copy the workflow tables from `old` into the new cache, row by row as far as SQLite
    can read them (`_copy_table`); returns what was kept and lost per table."""
    with engine.connect() as conn:
        try:
            conn.exec_driver_sql("ATTACH DATABASE ? AS old", (str(old),))
            conn.exec_driver_sql("SELECT count(*) FROM old.sqlite_master").scalar()
        except SQLAlchemyError:  # not a database at all: nothing can be read from it
            conn.rollback()
            with suppress(SQLAlchemyError):
                conn.exec_driver_sql("DETACH DATABASE old")
            return {table: Salvaged(0, None) for table in SALVAGED_TABLES}
        try:
            found = {table: _copy_table(conn, table) for table in SALVAGED_TABLES}
            # The cursors pointed into the old change feed, which is not salvaged: the new one
            # starts again at 1, and a cursor left at 5,000 would skip its first 5,000 events.
            # From its start, as for a cache made anew (the refill's adds are `initial`).
            if found["event_cursors"].kept:
                conn.exec_driver_sql("UPDATE main.event_cursors SET position = 0")
                conn.commit()
        finally:
            conn.exec_driver_sql("DETACH DATABASE old")
    return found


@dataclass(frozen=True, slots=True)
class Salvaged:
    """Rows of one table copied from a corrupt cache, and rows that could not be read (None
    when not even their number could be)."""

    kept: int
    lost: int | None


# Failed statements one table's salvage may spend narrowing down damaged ranges: a page of
# rows costs about two per row in it, so this is some 50 damaged pages. Past it, what is left
# of a failing range is given up whole rather than searched.
SALVAGE_FAILURES = 10_000


def _copy_table(conn: Connection, table: str) -> Salvaged:
    """Copy `table` by rowid ranges: the whole table in one statement when it reads well; a
    range that fails is halved until the rows SQLite cannot read are alone, so a damaged
    table loses only those, for a few statements per damaged page."""
    columns = [c["name"] for c in inspect(conn).get_columns(table)]
    names = ", ".join(f'"{c}"' for c in columns)
    insert = text(
        f"INSERT OR IGNORE INTO main.{table} ({names}) SELECT {names} FROM old.{table} "
        "WHERE rowid BETWEEN :lo AND :hi"
    )
    bounds = _read_or_none(conn, f"SELECT min(rowid), max(rowid), count(*) FROM old.{table}")
    lo, hi, total = bounds if bounds is not None else (MIN_ROWID, MAX_ROWID, None)
    if lo is None:  # an empty table
        return Salvaged(0, 0)
    kept, unreadable, budget = 0, 0, SALVAGE_FAILURES
    ranges = [(int(lo), int(hi))]
    while ranges:
        first, last = ranges.pop()
        try:
            kept += int(conn.execute(insert, {"lo": first, "hi": last}).rowcount or 0)
            conn.commit()
            continue
        except SQLAlchemyError:
            conn.rollback()
        budget -= 1
        if first == last or budget <= 0:
            unreadable += last - first + 1
            continue
        middle = first + (last - first) // 2
        ranges += [(middle + 1, last), (first, middle)]
    if total is not None:
        lost: int | None = max(int(total) - kept, 0)
    else:  # rowids that failed: the rows lost, where rowids are dense (these tables' are)
        lost = unreadable if bounds is not None else None
    log.info("salvaged from the corrupt cache", table=table, kept=kept, lost=lost)
    return Salvaged(kept, lost)


MIN_ROWID, MAX_ROWID = -(2**63), 2**63 - 1


def _read_or_none(conn: Connection, sql: str) -> tuple[Any, ...] | None:
    try:
        row = conn.exec_driver_sql(sql).one()
    except SQLAlchemyError:
        conn.rollback()
        return None
    conn.commit()
    return tuple(row)
