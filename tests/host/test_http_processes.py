"""Several server processes on one port (`host.http_readers`), as real processes: the daemon and
its reader children share the HTTP port, a child killed is started again, the children die
with the daemon (kill -9) and stop with it on SIGTERM, and a write made through a reader is
read back at once; `serve --no-vault` over stdio without the vault's folder."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.helpers import bare_env, child_pids, free_port, wait_for, write_files
from tests.host.test_daemon import Daemon
from tests.mcp_server.test_transports import WEAVER

PROCESSES = 3
START_TIMEOUT = 60.0

FILES = {
    "Home.md": "---\ntype: index\n---\n# Home\nSee [[Ideas]].\n",
    "Ideas.md": "# Ideas\n- [ ] write more #idea\n",
}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    vault = write_files(tmp_path / "vault", FILES)
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{vault}"\nhttp_port = {port}\nhttp_processes = {PROCESSES}\nsemantic = false\n'
    )
    yield Daemon(vault, config, port, tmp_path / "daemon.log")


def health(port: int) -> dict[str, Any] | None:
    """/health on a new connection (so the kernel hands it to any process), or None."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/health")
        body: dict[str, Any] = json.loads(connection.getresponse().read())
        return body
    except OSError:
        return None
    finally:
        connection.close()


def serving_pids(port: int, want: int, timeout: float = START_TIMEOUT) -> set[int]:
    """The pids answering /health, until `want` different ones have answered."""
    seen: set[int] = set()

    def enough() -> bool:
        body = health(port)
        if body is not None:
            seen.add(body["process"]["pid"])
        return len(seen) >= want

    wait_for(enough, timeout, f"{want} processes answering /health", every=0.02)
    return seen


def children_of(pid: int) -> set[int]:
    """The daemon's HTTP reader processes."""
    return {child for child in child_pids(pid) if "http_child" in _cmdline(Path(f"/proc/{child}"))}


