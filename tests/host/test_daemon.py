"""`weaver daemon` end to end, in a subprocess on a temp vault: a file edited runs the right
built-in workflows, an async trigger from the CLI is picked up, a second daemon is refused,
SIGTERM stops it with exit code 0, and a restart catches up with what changed while it was down.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.helpers import free_port, wait_for, write_files

pytestmark = pytest.mark.slow

T = TypeVar("T")
START_TIMEOUT = 60.0  # a timeout: 30 s ran out under a loaded run (load 10, 2 cores)
WAIT_TIMEOUT = 20.0


def daemon_with_plugin(tmp_path: Path, vault: Path, name: str, source: str) -> Daemon:
    """A daemon (not started) over `vault` that loads the workflow module `source` as
    plugins/`name`.py and looks for queued runs every 100 ms."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nworkflow_dirs = ["{plugins}"]\n'
        "workflow_poll_ms = 100\n",
        encoding="utf-8",
    )
    return Daemon(vault, config, port, tmp_path / "daemon.log")


@dataclass
class Daemon:
    """A configured vault, and the `weaver` command line pointed at it."""

    vault: Path
    config: Path
    port: int
    log: Path

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "weaver", "--config", str(self.config), *args]

    def env(self) -> dict[str, str]:
        # Plain JSON logs on stderr; no colour codes or terminal detection in the way.
        return {**os.environ, "NO_COLOR": "1"}

    def weaver(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args), capture_output=True, text=True, env=self.env(), timeout=60
        )

    def weaver_json(self, *args: str) -> Any:
        done = self.weaver(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def start(self) -> subprocess.Popen[str]:
        with self.log.open("a") as log:
            process = subprocess.Popen(
                self.command("daemon"), stderr=log, stdout=log, text=True, env=self.env()
            )
        try:
            wait_for(
                lambda: self.healthy() or _exited(process), START_TIMEOUT, "the daemon's /health"
            )
            assert process.poll() is None, self.log.read_text()
        except BaseException:  # a daemon that never became healthy must not outlive its test
            process.kill()
            process.wait()
            raise
        return process

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                return bool(json.load(r)["status"] == "healthy")
        except OSError:
            return False

    def stop(self, process: subprocess.Popen[str]) -> int:
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=WAIT_TIMEOUT)

    def executions(self, workflow: str) -> list[sqlite3.Row]:
        """The daemon's recorded runs, read straight from the cache (a CLI call per poll would
        cost a second of start-up each; the CLI itself is exercised once below)."""
        query = "SELECT * FROM executions WHERE workflow_id = ? ORDER BY created"
        return self._read(query, workflow)

    def finished(self, execution_id: str) -> bool:
        """Whether the run ended, read from the cache as `executions` is (the test asks the CLI
        for its status once it has)."""
        rows = self._read("SELECT status FROM executions WHERE id = ?", execution_id)
        return bool(rows) and rows[0]["status"] not in ("pending", "running")

    def _read(self, query: str, *args: object) -> list[sqlite3.Row]:
        cache = self.vault / ".weaver" / "cache.db"
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
            db.row_factory = sqlite3.Row
            return list(db.execute(query, args))

    def runs_for(self, workflow: str, path: str) -> list[sqlite3.Row]:
        """Completed file-triggered executions of `workflow` whose events name `path`."""
        return [
            run
            for run in self.executions(workflow)
            if run["trigger_kind"] == "file"
            and run["status"] == "completed"
            and path in {event["path"] for event in json.loads(run["trigger_detail"])["events"]}
        ]


def _exited(process: subprocess.Popen[str]) -> bool:
    return process.poll() is not None


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    vault = tmp_path / "vault"
    write_files(
        vault,
        {
            "Home.md": "---\ntype: index\n---\n# Home\nSee [[Ideas]] and [[Tasks]].\n",
            "Ideas.md": "# Ideas\n- [ ] write more #idea\n",
            "Tasks.md": "# Tasks\n- [x] done\n",
        },
    )
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(f'vault = "{vault}"\nhttp_port = {port}\n')
    handle = Daemon(vault, config, port, tmp_path / "daemon.log")
    yield handle


def test_daemon_end_to_end(daemon: Daemon) -> None:
    process = daemon.start()
    try:
        second = daemon.weaver("daemon")
        assert second.returncode == 2
        assert "already running" in second.stderr

        (daemon.vault / "Ideas.md").write_text("# Ideas\n- [x] write more #idea\n[[Home]]\n")
        wait_for(lambda: daemon.runs_for("markdown-analyzer", "Ideas.md"), WAIT_TIMEOUT, "analyzer")
        wait_for(lambda: daemon.runs_for("file-change-logger", "Ideas.md"), WAIT_TIMEOUT, "logger")
        assert not daemon.runs_for("file-deletion-monitor", "Ideas.md")  # an edit, not a delete
        logged = daemon.weaver_json("records", "file-change-logger", "--key", "Ideas.md")
        assert "modify" in [record["data"]["kind"] for record in logged["records"]]

        queued = daemon.weaver(
            "trigger", "markdown-analyzer", "--input", '{"path": "Home.md"}', "--async", "--json"
        )
        assert queued.returncode == 0, queued.stderr
        execution_id = json.loads(queued.stdout)["executionId"]
        wait_for(lambda: daemon.finished(execution_id), WAIT_TIMEOUT, "the queued run")
        done = daemon.weaver_json("status", execution_id)
        assert done["status"] == "completed", done["error"]
        assert done["result"]["path"] == "Home.md"

        # The dashboard beside MCP, its URL logged; an open event stream does not hold up
        # the stop below.
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/runs", timeout=5) as page:
            assert execution_id in page.read().decode()
        assert f"http://127.0.0.1:{daemon.port}/" in daemon.log.read_text()
        stream = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
        stream.request("GET", "/events")
        assert stream.getresponse().readline().startswith(b"retry:")
    finally:
        assert daemon.stop(process) == 0, daemon.log.read_text()[-3000:]
    stream.close()
    assert "daemon stopped" in daemon.log.read_text()

    # While it is down: a note deleted and one added. The restart catches up with both.
    (daemon.vault / "Tasks.md").unlink()
    (daemon.vault / "Later.md").write_text("# Later\n[[Tasks]]\n")
    before = {run["id"] for run in daemon.executions("markdown-analyzer")}
    process = daemon.start()
    try:
        wait_for(lambda: daemon.runs_for("file-deletion-monitor", "Tasks.md"), WAIT_TIMEOUT, "gone")
        wait_for(lambda: daemon.runs_for("markdown-analyzer", "Later.md"), WAIT_TIMEOUT, "catch-up")
        after = {run["id"] for run in daemon.executions("markdown-analyzer")}
        assert before < after  # nothing recorded before the restart was lost
    finally:
        assert daemon.stop(process) == 0
