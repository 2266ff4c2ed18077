"""Tasks from the files to the answers, with nothing inserted by hand: notes written on disk are
indexed, `query_tasks` and `run_tasks_block` answer from what the parser and the writer made,
an edit on disk replaces a note's tasks, a rename moves them, a delete takes them away, and a
task completed with `update_task` shows as done with its next occurrence open."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve, tools_of
from weaver.config import Settings

pytestmark = pytest.mark.anyio


def day(n: int) -> str:
    return (date.today() + timedelta(days=n)).isoformat()


PLAN = f"""---
owner: Ana
---
# Plan

## This week
- [ ] send the report 📅 {day(-2)} ⏫ #work
    - [x] draft it ✅ {day(-5)}
- [/] review the budget [due:: {day(0)}]
- [ ] water plants 🔁 every week 📅 {day(1)}

```
- [ ] not a task, in code 📅 {day(-9)}
```
estimate:: 3
"""
BOARD = """# Board
```tasks
not done
due before tomorrow
sort by due
```
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = write_files(tmp_path / "vault", {"Projects/Plan.md": PLAN, "Board.md": BOARD})
    return serve(Settings(vault=root))


def described(data: dict[str, Any]) -> list[str]:
    return [t["description"] for t in data["tasks"]]


async def test_indexed_tasks_answer_queries_and_blocks(served: Served) -> None:
    try:
        async with tools_of(served, "auto") as tools:
            overdue = await tools.ok("query_tasks", overdue=True)
            assert described(overdue) == ["send the report #work"]
            (task,) = overdue["tasks"]
            assert (task["path"], task["line"], task["priority"]) == ("Projects/Plan.md", 7, "high")
            assert task["heading"] == "Plan > This week" and task["tags"] == ["#work"]
            language = await tools.ok("query_tasks", query="status.type is IN_PROGRESS")
            assert described(language) == ["review the budget"]
            assert language["tasks"][0]["dates"] == {"due": day(0)}
            block = await tools.ok("run_tasks_block", path="Board.md")
            assert described(block) == ["send the report #work", "review the budget"]
            done = await tools.ok("query_tasks", query="done")
            assert described(done) == ["draft it"]
    finally:
        served.app.close()


async def test_an_edit_a_rename_and_a_delete_on_disk_carry_the_tasks(served: Served) -> None:
    plan = served.root / "Projects/Plan.md"
    try:
        async with tools_of(served, "auto") as tools:
            plan.write_text(PLAN.replace("send the report", "send the final report"), "utf-8")
            served.app.indexer.apply_paths(["Projects/Plan.md"])
            data = await tools.ok("query_tasks", overdue=True)
            assert described(data) == ["send the final report #work"]
            plan.rename(served.root / "Done.md")
            served.app.indexer.apply_paths(["Projects/Plan.md", "Done.md"])
            data = await tools.ok("query_tasks", overdue=True)
            assert [t["path"] for t in data["tasks"]] == ["Done.md"]
            (served.root / "Done.md").unlink()
            served.app.indexer.apply_paths(["Done.md"])
            assert (await tools.ok("query_tasks"))["total"] == 0
    finally:
        served.app.close()


async def test_a_completed_recurring_task_is_done_and_its_next_one_open(served: Served) -> None:
    try:
        async with tools_of(served, "auto") as tools:
            (water,) = (await tools.ok("query_tasks", text="water"))["tasks"]
            assert water["text"] == f"- [ ] water plants 🔁 every week 📅 {day(1)}"
            await tools.ok(  # what the query answered is all update_task needs
                "update_task",
                path=water["path"],
                line=water["line"],
                expectedText=water["text"],
                action="complete",
                date=day(0),
            )
            done = await tools.ok("query_tasks", query="done\ndescription includes water")
            assert [t["dates"] for t in done["tasks"]] == [{"due": day(1), "done": day(0)}]
            open_ = await tools.ok("query_tasks", query="not done\ndescription includes water")
            assert [t["dates"] for t in open_["tasks"]] == [{"due": day(8)}]
    finally:
        served.app.close()


async def test_inline_fields_are_properties_of_the_note(served: Served) -> None:
    try:
        async with tools_of(served, "auto") as tools:
            note = await tools.ok("get_file", path="Projects/Plan.md")
            assert {"key": "due", "value": day(0), "line": 9} in note["inlineFields"]
            assert {"key": "estimate", "value": "3", "line": 15} in note["inlineFields"]
            found = await tools.ok("query_files", where={"estimate": {"gte": 2}, "owner": "Ana"})
            assert [f["path"] for f in found["files"]] == ["Projects/Plan.md"]
            assert (await tools.ok("query_files", where={"estimate": {"gt": 3}}))["files"] == []
    finally:
        served.app.close()
