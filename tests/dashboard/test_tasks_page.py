"""The dashboard's tasks page over real HTTP: open tasks grouped by due day with overdue ones
first and undated ones last, never a done one, each linking to its note; the query box filters
in the Tasks plugin's language and a line it cannot read is shown, not ignored; task text is
escaped. Task rows are inserted directly, as the indexer will write them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from urllib.parse import quote

import pytest
from sqlalchemy import delete, insert

from tests.cache.test_task_queries import task
from tests.dashboard.server import Served, serve_dashboard
from tests.helpers import write_files
from weaver.cache.models import Task


def day(n: int) -> str:
    return (date.today() + timedelta(days=n)).isoformat()


TASKS = [
    task("Projects/Plan.md", 1, "later report", due=day(9)),
    task("Projects/Plan.md", 2, "late invoice", due=day(-4), tags=["#money"]),
    task("Home.md", 1, "call the bank", due=day(0)),
    task("Home.md", 2, "someday idea"),
    task("Home.md", 3, "paid already", status_char="x", status_type="DONE", due=day(-1)),
    task("Home.md", 4, "<script>window.__pwned = 1</script>", due=day(-2)),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    files: dict[str, str | bytes] = {"Projects/Plan.md": "- [ ] a\n", "Home.md": "- [ ] b\n"}
    root = write_files(tmp_path_factory.mktemp("tasks") / "vault", files)
    with serve_dashboard(root) as server:
        with server.app.db.begin() as conn:
            conn.execute(delete(Task))
            conn.execute(insert(Task), TASKS)
        yield server


def headings(body: str) -> list[str]:
    return [re.sub(r"\s*<span.*", "", h) for h in re.findall(r"<h2>(.*?)</h2>", body)]


def test_open_tasks_by_due_day_overdue_first(served: Served) -> None:
    reply = served.get("/tasks")
    assert reply.status == 200
    assert '<a href="/tasks" class="current">Tasks</a>' in reply.body
    names = headings(reply.body)
    assert names[0] == "Overdue" and names[-1] == "No due date"
    assert names[1].startswith("Today, ") and names[1].endswith(day(0))
    assert names[2].endswith(day(9))
    body = reply.body
    assert body.index("late invoice") < body.index("call the bank") < body.index("later report")
    assert body.index("later report") < body.index("someday idea")
    assert "paid already" not in body
    assert "5 open tasks" in body
    assert f'href="/notes/{quote("Projects/Plan.md")}"' in body


def test_a_task_text_is_escaped(served: Served) -> None:
    body = served.get("/tasks").body
    assert "<script>window" not in body
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in body


def test_the_query_box_filters_in_the_plugins_language(served: Served) -> None:
    reply = served.get("/tasks?q=" + quote("path includes Projects\ndue before today"))
    assert reply.status == 200
    assert "late invoice" in reply.body
    assert "later report" not in reply.body and "call the bank" not in reply.body
    assert "path includes Projects\ndue before today</textarea>" in reply.body


def test_a_query_line_weaver_cannot_read_is_shown(served: Served) -> None:
    reply = served.get("/tasks?q=" + quote("not done\ndue before the heat death"))
    assert reply.status == 400
    error = re.search(r'<p class="error" id="tasks-error">(.*?)</p>', reply.body)
    assert error is not None and "line 2" in error.group(1)
    assert "call the bank" not in reply.body
