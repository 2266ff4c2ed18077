"""`weaver daemon`: the background service, everything together on one vault.

With `http_processes` above 1, reader processes share the HTTP port (`host.http_readers`). It
reconciles the cache and keeps it in step with the disk (the MCP server's lifespan, which
takes the cache's writer lock, waiting for it while a `weaver serve` writes), runs the workflow
engine's workers and the scheduler, and serves MCP over Streamable HTTP on loopback. It holds
the vault's daemon lock, so a second daemon on the same vault refuses to start instead of
fighting the first. SIGINT or SIGTERM stops it cleanly with exit code 0. The web dashboard
(`weaver.dashboard`) is served at `/` beside MCP, its URL logged on start.

On PostgreSQL the daemon is the vault's one writer, across hosts: it takes the database's
writer lock (`runtime.locks.PgWriterLock`) before anything else. A second daemon refuses, naming
the first; with `standby` it waits for the lock instead, and takes over when the holder's
session ends (stopped, killed, its host lost), catching up with the files changed meanwhile
through the usual start-up reconcile.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from contextlib import ExitStack
from functools import partial

import anyio
import structlog

from weaver import gc_freeze
from weaver.cache.dialect import is_postgres
from weaver.config import Settings
from weaver.dashboard.site import Dashboard
from weaver.errors import DaemonError
from weaver.host.serve import (
    check_vaults_over_http,
    http_app,
    open_vaults,
    reader_children,
    serve_with_readers,
)
from weaver.host.signals import run_until_signalled
from weaver.mcp_server.server import build_server
from weaver.mcp_server.vaults import vaults_lifespan
from weaver.runtime.app import open_app
from weaver.runtime.engines import hosted_engine
from weaver.runtime.gil import QuickSwitch
from weaver.runtime.http import bind_socket, check_http_settings
from weaver.runtime.lifespan import make_lifespan
from weaver.runtime.locks import PgWriterLock, daemon_lock
from weaver.runtime.state import ServerState

log = structlog.get_logger(__name__)


# How often a standby tries the writer lock.
STANDBY_RETRY_SECONDS = 1.0


def run_daemon(settings: Settings, http: bool = True, standby: bool = False) -> None:
    """Run until SIGINT or SIGTERM. `http=False` leaves out the MCP server, keeping the rest.
    `standby` (PostgreSQL): wait for the writer lock rather than refuse to start."""
    if settings.several_vaults and any(
        is_postgres(settings.for_vault(name).db_url) for name in settings.vaults
    ):
        raise DaemonError(
            "a daemon serves several vaults from SQLite caches only: run one daemon per vault "
            "whose cache is on PostgreSQL"
        )
    writer = take_writer_lock(settings, standby) if is_postgres(settings.db_url) else None
    try:
        _run_daemon(settings, http, writer)
    finally:
        if writer is not None:
            writer.close()


def take_writer_lock(settings: Settings, standby: bool) -> PgWriterLock:
    """The vault's writer lock on PostgreSQL; refused (naming the holder) unless `standby`."""
    lock = PgWriterLock(settings.db_url)
    if lock.try_acquire():
        return lock
    holder = lock.holder()
    if not standby:
        lock.close()
        raise DaemonError(
            f"another writer keeps this vault's cache: {holder}. One writer per vault: stop "
            "it, or start this daemon with --standby to take over when it stops"
        )
    log.info("standing by: another writer keeps this vault's cache", holder=holder)
    lock.wait(STANDBY_RETRY_SECONDS)
    log.info("the other writer is gone; this daemon takes over")
    return lock


def _run_daemon(settings: Settings, http: bool, writer: PgWriterLock | None) -> None:
    with daemon_lock(settings.vault):
        sock = None
        if http:
            check_http_settings(settings)
            check_vaults_over_http(settings)
            sock = bind_socket(settings.http_host, settings.http_port)
        app = open_app(settings, check=True, lasting=True)
        try:
            with hosted_engine(app, schedules=True) as engine, ExitStack() as others:
                state = ServerState(
                    app, engine=engine, writer_lock=writer, quick_switch=QuickSwitch()
                )
                vaults = open_vaults(settings, state, others, True, True, False, daemon=True)
                gc_freeze.keep_pauses_short()
                log.info("daemon started", vault=str(settings.vault), http=http)
                overdue = engine.record_interrupted
                if sock is None:
                    keep = partial(_keep_fresh, state, vaults)
                    anyio.run(run_until_signalled, keep, overdue)
                else:
                    children = reader_children(settings, sock, files=True, dashboard=True)
                    server = build_server(state, sessions=children is None, vaults=vaults)
                    dashboard = Dashboard(state, settings.http_host, vaults)
                    starlette_app = http_app(
                        server, state, settings.http_host, dashboard.asgi(), children is not None
                    )
                    log.info("dashboard", url=dashboard_url(settings.http_host, sock))
                    serve = partial(
                        serve_with_readers,
                        starlette_app,
                        sock,
                        children,
                        state,
                        on_stop=dashboard.close,
                    )
                    anyio.run(run_until_signalled, serve, overdue)
        finally:
            if sock is not None:
                sock.close()
            app.close()
    log.info("daemon stopped")


def dashboard_url(host: str, sock: socket.socket) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    return f"http://{shown}:{port}/"


async def _keep_fresh(
    state: ServerState, vaults: Mapping[str, ServerState] | None, stop: anyio.Event
) -> None:
    """Without HTTP, the server's lifespan alone (each vault's): reconcile, then watch until
    stopped."""
    name = state.app.settings.vault_name
    lifespan = make_lifespan(state) if vaults is None else vaults_lifespan(vaults, name)
    async with lifespan(None):
        await stop.wait()
