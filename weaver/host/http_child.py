"""A reader process of `host.http_readers`: `python -m weaver.host.http_child FD`.

It reads its order (settings, whether it has the vault's files, whether it serves the
dashboard) as one JSON line on stdin, then serves the inherited listening socket `FD` until
SIGTERM, or until its stdin ends: the parent is gone, and a reader never outlives its writer.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from contextlib import ExitStack
from functools import partial
from typing import Any

import anyio
import structlog

from weaver import gc_freeze
from weaver.config import Settings
from weaver.host.http_readers import inherited_socket
from weaver.host.signals import run_until_signalled
from weaver.log import configure_logging
from weaver.runtime.app import open_app
from weaver.runtime.engines import queueing_engine, reading_engine

log = structlog.get_logger(__name__)

STDIN = 0


def read_order() -> dict[str, Any]:
    """The first line of stdin, read from the file descriptor itself: `sys.stdin`'s buffer
    would hold its lock in the watching thread below, which the interpreter's shutdown then
    waits for (a fatal error at exit)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(STDIN, 1)
        if not chunk:
            raise SystemExit("weaver.host.http_child: no order on stdin (started by hand?)")
        line += chunk
    order: dict[str, Any] = json.loads(line)
    return order


def stop_with_parent() -> None:
    """Block until stdin ends (the parent closed it, or died), then stop as SIGTERM does."""
    while os.read(STDIN, 4096):
        pass
    log.info("the writer process is gone: stopping")
    # Raised in this process, not sent with os.kill: on Windows that would be TerminateProcess,
    # an end without the clean stop SIGTERM's handler makes.
    signal.raise_signal(signal.SIGTERM)


def serve_child(order: dict[str, Any], fd: int) -> None:
    # Imported here: the server's modules are what this process is for, but not its order.
    from weaver.dashboard.site import Dashboard
    from weaver.host.serve import http_app
    from weaver.mcp_server.server import build_server
    from weaver.runtime.gil import QuickSwitch
    from weaver.runtime.http import serve_http
    from weaver.runtime.state import ServerState

    settings = Settings.model_validate(order["settings"])
    files = bool(order["files"])
    sock = inherited_socket(fd)
    with ExitStack() as cleanup:
        cleanup.callback(sock.close)
        app = open_app(settings, files=files, queue=bool(order.get("queue")))
        cleanup.callback(app.close)
        if files:
            engine = cleanup.enter_context(queueing_engine(app))
        else:
            engine = reading_engine(app)
            cleanup.callback(engine.stop)
        state = ServerState(
            app, watch=False, engine=engine, may_write=False, quick_switch=QuickSwitch()
        )
        server = build_server(state, sessions=False)
        dashboard = Dashboard(state, settings.http_host) if order["dashboard"] else None
        site = dashboard.asgi() if dashboard is not None else None
        starlette_app = http_app(server, state, settings.http_host, site, stateless=True)
        gc_freeze.keep_pauses_short()
        on_stop = dashboard.close if dashboard is not None else None
        serve = partial(serve_http, starlette_app, sock, on_stop=on_stop, announce=False)
        anyio.run(run_until_signalled, serve, engine.record_interrupted)


def main() -> None:
    order = read_order()
    settings = order["settings"]
    configure_logging(settings.get("log_level", "info"), settings.get("log_format", "auto"))
    threading.Thread(target=stop_with_parent, name="weaver-parent-watch", daemon=True).start()
    serve_child(order, int(sys.argv[1]))
    log.info("HTTP reader process stopped")


if __name__ == "__main__":
    main()
