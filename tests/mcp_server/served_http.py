"""`weaver serve --transport http`'s app served for real (uvicorn on a loopback port, in the
test's event loop), with a raw HTTP client: for what the SDK's client would not send."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.server.mcpserver import MCPServer

from weaver.config import Settings
from weaver.host.serve import http_app
from weaver.mcp_server.server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.http import bind_socket, serve_http
from weaver.runtime.state import ServerState

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = "2025-11-25"  # the protocol that keeps sessions


@dataclass
class Served:
    url: str
    server: MCPServer[ServerState]
    http: httpx2.AsyncClient

    def open_sessions(self) -> set[str]:
        return set(self.server.session_manager._server_instances)  # the SDK's table

    async def open_session(self) -> str:
        """Initialize a session, then ask for the resources and a log level (each of which
        Weaver remembers the session for, to notify it later)."""
        params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t"}}
        reply = await self.http.post(self.url, json=rpc("initialize", params), headers=HEADERS)
        assert reply.status_code == 200, reply.text
        session = reply.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.post(session, initialized)).status_code == 202
        for method, args in (("resources/list", {}), ("logging/setLevel", {"level": "info"})):
            answer = await self.post(session, rpc(method, args))
            assert answer.status_code == 200, answer.text
        return session

    async def post(self, session: str, body: dict[str, Any]) -> httpx2.Response:
        headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
        return await self.http.post(self.url, json=body, headers=headers)


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


@asynccontextmanager
async def served(vault: Path, idle_s: float = 1800.0) -> AsyncIterator[Served]:
    """`weaver serve --transport http`'s app on a loopback port, in this event loop."""
    app = open_app(Settings(vault=vault, http_session_idle_s=idle_s))
    state = ServerState(app, watch=False)
    server = build_server(state)
    site = http_app(server, state, "127.0.0.1")
    sock = bind_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    stop = anyio.Event()
    try:
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(serve_http, site, sock, stop)
            await state.wait_ready()
            await until_listening(http, url.replace("/mcp", "/health"))
            yield Served(url, server, http)
            stop.set()
    finally:
        sock.close()
        app.close()


async def until_listening(http: httpx2.AsyncClient, url: str) -> None:
    with anyio.fail_after(10):
        while True:
            try:
                await http.get(url)
                return
            except httpx2.ConnectError:  # uvicorn listens once started
                await anyio.sleep(0.02)
