"""Streamable HTTP sessions over a real socket: one left idle past `http_session_idle_s` is
closed and freed (the SDK's table, Weaver's own subscriptions, a 404 for its id), one in use
is kept."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import anyio
import pytest
from mcp.server.connection import Connection

from tests.helpers import write_files
from tests.mcp_server.served_http import rpc, served

pytestmark = pytest.mark.anyio

IDLE_S = 1.0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def live_sessions() -> int:
    gc.collect()
    return sum(isinstance(item, Connection) for item in gc.get_objects())


async def test_an_idle_session_is_closed_and_a_used_one_kept(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", {"a.md": "# A\n"})
    before = live_sessions()
    async with served(vault, IDLE_S) as server:
        abandoned, used = await server.open_session(), await server.open_session()
        assert server.open_sessions() == {abandoned, used}
        for _ in range(int(3 * IDLE_S / 0.25)):  # three idle periods, `used` busy in each
            await anyio.sleep(0.25)
            assert (await server.post(used, rpc("ping", {}))).status_code == 200
        assert server.open_sessions() == {used}
        gone = await server.post(abandoned, rpc("tools/list", {}))
        assert gone.status_code == 404
        assert gone.json()["error"]["message"] == "Session not found"
        assert (await server.post(used, rpc("tools/list", {}))).status_code == 200
        # Weaver kept the abandoned session for notifications: it is freed all the same.
        assert live_sessions() == before + 1


@pytest.mark.slow
async def test_abandoned_sessions_give_their_memory_back(tmp_path: Path) -> None:
    """Rounds of sessions opened and abandoned: once they expired, the memory Python holds
    is back where it was after the first round (it grew ~35 KB a session when they were
    never freed)."""
    vault = write_files(tmp_path / "vault", {"a.md": "# A\n"})
    before = live_sessions()
    async with served(vault, idle_s=0.5) as server:

        async def one_round(count: int = 40) -> None:
            for _ in range(count):
                await server.open_session()
            with anyio.fail_after(10):
                while server.open_sessions():
                    await anyio.sleep(0.1)

        await one_round()  # the first round warms the caches that stay
        tracemalloc.start()
        try:
            gc.collect()
            baseline = tracemalloc.get_traced_memory()[0]
            for _ in range(3):
                await one_round()
            assert live_sessions() == before
            grown = tracemalloc.get_traced_memory()[0] - baseline
        finally:
            tracemalloc.stop()
    assert grown < 1_000_000, f"{grown:,} bytes kept after 120 abandoned sessions"
