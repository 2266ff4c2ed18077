"""`weaver serve` over stdio answers `initialize` and `tools/list` from the tool manifest the
previous start wrote, before it imports its tools or SQLAlchemy, with the very bytes the real
server answers; a call made at once is answered by the real server; a stale manifest is never
served (issue 39). Real stdio processes, spoken to in JSON-RPC lines."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

import pytest

from tests.helpers import clean_env, write_files
from weaver.config import CACHE_DIR_NAME
from weaver.host.tool_manifest import MANIFEST_NAME, read_manifest

pytestmark = pytest.mark.slow

NOTES: dict[str, str | bytes] = {
    "Home.md": "# Home\n[[Topic]] #start\n",
    "sub/Topic.md": "# Topic\n[[Home]]\n",
}
HEAVY = ("sqlalchemy", "weaver.mcp_server.server", "weaver.mcp_server.cache_tools")

# `weaver serve`, noting in `argv[1]`, when the front answers tools/list from the manifest,
# which of HEAVY are imported by then. The real server is built only once the tools are
# listed (no timer), so a slow machine cannot blur what "before" means.
SERVE = """
import json, sys
from weaver.host import quick_start

quick_start.BUILD_AFTER_S = 600.0
marker = sys.argv[1]
answer = quick_start.FrontServer._list_tools

async def noted(self, ctx, params):
    if not self._ready.is_set():
        with open(marker, "w") as out:
            json.dump([m for m in {heavy!r} if m in sys.modules], out)
    return await answer(self, ctx, params)

quick_start.FrontServer._list_tools = noted
from weaver.cli import main
vault = ["--vault", sys.argv[2]] if sys.argv[2] else []  # "": the config's vaults
sys.exit(main([*vault, "--log-level", "info", "serve", *sys.argv[3:]]))
"""
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "query_files", "arguments": {"limit": 10}},
}


def session(
    tmp_path: Path,
    vault: Path | None,
    args: list[str],
    env: dict[str, str],
    call: dict[str, Any] = CALL,
) -> dict[str, Any]:
    """One stdio session: initialize, list, `call` (query_files); the raw answer lines, and
    what the marker says (None: the manifest did not answer). No `vault`: the config's."""
    marker = tmp_path / "marker.json"
    marker.unlink(missing_ok=True)
    script = textwrap.dedent(SERVE).format(heavy=HEAVY)
    command = [sys.executable, "-c", script, str(marker), str(vault or ""), *args]
    with (tmp_path / "stderr.log").open("a") as errors:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
            cwd=tmp_path,  # no config file found in the checkout
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            send(proc.stdin, INITIALIZE)
            initialized = answer(proc.stdout, 1)
            send(proc.stdin, INITIALIZED)
            send(proc.stdin, LIST)
            listed = answer(proc.stdout, 2)
            send(proc.stdin, call)
            called = answer(proc.stdout, 3)
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)
            proc.stdout.close()
    noted = json.loads(marker.read_text()) if marker.exists() else None
    return {"initialize": initialized, "list": listed, "call": called, "heavy": noted}


class Primed(NamedTuple):
    """A vault a first start served with the default settings (so its manifest is written),
    and what that start answered."""

    vault: Path
    first: dict[str, Any]


@pytest.fixture(scope="module")
def primed_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Primed, Path]:
    """The first start the tests of the default settings each began with, made once per
    module (a `weaver serve` costs seconds): the vault as it left it, and a copy to restore.
    The manifest's key covers the vault's path, so each test gets the same path back."""
    root = tmp_path_factory.mktemp("primed")
    vault = write_files(root / "vault", NOTES)
    first = session(root, vault, [], clean_env())
    assert first["heavy"] is None  # no manifest yet: served as ever, and one written
    assert (vault / CACHE_DIR_NAME / MANIFEST_NAME).exists()
    shutil.copytree(vault, root / "pristine")
    return Primed(vault, first), root / "pristine"


