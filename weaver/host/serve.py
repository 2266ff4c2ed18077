"""`weaver serve`: MCP over stdio, or over Streamable HTTP at `/mcp`.

HTTP binds to loopback by default, with DNS-rebinding protection (Host and Origin must name the
loopback address). Binding anywhere else requires a bearer token (`http_token` in the config, or
`WEAVER_HTTP_TOKEN`): without one the server refuses to start. When a token is set it is required
on every address. `GET /health` answers without auth, with the status only.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Coroutine, Mapping
from contextlib import ExitStack
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread
import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.types import ASGIApp

from weaver import gc_freeze
from weaver.config import Settings
from weaver.engine.engine import WorkflowEngine
from weaver.errors import ConfigError
from weaver.host.http_readers import HttpChildren, supervise
from weaver.host.signals import exit_now, run_until_signalled, serve_stdio_until_stopped
from weaver.host.tool_manifest import keep_manifest
from weaver.mcp_server.guard import RequestGuard
from weaver.mcp_server.server import build_server
from weaver.mcp_server.system_tools import health_data
from weaver.runtime.app import open_app, reader_queues
from weaver.runtime.engines import hosted_engine, reading_engine
from weaver.runtime.gil import QuickSwitch
from weaver.runtime.health_report import STATUS_SEVERITY, compute_health
from weaver.runtime.http import (
    MCP_PATH,
    bind_socket,
    check_http_settings,
    loopback_names,
    serve_http,
)
from weaver.runtime.locks import daemon_lock
from weaver.runtime.state import ServerState

OAUTH_PAGES_PATH = "/oauth"

log = structlog.get_logger(__name__)

Transport = Literal["stdio", "http"]
HEALTH_PATH = "/health"


def vault_statuses(
    states: Mapping[str, ServerState], default: ServerState, default_status: str
) -> dict[str, str]:
    """Each vault's health status, by name: a monitor of a server of several vaults sees which
    one is failing (the status only: `/health` answers without auth). The default vault's is
    `default_status`, already computed: not checked twice."""
    return {
        name: default_status if each is default else compute_health(each).status
        for name, each in states.items()
    }


def transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for loopback binds: only loopback Host/Origin headers pass
    (checked exactly by `guard.RequestGuard` first: the SDK's patterns match by prefix)."""
    names = loopback_names(host)
    if names is None:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(f"{name}:*" for name in names),
        allowed_origins=sorted(f"http://{name}:*" for name in names),
    )


def http_app(
    server: MCPServer[ServerState],
    state: ServerState,
    host: str,
    site: ASGIApp | None = None,
    stateless: bool = False,
) -> Starlette:
    """The Starlette app: MCP at `/mcp` (behind the token when one is set), `/health` open,
    with `oauth` the authorization server's endpoints and its pages at `/oauth`
    (`dashboard.oauth_pages`), and `site` (the daemon's dashboard) at `/` for every other path.

    `stateless` when several processes share the port (`host.http_readers`): a 2025-11-25 session
    lives in the process that created it, and the next request of the session may reach
    another, so none is kept (the 2026-07-28 protocol keeps none anyway).

    A kept session that has had no request in flight (none being answered, no open GET
    stream) for `http_session_idle_s` is closed and forgotten: the SDK's idle timeout, which
    never closes a session under a request; its id then answers 404, and the client opens a
    new session, as the spec prescribes."""

    async def health(_request: Request) -> Response:
        report = await anyio.to_thread.run_sync(compute_health, state)
        body: dict[str, object] = {
            "status": report.status,
            "components": health_data(report).components.to_wire(),
            "uptime": report.uptime,
            "version": report.version,
            # Which of the processes sharing the port answered (`host.http_readers`).
            "process": {"pid": os.getpid(), "role": report.role},
        }
        routing = getattr(server, "routing", None)
        if routing is not None:  # several vaults: each one's status, the worst at the top
            statuses = await anyio.to_thread.run_sync(
                vault_statuses, routing.states, state, report.status
            )
            body["vaults"] = statuses
            body["status"] = max(statuses.values(), key=STATUS_SEVERITY.index)
        return JSONResponse(body, status_code=503 if body["status"] == "unhealthy" else 200)

    server.custom_route(HEALTH_PATH, methods=["GET"], include_in_schema=False)(health)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=transport_security(host),
        stateless_http=stateless,
        session_idle_timeout=state.app.settings.http_session_idle_s,
    )
    app.add_middleware(RequestGuard, names=loopback_names(host), path=MCP_PATH)
    settings = state.app.settings
    if settings.oauth and settings.http_token:
        # The dashboard's pages (Jinja, markdown): imported only by a server that offers them.
        from weaver.dashboard.oauth_pages import OAuthPages
        from weaver.runtime.oauth_server import OwnerAuthorizationServer

        provider = OwnerAuthorizationServer(state.app.db, settings)
        pages = OAuthPages(provider, settings.http_token, host, settings.public_url)
        app.router.routes.append(Mount(OAUTH_PAGES_PATH, app=pages.asgi()))
    if site is not None:
        app.router.routes.append(Mount("", app=site))  # last: /mcp and /health match first
    return app


