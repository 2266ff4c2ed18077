"""`weaver tasks`, in process: flags and --query ANDed, a table or JSON, and a query line it
cannot read refused naming the line. Task rows are inserted directly into an indexed cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import delete, insert

from tests.cache.test_task_queries import task
from tests.helpers import write_files
from weaver.cache.models import Task
from weaver.cli import main
from weaver.config import Settings
from weaver.runtime.app import open_app


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = write_files(tmp_path / "vault", {"Work/Plan.md": "plan\n", "Inbox.md": "inbox\n"})
    app = open_app(Settings(vault=root))
    try:
        app.indexer.reconcile()
        with app.db.begin() as conn:
            conn.execute(delete(Task))
            conn.execute(
                insert(Task),
                [
                    task("Work/Plan.md", 3, "write report", due="2000-01-03", tags=["#work"]),
                    task("Work/Plan.md", 4, "call bank", due="2000-01-01", priority=0),
                    task("Inbox.md", 1, "idea"),
                    task("Inbox.md", 2, "old", status_char="x", status_type="DONE"),
                ],
            )
    finally:
        app.close()
    return root


def test_flags_list_tasks_as_a_table(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--vault", str(vault), "tasks", "--overdue", "--sort", "due"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["status", "dates", "priority", "where", "task"]
    assert "Work/Plan.md:4" in out[1] and "call bank" in out[1] and "highest" in out[1]
    assert "Work/Plan.md:3" in out[2]
    assert out[3] == "2 tasks (1-2 shown)"


def test_query_and_flags_are_anded_with_json_output(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--vault", str(vault), "tasks", "--query", "not done; group by folder", "--tag", "work"]
    assert main([*args, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [t["description"] for t in answer["tasks"]] == ["write report"]
    assert answer["groups"] == [{"names": ["Work/"], "count": 1}]


def test_an_unsupported_query_line_is_a_usage_error(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--vault", str(vault), "tasks", "--query", "not done;sort by mood"]) == 2
    assert "line 2" in capsys.readouterr().err
