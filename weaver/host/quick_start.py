"""`weaver serve` over stdio answering `initialize` and `tools/list` from the tool manifest
(`host.tool_manifest`) while the real server is built behind them (issue 39).

A desktop client starts a server per conversation and lists its tools at once; the tools, the
cache and the workflow engine are needed only by the first call, seconds later. So the session
is served by a `FrontServer`: the SDK's low-level server with the real one's identity, the same
handlers (hence the same capabilities) and the same middleware, answering `tools/list` from
the manifest. The real server (`host.serve.served_state` and `build_server`) is built in a
worker thread once the tools are listed (or after `BUILD_AFTER_S`, or at the first request
that needs it), its lifespan entered; from then on every request goes to its handlers, and a
request arriving before waits for it. A ping is answered meanwhile.

Without a manifest under the current key `serve_from_manifest` returns False and `run_serve`
serves as ever, writing one for the next start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack, asynccontextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import structlog
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp_types import ListToolsResult, Tool
from pydantic import BaseModel

from weaver.config import Settings
from weaver.host.signals import exit_now, serve_stdio_until_stopped
from weaver.host.tool_manifest import (
    Manifest,
    keep_manifest,
    manifest_key,
    manifest_path,
    params_model,
    read_manifest,
)

log = structlog.get_logger(__name__)

# How long the real server waits for a client that initializes but lists nothing.
BUILD_AFTER_S = 1.0
# Answered by the front itself, exactly as the real server would (`Server.__init__`).
OWN_METHODS = frozenset({"ping", "server/discover"})

Build = Callable[[], MCPServer[Any]]
OnBuilt = Callable[[MCPServer[Any]], Awaitable[None]]


class FrontServer(Server[Any]):
    """The session's server until, and after, the real one is built: it answers `tools/list`
    from `manifest` until then, and hands every other request to the real server's handler."""

    def __init__(self, manifest: Manifest, build: Build, on_built: OnBuilt) -> None:
        super().__init__(
            manifest.name,
            version=manifest.version,
            title=manifest.title,
            instructions=manifest.instructions,
            lifespan=_front_lifespan,
        )
        # MCPServer's own middleware after the SDK's OpenTelemetry one (`MCPServer.__init__`):
        # the real server's is never run, this one serves both.
        security = RequestStateSecurity.ephemeral()
        self.middleware.append(RequestStateBoundary(security, default_audience=manifest.name))
        self.extensions.update(manifest.extensions)
        for method, type_name in manifest.requests.items():
            if method not in OWN_METHODS:
                handler = (
                    self._list_tools if method == "tools/list" else partial(self._pass, method)
                )
                self.add_request_handler(method, params_model(type_name), handler)
        for method, type_name in manifest.notifications.items():
            handler = partial(self._pass_notification, method)
            self.add_notification_handler(method, params_model(type_name), handler)
        self.manifest = manifest
        self._tools = [Tool.model_validate(each) for each in manifest.tools]
        self._build, self._on_built = build, on_built
        self._wanted = anyio.Event()  # the real server is needed: build it now
        self._ready = anyio.Event()
        self._real: Server[Any] | None = None
        self._real_context: Any = None
        self._tasks: TaskGroup | None = None
        self.built: MCPServer[Any] | None = None

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The real server's, as the manifest keeps them (Weaver advertises the resource list
        changes it sends: `resources.advertise_list_changed`)."""
        return InitializationOptions.model_validate(self.manifest.initialization)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: BaseModel
    ) -> ListToolsResult | Any:
        if self._ready.is_set():
            return await self._pass("tools/list", ctx, params)
        self._wanted.set()  # listed: the client's first call comes next
        return ListToolsResult(tools=self._tools)

    async def _pass(self, method: str, ctx: ServerRequestContext[Any], params: BaseModel) -> Any:
        real = await self._real_server()
        entry = real.get_request_handler(method)
        assert entry is not None  # the manifest names the real server's handlers
        return await entry.handler(replace(ctx, lifespan_context=self._real_context), params)

    async def _pass_notification(
        self, method: str, ctx: ServerRequestContext[Any], params: BaseModel
    ) -> None:
        # Notifications are handled in order, by the reader: one must not hold the rest up
        # while the real server is built.
        async def later() -> None:
            real = await self._real_server()
            entry = real.get_notification_handler(method)
            if entry is not None:
                await entry.handler(replace(ctx, lifespan_context=self._real_context), params)

        assert self._tasks is not None
        self._tasks.start_soon(later)

    async def _real_server(self) -> Server[Any]:
        self._wanted.set()
        await self._ready.wait()
        assert self._real is not None
        return self._real

    async def run_real(self) -> None:
        """Build the real server when it is wanted, enter its lifespan, and serve through it
        until cancelled; then check the manifest against it."""
        with anyio.move_on_after(BUILD_AFTER_S):
            await self._wanted.wait()
        try:
            server = await anyio.to_thread.run_sync(self._build)
        except Exception:
            log.exception("the server could not be built")
            raise
        lowlevel = server._lowlevel_server  # its handlers and lifespan live there
        async with lowlevel.lifespan(lowlevel) as context:
            self._real, self._real_context, self.built = lowlevel, context, server
            self._ready.set()
            log.info("server built behind the manifest's answers")
            await self._on_built(server)
            await anyio.sleep_forever()


@asynccontextmanager
async def _front_lifespan(front: Server[Any]) -> AsyncIterator[None]:
    assert isinstance(front, FrontServer)
    async with anyio.create_task_group() as tg:
        front._tasks = tg
        tg.start_soon(front.run_real)
        try:
            yield None
        finally:
            tg.cancel_scope.cancel()


def serve_from_manifest(settings: Settings, watch: bool) -> bool:
    """Serve over stdio from the manifest, building the real server behind it; False (having
    done nothing) when there is no manifest for these settings and this code."""
    path = manifest_path(settings)
    manifest = None if path is None else read_manifest(path, manifest_key(settings))
    if manifest is None:
        return False
    with ExitStack() as cleanup:
        build = partial(build_real_server, settings, watch, cleanup)
        # Once built, the manifest is checked against what the server really answers.
        checked = partial(keep_manifest, settings=settings, served=manifest)
        try:
            front = FrontServer(manifest, build, checked)
        except (ValueError, TypeError, ImportError, AttributeError) as exc:
            # A manifest edited by hand, or a tool the SDK's models now refuse.
            log.warning("the tool manifest is unusable", path=str(path), error=str(exc))
            return False
        log.info("serving MCP over stdio", vault=str(settings.vault), reader=False, manifest=True)
        anyio.run(serve_front, front, partial(exit_now, cleanup))
    return True


def build_real_server(settings: Settings, watch: bool, cleanup: ExitStack) -> MCPServer[Any]:
    """What `run_serve` builds for a stdio server with the vault's files (in a worker thread:
    these imports are most of a start's time)."""
    from weaver import gc_freeze
    from weaver.host.serve import open_vaults, served_state
    from weaver.mcp_server.server import build_server

    state, _engine = served_state(cleanup, settings, watch, files=True, queue=False)
    vaults = open_vaults(settings, state, cleanup, watch, files=True, queue=False)
    server = build_server(state, vaults=vaults)
    gc_freeze.keep_pauses_short_later()
    return server


async def serve_front(front: FrontServer, stop: Callable[[], None]) -> None:
    """`serve.serve_stdio` for the front: until stdin closes, or a signal calls `stop`."""

    async def session() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await front.run(read_stream, write_stream, front.create_initialization_options())

    await serve_stdio_until_stopped(session, stop)
