"""`weaver trigger`, `weaver workflows`, `weaver history`, `weaver status`: output, errors and exit
codes, in process through `main()` and once as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from weaver.cli import main
from weaver.config import load_settings
from weaver.engine import WorkflowEngine, load_registry
from weaver.host.app import open_app
from weaver.host.locks import WriterLock, daemon_lock

PLUGIN = """
from pydantic import BaseModel
from sqlalchemy import func, select
from weaver.engine import workflow
from weaver.cache.models import Note

class Count(BaseModel):
    times: int = 1

@workflow(id="count-notes", name="Count notes", input_model=Count)
def count_notes(ctx):
    with ctx.cache.snapshot() as conn:
        notes = conn.execute(select(func.count()).select_from(Note)).scalar_one()
    return {"notes": notes * ctx.input.times}

@workflow(id="fails")
def fails(ctx):
    raise RuntimeError("it broke")

@workflow(id="off", enabled=False)
def off(ctx):
    return None

@workflow(id="writes")
def writes(ctx):
    ctx.vault.write_text("out/report.md", "# Report")
    ctx.records.append("one.md", {"seen": True}, kind="analysis")
    ctx.records.append("two.md", {"seen": True}, kind="analysis")
    return {"notes": 2, "paths": ["one.md", "two.md"], "title": "Report"}

@workflow(id="fails-late")
def fails_late(ctx):
    ctx.report_progress(100, "all done, or so it said")
    raise RuntimeError("broke at the end")
