"""`weaver serve` as real processes: stdio through the SDK client, HTTP with and without a token,
live freshness through the watcher, and two servers sharing one vault (one writes, one reads)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.helpers import bare_env, free_port, logged, wait_for_async, write_files
from weaver.cli import main
from weaver.config import Settings
from weaver.mcp_server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.locks import WriterLock, writer_lock_path
from weaver.runtime.state import ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WEAVER = str(Path(sys.executable).with_name("weaver"))
# How long a served process may take to be ready: generous, as the suite runs on every core
# and a loaded machine can take many seconds to start Python and index.
START_SECONDS = 45
NOTES: dict[str, str | bytes] = {
    "Home.md": "---\ntype: hub\n---\n# Home\n[[Topic]] #start\n",
    "sub/Topic.md": "# Topic\n[[Home]]\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", NOTES)


def envelope_of(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


@asynccontextmanager
async def stdio_server(vault: Path, log: TextIO, *extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=WEAVER,
        args=["--vault", str(vault), "serve", "--toolsets", "all", *extra],
        cwd=vault.parent,  # no config/weaver.toml there: only the flags apply
    )
    async with Client(stdio_client(params, errlog=log), mode="legacy") as client:
        yield client


async def wait_for_note(client: Client, path: str, timeout: float = 10.0) -> None:
    """Poll get_file until the note is there. The timeout only bounds the wait: how soon a
    change is visible is `make bench`'s freshness figure."""
    started = time.monotonic()
    while True:
        result = await client.call_tool("get_file", {"path": path})
        if not result.is_error:
            return
        assert time.monotonic() - started < timeout, envelope_of(result)
        await anyio.sleep(0.02)


async def logged_changes(client: Client, path: str, timeout: float) -> list[dict[str, Any]]:
    """Poll the change log until `file-change-logger` has recorded a change of `path`."""
    started = time.monotonic()
    while True:
        args = {"workflowId": "file-change-logger", "key": path}
        records = envelope_of(await client.call_tool("get_workflow_records", args))
        if found := records["data"]["records"]:
            return list(found)
        assert time.monotonic() - started < timeout, "no change logged"
        await anyio.sleep(0.05)


async def test_stdio_serves_the_tools_and_follows_the_disk(vault: Path, tmp_path: Path) -> None:
    with (tmp_path / "stderr.log").open("w") as log:
        async with stdio_server(vault, log) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            data = envelope_of(await client.call_tool("query_files", {"limit": 5}))
            # query_files answered after the first reconcile; once the server says it watches,
            # change the vault under it.
            await wait_for_async(logged(tmp_path / "stderr.log", "watching vault"), 10)
            (vault / "sub" / "New.md").write_text("# New\n[[Home]]\n", encoding="utf-8")
            await wait_for_note(client, "sub/New.md")
            home = envelope_of(await client.call_tool("get_file", {"path": "Home.md"}))
            # `weaver serve` hosts the workflow engine: file events start workflows, and a
            # sync trigger answers with the run's final status and result.
            changes = await logged_changes(client, "sub/New.md", timeout=5.0)
            args = {"workflowId": "markdown-analyzer", "input": {"path": "Home.md"}}
            run = envelope_of(await client.call_tool("trigger_workflow", args))
    assert "get_file_content" in names
    assert [change["data"]["kind"] for change in changes] == ["add"]
    assert (run["data"]["status"], run["data"]["result"]["path"]) == ("completed", "Home.md")
    assert [f["path"] for f in data["data"]["files"]] == ["Home.md", "sub/Topic.md"]
    assert "sub/New.md" in home["data"]["links"]["incoming"]
    stderr = (tmp_path / "stderr.log").read_text()
    assert "serving MCP over stdio" in stderr  # logs go to stderr, stdout is the protocol's
    assert "Traceback" not in stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("signals", ["loop", "handlers"])
