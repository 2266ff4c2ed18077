"""SIGTERM stops the daemon within 10 s whatever is running: here a workflow stuck in a call
that ignores every cancellation. Its run is recorded as interrupted and queued again, not left
`running`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import wait_for, write_files
from tests.host.test_daemon import daemon_with_plugin

pytestmark = pytest.mark.slow

STUCK = """
import time
from weaver.engine import workflow

@workflow(id="stuck", timeout=600)
def stuck(ctx):
    time.sleep(600)  # no look at ctx.cancelled: a call nothing can interrupt
"""


def test_sigterm_during_a_stuck_run_stops_within_ten_seconds(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", {"a.md": "# A\n"})
    daemon = daemon_with_plugin(tmp_path, vault, "stuck", STUCK)
    process = daemon.start()
    try:
        queued = daemon.weaver_json("trigger", "stuck", "--async")
        execution = queued["executionId"]
        wait_for(lambda: daemon.executions("stuck")[0]["status"] == "running", 20, "the run")
        started = time.monotonic()
        process.terminate()
        code = process.wait(timeout=15)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, daemon.log.read_text()
    assert took < 10, f"stopped after {took:.1f} s"
    row = daemon.executions("stuck")[0]
    assert row["id"] == execution
    # Queued again for the next start, its interruption recorded (tests/host/test_resume.py).
    assert row["status"] == "pending" and "interrupted" in row["trigger_detail"], dict(row)
