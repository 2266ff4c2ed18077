"""Which process ran an execution (`host:pid`), and whether that process is gone.

A `running` row whose process is gone was interrupted: its process crashed, was killed, or the
machine rebooted. A pid alone can mislead after a reboot (the number now belongs to some other
program, and the row would stay `running` forever, holding the workflow's only slot), so on
Linux the process's start time is compared with the row's: a process younger than the run
cannot be the one that ran it. Rows of other hosts (a cache on a shared disk) are left alone.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

# Boot time is whole seconds and the clock can be adjusted: allow this much disagreement.
START_TIME_SLACK_MS = 2_000


def process_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def is_gone(label: str | None, run_started_ms: int | None) -> bool:
    """True when the process named by `label` is certainly not the one still running the row."""
    if not label or ":" not in label:
        return True
    host, _, pid_text = label.rpartition(":")
    if host != socket.gethostname():
        return False
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    if pid == os.getpid():
        # This engine has only just started: no run of this process can be under way yet, so
        # the row belongs to an earlier process that had the same pid (pid 1 in a container).
        return True
    if not process_exists(pid):
        return True
    started = process_start_ms(pid)
    return bool(started and run_started_ms and started > run_started_ms + START_TIME_SLACK_MS)


def process_exists(pid: int) -> bool:
    """Whether a process with this pid is running (under any user)."""
    if sys.platform == "win32":
        return _windows_process_exists(pid)
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, the pid is only checked
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return True


def _windows_process_exists(pid: int) -> bool:
    """Windows has no signal 0: `os.kill(pid, 0)` there sends CTRL_C_EVENT (0) to the
    process, so ask for a handle instead, and whether the process behind it has exited."""
    if sys.platform != "win32":  # for the type checker, which checks one platform at a time
        raise NotImplementedError
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.OpenProcess.restype = wintypes.HANDLE
    handle = kernel32.OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return ctypes.get_last_error() == ERROR_ACCESS_DENIED  # there, but not ours to open
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


# From the Windows SDK (processthreadsapi.h, winerror.h, minwinbase.h).
PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
ERROR_ACCESS_DENIED = 5
STILL_ACTIVE = 259


def process_start_ms(pid: int) -> int | None:
    """When `pid` started, in Unix epoch ms, where /proc tells (Linux); else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = int(stat.rpartition(")")[2].split()[19])
        return int((boot + ticks / os.sysconf("SC_CLK_TCK")) * 1000)
    except (OSError, ValueError, IndexError, StopIteration):
        return None