async def serve_with_readers(
    app: Starlette,
    sock: socket.socket,
    children: HttpChildren | None,
    state: ServerState,
    stop: anyio.Event,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """`serve_http`, with the reader processes (`host.http_readers`) when there are any: they
    start once this process's first index is done, are told to stop as soon as it is, and
    are waited for (or killed) before it returns."""
    if children is None:
        await serve_http(app, sock, stop, on_stop)
        return

    def stop_all() -> None:
        children.terminate()
        if on_stop is not None:
            on_stop()

    children.listen()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervise, children, lambda: state.ready)
            await serve_http(app, sock, stop, stop_all)
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(children.wait)


def reader_children(
    settings: Settings,
    sock: socket.socket | None,
    files: bool,
    dashboard: bool = False,
    queue: bool = False,
) -> HttpChildren | None:
    """The reader processes `http_processes` asks for beside this one (None for just this)."""
    if sock is None or settings.http_processes <= 1:
        return None
    count = settings.http_processes - 1
    return HttpChildren(settings, sock, count, files, dashboard, queue=queue)


def run_serve(
    settings: Settings, transport: Transport = "stdio", watch: bool = True, files: bool = True
) -> None:
    """Serve until the client hangs up (stdio), or SIGINT / SIGTERM.

    The workflow engine runs beside the tools (without schedules, which are the daemon's), so
    `trigger_workflow` works and file events seen by this process's watcher start workflows.
    Without `files` (`--no-vault`), this is a reader: the cache alone, read-only, no writes
    offered, no workflow run here; on PostgreSQL it queues runs for the workers
    (`runtime.app.reader_queues`).
    """
    queue = not files and reader_queues(settings)
    if settings.oauth and not files and transport == "http":
        raise ConfigError(
            "oauth is served by a process with the vault's files (weaver daemon, or weaver "
            "serve without --no-vault): a reader cannot record the grants it would issue"
        )
    if not files:
        settings = settings.model_copy(update={"read_only": True})
    if transport == "http":
        check_vaults_over_http(settings)
    sock = None
    if transport == "http":
        check_http_settings(settings)
        sock = bind_socket(settings.http_host, settings.http_port)
    with ExitStack() as cleanup:
        if sock is not None:
            cleanup.callback(sock.close)
        state, engine = served_state(cleanup, settings, watch, files, queue)
        vaults = open_vaults(settings, state, cleanup, watch, files, queue)
        children = reader_children(settings, sock, files, queue=queue)
        server = build_server(state, sessions=children is None, vaults=vaults)
        gc_freeze.keep_pauses_short_later()
        if sock is not None:
            site = http_app(server, state, settings.http_host, stateless=children is not None)
            anyio.run(
                run_until_signalled,
                partial(serve_with_readers, site, sock, children, state),
                engine.record_interrupted,
            )
        else:
            log.info("serving MCP over stdio", vault=str(settings.vault), reader=not files)
            # The next start answers from what this one serves (`host.quick_start`).
            manifest = partial(keep_manifest, server, settings) if files else None
            anyio.run(serve_stdio, server, partial(exit_now, cleanup), manifest)


def check_vaults_over_http(settings: Settings) -> None:
    """Several vaults are served by one process: its reader processes would serve one."""
    if settings.several_vaults and settings.http_processes > 1:
        raise ConfigError(
            "several vaults are served by one HTTP process: set http_processes = 1, or serve "
            "each vault by its own weaver serve"
        )


def open_vaults(
    settings: Settings,
    state: ServerState,
    cleanup: ExitStack,
    watch: bool,
    files: bool,
    queue: bool,
    daemon: bool = False,
) -> dict[str, ServerState] | None:
    """Each vault's state, by name (`state` is the default's), for a server of several vaults;
    None for one. Every other vault has its own cache and workflow engine, closed by `cleanup`;
    for the `daemon`, its daemon lock too, its cache checked as it opens, its schedules run."""
    if not settings.several_vaults:
        return None
    states: dict[str, ServerState] = {}
    for name in settings.vaults:
        if name == settings.vault_name:
            states[name] = state
            continue
        own = settings.for_vault(name)
        if daemon:
            cleanup.enter_context(daemon_lock(own.vault))
        # One switch for the process: the interval is the process's, whichever vault serves.
        states[name], _engine = served_state(
            cleanup, own, watch, files, queue, daemon=daemon, quick_switch=state.quick_switch
        )
    return states


def served_state(
    cleanup: ExitStack,
    settings: Settings,
    watch: bool,
    files: bool,
    queue: bool,
    *,
    daemon: bool = False,
    quick_switch: QuickSwitch | None = None,
) -> tuple[ServerState, WorkflowEngine]:
    """The cache opened and the workflow engine started (both closed by `cleanup`): what a
    server's tools are bound to, and the engine. For the `daemon`: the cache checked as it
    opens, the schedules run."""
    app = open_app(settings, check=daemon, files=files, queue=queue, lasting=True)
    cleanup.callback(app.close)
    if files:
        engine = cleanup.enter_context(hosted_engine(app, schedules=daemon))
    else:
        engine = reading_engine(app)
        cleanup.callback(engine.stop)
    state = ServerState(
        app, watch=watch, engine=engine, may_write=files, quick_switch=quick_switch or QuickSwitch()
    )
    return state, engine


async def serve_stdio(
    server: MCPServer[ServerState],
    stop: Callable[[], None],
    beside: Callable[[], Coroutine[Any, Any, None]] | None = None,
) -> None:
    """Serve over stdio until the client closes stdin (the end of a session), or a signal
    calls `stop`; `beside` runs meanwhile (the manifest's upkeep)."""
    await serve_stdio_until_stopped(server.run_stdio_async, stop, beside)