def _cmdline(entry: Path) -> str:
    try:
        return (entry / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def readers_of(pid: int) -> set[int]:
    """The daemon's reader processes, once all `PROCESSES - 1` run."""

    def all_running() -> set[int]:
        found = children_of(pid)
        return found if len(found) == PROCESSES - 1 else set()

    return wait_for(all_running, START_TIMEOUT, "the reader processes")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_readers_share_the_port_restart_and_die_with_the_daemon(daemon: Daemon) -> None:
    process = daemon.start()
    try:
        children = readers_of(process.pid)
        assert serving_pids(daemon.port, PROCESSES) == {process.pid, *children}
        roles = {health(daemon.port)["process"]["role"] for _ in range(30)}  # type: ignore[index]
        assert "writer" in roles or "reader" in roles

        victim = min(children)
        os.kill(victim, signal.SIGKILL)
        replaced = wait_for(
            lambda: (now := children_of(process.pid)) - children and len(now) == PROCESSES - 1,
            START_TIMEOUT,
            "the killed reader started again",
        )
        assert victim not in children_of(process.pid) and replaced
        assert "HTTP reader process exited; starting it again" in daemon.log.read_text()

        survivors = children_of(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        wait_for(lambda: not any(alive(pid) for pid in survivors), 10, "the readers to stop")
        assert health(daemon.port) is None  # nobody serves the port any more
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Connection:
    """One keep-alive HTTP connection, so every request reaches the same process; MCP spoken
    as a 2025-11-25 client does, over the stateless HTTP of several processes."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.next_id = 0
        self.auth = {"authorization": f"Bearer {token}"} if token else {}

    def health(self) -> dict[str, Any]:
        self.http.request("GET", "/health")
        body: dict[str, Any] = json.loads(self.http.getresponse().read())
        return body

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        self.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
            **self.auth,
        }
        self.http.request("POST", "/mcp", json.dumps(message), headers)
        body = self.http.getresponse().read().decode()
        lines = [line[5:] for line in body.splitlines() if line.startswith("data:")]
        answer = json.loads(lines[-1] if lines else body)
        envelope: dict[str, Any] = json.loads(answer["result"]["content"][0]["text"])
        return envelope


def completed(connection: Connection, execution_id: str) -> bool:
    status = connection.call("get_workflow_status", executionId=execution_id)
    return bool(status["data"]["status"] == "completed")


def reader_connection(port: int) -> Connection | None:
    """A new connection, if the kernel handed it to a reader process (else closed)."""
    connection = Connection(port)
    if connection.health()["process"]["role"] == "reader":
        return connection
    connection.http.close()
    return None


def test_a_write_through_a_reader_is_read_back_then_sigterm_stops_all(daemon: Daemon) -> None:
    """Writes (and workflow runs) through reader processes are read back at once; then
    SIGTERM stops the daemon and its readers cleanly within 10 s."""
    process = daemon.start()
    try:
        children = readers_of(process.pid)
        for attempt in range(5):
            connection = wait_for(
                lambda: reader_connection(daemon.port), START_TIMEOUT, "a connection to a reader"
            )
            assert connection is not None
            reader = connection.health()["process"]["pid"]
            assert reader != process.pid
            path, word = f"w/{attempt}.md", f"okapi{attempt}"
            written = connection.call("create_file", path=path, content=f"# {word}\n")
            assert written["success"], written
            found = connection.call("search_notes", query=word)
            assert [hit["path"] for hit in found["data"]["results"]] == [path]
            assert connection.call("get_file", path=path)["data"]["path"] == path
            if attempt == 0:  # workflows: a sync run here, an async one left to the writer
                args = {"workflowId": "markdown-analyzer", "input": {"path": path}}
                ran = connection.call("trigger_workflow", **args)
                assert ran["success"] and ran["data"]["status"] == "completed", ran
                queued = connection.call("trigger_workflow", **args, **{"async": True})
                done = partial(completed, connection, queued["data"]["executionId"])
                wait_for(done, START_TIMEOUT, "the queued run, by the writer", every=0.2)
            assert connection.health()["process"]["pid"] == reader  # all of it on the reader
            connection.http.close()

        serving_pids(daemon.port, PROCESSES)  # every process serving (its signal handlers set)
        started = time.monotonic()
        assert daemon.stop(process) == 0
        wait_for(lambda: not any(alive(pid) for pid in children), 10, "the readers to stop")
        assert time.monotonic() - started < 10
        log = daemon.log.read_text()
        # Stopped by their SIGTERM handlers (not the watchdog, not killed). Their last line,
        # "HTTP reader process stopped", is not asserted: one CI run lost it while both
        # children had exited cleanly (see the closing note of issue 21).
        assert "did not stop: killed" not in log
        assert "stopping is overdue" not in log and "Fatal Python error" not in log  # clean
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _data(result: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = json.loads(result.content[0].text)
    assert envelope["success"], envelope
    data: dict[str, Any] = envelope["data"]
    return data


@pytest.mark.anyio
async def test_serve_no_vault_over_stdio_reads_what_weaver_index_wrote(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", FILES)
    cache = tmp_path / "elsewhere" / "cache.db"
    cache.parent.mkdir()  # a folder named in database_url is never created by Weaver
    env = bare_env(WEAVER_DATABASE_URL=f"sqlite:///{cache}")
    indexed = subprocess.run(
        [WEAVER, "--vault", str(vault), "index"], env=env, capture_output=True, timeout=60
    )
    assert indexed.returncode == 0, indexed.stderr
    shutil.rmtree(vault)  # a reader's host need not have the notes at all
    params = StdioServerParameters(
        command=WEAVER, args=["--vault", str(vault), "serve", "--no-vault"], env=env
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "create_file" not in names and "get_file" in names
        assert _data(await client.call_tool("get_file", {"path": "Home.md"}))["title"] == "Home"
        refused = await client.call_tool("update_file", {"path": "Home.md", "content": "x"})
        assert refused.is_error and "reader" in str(refused.content)
    assert not vault.exists()  # nothing was written there either
