"""A corrupt cache: found, moved aside with a one-line explanation, rebuilt, history salvaged.

The cache is derived from the notes, except for what the workflows made: execution history,
their records, what they wrote (to know their own changes), the change feed's cursors. So a
cache SQLite calls corrupt (garbage in the file, a truncated file, "file is not a database")
is not repaired in place: it is renamed `cache.db.corrupt-<time>` (with its WAL), a new one is
created and filled from the notes by the first index, and the workflow tables are copied
over from the old file, table by table, as far as SQLite can still read them; what could not
be read is named in the log.

`check_cache` runs SQLite's `quick_check` (which reads every page: a fraction of a second
for a 10,000-note cache): the long-running entry points (daemon, serve, `weaver index`) run
it at start. While running, a query failing with a corruption error makes `health_check`
report the cache `corrupt` (unhealthy); the next start moves it aside.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import structlog
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, SQLAlchemyError

log = structlog.get_logger(__name__)

# Words of SQLite's messages that mean the file itself is damaged (not busy, not full).
CORRUPTION_MARKERS = ("not a database", "malformed", "corrupt")
# The tables not rebuilt from the notes, copied from a corrupt cache where readable.
SALVAGED_TABLES = ("executions", "workflow_writes", "workflow_records", "event_cursors")


@dataclass(frozen=True, slots=True)
class Recovery:
    """What happened to a corrupt cache."""

    cause: str
    moved_to: Path
    salvaged: dict[str, int]
    lost: tuple[str, ...]


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


# Beside the cache: a reader process that met a corruption error leaves the cause here for the
# writer, which alone may replace the file (`host.rebuild`).
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


def salvage(engine: Engine, old: Path) -> tuple[dict[str, int], tuple[str, ...]]:
    """Copy the workflow tables from `old` into the new cache, each table in its own
    transaction; returns the rows copied per table and the tables that could not be read."""
    copied: dict[str, int] = {}
    lost: list[str] = []
    with engine.connect() as conn:
        try:
            conn.exec_driver_sql("ATTACH DATABASE ? AS old", (str(old),))
            conn.exec_driver_sql("SELECT count(*) FROM old.sqlite_master").scalar()
        except SQLAlchemyError:  # not a database at all: nothing can be read from it
            conn.rollback()
            with suppress(SQLAlchemyError):
                conn.exec_driver_sql("DETACH DATABASE old")
            return {}, SALVAGED_TABLES
        try:
            for table in SALVAGED_TABLES:
                try:
                    copied[table] = _copy_table(conn, table)
                    conn.commit()
                except SQLAlchemyError:
                    conn.rollback()
                    lost.append(table)
            # The cursors pointed into the old change feed, which is not salvaged: the new one
            # starts again at 1, and a cursor left at 5,000 would skip its first 5,000 events.
            # From its start, as for a cache made anew (the refill's adds are `initial`).
            if "event_cursors" in copied:
                conn.exec_driver_sql("UPDATE main.event_cursors SET position = 0")
                conn.commit()
        finally:
            conn.exec_driver_sql("DETACH DATABASE old")
    return copied, tuple(lost)


def _copy_table(conn: Connection, table: str) -> int:
    columns = [c["name"] for c in inspect(conn).get_columns(table)]
    names = ", ".join(f'"{c}"' for c in columns)
    result = conn.execute(
        text(f"INSERT OR IGNORE INTO main.{table} ({names}) SELECT {names} FROM old.{table}")
    )
    return int(result.rowcount or 0)
