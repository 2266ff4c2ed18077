"""Interrupted runs are resumed, with real processes: the users' case of `weaver serve` started
and closed within a second by a desktop MCP client while markdown-analyzer runs, and a daemon
killed (-9) mid-run then started again. (The engine's side: tests/engine/test_resume.py.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import wait_for, write_files
from tests.host.test_daemon import daemon_with_plugin

pytestmark = pytest.mark.slow

WEAVER = str(Path(sys.executable).with_name("weaver"))
ANALYZER = "markdown-analyzer"
NOTES = 600
SHORT_SESSIONS = 4
LONG_SESSION_TIMEOUT = 120.0
ENGINE_STARTED = "workflow engine started"


def note(n: int, extra: str = "") -> str:
    """About 1,500 words: long enough that analysing the vault outlasts a session's ending."""
    links = " ".join(f"[[n{(n * 7 + k) % NOTES}]]" for k in range(5))
    paragraph = " ".join(f"word{(n + k) % 50}" for k in range(100))
    return f"# Note {n}\n#tag{n % 7}\n{links}\n\n" + f"{paragraph}\n\n" * 15 + extra


def query(vault: Path, sql: str, *args: object) -> list[sqlite3.Row]:
    cache = vault / ".weaver" / "cache.db"
    with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        return list(db.execute(sql, args))


def analyzer_runs(vault: Path) -> list[sqlite3.Row]:
    return query(vault, "SELECT * FROM executions WHERE workflow_id = ?", ANALYZER)


def changes_per_path(vault: Path) -> Counter[str]:
    """The changes the analyzer follows (adds, modifications, moves), per note, from the feed."""
    kinds = "('add', 'modify', 'move')"
    return Counter(
        row["path"] for row in query(vault, f"SELECT path FROM vault_events WHERE kind IN {kinds}")
    )


def completed_runs_per_path(vault: Path) -> Counter[str]:
    """How many completed analyzer runs each note's changes started."""
    counts: Counter[str] = Counter()
    for row in analyzer_runs(vault):
        if row["status"] == "completed" and row["trigger_kind"] == "file":
            counts.update(e["path"] for e in json.loads(row["trigger_detail"])["events"])
    return counts


def cut_short(row: sqlite3.Row) -> bool:
    """Interrupted by its engine stopping: resumed since, or (before runs were) failed."""
    error = row["error"] or ""
    return "interruptions" in row["trigger_detail"] or error.startswith("interrupted")


def analysing(vault: Path) -> bool:
    return any(row["status"] == "running" for row in analyzer_runs(vault))


def settled(vault: Path) -> bool:
    states = {row["status"] for row in analyzer_runs(vault)}
    return not states & {"pending", "running"} and completed_runs_per_path(
        vault
    ) == changes_per_path(vault)


def serve_session(vault: Path, log: Path, until: Callable[[], bool]) -> None:
    """`weaver serve` over stdio, its stdin closed (the client ending the session) once its
    engine started and `until()` holds; it must exit 0."""
    starts = log.read_text().count(ENGINE_STARTED) if log.exists() else 0
    with log.open("a") as errors:
        process = subprocess.Popen(
            [WEAVER, "--vault", str(vault), "serve"],
            cwd=vault.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        assert process.stdin is not None
        wait_for(lambda: log.read_text().count(ENGINE_STARTED) > starts, 60, "the engine")
        wait_for(until, LONG_SESSION_TIMEOUT, "the end of the session", every=0.02)
        process.stdin.close()
        # Generous: an exit was once seen to take 30 s on a loaded machine (in the report).
        assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def index(vault: Path) -> None:
    done = subprocess.run(
        [WEAVER, "--vault", str(vault), "index"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


# Five server starts and four `weaver index` runs: past the suite's 120 s on a loaded machine.
@pytest.mark.timeout(300)
def test_short_serve_sessions_leave_no_analysis_undone(tmp_path: Path) -> None:
    """After `weaver index`, several sessions each closed (stdin) the moment markdown-analyzer
    runs, then one long enough: every change of every note ends in exactly one completed
    analysis run, and nothing stays pending or failed."""
    vault = write_files(tmp_path / "vault", {f"n{n}.md": note(n) for n in range(NOTES)})
    log = tmp_path / "serve.log"
    for session in range(SHORT_SESSIONS):
        if session:  # every note changed again, applied while no server runs
            for n in range(NOTES):
                (vault / f"n{n}.md").write_text(note(n, f"changed before session {session}\n"))
        index(vault)
        # Closed as soon as the engine runs the analyzer over what `weaver index` applied.
        serve_session(vault, log, until=lambda: analysing(vault))
    interrupted = [row["id"] for row in analyzer_runs(vault) if cut_short(row)]
    assert interrupted, "no short session cut a markdown-analyzer run short: nothing was tested"

    serve_session(vault, log, until=lambda: settled(vault))
    runs = analyzer_runs(vault)
    assert {row["status"] for row in runs} == {"completed"}
    assert completed_runs_per_path(vault) == changes_per_path(vault)  # one run per change
    assert set(changes_per_path(vault)) == {f"n{n}.md" for n in range(NOTES)}
    analysed = query(
        vault, "SELECT DISTINCT key FROM workflow_records WHERE workflow_id = ?", ANALYZER
    )
    assert {row["key"] for row in analysed} == {f"n{n}.md" for n in range(NOTES)}
    resumed = {row["id"]: row for row in runs if "interruptions" in row["trigger_detail"]}
    assert set(interrupted) <= set(resumed)
    for row in resumed.values():  # each shows it was interrupted, then resumed as a later attempt
        stops = json.loads(row["trigger_detail"])["interruptions"]
        assert row["attempt"] == stops[-1]["attempt"] + 1
        assert all(stop["reason"].startswith("interrupted: ") for stop in stops)


ONCE_STUCK = """
import time

from weaver.engine import workflow

@workflow(id="stuck-once", timeout=600)
def stuck_once(ctx):
    if ctx.attempt == 1:
        time.sleep(600)  # the first attempt is under way when the daemon is killed
    return {"attempt": ctx.attempt}
"""


def test_a_run_of_a_daemon_killed_mid_run_is_resumed_at_its_restart(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", {"a.md": "# A\n"})
    daemon = daemon_with_plugin(tmp_path, vault, "stuck_once", ONCE_STUCK)
    process = daemon.start()
    try:
        daemon.weaver_json("trigger", "stuck-once", "--async")
        running = lambda: [r for r in daemon.executions("stuck-once") if r["status"] == "running"]  # noqa: E731
        wait_for(running, 30, "the run under way")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        killed = f"{process.pid}"
        assert daemon.executions("stuck-once")[0]["status"] == "running"  # as the kill left it
        process = daemon.start()
        done = lambda: daemon.executions("stuck-once")[0]["status"] == "completed"  # noqa: E731
        wait_for(done, 30, "the resumed run")
    finally:
        if process.poll() is None:
            daemon.stop(process)
    [row] = daemon.executions("stuck-once")  # one trigger, one run
    assert row["attempt"] == 2
    assert json.loads(row["result"]) == {"attempt": 2}
    [stop] = json.loads(row["trigger_detail"])["interruptions"]
    assert stop["attempt"] == 1
    assert stop["reason"].startswith("interrupted: the process running it (")
    assert stop["reason"].endswith(f":{killed}) stopped")
    status = daemon.weaver_json("status", row["id"])
    assert [i["attempt"] for i in status["interruptions"]] == [1]
