"""`weaver://tasks/today` over the SDK's client: the open tasks overdue, due and scheduled today
and in progress (never a done one), listed among the resources, cut to the size bound with the
query_tasks call for the rest, and a subscriber told when a batch changed them. Task rows are
inserted directly, as the indexer will write them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import date, timedelta
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.shared.exceptions import MCPDeprecationWarning
from sqlalchemy import delete, insert, update

from tests.cache.test_task_queries import task
from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.cache.models import Task
from weaver.config import Settings
from weaver.mcp_server.sizing import ANSWER_TOKEN_BOUND, estimate_tokens
from weaver.mcp_server.task_resources import TODAY_URI

pytestmark = pytest.mark.anyio


def day(n: int) -> str:
    return (date.today() + timedelta(days=n)).isoformat()


FILES: dict[str, str | bytes] = {"Work.md": "- [ ] a\n", "Home.md": "- [ ] b\n", "Other.md": "x\n"}
TASKS = [
    task("Work.md", 1, "late report", due=day(-2)),
    task("Work.md", 2, "call the bank", due=day(0)),
    task("Work.md", 3, "later thing", due=day(5)),
    task("Home.md", 1, "water plants", scheduled=day(0)),
    task("Home.md", 2, "paid already", status_char="x", status_type="DONE", due=day(-1)),
    task("Home.md", 3, "half way", status_char="/", status_type="IN_PROGRESS"),
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Any) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    served = serve(Settings(vault=root))
    with served.app.db.begin() as conn:
        conn.execute(delete(Task))
        conn.execute(insert(Task), TASKS)
    yield served
    served.app.close()


@pytest.fixture
async def client(served: Served) -> AsyncIterator[Client]:
    async with Client(served.server, mode="legacy") as connected:
        yield connected


async def read_today(client: Client) -> dict[str, Any]:
    contents = (await client.read_resource(TODAY_URI)).contents[0]
    assert contents.mime_type == "application/json"
    body: dict[str, Any] = json.loads(contents.text)  # type: ignore[union-attr]
    return body


async def test_today_lists_open_tasks_by_section_and_never_a_done_one(client: Client) -> None:
    listed = [str(r.uri) for r in (await client.list_resources()).resources]
    assert TODAY_URI in listed
    body = await read_today(client)
    assert body["today"] == date.today().isoformat()
    shown = {s["title"]: [t["description"] for t in s["tasks"]] for s in body["sections"]}
    assert shown == {
        "Overdue": ["late report"],
        "Due today": ["call the bank"],
        "Scheduled today": ["water plants"],
        "In progress": ["half way"],
    }
    overdue = body["sections"][0]
    assert overdue["tasks"][0]["path"] == "Work.md" and overdue["tasks"][0]["line"] == 1
    assert overdue["total"] == 1 and overdue["more"] is None


async def test_a_long_section_is_cut_to_the_bound_and_says_how_to_get_the_rest(
    served: Served, client: Client
) -> None:
    many = [task("Other.md", n, "逾期的任务 " * 120, due=day(-1)) for n in range(1, 401)]
    with served.app.db.begin() as conn:
        conn.execute(insert(Task), many)
    contents = (await client.read_resource(TODAY_URI)).contents[0]
    assert estimate_tokens(contents.text) < ANSWER_TOKEN_BOUND  # type: ignore[union-attr]
    overdue = json.loads(contents.text)["sections"][0]  # type: ignore[union-attr]
    assert overdue["total"] == 401
    shown = len(overdue["tasks"])
    assert 0 < shown < 401
    assert "query_tasks" in overdue["more"] and f"offset {shown}" in overdue["more"]
    assert json.dumps(overdue["query"]) in overdue["more"]


def updates_heard() -> tuple[list[str], anyio.Event, MessageHandlerFnT]:
    """The URIs a client is told were updated, an event set at the first, and the client's
    message handler that records them."""
    heard: list[str] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            heard.append(str(root.params.uri))
            changed.set()

    return heard, changed, on_message


async def test_a_subscriber_hears_when_a_batch_changes_todays_tasks(served: Served) -> None:
    heard, changed, on_message = updates_heard()

    async with Client(served.server, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(TODAY_URI)
        # A note without tasks changes: today's tasks read the same, nothing is sent.
        (served.root / "Other.md").write_text("y\n", encoding="utf-8")
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["Other.md"])
        await anyio.sleep(1.0)
        assert heard == []
        # The overdue task's line is ticked off (the row as the indexer writes it).
        (served.root / "Work.md").write_text("- [x] a\n", encoding="utf-8")
        with served.app.db.begin() as conn:
            conn.execute(
                update(Task)
                .where(Task.note_path == "Work.md", Task.line == 1)
                .values(status_char="x", status_type="DONE", done=day(0))
            )
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["Work.md"])
        with anyio.fail_after(5):
            await changed.wait()
        assert heard == [TODAY_URI]
        body = await read_today(client)
        assert body["sections"][0]["tasks"] == []


async def test_a_subscriber_hears_at_midnight_that_today_moved_on(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from weaver.mcp_server import task_resources

    class Tomorrow(date):
        @classmethod
        def today(cls) -> Tomorrow:
            return cls.fromordinal(date.today().toordinal() + 1)

    heard, changed, on_message = updates_heard()

    monkeypatch.setattr(task_resources, "seconds_until_tomorrow", lambda: 0.5)
    async with Client(served.server, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(TODAY_URI)
        await anyio.sleep(1.2)  # midnights pass, the date has not changed: nothing is sent
        assert heard == []
        monkeypatch.setattr(task_resources, "date", Tomorrow)  # no note changes, the day does
        with anyio.fail_after(5):
            await changed.wait()
        await anyio.sleep(1.2)  # told once, not at every later check
        assert heard == [TODAY_URI]
        body = await read_today(client)
        assert body["today"] == day(1)
        overdue = body["sections"][0]["tasks"]
        assert [t["description"] for t in overdue] == ["late report", "call the bank"]
