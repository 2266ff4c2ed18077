"""A dashboard served for real (uvicorn on a loopback port, in a thread), as the daemon serves
it, plus the test workflows and vaults the dashboard tests share."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from pydantic import BaseModel, Field

from weaver.cache import executions
from weaver.cache.executions import ExecutionRecord
from weaver.config import Settings
from weaver.dashboard.site import Dashboard
from weaver.engine import Workflow, WorkflowContext, WorkflowEngine, workflow
from weaver.engine.loader import ENTRY_POINT_GROUP, load_registry
from weaver.host.serve import http_app
from weaver.mcp_server.server import build_server
from weaver.runtime.app import App, open_app
from weaver.runtime.engines import hosted_engine
from weaver.runtime.http import bind_socket, serve_http
from weaver.runtime.state import ServerState


class EchoInput(BaseModel):
    text: str = "hello"
    seconds: float = Field(default=0.2, ge=0, le=10)


@workflow(id="test-slow-echo", name="Slow echo", input_model=EchoInput, timeout=30)
def slow_echo(ctx: WorkflowContext[EchoInput]) -> dict[str, Any]:
    """Reports progress in five steps over `seconds`, then echoes `text`."""
    for step in range(5):
        if ctx.cancelled.is_set():
            return {"stopped": step}
        ctx.report_progress(step * 20, f"step {step + 1} of 5")
        ctx.log.info("echo step", step=step + 1)
        time.sleep(ctx.input.seconds / 5)
    return {"echo": ctx.input.text}


@workflow(id="test-always-fails", name="Always fails")
def always_fails(ctx: WorkflowContext[Any]) -> None:
    raise RuntimeError("this workflow always fails")


TEST_WORKFLOWS: tuple[Workflow, ...] = (slow_echo, always_fails)


@dataclass
class Served:
    base: str
    app: App
    engine: WorkflowEngine
    state: ServerState
    dashboard: Dashboard

    def get(self, path: str, headers: dict[str, str] | None = None) -> Reply:
        return request(self.base + path, headers=headers)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: str

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


def request(
    url: str, data: dict[str, str] | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """One request, redirects not followed (a 303 comes back as it is, with its Location)."""
    body = None if data is None else urllib.parse.urlencode(data).encode()
    req = urllib.request.Request(url, data=body, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        with opener.open(req, timeout=10) as response:
            return Reply(response.status, list(response.headers.items()), response.read().decode())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, list(exc.headers.items()), exc.read().decode())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@contextmanager
def serve_dashboard(vault: Path, builtins: bool = True, **settings: Any) -> Iterator[Served]:
    """The daemon's HTTP app (MCP, /health, the dashboard) over `vault`, with the test
    workflows (and the built-in ones unless `builtins` is False), until the block ends."""
    config = Settings(vault=vault, **settings)
    app = open_app(config)
    sock = bind_socket("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    registry = load_registry(config, entry_point_group=ENTRY_POINT_GROUP if builtins else None)
    for item in TEST_WORKFLOWS:
        registry.register(item)
    try:
        with hosted_engine(app, registry, schedules=True) as engine:
            state = ServerState(app, engine=engine)
            dashboard = Dashboard(state, "127.0.0.1")
            site = http_app(build_server(state), state, "127.0.0.1", dashboard.asgi())
            handles: list[Any] = []
            ready = threading.Event()

            async def main() -> None:
                stop = anyio.Event()
                handles.append((stop, anyio.lowlevel.current_token()))
                ready.set()
                await serve_http(site, sock, stop, dashboard.close)

            thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
            thread.start()
            ready.wait(10)
            served = Served(base, app, engine, state, dashboard)
            _wait_until_indexed(served)
            try:
                yield served
            finally:
                stop, token = handles[0]
                anyio.from_thread.run_sync(stop.set, token=token)
                thread.join(15)
    finally:
        sock.close()
        app.close()


def _wait_until_indexed(served: Served, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if served.get("/health").status in (200, 503) and served.state.ready:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the dashboard at {served.base} did not come up in {timeout} s")


def fill_history(app: App, count: int, now: int | None = None) -> None:
    """`count` ended executions over the last 30 days, written in one statement."""
    now = now or int(time.time() * 1000)
    statuses = ("completed", "completed", "completed", "failed", "cancelled")
    span = 30 * 86_400_000
    rows = []
    for k in range(count):
        created = now - span + (span * k) // count
        status = statuses[k % len(statuses)]
        failed = status == "failed"
        rows.append(
            ExecutionRecord(
                id=f"wf_exec_bulk_{k:07d}",
                workflow_id="test-slow-echo" if k % 2 else "test-always-fails",
                workflow_name="Slow echo" if k % 2 else "Always fails",
                trigger_kind="manual",
                trigger_detail={"via": "bulk"},
                input={"text": f"run {k}"},
                status=status,
                progress=100 if status == "completed" else 0,
                message=None,
                attempt=1,
                started=created,
                finished=created + 40,
                duration=40,
                result={"n": k} if status == "completed" else None,
                error="RuntimeError: bulk failure" if failed else None,
                traceback=None,
                process="bulk:1",
                created=created,
            )
        )
    with app.db.begin() as conn:
        executions.insert_executions(conn, rows)


HOSTILE_NOTES: dict[str, str] = {
    "hostile/Script note.md": (
        "---\ntitle: \"<script>window.__pwned = 'title'</script>\"\n"
        "tags: [\"<img src=x onerror=window.__pwned='tag'>\"]\n"
        "evil: \"<svg onload=window.__pwned='frontmatter'>\"\n---\n"
        "# Hostile\n\n<script>window.__pwned = 'body'</script>\n\n"
        "<img src=x onerror=\"window.__pwned = 'img'\">\n\n"
        "[click me](javascript:window.__pwned='link') and [[Missing Target]]\n\n"
        "<iframe src=\"javascript:window.__pwned='frame'\"></iframe> hostilemarker\n"
    ),
    "hostile/<img src=x onerror=window.__pwned=1>.md": "A hostile file name. hostilemarker\n",
    "hostile/Link note.md": (
        "---\nrelated: \"[[Welcome|<script>window.__pwned = 'property alias'</script>]]\"\n"
        '"<img src=x onerror=window.__pwned=\'key\'>": ["[[Nowhere Yet|<b>bold</b>]]"]\n---\n'
        "[[Welcome|<img src=x onerror=\"window.__pwned = 'alias'\">]] and "
        "[[<svg onload=window.__pwned='target'>]] and ![[Welcome|<script>x</script>]]\n"
    ),
    "hostile/Bad yaml.md": (
        "---\ntitle: <script>window.__pwned = 'yaml'</script>\n  broken: [\n---\nText.\n"
    ),
}
