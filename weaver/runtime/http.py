"""Serving HTTP on a bound socket: which addresses are this machine's, the bind, and a uvicorn
server that leaves signals to the process hosting it. MCP and the dashboard are apps served here.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.utils import formatdate

import anyio
import structlog
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from weaver.config import Settings
from weaver.errors import ConfigError, DaemonError

log = structlog.get_logger(__name__)

MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_settings(settings: Settings) -> None:
    """Refuse to expose the vault beyond this machine without a token."""
    if not is_loopback(settings.http_host) and not settings.http_token:
        raise ConfigError(
            f"refusing to serve HTTP on {settings.http_host} without a bearer token: set "
            "WEAVER_HTTP_TOKEN (or http_token in the config), or bind to 127.0.0.1"
        )
    if settings.oauth and not settings.http_token:
        # The consent page asks for the owner's secret: without one, anyone reaching the page
        # could grant themselves the vault.
        raise ConfigError(
            "oauth needs http_token: the consent page asks for it before a client is let in "
            "(set WEAVER_HTTP_TOKEN, or http_token in the config)"
        )
    if settings.oauth and not settings.public_url and _unspecified(settings.http_host):
        raise ConfigError(
            f"oauth on {settings.http_host} needs public_url: the address clients reach this "
            "server at, which its tokens are bound to (e.g. https://vault.example.com)"
        )
    if settings.oauth and settings.http_processes > 1:
        raise ConfigError(
            "oauth is served by one process: set http_processes = 1 (the reader processes "
            "cannot record the grants they would issue)"
        )


def _unspecified(host: str) -> bool:
    """0.0.0.0 or ::, which name no address a client could use."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def loopback_names(host: str) -> set[str] | None:
    """The Host names a loopback server answers to (None for any other bind)."""
    if not is_loopback(host):
        return None
    names = {"127.0.0.1", "localhost", "[::1]"}
    bare = host.strip("[]")
    names.add(f"[{bare}]" if ":" in bare else bare)
    return names


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind before serving, so a port in use is a clear error rather than uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY on accepted connections only
    # when the socket says it is TCP. Without it every answer (headers, then the body as
    # another small write) waited on Nagle's algorithm for the client's delayed ACK, a fixed
    # delay on every call whatever the tool. NODELAY on the listener too: Linux hands it
    # down to the connections it accepts.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise DaemonError(
            f"cannot serve HTTP on {host}:{port}: {exc.strerror or exc} "
            "(is another Weaver running? set http_port or WEAVER_HTTP_PORT)"
        ) from exc
    sock.set_inheritable(True)
    return sock


class _HostedServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its host and sleeps while no request comes.

    uvicorn's own handlers re-raise the signal after shutting down, which would end the process
    with the signal's status before the host has stopped its other parts. Its main loop wakes
    ten times a second, all day, to refresh the Date header and look at `should_exit`: here
    it sleeps until the host calls `exit`, and each request refreshes the Date header when the
    second has changed (`dated`), so an idle server does not wake at all.
    """

    def __init__(self, app: ASGIApp) -> None:
        config = uvicorn.Config(
            self._dated(app),
            # Our logging goes to stderr; uvicorn's default would print access logs to stdout.
            log_config=None,
            access_log=False,
            lifespan="on",
            # Requests under way get this long after a stop signal (the watchdog of
            # `host.signals` ends the process a little later whatever is still running).
            timeout_graceful_shutdown=3,
        )
        super().__init__(config)
        self._exit = anyio.Event()
        self._date_second = -1

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        await self.on_tick(0)  # the first Date header, as uvicorn sets it
        await self._exit.wait()

    def exit(self) -> None:
        """Stop taking requests, finish those under way (`uvicorn.Server.shutdown`)."""
        self.should_exit = True
        self._exit.set()

    def refresh_date(self) -> None:
        """Put the current time in the Date header every response carries, once a second."""
        now = int(time.time())
        if now == self._date_second:
            return
        self._date_second = now
        date = [(b"date", formatdate(now, usegmt=True).encode())] if self.config.date_header else []
        self.server_state.default_headers = date + self.config.encoded_headers

    def _dated(self, app: ASGIApp) -> ASGIApp:
        """`app`, refreshing the Date header before each request is handled."""

        async def dated_app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "lifespan":
                self.refresh_date()
            await app(scope, receive, send)

        return dated_app


async def serve_http(
    app: ASGIApp,
    sock: socket.socket,
    stop: anyio.Event,
    on_stop: Callable[[], None] | None = None,
    announce: bool = True,
) -> None:
    """Serve on a bound socket until `stop` is set, then finish the requests under way.

    `on_stop` is called first, to end long-lived responses (the dashboard's event streams)
    that uvicorn would otherwise wait for (and to stop the reader processes at once)."""
    host, port = sock.getsockname()[:2]
    server = _HostedServer(app)
    if announce:
        log.info("serving MCP over HTTP", url=f"http://{host}:{port}{MCP_PATH}")
    async with anyio.create_task_group() as tg:

        async def exit_when_stopped() -> None:
            await stop.wait()
            if on_stop is not None:
                on_stop()
            server.exit()

        tg.start_soon(exit_when_stopped)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
