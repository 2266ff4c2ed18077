"""update_task through the SDK's in-memory client: a task completed, cancelled, reopened and
its dates set in the file, a recurring one with its next occurrence above, a stale line refused
with the file untouched, and the change undone with restore_edit."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Tools, serve, tools_of
from weaver.config import Settings
from weaver.edits import steps

pytestmark = pytest.mark.anyio

HOME = (
    "# Home\n"
    "- [ ] pay rent 🔁 every month on the 1st 📅 2026-12-01\n"
    "- [ ] call Ana ⏫ ^ana\n"
    "```\n- [ ] not a task in code\n```\n"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def vault(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    return write_files(tmp_path / "vault", files or {"Home.md": HOME})


async def test_completing_a_recurring_task_writes_the_next_one_above(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    try:
        async with tools_of(served, "auto") as tools:
            data = await tools.ok(
                "update_task",
                path="Home.md",
                line=2,
                expectedText="- [ ] pay rent 🔁 every month on the 1st 📅 2026-12-01",
                action="complete",
                date="2026-11-28",
            )
        lines = (served.root / "Home.md").read_text(encoding="utf-8").splitlines()
        assert lines[1:3] == [
            "- [ ] pay rent 🔁 every month on the 1st 📅 2027-01-01",
            "- [x] pay rent 🔁 every month on the 1st 📅 2026-12-01 ✅ 2026-11-28",
        ]
        assert data["after"] == lines[2] and data["line"] == 3
        assert data["inserted"] == lines[1] and data["insertedLine"] == 2
        assert data["contentHash"] == steps.sha256((served.root / "Home.md").read_bytes())
    finally:
        served.app.close()


async def test_a_task_to_delete_on_completion_leaves_its_next_occurrence(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "Daily.md": "- [ ] stretch 🔁 every day 📅 2026-11-28 🏁 delete\n"
    }
    served = serve(Settings(vault=vault(tmp_path, files)))
    try:
        async with tools_of(served, "auto") as tools:
            text = "- [ ] stretch 🔁 every day 📅 2026-11-28 🏁 delete"
            data = await tools.ok(
                "update_task", path="Daily.md", line=1, expectedText=text, action="complete"
            )
        assert data["deleted"] and data["insertedLine"] == 1
        assert (served.root / "Daily.md").read_text(encoding="utf-8") == (
            "- [ ] stretch 🔁 every day 📅 2026-11-29 🏁 delete\n"
        )
    finally:
        served.app.close()


async def test_cancel_reopen_and_set_by_block_id(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    note = served.root / "Home.md"
    try:
        async with tools_of(served, "legacy") as tools:
            await tools.ok("update_task", path="Home.md", blockId="^ana", action="cancel")
            assert note.read_text().splitlines()[2].startswith("- [-] call Ana ⏫ ❌ ")
            await tools.ok("update_task", path="Home.md", blockId="ana", action="reopen")
            assert note.read_text().splitlines()[2] == "- [ ] call Ana ⏫ ^ana"
            data = await tools.ok(
                "update_task",
                path="Home.md",
                blockId="ana",
                action="set",
                due="2026-12-24",
                priority="none",
            )
            assert data["before"] == "- [ ] call Ana ⏫ ^ana"
            assert data["after"] == "- [ ] call Ana 📅 2026-12-24 ^ana"
            assert note.read_text().splitlines()[2] == data["after"]
    finally:
        served.app.close()


async def test_toggling_follows_the_vaults_status_settings(tmp_path: Path) -> None:
    statuses = {
        "statusSettings": {
            "coreStatuses": [
                {"symbol": " ", "name": "Todo", "nextStatusSymbol": "/", "type": "TODO"},
                {"symbol": "x", "name": "Done", "nextStatusSymbol": " ", "type": "DONE"},
            ],
            "customStatuses": [
                {"symbol": "/", "name": "Doing", "nextStatusSymbol": "x", "type": "IN_PROGRESS"}
            ],
        }
    }
    files: dict[str, str | bytes] = {
        "Home.md": HOME,
        ".obsidian/plugins/obsidian-tasks-plugin/data.json": json.dumps(statuses),
    }
    served = serve(Settings(vault=vault(tmp_path, files)))
    try:
        async with tools_of(served, "auto") as tools:
            first = await tools.ok("update_task", path="Home.md", blockId="ana", action="toggle")
            assert first["after"] == "- [/] call Ana ⏫ ^ana"
            second = await tools.ok("update_task", path="Home.md", blockId="ana", action="toggle")
            assert second["after"].startswith("- [x] call Ana ⏫ ✅ ")
    finally:
        served.app.close()


async def test_a_stale_line_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    before = (served.root / "Home.md").read_bytes()
    try:
        async with tools_of(served, "auto") as tools:
            stale = await tools.error(
                "update_task",
                path="Home.md",
                line=3,
                expectedText="- [ ] pay rent 🔁 every month on the 1st 📅 2026-12-01",
                action="complete",
            )
            assert "line 3 now reads '- [ ] call Ana ⏫ ^ana'" in stale
            not_task = await tools.error(
                "update_task", path="Home.md", line=1, expectedText="# Home", action="complete"
            )
            assert "line 1 is not a task" in not_task
            in_code = await tools.error(
                "update_task",
                path="Home.md",
                line=5,
                expectedText="- [ ] not a task in code",
                action="complete",
            )
            assert "line 5 is not a task" in in_code
            unnamed = await tools.error("update_task", path="Home.md", line=3, action="reopen")
            assert "expectedText" in unnamed
            done_twice = await tools.error(
                "update_task", path="Home.md", blockId="ana", action="set", due="someday"
            )
            assert "'someday' is not a date" in done_twice
        assert (served.root / "Home.md").read_bytes() == before
    finally:
        served.app.close()


async def test_an_update_is_undone_with_restore_edit(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    before = (served.root / "Home.md").read_bytes()
    try:
        async with tools_of(served, "auto") as tools:
            await tools.ok("update_task", path="Home.md", blockId="ana", action="complete")
            listed = await tools.ok("list_edits", path="Home.md")
            assert listed["edits"][0]["operation"] == "update_task"
            await tools.ok("restore_edit", path="Home.md", editId=listed["edits"][0]["editId"])
        assert (served.root / "Home.md").read_bytes() == before
    finally:
        served.app.close()


async def test_two_clients_completing_one_recurring_task_write_one_next_occurrence(
    tmp_path: Path,
) -> None:
    """Both saw the same line; the note lock lets one complete it, the other is told the line
    changed, so the next occurrence is written once and the file has no stray line."""
    import anyio

    served = serve(Settings(vault=vault(tmp_path)))
    text = "- [ ] pay rent 🔁 every month on the 1st 📅 2026-12-01"
    answers: list[dict[str, Any]] = []
    try:
        async with tools_of(served, "auto") as first, tools_of(served, "auto") as second:

            async def complete(tools: Tools) -> None:
                args = {"path": "Home.md", "line": 2, "expectedText": text, "action": "complete"}
                answers.append(await tools.raw("update_task", args))

            async with anyio.create_task_group() as group:
                group.start_soon(complete, first)
                group.start_soon(complete, second)
        assert sorted(a["success"] for a in answers) == [False, True]
        (refused,) = [a for a in answers if not a["success"]]
        assert "2026-12-01" in str(refused["error"])  # it says what the line holds now
        lines = (served.root / "Home.md").read_text(encoding="utf-8").splitlines()
        assert sum("pay rent" in line for line in lines) == 2
        assert lines[1:3] == [
            "- [ ] pay rent 🔁 every month on the 1st 📅 2027-01-01",
            f"- [x] pay rent 🔁 every month on the 1st 📅 2026-12-01 ✅ {date.today().isoformat()}",
        ]
    finally:
        served.app.close()
