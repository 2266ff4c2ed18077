"""`make test-portable` runs the suite with tests/portable on PYTHONPATH: every process it
starts takes the paths Windows takes (no fcntl for Weaver, msvcrt's locks, signal handlers).
This checks that the folder does what it says, in a process started as the suite starts its
daemons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PORTABLE = Path(__file__).resolve().parent / "portable"
ROOT = PORTABLE.parents[1]

PROBE = """
import json, os, subprocess
from weaver import file_locks
from weaver.host.signals import handlers_only
import fcntl, select
ns = {"__name__": "weaver.probe"}
read_end, write_end = os.pipe()
try:
    exec("select.select([read_end], [], [], 0)", ns | {"select": select, "read_end": read_end})
    weaver_selects_pipes = True
except OSError:
    weaver_selects_pipes = False
try:
    exec("import fcntl", ns)  # as a module of Weaver's would
    weaver_uses_fcntl = True
except ImportError:
    weaver_uses_fcntl = False
print(json.dumps({
    "fcntl": weaver_uses_fcntl,
    "fcntl_for_libraries": callable(fcntl.flock),
    "select_on_pipes": weaver_selects_pipes,
    "select_on_pipes_for_libraries": select.select([read_end], [], [], 0) == ([], [], []),
    "locks": type(file_locks.platform_locks()).__name__,
    "signals": handlers_only(),
    "subprocess_is_posix": not subprocess._mswindows,
}))
"""


def probe(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def test_the_portable_folder_hides_fcntl_and_takes_the_windows_paths() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PORTABLE), str(ROOT)])}
    env = {k: v for k, v in env.items() if k not in ("WEAVER_FILE_LOCKS", "WEAVER_SIGNALS")}
    assert probe(env) == {
        "fcntl": False,
        "fcntl_for_libraries": True,
        "select_on_pipes": False,
        "select_on_pipes_for_libraries": True,
        "locks": "MsvcrtLocks",
        "signals": True,
        "subprocess_is_posix": True,  # the standard library still runs processes as on Linux
    }


def test_without_it_linux_takes_its_own_paths() -> None:
    if os.environ.get("WEAVER_PORTABLE_PATHS"):
        pytest.skip("this run is `make test-portable`: every process takes the portable paths")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEAVER_")}
    env["PYTHONPATH"] = str(ROOT)
    assert probe(env) == {
        "fcntl": True,
        "fcntl_for_libraries": True,
        "select_on_pipes": True,
        "select_on_pipes_for_libraries": True,
        "locks": "FlockLocks",
        "signals": False,
        "subprocess_is_posix": True,
    }
