"""proof-task-complete: a task becoming done (by status or by its checkboxes) is recorded once,
with its id, name and the time it took; other notes and old news are not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.runtime.app import App

ID = "proof-task-complete"


def task(status: str, **fields: str) -> str:
    lines = ["---", "type: task", f"status: {status}", *(f"{k}: {v}" for k, v in fields.items())]
    return "\n".join([*lines, "---", "# Write the report", ""])


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID) as opened:
        yield opened


def completions(vault: WorkflowVault) -> list[dict[str, Any]]:
    return [r.data for r in vault.records(ID, kind="completion")]


def test_status_done_records_the_completion_and_its_duration(vault: WorkflowVault) -> None:
    times = {"started_at": "2026-01-05T09:00", "completed_at": "2026-01-05T11:30"}
    vault.write({"work/report.md": task("in-progress", id="T-42", **times)})
    assert completions(vault) == []
    vault.write({"work/report.md": task("Done", id="T-42", **times)})

    [done] = completions(vault)
    assert (done["taskId"], done["name"], done["path"]) == (
        "T-42",
        "report",
        "work/report.md",
    )
    assert (done["reason"], done["status"]) == ("status", "Done")
    assert done["startedAt"] == int(datetime(2026, 1, 5, 9).astimezone().timestamp() * 1000)
    assert (done["durationMs"], done["duration"]) == (150 * 60_000, "2h 30m")
    assert vault.last_result(ID) == {"checked": 1, "completed": [done]}

    vault.write({"work/report.md": task("completed", id="T-42", note="still done")})
    assert len(completions(vault)) == 1  # done already: no second completion


def test_without_completed_at_the_duration_runs_to_now(vault: WorkflowVault) -> None:
    started = "2026-01-05T09:00:00+00:00"
    vault.write({"t.md": task("todo", started_at=started)})
    before = time.time_ns() // 1_000_000
    vault.write({"t.md": task("done", started_at=started)})
    [done] = completions(vault)
    assert done["completedAt"] >= before
    assert done["durationMs"] == done["completedAt"] - 1_767_603_600_000
    assert done["taskId"] == "t.md"  # no id in the frontmatter: the path


def test_all_checkboxes_checked_in_the_tasks_folder(vault: WorkflowVault) -> None:
    vault.write({"Tasks/move.md": "# Move house\n- [x] pack\n- [ ] drive\n"})
    vault.write({"Tasks/move.md": "# Move house\n- [x] pack\n- [x] drive\n"})
    [done] = completions(vault)
    assert (done["reason"], done["name"], done["durationMs"]) == ("checkboxes", "move", None)


def test_checkboxes_count_by_the_vaults_status_types(vault: WorkflowVault) -> None:
    vault.write({"Tasks/trip.md": "# Trip\n- [ ] book\n- [ ] pack\n"})
    vault.write({"Tasks/trip.md": "# Trip\n- [x] book\n- [/] pack\n"})
    assert completions(vault) == []  # in progress is not done, though it is not a space
    vault.write({"Tasks/trip.md": "# Trip\n- [x] book\n- [-] pack\n"})
    [done] = completions(vault)
    assert done["reason"] == "checkboxes"  # a cancelled task no longer holds the note open


def test_what_is_not_a_completion(vault: WorkflowVault) -> None:
    vault.write(
        {
            "Tasks/old.md": task("done"),  # first seen already done
            "notes/idea.md": "---\nstatus: todo\n---\n",  # not a task
        }
    )
    vault.write({"notes/idea.md": "---\nstatus: done\n---\n"})
    assert completions(vault) == []
    assert vault.last_result(ID)["checked"] == 0


def test_reopened_and_done_again_is_a_second_completion(vault: WorkflowVault) -> None:
    for status in ("todo", "done", "todo", "done"):
        vault.write({"Tasks/again.md": task(status)})
    assert len(completions(vault)) == 2


def test_folder_and_statuses_come_from_settings(app: App) -> None:
    settings = {ID: {"folder": "Jobs", "done_statuses": ["shipped"]}}
    with workflow_vault(app, ID, settings=settings) as vault:
        vault.write(
            {"Jobs/a.md": "---\nstatus: open\n---\n", "Tasks/b.md": "---\nstatus: open\n---\n"}
        )
        vault.write(
            {
                "Jobs/a.md": "---\nstatus: shipped\n---\n",
                "Tasks/b.md": "---\nstatus: shipped\n---\n",
            }
        )
        assert [c["path"] for c in completions(vault)] == ["Jobs/a.md"]
