"""File locks between processes, on both backends: flock (POSIX) and msvcrt (Windows), the latter
run here through `tests/standins/msvcrt.py` (over open-file-description locks, so two processes
really exclude each other). Each lock is held by a child process: what another process sees is
the point.

The stand-in is registered in `sys.modules` once the process has imported what it needs, never
put on the path: the standard library's `subprocess` takes an importable `msvcrt` for Windows."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import clean_env
from tests.standins import msvcrt as msvcrt_standin
from weaver import file_locks
from weaver.cache.recovery import writer_of
from weaver.config import Settings
from weaver.errors import DaemonError
from weaver.runtime.locks import WriterLock, daemon_lock, daemon_running, writer_lock_for
from weaver.vault.note_locks import NoteLocks

ROOT = Path(__file__).resolve().parents[1]

# With the backend WEAVER_FILE_LOCKS names, takes the lock of argv[2] as argv[1] says, says
# "held" (or "refused"), waits for a line, releases it, says "released", then waits for its end.
HOLDER = """
import os, sys
from tests.standins import msvcrt
from weaver import file_locks
sys.modules["msvcrt"] = msvcrt
how, path = sys.argv[1:]
fd = os.open(path, os.O_RDWR | os.O_CREAT)
taken = {"exclusive": file_locks.try_lock, "shared": file_locks.try_lock_shared}[how](fd)
print("held" if taken else "refused", flush=True)
sys.stdin.readline()
file_locks.unlock(fd)
print("released", flush=True)
sys.stdin.readline()
"""

# Holds a vault's daemon lock, its cache's writer lock and one note lock, as a daemon does. With
# argv[1] == "msvcrt", `fcntl` cannot be imported (the stand-in took it first): Weaver must pick
# the Windows backend by itself.
DAEMON = """
import sys
from tests.standins import msvcrt
if sys.argv[1] == "msvcrt":
    sys.modules["fcntl"] = None
from pathlib import Path
from weaver.runtime.locks import WriterLock, daemon_lock
from weaver.vault.note_locks import NoteLocks
if sys.argv[1] == "msvcrt":
    sys.modules["msvcrt"] = msvcrt
vault, cache = Path(sys.argv[2]), Path(sys.argv[3])
with daemon_lock(vault), WriterLock(Path(str(cache) + ".writer.lock")) as writer:
    assert writer.try_acquire()
    with NoteLocks(vault).hold(["a.md"]):
        print("held", flush=True)
        sys.stdin.readline()
"""


@pytest.fixture(params=["flock", "msvcrt"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """This process's locks forced to one backend (with the stand-in as `msvcrt`)."""
    name: str = request.param
    if name == "flock" and os.environ.get("WEAVER_PORTABLE_PATHS"):
        pytest.skip("`make test-portable` leaves Weaver no fcntl: flock is tested by `make test`")
    monkeypatch.setenv(file_locks.FORCE_ENV, name)
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt_standin)
    return name


def child_env(backend: str, *, forced: bool = True) -> dict[str, str]:
    env = clean_env()
    env["PYTHONPATH"] = str(ROOT)
    if forced:
        env[file_locks.FORCE_ENV] = backend
    return env