def test_stdio_serve_stops_on_a_signal_while_the_client_holds_stdin(
    vault: Path, tmp_path: Path, stop: signal.Signals, signals: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in a terminal, or a client's SIGTERM: the engine is stopped and the process ends
    at once, though stdin is still open (a blocked read of it used to keep Ctrl-C waiting).
    `handlers` is the path Windows takes (host/signals.py), forced here."""
    if signals == "handlers":
        monkeypatch.setenv("WEAVER_SIGNALS", "handlers")
    log = tmp_path / "stderr.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [WEAVER, "--vault", str(vault), "serve"],
            cwd=vault.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + START_SECONDS
            while "watching vault" not in log.read_text():
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            process.send_signal(stop)
            assert process.wait(timeout=10) == 0
        finally:
            process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                assert pipe is not None
                pipe.close()
    text = log.read_text()
    assert f'"signal": "{stop.name}"' in text and "workflow engine stopped" in text
    assert "serve stopped" in text and "Traceback" not in text


async def test_a_second_server_reads_while_the_first_writes(vault: Path, tmp_path: Path) -> None:
    with (tmp_path / "a.log").open("w") as log_a, (tmp_path / "b.log").open("w") as log_b:
        async with stdio_server(vault, log_a) as first:
            health = envelope_of(await first.call_tool("health_check", {}))["data"]
            assert health["role"] == "writer"
            async with stdio_server(vault, log_b) as second:
                health = envelope_of(await second.call_tool("health_check", {}))["data"]
                assert (health["role"], health["status"]) == ("reader", "healthy")
                await wait_for_async(logged(tmp_path / "a.log", "watching vault"), 10)
                (vault / "Later.md").write_text("# Later\n#start\n", encoding="utf-8")
                await wait_for_note(second, "Later.md")
                data = envelope_of(await second.call_tool("search_tags", {"tag": "start"}))
    assert data["data"]["count"] == 2
    assert "Traceback" not in (tmp_path / "b.log").read_text()


async def test_a_reader_takes_over_writing_when_the_writer_exits(vault: Path) -> None:
    settings = Settings(vault=vault)
    apps = [open_app(settings), open_app(settings)]
    first, second = (ServerState(app, lock_retry_seconds=0.05) for app in apps)
    first_ready, stop_first = anyio.Event(), anyio.Event()

    async def run_first() -> None:
        async with Client(build_server(first), mode="legacy") as client:
            await client.call_tool("get_stats", {})
            first_ready.set()
            await stop_first.wait()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_first)
            await first_ready.wait()
            assert first.role == "writer"
            async with Client(build_server(second), mode="legacy") as client:
                await client.call_tool("get_stats", {})
                assert second.role == "reader"
                stop_first.set()  # the writer goes away
                # The lock is retried every lock_retry_seconds; then the new writer watches.
                await wait_for_async(
                    lambda: second.writer and second.watcher and second.watcher.watching.is_set(),
                    5,
                    "the reader to take over and watch",
                )
                (vault / "After.md").write_text("# After\n", encoding="utf-8")
                await wait_for_note(client, "After.md")
    finally:
        for app in apps:
            app.close()


# -- HTTP --------------------------------------------------------------------------------


@contextmanager
def http_server(
    vault: Path, log: Path, token: str | None = None, processes: int = 1
) -> Iterator[str]:
    """`weaver serve --transport http`; one process unless told (the sessions of 2025-11-25
    clients, which these tests pin, need one stateful process: `host.http_readers`)."""
    port = free_port()
    env = bare_env(WEAVER_TOOLSETS="all")  # every tool, as in-process
    if token:
        env["WEAVER_HTTP_TOKEN"] = token
    with log.open("w") as errors:
        process = subprocess.Popen(
            [
                *(WEAVER, "--vault", str(vault), "serve", "--transport", "http"),
                *("--port", str(port), "--http-processes", str(processes)),
            ],
            cwd=vault.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_SECONDS
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    status, _ = http_get(base + "/health")
                    if status == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            wait_until_healthy(base)
            yield base
        finally:
            process.terminate()
            process.wait(timeout=10)


def wait_until_healthy(base: str) -> None:
    """/health says `starting` while the first reconcile runs; tools would wait for it anyway."""
    deadline = time.monotonic() + 60  # a timeout: a loaded run can take a while
    while http_get(base + "/health")[1]["status"] != "healthy":
        assert time.monotonic() < deadline, "not healthy after 60 s"
        time.sleep(0.05)


def http_get(url: str) -> tuple[int, dict[str, Any]]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, json.loads(response.read())


def post_initialize(url: str, headers: dict[str, str]) -> int:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the connection open until closed
            return exc.code


async def test_http_without_token_on_loopback(vault: Path, tmp_path: Path) -> None:
    with http_server(vault, tmp_path / "http.log") as base:
        for mode in ("legacy", "auto"):
            async with Client(base + "/mcp", mode=mode) as client:
                data = envelope_of(await client.call_tool("get_file", {"path": "sub/Topic.md"}))
            assert data["data"]["links"]["incoming"] == ["Home.md"]
        status, health = http_get(base + "/health")
        assert (status, health["status"], health["components"]["shadowCache"]) == (
            200,
            "healthy",
            True,
        )
        # DNS-rebinding protection: a foreign Host header is refused.
        assert post_initialize(base + "/mcp", {"Host": "evil.example:80"}) == 421
        # Exactly: a name that merely starts like ours is foreign too.
        port = base.rsplit(":", 1)[1]
        assert post_initialize(base + "/mcp", {"Host": f"127.0.0.1:{port}.evil.example"}) == 421
    assert "Traceback" not in (tmp_path / "http.log").read_text()


async def test_http_with_token(vault: Path, tmp_path: Path) -> None:
    with http_server(vault, tmp_path / "http.log", token="s3cret") as base:
        assert post_initialize(base + "/mcp", {}) == 401
        assert post_initialize(base + "/mcp", {"Authorization": "Bearer wrong"}) == 401
        assert post_initialize(base + "/mcp", {"Authorization": "Bearer s3cret"}) == 200
        assert http_get(base + "/health")[0] == 200  # no auth needed
        headers = {"Authorization": "Bearer s3cret"}
        async with create_mcp_http_client(headers=headers) as http_client:  # closed by us
            transport = streamable_http_client(base + "/mcp", http_client=http_client)
            async with Client(transport) as client:
                data = envelope_of(await client.call_tool("get_stats", {}))
        assert data["data"]["totalFiles"] == 2


def test_http_refuses_a_public_address_without_a_token(
    vault: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEAVER_HTTP_TOKEN", raising=False)
    monkeypatch.chdir(vault.parent)
    args = ["--vault", str(vault), "serve", "--transport", "http", "--host", "0.0.0.0"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "without a bearer token" in captured.err
    assert captured.out == ""
    assert not (vault / ".weaver").exists()  # refused before opening anything


def test_writer_lock_is_exclusive_between_holders(tmp_path: Path) -> None:
    settings = Settings(vault=tmp_path, database_url=f"sqlite:///{tmp_path / 'c' / 'cache.db'}")
    path = writer_lock_path(settings)
    assert path == tmp_path / "c" / "cache.db.writer.lock"  # beside the cache it protects
    with WriterLock(path) as first, WriterLock(path) as second:
        assert first.try_acquire()
        assert not second.try_acquire()
        assert second.holder() == str(os.getpid())
        first.release()
        assert second.try_acquire()
        assert not first.try_acquire()