@pytest.fixture
def primed(primed_once: tuple[Primed, Path]) -> Iterator[Primed]:
    """`primed_once`'s vault, exactly as its first start left it (cache and manifest)."""
    served, pristine = primed_once
    shutil.rmtree(served.vault)
    shutil.copytree(pristine, served.vault)
    yield served


def send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def answer(pipe: IO[bytes], request_id: int) -> bytes:
    while line := pipe.readline():
        if json.loads(line).get("id") == request_id:
            return line
    raise AssertionError(f"the server closed its output before answering {request_id}")


def files_of(line: bytes) -> list[str]:
    envelope = json.loads(json.loads(line)["result"]["content"][0]["text"])
    return [f["path"] for f in envelope["data"]["files"]]


@pytest.mark.parametrize(
    ("args", "settings"),
    [([], {}), (["--toolsets", "all"], {}), ([], {"WEAVER_READ_ONLY": "true"})],
    ids=["default", "all-toolsets", "read-only"],
)
def test_the_next_start_answers_from_the_manifest_exactly_as_the_server_does(
    tmp_path: Path, args: list[str], settings: dict[str, str], request: pytest.FixtureRequest
) -> None:
    env = {**clean_env(), **settings}
    if args or settings:
        vault = write_files(tmp_path / "vault", NOTES)
        first = session(tmp_path, vault, args, env)
        assert first["heavy"] is None  # no manifest yet: served as ever, and one written
        assert (vault / CACHE_DIR_NAME / MANIFEST_NAME).exists()
    else:  # the default settings' first start (the same checks) is made once: `primed_once`
        vault, first = request.getfixturevalue("primed")
    second = session(tmp_path, vault, args, env)
    assert second["heavy"] == []  # answered before the tools, or SQLAlchemy, were imported
    assert second["initialize"] == first["initialize"]
    assert second["list"] == first["list"]
    assert files_of(second["call"]) == files_of(first["call"]) == ["Home.md", "sub/Topic.md"]
    tools = [tool["name"] for tool in json.loads(second["list"])["result"]["tools"]]
    assert ("create_file" in tools) == ("WEAVER_READ_ONLY" not in settings)
    assert ("edit_canvas" in tools) == ("all" in args)


def test_a_stale_manifest_is_not_served_and_is_rewritten(tmp_path: Path, primed: Primed) -> None:
    vault, first = primed
    path = vault / CACHE_DIR_NAME / MANIFEST_NAME
    kept = json.loads(path.read_text())
    # Written by another version, or before a source file changed: another key. Its tools
    # list is wrong too, and must never be answered.
    path.write_text(json.dumps({**kept, "key": "0" * 64, "tools": []}))
    second = session(tmp_path, vault, [], clean_env())
    assert second["heavy"] is None  # the slow path
    assert second["list"] == first["list"]
    assert json.loads(path.read_text()) == kept


def test_another_setting_is_another_manifest(tmp_path: Path, primed: Primed) -> None:
    every = session(tmp_path, primed.vault, ["--toolsets", "all"], clean_env())
    assert every["heavy"] is None  # the default toolsets' manifest does not answer for all
    tools = json.loads(every["list"])["result"]["tools"]
    assert "edit_canvas" in [tool["name"] for tool in tools]


def test_a_manifest_unlike_the_server_it_built_is_rewritten(tmp_path: Path, primed: Primed) -> None:
    """Something shaped the tools that the key does not cover: the quick start, once its
    server is built, finds its manifest wrong and writes the right one for the next."""
    vault, first = primed
    path = vault / CACHE_DIR_NAME / MANIFEST_NAME
    kept = json.loads(path.read_text())
    path.write_text(json.dumps({**kept, "tools": kept["tools"][:1]}))
    second = session(tmp_path, vault, [], clean_env())
    assert second["heavy"] == []  # served from the manifest, under its right key
    assert files_of(second["call"]) == files_of(first["call"])  # the real server answered
    assert json.loads(path.read_text()) == kept
    assert "the tool manifest differed" in (tmp_path / "stderr.log").read_text()
    third = session(tmp_path, vault, [], clean_env())
    assert third["list"] == first["list"]


