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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, under another user
    started = process_start_ms(pid)
    return bool(started and run_started_ms and started > run_started_ms + START_TIME_SLACK_MS)


def process_start_ms(pid: int) -> int | None:
    """When `pid` started, in Unix epoch ms, where /proc tells (Linux); else None."""
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
