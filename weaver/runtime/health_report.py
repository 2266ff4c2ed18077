"""How this process is doing: the report behind `health_check`, `GET /health` and the dashboard.

- `unhealthy`: the cache cannot be queried, or the vault folder cannot be read, or its file was
  deleted with no writer to make it again.
- `degraded`: it works, partly: the cache file was deleted and its writer makes it again, the
  initial index failed, this process should be watching but
  its watcher stopped, a migration is pending, or the workflow engine stopped or failed to
  load a plugin.
- `starting`: nothing is wrong, but the initial index is still running (tools wait for it):
  a server just started is not reported for faults it does not have.
- `healthy` otherwise. A reader process (another one holds the writer lock) is healthy: the
  cache is kept fresh, just not by it.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import weaver
from weaver.cache import read
from weaver.cache.db import pending_migrations
from weaver.cache.recovery import is_corruption, sqlite_file, writer_of
from weaver.runtime.state import ServerState
from weaver.semantic.search import embedding_status

Status = Literal["healthy", "starting", "degraded", "unhealthy"]
STATUS_SEVERITY: tuple[Status, ...] = ("healthy", "starting", "degraded", "unhealthy")


@dataclass(frozen=True)
class Components:
    shadow_cache: bool
    workflow_engine: bool
    file_system: bool


@dataclass(frozen=True)
class Health:
    status: Status
    components: Components
    uptime: int
    request_count: int
    version: str
    role: Literal["writer", "reader", "unwatched"]
    problems: list[str]
    embedding: str


# Free space under which the disk holding the cache counts as full: SQLite needs room for the
# WAL and a transaction's pages; a write fails "database or disk is full" well before zero.
DISK_FULL_BYTES = 1024 * 1024
# How long the slower probes of the cache's folder (free space, writability, pending migrations)
# are reused: each one gives up the GIL, and while other threads compute (a workflow pass) every
# such round trip cost a call a millisecond or more. A fault shows, or clears, within this.
PROBE_REUSE_S = 1.0


def _missing_cache(state: ServerState, problems: list[str]) -> bool | None:
    """None when the cache file is there (or the cache is no file). Missing: True (degraded)
    while a writer makes it again, this process (which says so in `cache_fault`) or another;
    False (unhealthy) when nobody will. Its connections would wait for it: none is made."""
    path = sqlite_file(state.app.settings.db_url)
    if path is None or path.exists():
        return None
    if state.writer or writer_of(path) is not None:
        if not state.cache_fault:
            problems.append(f"the cache file is missing ({path} was deleted): being made again")
        return True
    problems.append(
        f"the cache file is missing ({path} was deleted) and no process writes this cache: "
        "start weaver daemon (or run weaver index) to make it again"
    )
    return False


def _cache_ok(state: ServerState, problems: list[str]) -> bool:
    path = sqlite_file(state.app.settings.db_url)
    try:
        with state.app.db.connect() as conn:
            read.probe(conn)
    except Exception as exc:
        first_line = str(getattr(exc, "orig", exc)).strip().partition("\n")[0]
        if path is None:  # a database server (PostgreSQL): no file to check or rebuild here
            url = state.app.db.url.render_as_string(hide_password=True)
            problems.append(f"the cache database {url} cannot be reached: {first_line}")
        elif is_corruption(exc):
            problems.append(
                "the cache is corrupt: the writer (weaver daemon or serve) moves it aside and "
                f"rebuilds it ({first_line})"
            )
        else:
            problems.append(f"shadow cache cannot be queried: {type(exc).__name__}")
        return False
    problems.extend(_reused_probes(state, path))
    return True


def _reused_probes(state: ServerState, path: Path | None) -> list[str]:
    """`_slow_probes`, reused for `PROBE_REUSE_S` by the same server."""
    now = time.monotonic()
    kept = state.health_probes
    if kept is not None and now - kept[0] < PROBE_REUSE_S:
        return list(kept[1])
    found = _slow_probes(state, path)
    state.health_probes = (now, tuple(found))
    return found


def _slow_probes(state: ServerState, path: Path | None) -> list[str]:
    # A reader writes nothing: the cache's disk and permissions are the writer's concern.
    writes = state.may_write
    found = _cache_disk_problems(path) if path is not None and writes else []
    try:
        if pending_migrations(state.app.db):
            found.append("the cache schema has a pending migration")
    except Exception as exc:
        found.append(f"cannot check cache migrations: {type(exc).__name__}")
    return found


def _cache_disk_problems(path: Path) -> list[str]:
    folder = path.parent
    found = []
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if free is not None and free < DISK_FULL_BYTES:
        found.append(f"disk full: {free // 1024} KiB free where the cache is ({folder})")
    if not os.access(folder, os.W_OK) or not os.access(path, os.W_OK):
        found.append(f"the cache is not writable ({path})")
    return found


def _vault_ok(state: ServerState, problems: list[str]) -> bool:
    if not state.app.vault.has_files:
        return True  # a reader: the files are the writer's, never looked at here
    root = state.app.vault.root
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as exc:
        problems.append(f"vault folder cannot be read: {exc.strerror or type(exc).__name__}")
        return False
    return True


STARTING = "the initial index of the vault is still running"


def _indexing_problems(state: ServerState) -> list[str]:
    problems: list[str] = []
    if state.cache_fault:
        problems.append(state.cache_fault)
    if not state.ready:
        problems.append(STARTING)
    if state.reconcile_error:
        problems.append(f"indexing the vault failed: {state.reconcile_error}")
    watcher = state.watcher
    if state.writer and state.watch and watcher is not None:
        detail = f": {watcher.last_error}" if watcher.last_error else ""
        if watcher.healing:
            problems.append(f"changes not yet in the cache, retrying{detail}")
        if watcher.stopped:
            problems.append(f"the file watcher stopped{detail}")
        elif watcher.restarting:
            problems.append(f"the file watcher is restarting after an error{detail}")
    return problems


def _embedding(state: ServerState, problems: list[str]) -> str:
    """Embedding progress; a worker that stopped on an error is a problem (keyword search
    still works, semantic search does not)."""
    worker = state.embedding
    if worker is not None and worker.error:
        problems.append(f"semantic search is not embedding notes: {worker.error}")
    try:
        with state.app.db.connect() as conn:
            return embedding_status(state.app.semantic, conn, state.app.settings.semantic)
    except Exception as exc:
        return f"embedding progress cannot be read: {type(exc).__name__}"


def _engine_ok(state: ServerState, problems: list[str]) -> bool:
    engine = state.engine
    if engine is None:
        return False  # not part of this build yet: reported, not a problem
    if not engine.running:
        problems.append("the workflow engine is not running")
    problems.extend(f"workflow plugin failed to load: {name}" for name in engine.plugin_errors)
    problems.extend(engine.faults)
    return engine.running


def compute_health(state: ServerState) -> Health:
    """The health report; never raises (it runs blocking checks: call it in a thread)."""
    problems: list[str] = []
    missing = _missing_cache(state, problems)
    cache_ok = _cache_ok(state, problems) if missing is None else missing
    vault_ok = _vault_ok(state, problems)
    try:
        engine_ok = _engine_ok(state, problems)
    except Exception as exc:
        engine_ok = False
        problems.append(f"the workflow engine cannot report: {type(exc).__name__}")
    problems.extend(_indexing_problems(state))
    embedding = _embedding(state, problems) if cache_ok and missing is None else ""
    status: Status
    if not (cache_ok and vault_ok):
        status = "unhealthy"
    elif problems == [STARTING]:
        status = "starting"
    elif problems:
        status = "degraded"
    else:
        status = "healthy"
    return Health(
        status=status,
        components=Components(
            shadow_cache=cache_ok, workflow_engine=engine_ok, file_system=vault_ok
        ),
        uptime=state.uptime_ms,
        request_count=state.request_count,
        version=weaver.__version__,
        role=state.role,
        problems=problems,
        embedding=embedding,
    )