@pytest.mark.parametrize("text", ["", "{", "[]", '{"key": "k"}', '{"key": "k", "tools": 1}'])
def test_an_unreadable_manifest_is_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / MANIFEST_NAME
    path.write_text(text)
    assert read_manifest(path, "k") is None
    assert read_manifest(tmp_path / "absent.json", "k") is None


def test_a_manifest_the_front_cannot_use_means_the_slow_path(
    tmp_path: Path, primed: Primed
) -> None:
    vault, first = primed
    path = vault / CACHE_DIR_NAME / MANIFEST_NAME
    kept = json.loads(path.read_text())
    path.write_text(json.dumps({**kept, "tools": [{"name": 1}]}))
    second = session(tmp_path, vault, [], clean_env())
    assert second["heavy"] is None
    assert second["list"] == first["list"]
    assert json.loads(path.read_text()) == kept


def test_a_config_with_workflow_tables_is_served_from_the_manifest_without_the_engine(
    tmp_path: Path,
) -> None:
    """The tables were checked by the start that wrote the manifest, under these settings."""
    vault = write_files(tmp_path / "vault", NOTES)
    config = tmp_path / "weaver.toml"
    config.write_text("[workflows.markdown-analyzer]\nenabled = false\n", encoding="utf-8")
    env = {**clean_env(), "WEAVER_CONFIG": str(config)}
    first = session(tmp_path, vault, [], env)
    second = session(tmp_path, vault, [], env)
    assert second["heavy"] == []
    assert second["list"] == first["list"]


def test_a_server_of_several_vaults_is_served_from_the_manifest(tmp_path: Path) -> None:
    """The manifest holds the tools with their `vault` argument, and a call naming the other
    vault is answered from that vault once the real server is built."""
    work = write_files(tmp_path / "work", NOTES)
    home = write_files(tmp_path / "home", {"Garden.md": "# Garden\n"})
    config = tmp_path / "weaver.toml"
    config.write_text(
        f"default_vault = 'work'\n[vaults.work]\npath = '{work}'\n[vaults.home]\npath = '{home}'\n",
        encoding="utf-8",
    )
    env = {**clean_env(), "WEAVER_CONFIG": str(config)}
    call = {**CALL, "params": {"name": "query_files", "arguments": {"vault": "home"}}}
    first = session(tmp_path, None, [], env, call)
    second = session(tmp_path, None, [], env, call)
    assert first["heavy"] is None and second["heavy"] == []
    assert second["list"] == first["list"]
    tools = json.loads(second["list"])["result"]["tools"]
    assert all("vault" in tool["inputSchema"]["properties"] for tool in tools)
    assert files_of(second["call"]) == files_of(first["call"]) == ["Garden.md"]


def test_a_manifest_naming_a_model_outside_the_sdk_is_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest is read before anything is checked: a name it gives must not make a start
    import a module of the file's choosing (whose import alone could run anything)."""
    (tmp_path / "planted.py").write_text(
        "from pathlib import Path\nfrom pydantic import BaseModel\n"
        f"Path({str(tmp_path / 'imported')!r}).touch()\n"
        "class Params(BaseModel):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    kept = {
        "key": "k", "name": "weaver", "version": "1", "title": None, "instructions": None,
        "requests": {"tools/list": "planted:Params"}, "notifications": {},
        "initialization": {},
    }  # fmt: skip
    path = tmp_path / MANIFEST_NAME
    path.write_text(json.dumps(kept))
    assert read_manifest(path, "k") is None
    assert not (tmp_path / "imported").exists()
    path.write_text(
        json.dumps({**kept, "requests": {"tools/list": "mcp_types:PaginatedRequestParams"}})
    )
    assert read_manifest(path, "k") is not None  # the SDK's own models are still named
