"""`weaver daemon` over a config of two vaults, in a subprocess: each vault indexed and
watched, MCP calls routed by `vault`, the dashboard switching between them, a clean stop."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client

import weaver
from tests.helpers import free_port, wait_for, write_files
from tests.host.test_daemon import Daemon
from weaver.config import Settings, VaultEntry
from weaver.errors import ConfigError, DaemonError
from weaver.host.daemon import run_daemon
from weaver.host.serve import run_serve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class VaultsDaemon(Daemon):
    def env(self) -> dict[str, str]:
        # The code under test, where it is not the installed one.
        checkout = str(Path(weaver.__file__).parents[1])
        return {**super().env(), "PYTHONPATH": checkout}

    def page(self, path: str) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as reply:
            return str(reply.read().decode())


def unhealthy(daemon: VaultsDaemon) -> dict[str, object] | None:
    """`/health`'s body once it answers 503 (None while it still answers 200)."""
    try:
        daemon.page("/health")
    except urllib.error.HTTPError as error:
        assert error.code == 503
        body: dict[str, object] = json.loads(error.read())
        assert body["status"] == "unhealthy"
        return body
    return None


def envelope(result: object) -> dict[str, object]:
    text = result.content[0].text  # type: ignore[attr-defined]
    answer: dict[str, object] = json.loads(text)
    return answer


@pytest.mark.anyio
async def test_a_daemon_serves_each_vault_of_its_config(tmp_path: Path) -> None:
    write_files(tmp_path / "work", {"Plan.md": "# Plan\nzebra\n"})
    home = write_files(tmp_path / "home", {"Garden.md": "# Garden\nzebra\n"})
    port = free_port()
    config = tmp_path / "weaver.toml"
    config.write_text(
        f"http_port = {port}\n[vaults.work]\npath = 'work'\n[vaults.home]\npath = 'home'\n",
        encoding="utf-8",
    )
    daemon = VaultsDaemon(tmp_path / "work", config, port, tmp_path / "daemon.log")
    process = daemon.start()
    try:
        assert (home / ".weaver" / "daemon.lock").is_file()  # each vault's daemon lock
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            listed = envelope(await client.call_tool("query_files", {"vault": "home"}))
            assert [f["path"] for f in listed["data"]["files"]] == ["Garden.md"]  # type: ignore[index]
            write_files(home, {"New.md": "# New\n"})
            with anyio.fail_after(20):
                while True:
                    found = envelope(await client.call_tool("query_files", {"vault": "home"}))
                    if len(found["data"]["files"]) == 2:  # type: ignore[index]
                        break
                    await anyio.sleep(0.1)
            default = envelope(await client.call_tool("query_files", {}))
            assert [f["path"] for f in default["data"]["files"]] == ["Plan.md"]  # type: ignore[index]
        page = wait_for(lambda: daemon.page("/search?q=zebra&vault=home"), 10, "the dashboard")
        assert "Garden.md" in page and "Plan.md" not in page and "vault-switch" in page
        health = json.loads(daemon.page("/health"))
        assert health["vaults"] == {"work": "healthy", "home": "healthy"}
        shutil.rmtree(home)  # one vault's folder gone: the server as a whole is not well
        failing = wait_for(lambda: unhealthy(daemon), 10, "home reported unhealthy", every=0.2)
        assert failing is not None and failing["vaults"] == {"work": "healthy", "home": "unhealthy"}
    finally:
        code = daemon.stop(process)
    assert code == 0, daemon.log.read_text()
    assert "Traceback" not in daemon.log.read_text()


def test_what_several_vaults_cannot_do_yet_is_refused_by_name(tmp_path: Path) -> None:
    work = write_files(tmp_path / "work", {"a.md": "a\n"})
    home = write_files(tmp_path / "home", {"b.md": "b\n"})
    on_postgres = VaultEntry(path=home, database_url="postgresql+psycopg://w@127.0.0.1:9/none")
    settings = Settings(
        vault=work, vaults={"work": VaultEntry(path=work), "home": on_postgres}, http_port=0
    )
    with pytest.raises(DaemonError, match="several vaults from SQLite caches only"):
        run_daemon(settings)
    over_processes = settings.model_copy(
        update={"vaults": {"work": VaultEntry(path=work), "home": VaultEntry(path=home)}}
    )
    over_processes = over_processes.model_copy(update={"http_processes": 2})
    with pytest.raises(ConfigError, match="several vaults are served by one HTTP process"):
        run_serve(over_processes, "http")
    assert not (home / ".weaver").exists()  # refused before anything was opened
