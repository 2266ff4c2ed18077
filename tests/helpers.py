"""What several test modules share: vaults written to disk, waiting for something that happens
in another thread or process, and what the SQL of a block was."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from sqlalchemy import Engine, event

from weaver.config import Settings
from weaver.engine import WorkflowEngine
from weaver.runtime.app import App, open_app

T = TypeVar("T")
WriteNotes = Callable[[Mapping[str, str | bytes]], Path]
EngineFactory = Callable[..., WorkflowEngine]


def write_files(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Create `files` (vault-relative path -> text or bytes) under `root`."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def measured() -> bool:
    """Whether coverage is measuring this process: every line then runs slower."""
    return sys.gettrace() is not None or ("coverage" in sys.modules and _coverage_running())


def _coverage_running() -> bool:
    import coverage

    return coverage.Coverage.current() is not None


# A wait's deadline is how long a slow machine may take, never a speed being tested: under
# coverage's tracer the same work takes about twice as long.
SLOWDOWN = 2.0


def deadline_after(timeout: float) -> float:
    return time.monotonic() + timeout * (SLOWDOWN if measured() else 1.0)


def wait_for(
    check: Callable[[], T], timeout: float = 5.0, what: str = "the condition", every: float = 0.01
) -> T:
    """Call `check` until it returns something truthy, and return that; fail the test naming
    `what` when `timeout` seconds pass first (twice that under coverage)."""
    deadline = deadline_after(timeout)
    while True:
        if result := check():
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


async def wait_for_async(
    check: Callable[[], T], timeout: float = 5.0, what: str = "the condition", every: float = 0.02
) -> T:
    """`wait_for` inside an event loop: the loop keeps running between the calls of `check`."""
    deadline = deadline_after(timeout)
    while True:
        if result := check():
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await anyio.sleep(every)


def logged(log: Path, line: str) -> Callable[[], bool]:
    """Whether the log file at `log` holds `line` yet: a process's own word that it reached a
    point (a server's "watching vault"), for `wait_for`."""
    return lambda: log.exists() and line in log.read_text(errors="replace")


@contextmanager
def indexed_app(root: Path, files: Mapping[str, str | bytes]) -> Iterator[App]:
    """A Weaver app over a new vault of `files` at `root`, indexed once, closed at the end
    (for module-scoped fixtures, where the function-scoped `app` of conftest does not fit)."""
    root.mkdir(parents=True)
    app = open_app(Settings(vault=write_files(root, files)))
    try:
        app.indexer.reconcile()
        yield app
    finally:
        app.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is `parent`, from /proc (Linux)."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        if int(stat.rpartition(")")[2].split()[1]) == parent:
            children.append(int(entry.name))
    return children


@contextmanager
def statements_run(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements `engine` sends while the block runs, in order (for the tests that
    count a query's statements)."""
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def bare_env(**settings: str) -> dict[str, str]:
    """A near-empty environment for a server a test starts as a user would (`settings`: its
    `WEAVER_*` variables), keeping the session's model cache (`XDG_CACHE_HOME`, set by
    `conftest.embedding_cache`): without it each server distilled the embedding model anew
    into the user's cache on a fresh machine, and was killed at its test's end before done."""
    env = {"PATH": "/usr/bin:/bin", **settings}
    if "XDG_CACHE_HOME" in os.environ:
        env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    return env


def clean_env() -> dict[str, str]:
    """This process's environment without `WEAVER_*`: a command started with it reads only
    the settings its test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("WEAVER_")}