"""


@pytest.fixture
def config(tmp_path: Path, vault_dir: Path) -> Path:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "cli_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (plugins / "broken.py").write_text("raise ImportError('missing thing')\n", encoding="utf-8")
    path = tmp_path / "weaver.toml"
    path.write_text(
        f'vault = "{vault_dir}"\nworkflow_dirs = ["{plugins}"]\nlog_level = "error"\n',
        encoding="utf-8",
    )
    (vault_dir / "one.md").write_text("# One", encoding="utf-8")
    return path


def run(config: Path, *args: str) -> int:
    return main(["--config", str(config), *args])


def history_total(config: Path, capsys: pytest.CaptureFixture[str]) -> int:
    assert run(config, "history", "--json") == 0
    return int(json.loads(capsys.readouterr().out)["total"])


def test_trigger_runs_and_prints(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(config, "trigger", "count-notes", "--input", '{"times": 3}') == 0
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"count-notes completed in [\d,]+ ms \(wf_exec_\w+\)", out[0])
    # The cache was brought up to date first: one note, three times.
    assert out[1] == "  result:  notes 3"
    assert out[-1].startswith("  details: weaver status wf_exec_")

    assert run(config, "trigger", "count-notes", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "sync" and data["status"] == "completed"
    assert data["result"] == {"notes": 1}
    assert {"executionId", "workflowId", "workflowName", "duration", "message"} <= set(data)


def test_a_failed_run_exits_1(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(config, "trigger", "fails", "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["status"], data["error"]) == ("failed", "RuntimeError: it broke")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trigger", "nope"], "weaver: Workflow not found: 'nope'"),
        (["trigger", "count"], "Workflow not found: 'count' (did you mean 'count-notes'?)"),
        (["trigger", "off"], "weaver: Workflow disabled: 'off'"),
        (
            ["trigger", "count-notes", "--input", '{"times": "x"}'],
            "Invalid input for 'count-notes'",
        ),
        (["trigger", "count-notes", "--input", "[1, 2]"], "expected a JSON object"),
        (["trigger", "count-notes", "--input", "{nope"], "--input is not valid JSON"),
        (["trigger", "nope", "--async"], "Workflow not found"),
        (["status", "wf_exec_missing"], "Execution not found: 'wf_exec_missing'"),
    ],
)
def test_bad_requests_exit_2_and_record_nothing(
    config: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert run(config, *args) == 2
    assert message in capsys.readouterr().err
    assert history_total(config, capsys) == 0


def test_async_without_a_daemon_says_so(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(config, "trigger", "count-notes", "--async") == 1
    assert "no daemon is running" in capsys.readouterr().err
    assert history_total(config, capsys) == 0


def test_async_with_a_daemon_queues_for_it(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemon_lock(vault_dir):
        assert run(config, "trigger", "count-notes", "--async", "--json") == 0
    queued = json.loads(capsys.readouterr().out)
    assert (queued["mode"], queued["status"]) == ("async", "pending")

    settings = load_settings(config_path=config)
    app = open_app(settings)
    try:
        daemon = WorkflowEngine.for_app(app, load_registry(settings), background="inline")
        daemon.start()
        assert daemon.run_pending() == 1
        daemon.stop()
    finally:
        app.close()
    assert run(config, "status", queued["executionId"], "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["status"], status["trigger"]) == (
        "completed",
        {"kind": "manual", "detail": {"via": "cli"}},
    )


def test_no_reconcile_while_another_process_keeps_the_cache(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(config_path=config)
    with WriterLock.for_settings(settings) as lock:
        assert lock.try_acquire()
        assert run(config, "trigger", "count-notes", "--json") == 0
    assert json.loads(capsys.readouterr().out)["result"] == {"notes": 0}


def test_workflows_lists_them_and_the_broken_plugin(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(config, "trigger", "count-notes")
    capsys.readouterr()
    assert run(config, "workflows") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["ID", "ENABLED", "TRIGGERS", "RUNS", "LAST", "RUN"]
    count_line = next(line for line in out.splitlines() if line.startswith("count-notes"))
    assert count_line.split()[1:4] == ["yes", "manual", "1"]
    assert "failed to load:" in out and "broken.py: ImportError: missing thing" in out

    assert run(config, "workflows", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    ours = {w["id"]: w for w in data["workflows"] if w["source"].endswith("cli_plugin.py")}
    assert set(ours) == {"count-notes", "fails", "off", "writes", "fails-late"}
    assert ours["count-notes"]["executionCount"] == 1
    assert ours["off"]["enabled"] is False
    assert any(e["source"].endswith("broken.py") for e in data["errors"])


def test_history_and_status(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(3):
        run(config, "trigger", "count-notes")
    run(config, "trigger", "fails")
    capsys.readouterr()

    assert run(config, "history", "--workflow", "count-notes", "--limit", "2", "--json") == 0
    page = json.loads(capsys.readouterr().out)
    assert (page["total"], page["limit"], page["hasMore"]) == (3, 2, True)

    assert run(config, "history", "--limit", "2") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["EXECUTION", "WORKFLOW", "STATUS", "TRIGGER"]
    assert out[1].split()[1:4] == ["fails", "failed", "manual"]
    assert out[-1] == "... 2 more (--offset 2)"

    assert run(config, "history", "--workflow", "count-note") == 2
    assert "Workflow not found: 'count-note' (did you mean 'count-notes'?)" in (
        capsys.readouterr().err
    )

    assert run(config, "history", "--status", "failed") == 0
    only_failed = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1:3] for line in only_failed] == [["fails", "failed"]]

    failed_id = out[1].split()[0]
    assert run(config, "status", failed_id) == 0
    text = capsys.readouterr().out
    assert "status:    failed, attempt 1" in text
    assert "error:     RuntimeError: it broke" in text
    assert "Traceback (most recent call last)" in text


def test_cli_as_a_subprocess(config: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WEAVER_")}

    def weaver(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "weaver.cli", "--config", str(config), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )

    done = weaver("trigger", "count-notes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == {"notes": 1}
    missing = weaver("trigger", "nope")
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert "Workflow not found: 'nope'" in missing.stderr


def test_trigger_says_where_the_output_went(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(config, "trigger", "writes") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("writes completed in ")
    assert lines[1:4] == [
        "  result:  notes 2, paths [2], title Report",
        "  wrote:   out/report.md",
        "  records: 2 analysis (weaver records writes)",
    ]
    assert (vault_dir / "out" / "report.md").is_file()
    assert run(config, "trigger", "writes", "--json") == 0  # --json: the whole result
    assert json.loads(capsys.readouterr().out)["result"]["paths"] == ["one.md", "two.md"]


def test_a_run_that_failed_after_reporting_100_is_not_shown_done(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(config, "trigger", "fails-late") == 1
    first = capsys.readouterr().out.splitlines()
    assert first[0].startswith("fails-late failed in ")
    assert first[1] == "  error:   RuntimeError: broke at the end"
    execution_id = first[0].rsplit("(", 1)[1].rstrip(")")
    assert run(config, "status", execution_id) == 0
    text = capsys.readouterr().out
    assert "status:    failed, attempt 1\n" in text
    assert "100%" not in text
    assert run(config, "status", execution_id, "--json") == 0  # --json keeps the stored value
    assert json.loads(capsys.readouterr().out)["progress"] == 100
