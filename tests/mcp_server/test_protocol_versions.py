"""Clients pinned to each protocol version real clients speak (2025-03-26, 2025-06-18,
2025-11-25) over both transports of `weaver serve`, in raw JSON-RPC so that the version is
exactly the one asked for: the server answers the initialize with that version, advertises
what works, lists its tools and answers a call.

One HTTP server serves every version (a session each); stdio holds one session per process,
so the three stdio servers are started together."""

from __future__ import annotations

import json
import select
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import Client

from tests.helpers import bare_env, write_files
from tests.mcp_server.test_transports import NOTES, WEAVER, http_server

pytestmark = pytest.mark.slow

VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
# The first call waits for the initial reconcile; generous, as a loaded machine (the suite
# runs on every core) can take many seconds to start Python and index.
ANSWER_SECONDS = 45.0


def initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": f"pinned-{version}", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
CALL_TOOL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "get_file", "arguments": {"path": "sub/Topic.md"}},
}


def check_session(version: str, init: dict[str, Any], tools: Any, call: Any) -> None:
    """What every pinned session must have seen, whatever the transport."""
    result = init["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "weaver"
    caps = result["capabilities"]
    # Only what works: resources are subscribable and their list changes are sent; the tool
    # and prompt lists never change while the server runs.
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert caps["tools"].get("listChanged") is False
    assert caps["prompts"].get("listChanged") is False
    assert {"tools", "prompts", "completions", "logging"} <= caps.keys()
    names = {tool["name"] for tool in tools["result"]["tools"]}
    assert {"get_file", "query_files", "list_tags"} <= names
    envelope = json.loads(call["result"]["content"][0]["text"])
    assert envelope["success"] is True, envelope
    assert envelope["data"]["links"]["incoming"] == ["Home.md"]
    assert call["result"]["isError"] is False


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("versions") / "vault", NOTES)


# -- Streamable HTTP ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_base(vault: Path) -> Iterator[str]:
    with http_server(vault, vault.parent / "http.log") as base:
        yield base


def post(
    url: str, message: dict[str, Any], headers: dict[str, str]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """POST one message; the JSON-RPC answer (from JSON or an event stream) and the headers."""
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=ANSWER_SECONDS) as response:
        body = response.read().decode()
        got = {key.lower(): value for key, value in response.headers.items()}
    if not body.strip():
        return None, got
    if got.get("content-type", "").startswith("text/event-stream"):
        for line in body.splitlines():
            if line.startswith("data:") and line[5:].strip():
                data: dict[str, Any] = json.loads(line[5:])
                if data.get("id") == message.get("id"):
                    return data, got
        raise AssertionError(f"no answer to {message['method']} in the stream: {body!r}")
    answer: dict[str, Any] = json.loads(body)
    return answer, got


@pytest.mark.parametrize("version", VERSIONS)
def test_http_session_pinned_to(version: str, http_base: str) -> None:
    url = http_base + "/mcp"
    init, headers = post(url, initialize(version), {})
    assert init is not None
    session = {"mcp-protocol-version": version}
    if "mcp-session-id" in headers:
        session["mcp-session-id"] = headers["mcp-session-id"]
    post(url, INITIALIZED, session)
    tools, _ = post(url, LIST_TOOLS, session)
    call, _ = post(url, CALL_TOOL, session)
    check_session(version, init, tools, call)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_http_progress_of_a_sync_trigger(http_base: str) -> None:
    """Progress over a real transport: the built-in analyzer reports it per batch."""
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async with Client(http_base + "/mcp", mode="legacy") as client:
        args = {"workflowId": "markdown-analyzer", "input": {"path": "Home.md"}}
        result = await client.call_tool("trigger_workflow", args, progress_callback=on_progress)
        assert result.is_error is False
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
    assert heard == [(100.0, 100.0, None)]


# -- stdio ----------------------------------------------------------------------------------


class StdioPeer:
    """A `weaver serve` process spoken to in JSON lines."""

    def __init__(self, vault: Path, log: IO[str]) -> None:
        self.process = subprocess.Popen(
            [WEAVER, "--vault", str(vault), "serve"],
            cwd=vault.parent,
            env=bare_env(WEAVER_TOOLSETS="all"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and read lines (skipping notifications) until its answer."""
        self.send(message)
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            ready, _, _ = select.select([stdout], [], [], ANSWER_SECONDS)
            assert ready, f"no answer to {message['method']} in {ANSWER_SECONDS} s"
            line = stdout.readline()
            assert line, f"the server closed stdout (exit {self.process.poll()})"
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # end of input: the server exits
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture(scope="module")
def stdio_peers(vault: Path) -> Iterator[dict[str, StdioPeer]]:
    with (vault.parent / "stdio.log").open("w") as log:
        peers = {version: StdioPeer(vault, log) for version in VERSIONS}
        try:
            yield peers
        finally:
            for peer in peers.values():
                peer.close()
    assert "Traceback" not in (vault.parent / "stdio.log").read_text()


@pytest.mark.parametrize("version", VERSIONS)
def test_stdio_session_pinned_to(version: str, stdio_peers: dict[str, StdioPeer]) -> None:
    peer = stdio_peers[version]
    init = peer.request(initialize(version))
    peer.send(INITIALIZED)
    tools = peer.request(LIST_TOOLS)
    call = peer.request(CALL_TOOL)
    check_session(version, init, tools, call)
