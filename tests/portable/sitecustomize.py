"""Every Python process started with this folder on PYTHONPATH takes the paths Windows takes
where Linux can take them too (`make test-portable`, issue 36):

- Weaver cannot use `fcntl` (as on Windows): any use of it by a `weaver` module raises
  ImportError. Libraries keep it, since on Linux they take their Linux branches (the MCP SDK's
  stdio transport imports it where `sys.platform` is not "win32"). `msvcrt` is the stand-in
  of tests/standins/msvcrt.py, so Weaver's file locks go through `msvcrt.locking`'s path
  (`WEAVER_FILE_LOCKS=msvcrt`);
- stopping on a signal goes through plain `signal.signal` handlers (`WEAVER_SIGNALS=handlers`),
  as where the event loop cannot watch signals.

Python imports `sitecustomize` at start-up, before any test or Weaver code, in the test run and
in every process it starts (daemons, servers, parse workers), since they inherit PYTHONPATH.
"""

from __future__ import annotations

# The standard library decides "Windows or not" by whether msvcrt imports (subprocess,
# getpass): let them decide before the stand-in exists. The stand-in locks through fcntl,
# taken here before it is hidden.
import fcntl
import getpass  # noqa: F401
import importlib.util
import os
import subprocess  # noqa: F401
import sys
import types
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location(
    "msvcrt", Path(__file__).resolve().parents[1] / "standins" / "msvcrt.py"
)
assert _spec is not None and _spec.loader is not None
_standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_standin)


class _FcntlForOthers(types.ModuleType):
    """`fcntl` for everyone but Weaver: an attribute asked for by a `weaver` module (`fcntl.x`,
    `from fcntl import x`) raises ImportError, as the missing module would on Windows."""

    def __getattr__(self, name: str) -> Any:
        caller = str(sys._getframe(1).f_globals.get("__name__", ""))
        if caller == "weaver" or caller.startswith("weaver."):
            raise ImportError(f"{caller} uses fcntl.{name}: fcntl does not exist on Windows")
        return getattr(fcntl, name)


sys.modules["fcntl"] = _FcntlForOthers("fcntl")
sys.modules["msvcrt"] = _standin
os.environ["WEAVER_FILE_LOCKS"] = "msvcrt"
os.environ["WEAVER_SIGNALS"] = "handlers"
os.environ["WEAVER_PORTABLE_PATHS"] = "1"  # what tests read to know they run this way
