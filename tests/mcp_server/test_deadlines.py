"""A tool call never holds the server past its deadline: it answers a timeout error, and its
cache query is stopped by SQLite rather than left running in its thread."""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from tests.helpers import wait_for
from weaver.mcp_server.envelope import answer
from weaver.runtime.app import App
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.anyio

FOREVER = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def envelope(result: Any) -> dict[str, Any]:
    return dict(json.loads(result.content[0].text))


async def test_a_stuck_call_answers_a_timeout_while_its_thread_runs(app: App) -> None:
    state = ServerState(app, watch=False)
    release = threading.Event()
    finished = threading.Event()

    def stuck() -> dict[str, Any]:
        release.wait(30)
        finished.set()
        return {}

    result = await answer(state, stuck, wait_ready=False, deadline=0.2)
    assert result.is_error and "Timed out" in envelope(result)["error"]
    assert not finished.is_set()  # the answer did not wait for the thread
    release.set()


@pytest.mark.both_backends  # SQLite's progress handler; PostgreSQL's statement_timeout
async def test_a_runaway_query_is_interrupted(app: App) -> None:
    state = ServerState(app, watch=False)
    outcome: list[str] = []

    def runaway() -> dict[str, Any]:
        try:
            with app.db.connect() as conn:
                conn.execute(text(FOREVER)).scalar()
        except Exception as exc:
            outcome.append(type(exc).__name__)
            raise
        return {}

    result = await answer(state, runaway, wait_ready=False, deadline=0.3)
    assert "Timed out" in envelope(result)["error"]
    # The thread ends by itself: SQLite stopped the query at the deadline.
    await anyio.to_thread.run_sync(lambda: wait_for(lambda: outcome, timeout=10))
    assert outcome in (["OperationalError"], ["CallTimeoutError"])


@pytest.mark.parametrize(
    ("cause", "shown"),
    [
        ("database disk image is malformed", "the cache is corrupt"),
        ("database or disk is full", "Database error: database or disk is full"),
        ("no such column: x", "Database error: OperationalError"),
    ],
)
async def test_a_database_error_says_what_a_person_can_act_on(
    app: App, cause: str, shown: str
) -> None:
    from sqlalchemy.exc import OperationalError

    def failing() -> dict[str, Any]:
        raise OperationalError("SELECT", {}, Exception(cause))

    result = await answer(ServerState(app, watch=False), failing, wait_ready=False)
    assert shown in envelope(result)["error"]


def test_each_postgres_transaction_gets_the_deadline_once(postgres_url: str) -> None:
    """The time left is set once per transaction (not before each statement: a round trip
    each), and again in the next transaction, which does not inherit it."""
    from sqlalchemy import event

    from weaver.cache import db
    from weaver.cache.db import open_engine, query_deadline

    engine = open_engine(postgres_url)
    timeouts: set[Any] = set()  # when the time left was set, as the connection keeps it

    def seen(conn: Any, *_args: Any) -> None:
        timeouts.add(conn.info.get(db.TIMEOUT_SET_KEY))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        with query_deadline(30):
            for _ in range(2):
                with engine.connect() as conn:
                    shown = [
                        conn.execute(text("SHOW statement_timeout")).scalar() for _ in range(3)
                    ]
                    conn.rollback()
                assert all(value and value.endswith("s") for value in shown), shown
        assert len(timeouts - {None}) == 2
        with engine.connect() as conn:  # no deadline: the server's own setting
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "0"
    finally:
        engine.dispose()
