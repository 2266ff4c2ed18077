"""query_tasks and run_tasks_block through the SDK's client: structured arguments and the
plugin's language ANDed, paging with true totals, groups, a note's tasks block evaluated as the
plugin shows it, and errors naming the unsupported line. Task rows are inserted directly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import delete, insert

from tests.cache.test_task_queries import task
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.cache.models import Task
from weaver.config import Settings

pytestmark = pytest.mark.anyio


def days(n: int) -> str:
    return (date.today() + timedelta(days=n)).isoformat()


FILES: dict[str, str | bytes] = {
    "Work/Plan.md": "- [ ] a\n",
    "Home.md": (
        "# Home\n```tasks\nnot done\nsort by due\n```\n\n~~~tasks\n~~~\n"
        "```tasks\ndue before tomorrow\nfilter by function task.urgency > 3\n```\n"
    ),
    "Inbox.md": "inbox\n",
}
TASKS = [
    task("Work/Plan.md", 1, "overdue report", due=days(-3), tags=["#work"], priority=1),
    task("Work/Plan.md", 2, "due today call", due=days(0)),
    task("Work/Plan.md", 3, "next week thing", due=days(7), tags=["#work"]),
    task("Inbox.md", 1, "no date idea"),
    task("Inbox.md", 2, "finished", status_char="x", status_type="DONE", done=days(-1)),
    task("Inbox.md", 3, "half way", status_char="/", status_type="IN_PROGRESS"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("tasks") / "vault", FILES)
    served = serve(Settings(vault=root))
    with served.app.db.begin() as conn:
        conn.execute(delete(Task))
        conn.execute(insert(Task), TASKS)
    yield served
    served.app.close()


@pytest.fixture
async def tools(served: Served) -> AsyncIterator[Tools]:
    async with Client(served.server) as client:
        yield Tools(client)


def described(data: dict[str, Any]) -> list[str]:
    return [t["description"] for t in data["tasks"]]


async def test_overdue_tasks_with_their_place_dates_and_priority(tools: Tools) -> None:
    data = await tools.ok("query_tasks", overdue=True)
    assert described(data) == ["overdue report"]
    (found,) = data["tasks"]
    assert found["path"] == "Work/Plan.md" and found["line"] == 1
    assert (found["status"], found["statusType"], found["priority"]) == (" ", "TODO", "high")
    assert found["dates"] == {"due": days(-3)} and found["tags"] == ["#work"]
    assert "update_task" in data["hint"] and found["text"] == "- [ ] overdue report"


async def test_structured_arguments_and_the_language_are_anded(tools: Tools) -> None:
    data = await tools.ok(
        "query_tasks", query="not done\ndue before next week", tag="work", sort=["due"]
    )
    assert described(data) == ["overdue report"]
    both = await tools.ok("query_tasks", status="open", due="in or before today", sort=["due"])
    assert described(both) == ["overdue report", "due today call"]
    assert described(await tools.ok("query_tasks", status="/")) == ["half way"]


async def test_pages_say_the_total_and_how_to_go_on(tools: Tools) -> None:
    first = await tools.ok("query_tasks", status="open", limit=2)
    assert (first["total"], first["hasMore"], len(first["tasks"])) == (5, True, 2)
    assert "offset 2" in first["hint"]
    rest = await tools.ok("query_tasks", status="open", limit=2, offset=2)
    assert not set(described(first)) & set(described(rest))


async def test_groups_count_every_task_not_only_the_page(tools: Tools) -> None:
    data = await tools.ok("query_tasks", groupBy=["folder"], limit=1)
    assert {tuple(g["names"]): g["count"] for g in data["groups"]} == {("/",): 3, ("Work/",): 3}


async def test_a_tasks_block_is_evaluated_as_the_plugin_shows_it(tools: Tools) -> None:
    data = await tools.ok("run_tasks_block", path="Home.md")
    assert (data["blockLine"], data["blocks"]) == (2, 3)
    assert described(data) == [
        "overdue report",
        "due today call",
        "next week thing",
        "half way",
        "no date idea",
    ]
    every = await tools.ok("run_tasks_block", path="Home.md", index=1)
    # No filters: every task, done ones too, in the default order (in progress first, done last).
    assert every["total"] == 6
    assert described(every)[0] == "half way" and described(every)[-1] == "finished"


async def test_an_unsupported_line_is_an_error_naming_it(tools: Tools) -> None:
    error = await tools.error("run_tasks_block", path="Home.md", index=2)
    assert "line 2" in error and "filter by function task.urgency > 3" in error
    error = await tools.error("query_tasks", query="not done\ndue before someday")
    assert "line 2" in error and "due before someday" in error
    error = await tools.error("run_tasks_block", path="Home.md", index=3)
    assert "3 tasks block" in error


async def test_a_page_of_very_long_task_lines_is_cut_to_fit_and_says_where_to_go_on(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.mcp_server.test_cache_tools import tools_of
    from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

    root = write_files(tmp_path_factory.mktemp("long") / "vault", {"Long.md": "- [ ] a\n"})
    served = serve(Settings(vault=root))
    try:
        with served.app.db.begin() as conn:
            conn.execute(delete(Task))
            long = [task("Long.md", n, f"task {n} " + "word " * 600) for n in range(1, 51)]
            conn.execute(insert(Task), long)
        async with tools_of(served, "auto") as tools:
            envelope = await tools.raw("query_tasks", {})
            data = envelope["data"]
            assert 0 < len(data["tasks"]) < 50 and data["total"] == 50 and data["hasMore"]
            assert f"offset {len(data['tasks'])}" in data["hint"]
            assert estimate_tokens(json.dumps(envelope)) < ANSWER_TOKEN_BOUND
            rest = await tools.ok("query_tasks", offset=len(data["tasks"]))
            assert rest["tasks"][0]["line"] == len(data["tasks"]) + 1
    finally:
        served.app.close()


async def test_thousands_of_groups_are_listed_a_window_at_a_time(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.mcp_server.test_cache_tools import tools_of
    from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

    files: dict[str, str | bytes] = {f"Backlog/Note {n:04}.md": "- [ ] a\n" for n in range(1500)}
    root = write_files(tmp_path_factory.mktemp("groups") / "vault", files)
    served = serve(Settings(vault=root))
    try:
        async with tools_of(served, "auto") as tools:
            envelope = await tools.raw("query_tasks", {"groupBy": ["filename"], "limit": 10})
            data = envelope["data"]
            assert (data["total"], data["groupsTotal"], len(data["groups"])) == (1500, 1500, 100)
            assert data["groups"][0] == {"names": ["Note 0000.md"], "count": 1}
            assert "1,500 groups" in data["hint"]
            assert estimate_tokens(json.dumps(envelope)) < ANSWER_TOKEN_BOUND
            later = await tools.ok("query_tasks", groupBy=["filename"], limit=10, offset=1200)
            assert later["groups"][0]["names"] == ["Note 1200.md"] == later["tasks"][0]["group"]
            assert later["groups"][-1]["names"] == ["Note 1299.md"]
    finally:
        served.app.close()
