"""Telling whether the process that ran an execution is gone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from weaver.engine.processes import is_gone, process_exists, process_label


def ended_pid() -> int:
    """The pid of a child that has exited and been reaped: no process has it (for now)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_running_process_exists_and_an_ended_one_does_not() -> None:
    assert process_exists(os.getpid())
    assert process_exists(1)  # init: someone else's, yet there
    assert not process_exists(ended_pid())


def test_a_run_of_an_ended_process_is_gone_and_one_of_a_live_process_is_not() -> None:
    started_ms = int(time.time() * 1000)
    host = socket.gethostname()
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as live:
        try:
            assert not is_gone(f"{host}:{live.pid}", started_ms)
        finally:
            live.kill()
    assert is_gone(f"{host}:{ended_pid()}", started_ms)
    assert is_gone(process_label(), started_ms)  # this very process cannot be running it yet
    assert not is_gone(f"another-host:{ended_pid()}", started_ms)  # not ours to judge
