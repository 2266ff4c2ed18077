"""proof-daily-digest: a given day digested from known records and executions, the note it
writes (which starts no workflow), a scheduled run digesting the day before, and its settings."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from tests.cache.test_task_queries import task
from tests.workflow_vault import BUILTIN_IDS, WorkflowVault, workflow_vault
from weaver.cache import executions
from weaver.cache.models import Task
from weaver.cache.records import NewRecord, insert_records
from weaver.config import Settings
from weaver.engine import InvalidInputError
from weaver.runtime.app import App

ID = "proof-daily-digest"
DAY = dt.date(2026, 1, 5)


def at(hour: int, minute: int = 0, day: dt.date = DAY) -> int:
    """Epoch ms of a local time on `day`."""
    return int(dt.datetime.combine(day, dt.time(hour, minute)).astimezone().timestamp() * 1000)


def record(app: App, workflow_id: str, sort: str, when: int, key: str, **data: Any) -> None:
    with app.db.begin() as conn:
        insert_records(conn, workflow_id, [NewRecord(key, data, sort, when)], now=when)


def failed_run(app: App, execution_id: str, workflow_id: str, when: int, error: str) -> None:
    with app.db.begin() as conn:
        executions.insert_execution(
            conn,
            execution_id=execution_id,
            workflow_id=workflow_id,
            workflow_name=workflow_id,
            trigger_kind="manual",
            trigger_detail={},
            input={},
            created=when,
        )
        executions.finish(
            conn,
            execution_id,
            status=executions.FAILED,
            now=when,
            message=error,
            error=error,
            from_status=(executions.PENDING,),
        )


def change(app: App, when: int, kind: str, path: str, old: str | None = None) -> None:
    extra = {"oldPath": old} if old else {}
    record(app, "file-change-logger", "change", when, path, kind=kind, path=path, **extra)


@pytest.fixture
def settings(vault_dir: Path) -> Settings:
    """No pruning: the executions and records of DAY may be older than the retention periods."""
    keep_all = {"records_retention_days": 0}
    return Settings(
        vault=vault_dir,
        history_retention_days=0,
        workflows={"file-change-logger": keep_all, "markdown-analyzer": keep_all},
    )


@pytest.fixture
def known_day(app: App, write_notes: Any) -> App:
    """Notes on disk, and what the workflows recorded on DAY, the day before and the day after."""
    write_notes(
        {
            "inbox/new idea.md": "[[gone]]",
            "plan.md": "[[Nowhere]] [[Fixed]]",
            "archive/old.md": "moved here",
            "Tasks/report.md": "---\ntype: task\n---\n",
            "Fixed.md": "now exists",
        }
    )
    app.indexer.reconcile()  # no engine yet: nothing recorded by this
    change(app, at(0, 0), "add", "inbox/new idea.md")
    change(app, at(9, 15), "modify", "plan.md")
    change(app, at(9, 20), "modify", "inbox/new idea.md")  # created the same day: listed once
    change(app, at(10), "move", "archive/old.md", "old.md")
    change(app, at(11), "delete", "gone.md")
    change(app, at(23, 59), "modify", "plan.md")
    change(app, at(0, 0, DAY + dt.timedelta(days=1)), "add", "tomorrow.md")
    change(app, at(23, 59, DAY - dt.timedelta(days=1)), "add", "yesterday.md")
    analyzer = "markdown-analyzer"
    record(
        app,
        analyzer,
        "analysis",
        at(9, 15),
        "plan.md",
        newTags=["Roadmap"],
        newBrokenLinks=["Nowhere", "Fixed"],
    )
    record(
        app,
        analyzer,
        "analysis",
        at(12),
        "inbox/new idea.md",
        newTags=["roadmap", "ideas/open"],
        newBrokenLinks=[],
    )
    links = [{"source": "inbox/new idea.md", "target": "gone", "line": 1}]
    record(app, "file-deletion-monitor", "deletion", at(11), "gone.md", brokenLinks=links)
    done = {
        "path": "Tasks/report.md",
        "name": "Write report",
        "taskId": "T-7",
        "durationMs": 9_000_000,
    }
    record(app, "proof-task-complete", "completion", at(16), "Tasks/report.md", **done)
    failed_run(app, "wf_exec_a", "concept-tracker", at(14, 5), "ValueError: bad [[link]]\ntrace")
    failed_run(app, "wf_exec_b", "concept-tracker", at(14, 5, DAY + dt.timedelta(days=1)), "later")
    return app


@pytest.fixture
def vault(known_day: App) -> Iterator[WorkflowVault]:
    with workflow_vault(known_day, *BUILTIN_IDS) as opened:
        yield opened


def test_a_given_day_is_digested_from_what_was_recorded(vault: WorkflowVault) -> None:
    run = vault.trigger(ID, {"date": "2026-01-05"})
    assert run.status == "completed", run.error
    digest = run.result
    assert (digest["date"], digest["path"]) == ("2026-01-05", "Digests/Digest 2026-01-05.md")
    assert digest["created"] == ["inbox/new idea.md"]
    assert digest["modified"] == ["plan.md"]
    assert digest["deleted"] == ["gone.md"]
    assert digest["moved"] == [{"from": "old.md", "to": "archive/old.md"}]
    assert digest["newTags"] == ["ideas/open", "Roadmap"]
    # [[Fixed]] was broken that day but resolves now: left out.
    assert digest["newBrokenLinks"] == [
        {"source": "inbox/new idea.md", "target": "gone"},
        {"source": "plan.md", "target": "Nowhere"},
    ]
    assert [t["taskId"] for t in digest["tasksCompleted"]] == ["T-7"]
    assert [(f["executionId"], f["error"]) for f in digest["failures"]] == [
        ("wf_exec_a", "ValueError: bad [[link]]")
    ]
    assert digest["counts"]["created"] == 1 and digest["counts"]["failures"] == 1

    content = digest["content"]
    assert (vault.root / digest["path"]).read_text(encoding="utf-8") == content
    assert content.startswith(
        "---\ntype: digest\ndate: 2026-01-05\n---\n# Digest for Monday 2026-01-05\n"
    )
    for line in (
        "## Created (1)",
        "- [[inbox/new idea]]",
        "- `gone.md`",
        "- `old.md` → [[archive/old]]",
        "- `#Roadmap`",
        "- [[plan]] → `Nowhere`",
        "- [[Tasks/report|Write report]] (`T-7`), took 2h 30m",
        "- 14:05 `concept-tracker`: `ValueError: bad [[link]]` (`wf_exec_a`)",
    ):
        assert line in content.splitlines(), line
    assert vault.records(ID, key="2026-01-05")[0].data["counts"] == digest["counts"]


def test_the_digest_note_is_indexed_but_starts_no_workflow(vault: WorkflowVault) -> None:
    vault.trigger(ID, {"date": "2026-01-05"})
    file_runs = sum(len(vault.runs(workflow_id)) for workflow_id in BUILTIN_IDS)
    report = vault.app.indexer.apply_paths(["Digests/Digest 2026-01-05.md"])  # the watcher's turn
    assert report.added == 1
    assert sum(len(vault.runs(workflow_id)) for workflow_id in BUILTIN_IDS) == file_runs
    # The digest added no tag and no broken link of its own to the vault.
    vault.trigger("markdown-analyzer", {"path": "Digests/Digest 2026-01-05.md"})
    analysis = vault.records("markdown-analyzer", key="Digests/Digest 2026-01-05.md")[0].data
    assert (analysis["tags"], analysis["brokenLinks"]) == ([], [])


def test_a_scheduled_run_digests_the_day_before(vault: WorkflowVault) -> None:
    morning = dt.datetime.combine(DAY + dt.timedelta(days=1), dt.time(7)).astimezone()
    vault.engine.enqueue_scheduled(ID, morning)
    digest = vault.last_result(ID)
    assert digest["date"] == "2026-01-05" and digest["created"] == ["inbox/new idea.md"]


def test_a_quiet_day_and_the_folder_setting(known_day: App) -> None:
    settings = {ID: {"folder": "Journal/Digests", "max_items": 1}}
    with workflow_vault(known_day, ID, settings=settings) as vault:
        quiet = vault.trigger(ID, {"date": "2025-12-01"}).result
        assert quiet["path"] == "Journal/Digests/Digest 2025-12-01.md"
        assert "Nothing happened in the vault on this day." in quiet["content"]
        busy = vault.trigger(ID, {"date": "2026-01-05"}).result["content"]
        assert "- … and 1 more" in busy.splitlines()  # two new tags, one line allowed
        with pytest.raises(InvalidInputError, match="date"):
            vault.trigger(ID, {"date": "5 Jan"})


def test_the_digest_lists_open_tasks_overdue_and_due_that_day(known_day: App) -> None:
    rows = [
        task("plan.md", 1, "send #budget to [[Ann]]", due="2026-01-02"),
        task("plan.md", 2, "call the bank", due="2026-01-05"),
        task("plan.md", 3, "paid already", status_char="x", status_type="DONE", due="2026-01-03"),
        task("Fixed.md", 1, "next week", due="2026-01-12"),
        task("Fixed.md", 2, "also late", due="2026-01-04"),
        task("Fixed.md", 3, "later still", due="2025-12-30"),
    ]
    with known_day.db.begin() as conn:
        conn.execute(insert(Task), rows)
    settings = {ID: {"max_items": 2}}
    with workflow_vault(known_day, ID, settings=settings) as vault:
        digest = vault.trigger(ID, {"date": "2026-01-05"}).result
    assert [t["description"] for t in digest["overdue"]] == [
        "later still",
        "send #budget to [[Ann]]",
    ]
    assert [t["description"] for t in digest["dueToday"]] == ["call the bank"]
    assert (digest["counts"]["overdue"], digest["counts"]["dueToday"]) == (3, 1)
    lines = digest["content"].splitlines()
    overdue = lines[lines.index("## Overdue (3)") :]
    assert overdue[2:5] == [
        "- `later still` in [[Fixed]] line 3, due 2025-12-30",
        "- `send #budget to [[Ann]]` in [[plan]] line 1, due 2026-01-02",
        "- … and 1 more",
    ]
    assert "- `call the bank` in [[plan]] line 2, due 2026-01-05" in lines
    assert "paid already" not in digest["content"] and "next week" not in digest["content"]
    assert "Open tasks overdue: 3, due this day: 1." in digest["content"]


def test_a_first_index_is_not_reported_as_notes_created(app: App, write_notes: Any) -> None:
    """Starting Weaver on an existing vault: its notes were found, not created, and their tags
    are not new; a note written afterwards is."""
    write_notes({"old.md": "#legacy [[nowhere]]", "older.md": "text"})
    with workflow_vault(app, *BUILTIN_IDS) as vault:
        app.indexer.reconcile()  # the first index, with the workflows listening
        logged = {r.key: r.data for r in vault.records("file-change-logger")}
        assert logged["old.md"]["kind"] == "add" and logged["old.md"]["initial"] is True
        analysis = vault.records("markdown-analyzer", key="old.md")[0].data
        assert (analysis["newTags"], analysis["newBrokenLinks"]) == ([], [])
        vault.write({"new.md": "#fresh"})
        digest = vault.trigger(ID, {"date": dt.date.today().isoformat()}).result
    assert digest["created"] == ["new.md"]
    assert digest["modified"] == [] and digest["newTags"] == ["fresh"]