def start(script: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != "held":
        child.kill()
        _, err = child.communicate(timeout=10)
        pytest.fail(f"the child did not take its lock ({line!r}): {err}")
    return child


def tell(child: subprocess.Popen[str]) -> str:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("\n")
    child.stdin.flush()
    return child.stdout.readline().strip()


@contextmanager
def held_by_child(
    backend: str, path: Path, how: str = "exclusive"
) -> Iterator[subprocess.Popen[str]]:
    child = start(HOLDER, [how, str(path)], child_env(backend))
    try:
        yield child
    finally:
        child.kill()
        child.communicate(timeout=10)


@contextmanager
def opened(path: Path, flags: int = os.O_RDWR | os.O_CREAT) -> Iterator[int]:
    fd = os.open(path, flags)
    try:
        yield fd
    finally:
        os.close(fd)


def killed(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=10)


@pytest.mark.slow
def test_a_lock_held_elsewhere_excludes_until_released(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with held_by_child(backend, path) as child, opened(path) as fd:
        assert not file_locks.try_lock(fd)
        assert not file_locks.try_lock_shared(fd)
        assert tell(child) == "released"
        assert file_locks.try_lock(fd)
        file_locks.unlock(fd)


@pytest.mark.slow
def test_a_holder_killed_with_sigkill_leaves_no_lock(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with held_by_child(backend, path) as child, opened(path) as fd:
        assert not file_locks.try_lock(fd)
        killed(child)
        assert file_locks.try_lock(fd)
        file_locks.unlock(fd)


@pytest.mark.slow
def test_the_shared_try(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    path.touch()
    with opened(path, os.O_RDONLY) as probe:  # as `writer_of` probes: read-only
        assert file_locks.try_lock_shared(probe)  # nobody holds it
        file_locks.unlock(probe)
        with held_by_child(backend, path, "shared"), opened(path) as fd:
            assert not file_locks.try_lock(fd)
            # Two shared locks go together on POSIX; Windows has only exclusive ones.
            assert file_locks.try_lock_shared(probe) == (backend == "flock")


@pytest.mark.slow
def test_the_blocking_lock_waits_for_the_holder(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    taken = threading.Event()
    with held_by_child(backend, path) as child, opened(path) as fd:

        def wait_for_it() -> None:
            file_locks.lock(fd)
            taken.set()

        waiter = threading.Thread(target=wait_for_it, daemon=True)
        waiter.start()
        # Longer than the stand-in's LK_LOCK gives up after: the wait goes on past it.
        assert not taken.wait(msvcrt_standin.TRIES * msvcrt_standin.RETRY_S * 2)
        assert tell(child) == "released"
        assert taken.wait(10)
        waiter.join(10)
        file_locks.unlock(fd)


def test_the_windows_lock_keeps_the_position_and_the_content(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(file_locks.FORCE_ENV, "msvcrt")
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt_standin)
    path = tmp_path / "x.lock"
    path.write_text("4242")
    with opened(path) as fd:
        os.lseek(fd, 2, os.SEEK_SET)
        assert file_locks.try_lock(fd)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 2
        file_locks.unlock(fd)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 2
    assert path.read_text() == "4242"  # the locked byte lies past it, and is not written


def test_the_platform_decides_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(file_locks.FORCE_ENV, raising=False)
    assert isinstance(file_locks.platform_locks(), file_locks.FlockLocks)
    assert file_locks.locks_folders()
    monkeypatch.setitem(sys.modules, "fcntl", None)  # as on Windows
    assert isinstance(file_locks.platform_locks(), file_locks.MsvcrtLocks)
    assert not file_locks.locks_folders()
    monkeypatch.setenv(file_locks.FORCE_ENV, "flock")
    assert isinstance(file_locks.platform_locks(), file_locks.FlockLocks)
    monkeypatch.setenv(file_locks.FORCE_ENV, "lockf")
    with pytest.raises(ValueError, match="WEAVER_FILE_LOCKS='lockf'"):
        file_locks.platform_locks()


@pytest.mark.slow
def test_a_daemon_s_locks_exclude_another_process_until_it_is_killed(
    backend: str, vault_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache" / "cache.db"
    cache.parent.mkdir()
    daemon = start(DAEMON, [backend, str(vault_dir), str(cache)], child_env(backend, forced=False))
    try:
        assert daemon_running(vault_dir)
        with pytest.raises(DaemonError, match=f"pid {daemon.pid}"), daemon_lock(vault_dir):
            pass
        assert writer_of(cache) == str(daemon.pid)
        assert not WriterLock(Path(str(cache) + ".writer.lock")).try_acquire()
        with pytest.raises(TimeoutError), NoteLocks(vault_dir).hold(["a.md"], check=deadline(0.3)):
            pass
    finally:
        killed(daemon)
    assert not daemon_running(vault_dir)
    assert writer_of(cache) is None
    with WriterLock(Path(str(cache) + ".writer.lock")) as writer:
        assert writer.try_acquire()
    with NoteLocks(vault_dir).hold(["a.md"], check=deadline(5)), daemon_lock(vault_dir):
        pass


# A daemon whose `.weaver/` is deleted under it: holds the vault's daemon lock, says "held";
# at a line, makes its writer lock again (as `WriterLock.reassert` does) and says "held".
REMAKING_DAEMON = """
import sys
from pathlib import Path
from weaver.runtime.locks import WriterLock, daemon_lock
vault = Path(sys.argv[1])
with daemon_lock(vault):
    print("held", flush=True)
    sys.stdin.readline()
    writer = WriterLock(vault / ".weaver" / "cache.db.writer.lock", vault)
    assert writer.try_acquire()
    print("held", flush=True)
    sys.stdin.readline()
"""


def remaking_daemon(vault: Path) -> subprocess.Popen[str]:
    if os.environ.get("WEAVER_PORTABLE_PATHS"):
        pytest.skip("a held folder cannot be deleted on Windows: no lock file goes missing")
    env = clean_env()
    env["PYTHONPATH"] = str(ROOT)
    daemon = start(REMAKING_DAEMON, [str(vault)], env)
    shutil.rmtree(vault / ".weaver")  # `rm -rf .weaver`, the daemon lock file with it
    return daemon


def test_a_newcomer_waits_for_the_daemon_to_make_its_deleted_lock_again(vault_dir: Path) -> None:
    """Without the wait, a `weaver serve` or `weaver index` started just after `rm -rf .weaver`
    took a fresh lock and made an empty cache of its own beside the daemon's."""
    daemon = remaking_daemon(vault_dir)
    try:
        newcomer = writer_lock_for(Settings(vault=vault_dir))  # as `weaver index` takes it
        remade = threading.Timer(0.5, tell, [daemon])
        started = time.monotonic()
        remade.start()
        assert not newcomer.try_acquire()  # the daemon's, made again meanwhile
        assert time.monotonic() - started >= 0.4
        assert newcomer.holder() == str(daemon.pid)
        remade.join()
    finally:
        killed(daemon)


def test_a_newcomer_takes_the_lock_a_daemon_does_not_make_again(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("weaver.runtime.locks.REMAKE_WAIT_SECONDS", 0.3)
    daemon = remaking_daemon(vault_dir)
    try:
        elsewhere = WriterLock(vault_dir / "elsewhere.writer.lock")  # not the daemon's to make
        assert elsewhere.try_acquire()
        elsewhere.release()
        newcomer = writer_lock_for(Settings(vault=vault_dir))
        assert newcomer.try_acquire()  # after the wait: someone must keep the cache fresh
        newcomer.release()
    finally:
        killed(daemon)


def deadline(seconds: float) -> Callable[[], None]:
    end = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > end:
            raise TimeoutError

    return check


# The MCP SDK imports `fcntl` where `sys.platform` is not "win32" (on Windows it takes its other
# branch), so it is imported before `fcntl` is withdrawn; none of Weaver's modules may be by then.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import mcp.server.stdio
assert not [name for name in sys.modules if name.startswith("weaver")]
sys.modules["fcntl"] = None
import weaver
failed = {}
seen = []
def unwalkable(name):
    failed[name] = "cannot be walked"
for info in pkgutil.walk_packages(weaver.__path__, "weaver.", onerror=unwalkable):
    if info.name.endswith(".__main__"):
        continue  # runs the command line
    seen.append(info.name)
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = repr(exc)
print(json.dumps({"seen": seen, "failed": failed}))
"""


@pytest.mark.slow
def test_every_module_imports_where_fcntl_does_not_exist(tmp_path: Path) -> None:
    env = clean_env()
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(IMPORT_ALL)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=100,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert {"weaver.runtime.locks", "weaver.host.daemon", "weaver.cli.serve_commands"} <= set(
        found["seen"]
    )
    assert found["failed"] == {}
