"""Every Python process started with this folder on PYTHONPATH takes the paths Windows takes
where Linux can take them too (`make test-portable`, issue 36):

- Weaver cannot import `fcntl` (as on Windows): `import fcntl` in a `weaver` module raises
  ModuleNotFoundError. Libraries keep it, since on Linux they take their Linux branches (the
  MCP SDK's stdio transport imports it where `sys.platform` is not "win32"). `msvcrt` is
  the stand-in of tests/standins/msvcrt.py, so Weaver's file locks go through
  `msvcrt.locking`'s path (`WEAVER_FILE_LOCKS=msvcrt`);
- stopping on a signal goes through plain `signal.signal` handlers (`WEAVER_SIGNALS=handlers`),
  as where the event loop cannot watch signals;
- `select.select` called from a `weaver` module refuses anything but sockets, as Windows'
  does (parse workers once waited on their pipes with it).

Python imports `sitecustomize` at start-up, before any test or Weaver code, in the test run and
in every process it starts (daemons, servers, parse workers), since they inherit PYTHONPATH.
"""

from __future__ import annotations

import builtins

# The standard library decides "Windows or not" by whether msvcrt imports (subprocess,
# getpass): let them decide before the stand-in exists.
import getpass  # noqa: F401
import importlib.util
import os
import select
import stat
import subprocess  # noqa: F401
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "msvcrt", Path(__file__).resolve().parents[1] / "standins" / "msvcrt.py"
)
assert _spec is not None and _spec.loader is not None
_standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_standin)


_import = builtins.__import__


def _import_but_fcntl_for_weaver(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    """`import fcntl` in a `weaver` module fails as on Windows; anywhere else it works."""
    importer = str((globals or {}).get("__name__", ""))
    if name == "fcntl" and level == 0 and (importer == "weaver" or importer.startswith("weaver.")):
        raise ModuleNotFoundError(f"No module named 'fcntl' (as on Windows: {importer})", name=name)
    return _import(name, globals, locals, fromlist, level)


_select = select.select
WSAENOTSOCK = 10038  # what Windows' select answers for a pipe or a file


def _select_sockets_only_for_weaver(*args: Any, **kwargs: Any) -> Any:
    """`select.select` as Windows has it, for Weaver's own calls: sockets only."""
    caller = str(sys._getframe(1).f_globals.get("__name__", ""))
    if caller == "weaver" or caller.startswith("weaver."):
        for waited in args[:3]:
            for item in waited:
                fd = item if isinstance(item, int) else item.fileno()
                if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                    raise OSError(WSAENOTSOCK, "not a socket (as on Windows)")
    return _select(*args, **kwargs)


builtins.__import__ = _import_but_fcntl_for_weaver
select.select = _select_sockets_only_for_weaver
sys.modules["msvcrt"] = _standin
os.environ["WEAVER_FILE_LOCKS"] = "msvcrt"
os.environ["WEAVER_SIGNALS"] = "handlers"
os.environ["WEAVER_PORTABLE_PATHS"] = "1"  # what tests read to know they run this way
