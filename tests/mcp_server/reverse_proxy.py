"""A reverse proxy in front of a loopback Weaver, as docs/deployment.md sets Caddy or nginx up
(minus TLS): every request passed on with `Host` set to Weaver's address, everything else
(`Origin`, cookies, the body) unchanged, and the answers streamed back as they come, so
server-sent events pass. It runs in a thread of the test, on its own loopback port."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

# Hop-by-hop headers (RFC 9110 7.6.1) and those the proxy's own HTTP stack sets.
NOT_FORWARDED = {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "te"}
METHODS = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]


def proxy_app(upstream: str) -> Starlette:
    upstream_host = upstream.removeprefix("http://")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx2.AsyncClient(base_url=upstream, timeout=None) as client:
            app.state.client = client
            yield

    async def forward(request: Request) -> StreamingResponse:
        client: httpx2.AsyncClient = request.app.state.client
        headers = [
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in NOT_FORWARDED
        ]
        headers.append(("host", upstream_host))  # Caddy's `header_up Host {upstream_hostport}`
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        body = await request.body()
        sent = client.build_request(request.method, target, headers=headers, content=body)
        answer = await client.send(sent, stream=True)
        kept = [
            (name, value)
            for name, value in answer.headers.multi_items()
            if name.lower() not in NOT_FORWARDED
        ]
        response = StreamingResponse(
            passed_on(answer),
            status_code=answer.status_code,
            background=BackgroundTask(answer.aclose),
        )
        response.raw_headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in kept]
        return response

    return Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)], lifespan=lifespan)


async def passed_on(answer: httpx2.Response) -> AsyncIterator[bytes]:
    """The upstream bytes as they arrive (an event stream is never complete)."""
    async for chunk in answer.aiter_raw():
        yield chunk


@contextmanager
def reverse_proxy(upstream: str, port: int) -> Iterator[str]:
    """The proxy on `port`, its base URL, in front of `upstream` (`http://127.0.0.1:PORT`)."""
    config = uvicorn.Config(
        proxy_app(upstream), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            threading.Event().wait(0.05)
        assert server.started, "the proxy did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
