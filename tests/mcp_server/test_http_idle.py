"""The HTTP server sleeps while no request comes: uvicorn's main loop would wake ten times a
second all day to refresh the Date header and look whether to stop. Here it waits for the stop,
and each request puts the current time in the Date header."""

from __future__ import annotations

import time
import urllib.request
from email.utils import parsedate_to_datetime

import anyio
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from weaver.runtime.http import bind_socket, serve_http

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def date_of(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
        assert reply.read() == b"hello"
        return parsedate_to_datetime(reply.headers["Date"]).timestamp()


async def test_an_idle_server_does_not_tick_and_answers_with_a_current_date(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks: list[int] = []
    on_tick = uvicorn.Server.on_tick

    async def counted(self: uvicorn.Server, counter: int) -> bool:
        ticks.append(counter)
        return await on_tick(self, counter)

    monkeypatch.setattr(uvicorn.Server, "on_tick", counted)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    stop = anyio.Event()
    stopped_at: list[float] = []

    async def serve() -> None:
        await serve_http(hello, sock, stop, announce=False)
        stopped_at.append(time.monotonic())

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            await anyio.sleep(1.5)  # idle: uvicorn's loop would have ticked 15 times
            first = await anyio.to_thread.run_sync(date_of, port)
            await anyio.sleep(1.2)
            second = await anyio.to_thread.run_sync(date_of, port)
            asked_to_stop = time.monotonic()
            stop.set()
        assert len(ticks) <= 1
        assert abs(first - time.time()) < 5  # a current Date, not the one of the start
        assert second > first  # refreshed for a later request
        assert stopped_at[0] - asked_to_stop < 2  # the stop is heard at once
    finally:
        sock.close()
