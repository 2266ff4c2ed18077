"""A real PostgreSQL server for the tests: `initdb` + `pg_ctl` on a temporary data folder, on a
free loopback port, stopped and deleted at the end of the session.

One server per test session (per xdist worker); each test that needs a database gets a fresh
one, copied from a template (`CREATE DATABASE ... TEMPLATE`, a file copy: far faster than
creating and migrating one). The server runs with fsync off: its data is thrown away anyway.

`initdb` refuses to run as root, so as root the server runs as the `postgres` user Debian's
package creates (`runuser`), and its data folder is given to that user.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.helpers import free_port

SERVER_USER = "postgres"  # the OS account the server runs as when the tests run as root
SUPERUSER = "weaver"  # the database role the tests connect as (trust auth on loopback)
TEMPLATE = "weaver_template"
# Tables `reset_database` leaves as they are: the schema's revision.
KEPT_TABLES = frozenset({"alembic_version"})
START_TIMEOUT_S = 60


# A database's tables, schema revision and cache_state rows.
_Shape = tuple[list[str], str | None, list[tuple[Any, ...]]]


def _shape_of(conn: psycopg.Connection[Any]) -> _Shape:
    tables = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    ).fetchall()
    names = [str(row[0]) for row in tables]
    if "alembic_version" not in names or "cache_state" not in names:
        return names, None, []
    revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    state = conn.execute("SELECT key, value FROM cache_state").fetchall()
    return names, None if revision is None else str(revision[0]), list(state)


class PostgresUnavailableError(Exception):
    """No PostgreSQL server binaries here, or no way to run them: the reason says which."""


def find_bin_dir() -> Path:
    """The newest installed server's bin folder (`WEAVER_PG_BIN` overrides)."""
    if configured := os.environ.get("WEAVER_PG_BIN"):
        folder = Path(configured)
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
        raise PostgresUnavailableError(f"WEAVER_PG_BIN={configured} holds no initdb and pg_ctl")
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    if found := shutil.which("pg_ctl"):
        return Path(found).parent
    raise PostgresUnavailableError(
        "no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or on PATH:"
        " run .ci/install-postgres"
    )


@dataclass
class PostgresServer:
    bin_dir: Path
    root: Path
    port: int = field(default_factory=free_port)
    _names: itertools.count[int] = field(default_factory=itertools.count)
    _shapes: dict[str, _Shape] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def start(self) -> None:
        as_user = self._run_as()
        if as_user:
            shutil.chown(self.root, user=SERVER_USER)
        self._run(
            [
                "initdb",
                "--pgdata",
                str(self.data_dir),
                "--username",
                SUPERUSER,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--locale",
                "C.UTF-8",
                "--no-sync",
            ]
        )
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
            ]
        )
        log_file = self.root / "server.log"
        self._run(
            [
                *("pg_ctl", "--pgdata", str(self.data_dir), "--log", str(log_file)),
                *("--options", options, "--wait", f"--timeout={START_TIMEOUT_S}", "start"),
            ]
        )
        self._create_template()

    def stop(self) -> None:
        if self.data_dir.exists():
            self._run(
                ["pg_ctl", "--pgdata", str(self.data_dir), "--mode", "immediate", "stop"],
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of `database` on this server (psycopg 3)."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, template: str = TEMPLATE) -> str:
        """A new empty database (a copy of `template`); returns its name."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
        return name

    def create_icu_database(self, icu_locale: str) -> str:
        """A new empty database whose default collation is the ICU locale `icu_locale` (most
        servers' databases sort linguistically, not by bytes as these tests' template)."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self.execute(
            sql.SQL(
                "CREATE DATABASE {} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE {} "
                "LOCALE 'C.UTF-8'"
            ).format(sql.Identifier(name), sql.Literal(icu_locale))
        )
        return name

    def drop_database(self, name: str) -> None:
        # FORCE: a test that failed midway may have left connections open.
        self.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )

    def reset_database(self, name: str, like: str) -> bool:
        """Empty every table of `name` and copy `like`'s `cache_state` rows back, when `name`
        still has `like`'s tables and revision; False (and `name` untouched) otherwise.
        Emptying a database takes a fraction of the time of copying a new one."""
        shape = self._shapes.get(like) or self._shapes.setdefault(like, self._shape(like))
        tables, revision, state = shape
        try:
            with psycopg.connect(self._conninfo(name), autocommit=True) as conn:
                if _shape_of(conn)[:2] != (tables, revision):
                    return False
                conn.execute("SET lock_timeout = '2s'")  # a connection the test left open
                emptied = [t for t in tables if t not in KEPT_TABLES]
                with conn.transaction():
                    conn.execute(
                        sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                            sql.SQL(", ").join(map(sql.Identifier, emptied))
                        )
                    )
                    if state:
                        with conn.cursor() as cursor:
                            cursor.executemany(
                                "INSERT INTO cache_state (key, value) VALUES (%s, %s)", state
                            )
        except psycopg.errors.LockNotAvailable:
            return False
        return True

    def _shape(self, database: str) -> _Shape:
        with psycopg.connect(self._conninfo(database), autocommit=True) as conn:
            return _shape_of(conn)

    def _conninfo(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"

    def execute(self, statement: sql.Composed | str, database: str = "postgres") -> None:
        with psycopg.connect(self._conninfo(database), autocommit=True) as conn:
            conn.execute(statement if isinstance(statement, sql.Composed) else sql.SQL(statement))

    def log_tail(self, lines: int = 30) -> str:
        log_file = self.root / "server.log"
        if not log_file.exists():
            return ""
        return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])

    def _create_template(self) -> None:
        self.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))

    def _run_as(self) -> str | None:
        if os.geteuid() != 0:
            return None
        if shutil.which("runuser") is None:
            raise PostgresUnavailableError(
                "running as root without runuser: cannot start PostgreSQL"
            )
        try:
            shutil.chown(self.root, user=SERVER_USER)
        except LookupError as exc:
            raise PostgresUnavailableError(
                f"running as root and there is no {SERVER_USER!r} user to run PostgreSQL as"
            ) from exc
        return SERVER_USER

    def _run(self, argv: Sequence[str], check: bool = True) -> None:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if user := self._run_as():
            command = ["runuser", "-u", user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=self.root)
        if check and done.returncode != 0:
            raise RuntimeError(
                f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}\n{self.log_tail()}"
            )


def start_server() -> PostgresServer:
    """A started server in a new temporary folder; raises `PostgresUnavailableError` if not."""
    bin_dir = find_bin_dir()
    root = Path(tempfile.mkdtemp(prefix="weaver-pg-"))
    server = PostgresServer(bin_dir=bin_dir, root=root)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
