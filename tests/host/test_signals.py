"""Stopping on a signal where the event loop cannot watch signals (Windows), run here through
the same path forced with WEAVER_SIGNALS=handlers: the daemon and `weaver serve` stop cleanly
with exit code 0, and the handlers that were there before come back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from tests.host.test_daemon import Daemon
from tests.host.test_daemon import daemon as daemon
from weaver.host.signals import SIGNALS_ENV, handlers_only, next_stop_signal


def signal_soon(signum: int, delay: float = 0.3) -> threading.Timer:
    """Send `signum` to this process from another thread, as a console or `kill` would."""
    timer = threading.Timer(delay, os.kill, (os.getpid(), signum))
    timer.start()
    return timer


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_handlers_path_hears_a_signal_and_restores_what_was_there(
    monkeypatch: pytest.MonkeyPatch, signum: signal.Signals
) -> None:
    monkeypatch.setenv(SIGNALS_ENV, "handlers")
    assert handlers_only()
    before = signal.getsignal(signum)
    timer = signal_soon(signum)

    async def listen() -> int:
        with anyio.fail_after(10):  # a loop asleep in select() is woken, not left waiting
            return await next_stop_signal()

    heard = anyio.run(listen)
    timer.join()
    assert heard == signum
    assert signal.getsignal(signum) == before
    assert signal.set_wakeup_fd(-1) == -1  # no wake-up socket left behind


def test_the_daemon_stops_cleanly_by_the_handlers_path(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SIGNALS_ENV, "handlers")  # Daemon.env() passes it on
    process = daemon.start()
    try:
        code = daemon.stop(process)
    finally:
        if process.poll() is None:
            process.kill()
    log = daemon.log.read_text()
    assert code == 0, log
    assert '"signal": "SIGTERM"' in log and "daemon stopped" in log
    assert "Traceback" not in log


# A stop held up by a thread stuck in a call: the watchdog ends the process, saying where.
OVERDUE = """
import threading, time
from weaver.host.signals import arm_stop_watchdog
from weaver.log import configure_logging

configure_logging("info", "json")

def wait_on_the_other_process():
    time.sleep(60)

threading.Thread(target=wait_on_the_other_process, daemon=True).start()
arm_stop_watchdog(grace=0.3)
time.sleep(60)
"""


def test_an_overdue_stop_ends_the_process_and_says_what_held_it_up() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OVERDUE],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0
    assert "stopping is overdue" in done.stderr
    assert "in wait_on_the_other_process" in done.stderr  # the stuck thread's stack
