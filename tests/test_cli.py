"""The `weaver` command line: each command's output, errors and exit codes, in process through
`main()` and as a real subprocess; the help; `index` on and off a terminal."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import clean_env
from weaver.cache.executions import EXECUTION_STATUSES
from weaver.cli import build_parser, console, main
from weaver.config import load_settings
from weaver.engine import load_registry
from weaver.runtime.app import open_app
from weaver.runtime.engines import engine_for
from weaver.runtime.locks import WriterLock, daemon_lock

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
        daemon = engine_for(app, load_registry(settings), background="inline")
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
    env = clean_env()

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


# -- help ------------------------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_search_prints_one_line_per_hit_without_badges(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    badge = "[![CI](https://img.shields.io/ci.svg)](https://ci.example.org/weaver)"
    (vault_dir / "a.md").write_text(f"{badge}\nsync\nyour phone\n", encoding="utf-8")
    (vault_dir / "b.md").write_text("sync\n\nagain, see https://example.org\n", encoding="utf-8")
    assert main(["--vault", str(vault_dir), "search", "sync", "--mode", "keyword"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "keyword search" and lines[1].split() == ["score", "path", "passage"]
    rows = {line.split()[1]: line.split(None, 2)[2] for line in lines[2:]}
    assert rows == {"a.md": "sync your phone", "b.md": "sync again, see"}


def test_weaver_alone_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    captured = capsys.readouterr()
    assert (
        captured.out.startswith("usage: weaver") and "weaver --vault ~/notes index" in captured.out
    )
    assert captured.err == ""


def test_the_top_level_help_speaks_to_users(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "Obsidian vault" in text and "AI assistants over MCP" in text
    assert "weaver --vault ~/notes index" in text  # examples to start from
    for command in subcommands():
        assert re.search(rf"^\s+{command}\s+\w", text, re.MULTILINE), command
    for code_talk in ("thin edge", "core", "module", "exit code"):
        assert code_talk not in text


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_command_says_what_it_and_each_option_does(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = subcommands()[name]
    assert parser.description and len(parser.description.split("\n\n", 1)[-1]) > 40
    for action in parser._actions:
        assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert parser.description.split(".")[0] in text
    for action in parser._actions:
        for option in action.option_strings:
            assert option in text


def test_history_offers_and_checks_the_run_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    """`--status` takes its choices from the cache when asked, not when the parser is built."""
    statuses = ",".join(EXECUTION_STATUSES)
    with pytest.raises(SystemExit) as exit_:
        main(["history", "--help"])
    assert exit_.value.code == 0
    assert f"--status {{{statuses}}}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["history", "--status", "done"])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'done'" in error and "'cancelled'" in error


# -- index on and off a terminal ---------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def indexed_vault(vault_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault of 600 notes (three parse chunks), one with broken frontmatter."""
    for i in range(600):
        (vault_dir / f"n{i:03}.md").write_text(f"# Note {i}\nSee [[n{(i + 1) % 600:03}]]")
    (vault_dir / "bad.md").write_text("---\ntags: [\n---\nbody", encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("WEAVER_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("WEAVER_INDEX_WORKERS", "0")
    monkeypatch.chdir(vault_dir)
    return vault_dir


def test_index_on_a_terminal_draws_a_bar_with_warnings_above_it(
    indexed_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(console, "BAR_DELAY_S", 0.0)  # every pass is long enough for a bar
    assert main(["--vault", str(indexed_vault), "index"]) == 0
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue())  # colours, cursor
    lines = [line for line in re.split(r"[\r\n]", drawn) if line.strip()]
    bar = [line for line in lines if "Indexing" in line]
    assert bar and any("601/601 notes" in line for line in bar)
    assert any(re.search(r"[\d,]+ notes/s ETA", line) for line in bar)
    warnings = [line for line in lines if "warning" in line]
    assert len(warnings) == 1 and "Indexing" not in warnings[0]  # its own line, not the bar's
    assert re.search(r"warning\S* bad\.md: invalid YAML frontmatter at line 3: ", warnings[0])
    assert drawn.count("bad.md") == 1  # the note is named once
    assert "index applied" not in drawn  # the summary is said once, on stdout
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"Indexed {indexed_vault}: 601 added, 0 updated, 0 removed, 0 moved, 0 unchanged, "
        f"1 with errors, 0 links re-resolved in {out[0].rsplit(' ', 1)[1]}"
    ]


def test_index_off_a_terminal_logs_json_lines(
    indexed_vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(indexed_vault), "index", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["added"] == 601
    events = [json.loads(line) for line in captured.err.splitlines()]
    failed = [e for e in events if e["event"] == "note indexed with error"]
    assert [(e["level"], e["path"]) for e in failed] == [("warning", "bad.md")]
    assert "Indexing" not in captured.err


def test_index_while_another_process_keeps_the_cache(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(config, "index") == 0
    capsys.readouterr()
    settings = load_settings(config_path=config)
    with WriterLock.for_settings(settings) as lock:
        assert lock.try_acquire()
        assert run(config, "index") == 0
        out = capsys.readouterr().out
        assert re.fullmatch(
            rf"The cache of {re.escape(str(settings.vault))} is kept fresh by pid {os.getpid()}: "
            r"1 note, last change (just now|\d+ s ago)\. Nothing to do\.\n",
            out,
        )
        assert run(config, "index", "--json") == 0
        kept = json.loads(capsys.readouterr().out)
        assert (kept["kept_by"], kept["notes"]) == (os.getpid(), 1)
        assert isinstance(kept["last_updated"], int)

        assert run(config, "index", "--full") == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert f"cannot re-read every note now: process {os.getpid()}" in captured.err
        assert "Stop it, run `weaver index --full`" in captured.err


# -- mcp-config --------------------------------------------------------------------------------


def test_mcp_config_prints_the_client_entry(
    config: Path, vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(config, "mcp-config") == 0
    captured = capsys.readouterr()
    entry = json.loads(captured.out)["mcpServers"]["weaver"]
    command = Path(entry["command"])
    assert command.is_absolute() and command.exists()
    serve = ["--config", str(config.resolve()), "--vault", str(vault_dir.resolve()), "serve"]
    assert entry["args"][-len(serve) :] == serve
    assert "claude_desktop_config.json" in captured.err

    assert run(config, "mcp-config", "--client", "cursor", "--name", "notes") == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["notes"]["args"][-1] == "serve"

    assert run(config, "mcp-config", "--client", "claude-code") == 0
    words = shlex.split(capsys.readouterr().out)
    assert words[:7] == ["claude", "mcp", "add", "--scope", "user", "weaver", "--"]
    assert words[-len(serve) :] == serve


def test_mcp_config_names_the_running_weaver_script(vault_dir: Path, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("weaver")
    if not script.is_file():
        pytest.skip("no weaver script beside this Python")
    env = clean_env()
    done = subprocess.run(
        [str(script), "--vault", str(vault_dir), "mcp-config"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["weaver"]
    assert entry == {"command": str(script), "args": ["--vault", str(vault_dir), "serve"]}


# -- no vault ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["index"],
        ["serve"],
        ["daemon"],
        ["mcp-config"],
        ["workflows"],
        ["history"],
        ["trigger", "markdown-analyzer"],
        ["status", "wf_exec_x"],
        ["records", "markdown-analyzer"],
    ],
)
def test_no_vault_lists_the_vaults_obsidian_knows(
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    notes, gone = tmp_path / "My Notes", tmp_path / "gone"
    notes.mkdir()
    config_home = tmp_path / "xdg"
    (config_home / "obsidian").mkdir(parents=True)
    (config_home / "obsidian" / "obsidian.json").write_text(
        json.dumps(
            {
                "vaults": {
                    "a1": {"path": str(notes), "ts": 1700000000000, "open": True},
                    "b2": {"path": str(gone), "ts": 1700000000001},
                }
            }
        )
    )
    for key in [k for k in os.environ if k.startswith("WEAVER_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("weaver: no vault configured.\n")
    assert f"  {notes}  (open in Obsidian)\n" in captured.err
    assert str(gone) not in captured.err  # a folder that is no more is not offered
    assert f"weaver --vault '{notes}' index" in captured.err
    assert "WEAVER_VAULT=" in captured.err and "--config FILE" in captured.err
    assert "Traceback" not in captured.err


# -- first run ---------------------------------------------------------------------------------


def test_the_first_index_of_the_demo_vault_shows_no_python_warnings(tmp_path: Path) -> None:
    vault = tmp_path / "demo"
    shutil.copytree(
        Path(__file__).resolve().parent.parent / "demo-vault",
        vault,
        ignore=shutil.ignore_patterns(".weaver"),
    )
    env = clean_env()
    env["PYTHONWARNINGS"] = "always"  # shown even where Python would hide them by default
    done = subprocess.run(
        [sys.executable, "-m", "weaver", "--vault", str(vault), "index"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Indexed {vault}: ")
    assert not re.search(r"\w+Warning: ", done.stderr), done.stderr
    assert "Traceback" not in done.stderr


def test_index_in_a_real_terminal_names_each_bad_note_once(tmp_path: Path) -> None:
    """A child process whose stderr is a pseudo-terminal: rich and the logging both see one."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "good.md").write_text("# Good", encoding="utf-8")
    (vault / "bad.md").write_text("---\ntags: [\n---\nbody", encoding="utf-8")
    env = clean_env()
    env["TERM"] = "xterm"
    primary, secondary = os.openpty()
    try:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "weaver", "--vault", str(vault), "index"],
                stdout=subprocess.PIPE,
                stderr=secondary,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=60,
            )
        finally:
            os.close(secondary)
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the terminal has no writer left
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(primary)
    assert done.returncode == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode())
    assert re.search(r"^warning bad\.md: invalid YAML frontmatter at line 3: ", text, re.M)
    assert text.count("bad.md") == 1
    assert "{" not in text  # no JSON log lines on a terminal
    assert done.stdout.startswith(f"Indexed {vault}: 2 added, ")


def test_http_processes_is_checked_before_anything_starts(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault_dir), "daemon", "--http-processes", "0"]) == 2
    assert "invalid --http-processes: 0: Input should be greater than or equal to 1" in (
        capsys.readouterr().err
    )
    assert main(["--vault", str(vault_dir), "serve", "--http-processes", "2"]) == 2
    assert "--http-processes applies to --transport http only" in capsys.readouterr().err
