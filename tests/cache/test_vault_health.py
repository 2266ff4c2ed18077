"""Vault problems the graph does not hold (parse failures), and notes and runs counted per day;
the graph's own (broken targets, orphans, shared names) are in tests/views/test_health.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Connection

from tests.helpers import indexed_app
from weaver.cache import executions, read, vault_health
from weaver.cache.executions import ExecutionRecord
from weaver.runtime.app import App

DAY = 86_400_000
FILES: dict[str, str | bytes] = {
    "Home.md": "[[Topic]] [[Missing]] [[Missing]] [[Gone]]\n",
    "a/Topic.md": "[[Home]] [[Missing]]\n",
    "a/Lonely.md": "no links at all\n",
    "b/Lonely.md": "the same name in another folder\n",
    "Broken yaml.md": "---\ntitle: [unclosed\n---\ntext\n",
    "z/Also alone.md": "only a [[Nowhere]] link and [[z/Also alone]] itself\n",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    with indexed_app(tmp_path_factory.mktemp("health") / "vault", FILES) as indexed:
        yield indexed


@pytest.fixture
def conn(app: App) -> Iterator[Connection]:
    with read.read_snapshot(app.db) as connection:
        yield connection


def test_parse_failures_carry_their_error(conn: Connection) -> None:
    page = vault_health.list_parse_failures(conn, 10, 0)
    assert [f.path for f in page.items] == ["Broken yaml.md"]
    assert "YAML" in page.items[0].error


def test_notes_modified_are_counted_by_day(conn: Connection) -> None:
    counts = vault_health.count_modified_by_day(conn, 0, DAY)
    assert sum(counts.values()) == len(FILES)


def record(k: int, status: str, created: int) -> ExecutionRecord:
    return ExecutionRecord(
        id=f"x{k}",
        workflow_id="w",
        workflow_name="W",
        trigger_kind="manual",
        trigger_detail={},
        input={},
        status=status,
        progress=0,
        message=None,
        attempt=1,
        started=created,
        finished=None,
        duration=None,
        result=None,
        error=None,
        traceback=None,
        process=None,
        created=created,
    )


def test_runs_written_in_bulk_are_counted_by_status_and_day(app: App) -> None:
    base = 100 * DAY
    rows = [
        record(1, "completed", base + 5),
        record(2, "failed", base + 10),
        record(3, "completed", base + DAY + 1),
        record(4, "running", base + DAY + 2),
        record(5, "pending", base - 1),
    ]
    with app.db.begin() as conn:
        executions.insert_executions(conn, rows)
        assert executions.count_by_status(conn, base) == {
            "completed": 2,
            "failed": 1,
            "running": 1,
        }
        assert executions.count_by_day(conn, base, DAY) == {
            (100, "completed"): 1,
            (100, "failed"): 1,
            (101, "completed"): 1,
            (101, "running"): 1,
        }
        assert [a[:2] for a in executions.list_active(conn)] == [
            ("x4", "running"),
            ("x5", "pending"),
        ]
        assert executions.newest_created(conn) == base + DAY + 2
        page, total = executions.list_executions(conn, None, 10, 0, since=base, until=base + DAY)
        assert [r.id for r in page] == ["x2", "x1"]
        assert total == 2
        conn.rollback()
