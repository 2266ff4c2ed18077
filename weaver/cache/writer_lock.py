"""The writer's PostgreSQL advisory lock: one process applies file changes to a vault's cache.

On PostgreSQL the cache is shared by processes on many hosts, so `flock` beside a file cannot
say who writes. A session-level advisory lock can: it is held by one connection, seen by
every other one, and released by the server the moment that connection dies (a `kill -9` of
its process, a lost host) — which is what lets a standby take over.

The key is two int4s: a fixed class naming Weaver's writer lock, and a hash of the database's
name. Advisory locks are scoped to a database already; the hash keeps the key stable across
hosts (any path to the vault may differ between a writer and its standby) and distinct from
whatever else shares the server. One database holds one vault's cache.

Who holds it is read from `pg_stat_activity`: the holder's connection carries
`application_name = "weaver-writer <host>:<pid> since <UTC time>"`, set when it connects, so
a refused writer can name the first without a table of its own (and without one to clean up
after a crash).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

# "WEAV": the class half of the key, set apart from other users of advisory locks.
LOCK_CLASS = 0x57454156
APPLICATION_PREFIX = "weaver-writer "

_KEY = "hashtext('weaver-writer:' || current_database())"


def try_lock_writer(conn: Connection) -> bool:
    """Take the lock for this connection's session if it is free; never blocks."""
    statement = text(f"SELECT pg_try_advisory_lock(:cls, {_KEY})")
    return bool(conn.execute(statement, {"cls": LOCK_CLASS}).scalar())


def unlock_writer(conn: Connection) -> None:
    conn.execute(text(f"SELECT pg_advisory_unlock(:cls, {_KEY})"), {"cls": LOCK_CLASS})


def holds_writer(conn: Connection) -> bool:
    """True while this connection's session holds the lock."""
    statement = text(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND pid = pg_backend_pid() AND database = (SELECT oid FROM pg_database"
        " WHERE datname = current_database())"
        f" AND classid = CAST(:cls AS oid) AND objid = ({_KEY})::oid AND objsubid = 2"
    )
    return bool(conn.execute(statement, {"cls": LOCK_CLASS}).scalar())


def describe_writer(conn: Connection) -> str | None:
    """Who holds the lock (its `application_name`, client address and backend pid), or None."""
    statement = text(
        "SELECT a.application_name, host(a.client_addr), a.pid FROM pg_locks l"
        " JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid"
        " FROM pg_database WHERE datname = current_database())"
        f" AND l.classid = CAST(:cls AS oid) AND l.objid = ({_KEY})::oid AND l.objsubid = 2"
    )
    row = conn.execute(statement, {"cls": LOCK_CLASS}).first()
    if row is None:
        return None
    name, address, backend = row
    who = name.removeprefix(APPLICATION_PREFIX) if name else "an unnamed session"
    where = f" from {address}" if address else ""
    return f"{who}{where} (server backend {backend})"
