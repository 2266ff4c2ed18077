"""Faults degrade, then heal: a full disk (a small tmpfs the test mounts), a deleted cache
folder, a corrupt cache, a run whose end cannot be recorded."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy.exc import OperationalError

from tests.helpers import EngineFactory, WriteNotes, free_port, wait_for, write_files
from tests.host.test_daemon import Daemon
from tests.host.test_http_processes import Connection, health
from weaver import file_locks
from weaver.cache import executions
from weaver.config import Settings
from weaver.engine import WorkflowContext, workflow
from weaver.errors import DaemonError
from weaver.runtime.app import App, open_app
from weaver.runtime.health_report import Health, compute_health
from weaver.runtime.locks import WriterLock, daemon_lock, daemon_running
from weaver.runtime.state import ServerState
from weaver.vault.watcher import VaultWatcher


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: a disk that fills up. Needs root (mount), as on this project's CI."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    return filler


def health_of(state: ServerState) -> Health:
    """`compute_health` of a server whose initial index is done."""

    async def report() -> Health:
        return compute_health(ready(state))

    return anyio.run(report)


def ready(state: ServerState) -> ServerState:
    """`state` as the lifespan leaves it once the initial index is done (in an event loop)."""
    watcher, writer = state.watcher, state.writer
    state.begin()
    state.mark_ready()
    state.watcher, state.writer = watcher, writer
    return state


def test_a_full_disk_degrades_then_heals_without_a_restart(
    small_disk: Path, vault_dir: Path, write_notes: WriteNotes
) -> None:
    write_notes({f"n{i}.md": f"note {i}" for i in range(5)})
    app = open_app(Settings(vault=vault_dir, database_url=f"sqlite:///{small_disk}/cache.db"))
    try:
        app.indexer.reconcile()
        filler = fill(small_disk)
        write_notes({f"new{i}.md": "new words " * 2000 for i in range(40)})
        watcher = VaultWatcher(app.indexer)
        with pytest.raises(OperationalError, match="full"):
            app.indexer.reconcile()
        problems = health_of(_writer_state(app, watcher)).problems
        assert any(p.startswith("disk full") for p in problems), problems

        async def heal() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watcher._recover)
                await anyio.to_thread.run_sync(lambda: wait_for(lambda: watcher.healing, 30))
                report = compute_health(ready(_writer_state(app, watcher)))
                assert report.status == "degraded"
                assert any("retrying" in p for p in report.problems), report.problems
                filler.unlink()  # space comes back: the next retry succeeds

        anyio.run(heal)
        assert not watcher.healing
        with app.db.connect() as conn:
            count = conn.exec_driver_sql("SELECT count(*) FROM notes").scalar_one()
        assert count == 45  # the 40 notes written while commits failed are all there
        assert health_of(_writer_state(app, watcher)).status == "healthy"
    finally:
        app.close()


def _writer_state(app: App, watcher: VaultWatcher) -> ServerState:
    state = ServerState(app, watch=True)
    state.writer, state.watcher = True, watcher
    watcher.running = True
    return state


def test_a_deleted_cache_is_reported_unhealthy(app: App) -> None:
    shutil.rmtree(app.settings.vault / ".weaver")
    report = health_of(ServerState(app, watch=False))
    assert report.status == "unhealthy"
    assert any("cache file is missing" in p for p in report.problems), report.problems


def test_a_deleted_cache_its_writer_makes_again_is_reported_degraded(app: App) -> None:
    cache = app.settings.vault / ".weaver" / "cache.db"
    shutil.rmtree(cache.parent)
    with WriterLock(Path(str(cache) + ".writer.lock")) as writer:  # as the daemon remakes it
        assert writer.try_acquire()
        report = health_of(ServerState(app, watch=True))
    assert report.status == "degraded"
    assert report.problems == [f"the cache file is missing ({cache} was deleted): being made again"]
    assert not cache.exists()  # health made nothing either


def test_a_corrupt_cache_is_reported_unhealthy(app: App, write_notes: WriteNotes) -> None:
    write_notes({f"n{i}.md": "words " * 300 for i in range(100)})
    app.indexer.reconcile()
    app.db.dispose()
    cache = app.settings.vault / ".weaver" / "cache.db"
    with cache.open("r+b") as handle:
        handle.write(b"\xa5" * 100)
    report = health_of(ServerState(app, watch=False))
    assert report.status == "unhealthy"
    assert any("corrupt" in p for p in report.problems), report.problems


def test_the_daemon_lock_survives_deleting_the_cache_folder(vault_dir: Path) -> None:
    if not file_locks.locks_folders():
        # The vault folder's own lock is what survives; Windows has none, and needs none:
        # there the open lock file keeps its folder from being deleted at all.
        pytest.skip("no folder lock on these locks (Windows, or `make test-portable`)")
    with daemon_lock(vault_dir):
        shutil.rmtree(vault_dir / ".weaver")
        assert daemon_running(vault_dir)
        with pytest.raises(DaemonError, match="already running"), daemon_lock(vault_dir):
            pass
    assert not daemon_running(vault_dir)


def test_a_run_end_not_recorded_is_retried_until_it_is(
    app: App, make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = workflow(id="quick")(_quick)
    engine = make_engine(quick, background="threads", workflow_workers=1)
    real_finish = executions.finish
    failures = [3]

    def full_disk(*args: Any, **kwargs: Any) -> int:
        if kwargs.get("status") == executions.COMPLETED and failures[0] > 0:
            failures[0] -= 1
            raise OperationalError("UPDATE", {}, Exception("database or disk is full"))
        return real_finish(*args, **kwargs)

    monkeypatch.setattr(executions, "finish", full_disk)
    monkeypatch.setattr("weaver.engine.run_ends.END_RETRY_SECONDS", 0.05)
    started = engine.trigger("quick", async_=True)
    wait_for(lambda: engine.faults, 30, "the fault reported")
    assert "disk is full" in engine.faults[0]
    wait_for(lambda: engine.get_status(started.execution_id).status == "completed", 30)
    # The fault is cleared once the end is recorded (a moment after the row shows it).
    wait_for(lambda: engine.faults == [], 5, "the fault cleared")
    # The slot is free again: the next run is not stuck behind it.
    assert engine.trigger("quick").status == "completed"


def _quick(ctx: WorkflowContext[Any]) -> str:
    return "done"


def test_the_writer_lock_is_made_again_when_its_folder_goes(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "cache.db.writer.lock"
    mine = WriterLock(path)
    assert mine.try_acquire()
    shutil.rmtree(path.parent)
    assert mine.reassert() and path.exists()
    assert not WriterLock(path).try_acquire()  # a newcomer finds it taken
    mine.release()


def test_a_writer_whose_lock_was_taken_meanwhile_is_told(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "cache.db.writer.lock"
    mine, newcomer = WriterLock(path), WriterLock(path)
    assert mine.try_acquire()
    shutil.rmtree(path.parent)
    assert newcomer.try_acquire()  # it came first, on a new file
    assert not mine.reassert()
    newcomer.release()


@pytest.mark.slow
def test_a_starting_daemon_reports_no_fault_it_does_not_have(tmp_path: Path) -> None:
    """From the moment it answers until its first index is done, health (MCP and HTTP) says
    `starting` or `healthy`: never `degraded` because the watcher has not begun yet."""
    vault = write_files(
        tmp_path / "vault", {f"n/{i}.md": f"# {i}\n[[{i + 1}]]\n" for i in range(1500)}
    )
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nhttp_processes = 2\nsemantic = false\n'
    )
    daemon = Daemon(vault, config, port, tmp_path / "daemon.log")
    with daemon.log.open("a") as log:
        process = subprocess.Popen(
            daemon.command("daemon"), stderr=log, stdout=log, text=True, env=daemon.env()
        )
    seen: list[tuple[str, str, list[str]]] = []

    def healthy_at_last() -> bool:
        assert process.poll() is None, daemon.log.read_text()
        body = health(port)
        if body is None:
            return False  # not answering yet
        seen.append(("http", body["status"], []))
        connection = Connection(port)
        try:
            report = connection.call("health_check")["data"]
        finally:
            connection.http.close()
        seen.append(("mcp", report["status"], report["problems"]))
        return bool(body["status"] == report["status"] == "healthy")

    try:
        wait_for(healthy_at_last, 60, "the daemon healthy", every=0.02)
    finally:
        daemon.stop(process)
    faults = [entry for entry in seen if entry[1] not in ("starting", "healthy")]
    assert not faults, faults
    assert ("mcp", "starting", ["the initial index of the vault is still running"]) in seen
