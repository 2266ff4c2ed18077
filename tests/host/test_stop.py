"""SIGTERM stops the daemon within 10 s whatever is running: here a workflow stuck in a call
that ignores every cancellation. Its run is recorded as interrupted and queued again, not left
`running`."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import wait_for
from tests.host.test_daemon import Daemon, free_port

pytestmark = pytest.mark.slow

STUCK = """
import time
from weaver.engine import workflow

@workflow(id="stuck", timeout=600)
def stuck(ctx):
    time.sleep(600)  # no look at ctx.cancelled: a call nothing can interrupt
"""


def test_sigterm_during_a_stuck_run_stops_within_ten_seconds(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n", encoding="utf-8")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "stuck.py").write_text(textwrap.dedent(STUCK), encoding="utf-8")
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nworkflow_dirs = ["{plugins}"]\n'
        "workflow_poll_ms = 100\n",
        encoding="utf-8",
    )
    daemon = Daemon(vault, config, port, tmp_path / "daemon.log")
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
