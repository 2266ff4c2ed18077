"""The agenda prompt: open tasks overdue, then due and scheduled within the days asked, under a
heading per day, never a done task nor one beyond the days; a long list is cut and says how to
get the rest. Task rows are inserted directly, as the indexer will write them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import date, timedelta

import pytest
from mcp import Client
from sqlalchemy import delete, insert

from tests.cache.test_task_queries import task
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.cache.models import Task
from weaver.config import Settings
from weaver.mcp_server.prompts import agenda_text
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens

pytestmark = pytest.mark.anyio


def day(n: int) -> str:
    return (date.today() + timedelta(days=n)).isoformat()


def heading(n: int) -> str:
    when = date.today() + timedelta(days=n)
    return f"### {when.strftime('%A')} {when.isoformat()}"


TASKS = [
    task("Work.md", 1, "late report", due=day(-3)),
    task("Work.md", 2, "call the bank", due=day(0)),
    task("Work.md", 3, "send invoice", due=day(2), priority=1),
    task("Work.md", 4, "book flights", due=day(2)),
    task("Work.md", 5, "far away", due=day(20)),
    task("Home.md", 1, "water plants", scheduled=day(1)),
    task("Home.md", 2, "paid already", status_char="x", status_type="DONE", due=day(-1)),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    files: dict[str, str | bytes] = {"Work.md": "- [ ] a\n", "Home.md": "- [ ] b\n"}
    served = serve(Settings(vault=write_files(tmp_path_factory.mktemp("agenda"), files)))
    with served.app.db.begin() as conn:
        conn.execute(delete(Task))
        conn.execute(insert(Task), TASKS)
    yield served
    served.app.close()


@pytest.fixture
async def client(served: Served) -> AsyncIterator[Client]:
    async with Client(served.server, mode="legacy") as connected:
        yield connected


async def test_the_agenda_lists_overdue_then_the_days_ahead_by_day(client: Client) -> None:
    result = await client.get_prompt("agenda", {"days": "7"})
    text: str = result.messages[0].content.text  # type: ignore[union-attr]
    overdue, rest = text.split("## Due in the next 7 days (3)")
    due, scheduled = rest.split("## Scheduled in the next 7 days (1)")
    assert "## Overdue (1)" in overdue
    assert f"- [ ] late report (due {day(-3)}) — Work.md:1" in overdue
    assert due.index(heading(0)) < due.index("call the bank") < due.index(heading(2))
    assert due.index(heading(2)) < due.index("send invoice [high priority]")
    assert due.index("send invoice") < due.index("book flights")
    assert heading(1) in scheduled and "water plants — Home.md:1" in scheduled
    assert "paid already" not in text and "far away" not in text
    assert "plan" in text.lower()


async def test_the_days_argument_widens_the_agenda(client: Client) -> None:
    result = await client.get_prompt("agenda", {"days": "30"})
    text: str = result.messages[0].content.text  # type: ignore[union-attr]
    assert "## Due in the next 30 days (4)" in text and "far away" in text


def test_a_long_agenda_is_cut_within_the_bound(served: Served) -> None:
    many = [task("Home.md", n, "很长的任务描述 " * 200, due=day(n % 7)) for n in range(10, 900)]
    with served.app.db.begin() as conn:
        conn.execute(insert(Task), many)
    try:
        text = agenda_text(served.state, 7)
    finally:
        with served.app.db.begin() as conn:
            conn.execute(delete(Task).where(Task.line >= 10))
    assert estimate_tokens(text) < ANSWER_TOKEN_BOUND
    assert '(and 853 more: query_tasks with query "not done\\ndue in' in text
