"""Real third-party clients against `weaver serve` over stdio and Streamable HTTP: the
TypeScript SDK's client
(resources in pages, a read, the template, prompts, completions, a subscription hearing of
an edit saved on disk, a big answer) and the MCP Inspector CLI (resources/list,
resources/read, prompts/list, prompts/get).

They need Node.js and the npm packages, installed once (the lead's setup step):

    npm install --prefix .node --no-audit --no-fund \\
        @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@0.15.0

(or point WEAVER_NODE_DIR at a folder holding that `node_modules`). Without them the tests
skip, saying why; under CI=true they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.absent import linux_piece_absent
from tests.helpers import write_files
from tests.mcp_server.test_transports import http_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = Path(os.environ.get("WEAVER_NODE_DIR", ROOT / ".node"))
WEAVER = str(Path(sys.executable).with_name("weaver"))
SCRIPT = Path(__file__).with_name("ts_surface.mjs")
PACKAGES = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector")
SETUP = (
    "npm install --prefix .node --no-audit --no-fund "
    "@modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@0.15.0"
)


def require_node(packages: tuple[str, ...] = PACKAGES) -> Path:
    missing = [p for p in packages if not (NODE_DIR / "node_modules" / p).is_dir()]
    reason = ""
    if shutil.which("node") is None:
        reason = "no `node` on this machine"
    elif missing:
        reason = f"{', '.join(missing)} not installed in {NODE_DIR} (run: {SETUP})"
    if reason:
        linux_piece_absent(reason)
    return NODE_DIR


def vault(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {f"n/{i:03}.md": f"# {i}\n[[Hub]]\n" for i in range(600)}
    files["Hub.md"] = "# Hub\nThe centre.\n"
    files["big.md"] = "word " * 60_000
    return write_files(tmp_path / "vault", files)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_typescript_client_uses_resources_prompts_and_subscriptions(
    tmp_path: Path, transport: str
) -> None:
    node = require_node()
    root = vault(tmp_path)
    spec: dict[str, Any] = {
        "command": [WEAVER, "--vault", str(root), "serve"],
        "cwd": str(tmp_path),
        "read": "weaver://note/Hub.md",
        "note": "Hub.md",
        "prefix": "n/00",
        "big": "big.md",
        "edit": str(root / "Hub.md"),
    }
    if transport == "http":
        with http_server(root, tmp_path / "server.log") as base:
            seen = run_ts_client(node, tmp_path, spec | {"url": f"{base}/mcp"})
    else:
        seen = run_ts_client(node, tmp_path, spec)
    assert seen["capabilities"]["resources"]["subscribe"] is True
    assert len(seen["resources"]) == 3 + 602  # vault resources + notes, over 7 pages
    assert seen["templates"] == [
        "weaver://note/{+path}",
        "weaver://base/{+path}",
        "weaver://attachment/{+path}",
        "weaver://help/{tool}",
    ]
    assert seen["read"] == "# Hub\nThe centre.\n"
    assert set(seen["prompts"]) >= {"connect_note", "triage_broken_links"}
    assert "## Linked from\n\n- n/000.md" in seen["prompt"]
    assert seen["completion"][:2] == ["n/000.md", "n/001.md"]
    assert seen["bigLength"] < 100_000  # a page, not the 300 KB note
    assert seen["updated"] == "weaver://note/Hub.md"


def run_ts_client(node: Path, tmp_path: Path, spec: dict[str, Any]) -> Any:
    """What the TypeScript SDK's client saw, run by Node from beside the installed SDK."""
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {**os.environ, "NODE_PATH": str(node / "node_modules")}
    script = node / SCRIPT.name  # beside node_modules, where Node resolves the SDK from
    shutil.copy(SCRIPT, script)
    done = subprocess.run(
        ["node", str(script), str(tmp_path / "spec.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def inspector(node: Path, target: list[str], cwd: Path, *args: str) -> Any:
    """The Inspector CLI's answer to one method, against a command (stdio) or a URL (HTTP)."""
    command = [str(node / "node_modules" / ".bin" / "mcp-inspector"), "--cli", *target, *args]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_inspector_cli_lists_and_reads_resources_and_prompts(
    tmp_path: Path, transport: str
) -> None:
    node = require_node()
    root = vault(tmp_path)
    if transport == "http":
        with http_server(root, tmp_path / "server.log") as base:
            check_inspector(node, [f"{base}/mcp"], tmp_path)
    else:
        check_inspector(node, [WEAVER, "--vault", str(root), "serve"], tmp_path)


def check_inspector(node: Path, target: list[str], cwd: Path) -> None:
    listed = inspector(node, target, cwd, "--method", "resources/list")
    assert [r["uri"] for r in listed["resources"][:4]] == [
        "weaver://vault/stats",
        "weaver://vault/tags",
        "weaver://tasks/today",
        "weaver://note/Hub.md",
    ]
    assert listed["nextCursor"]
    read = inspector(
        node, target, cwd, "--method", "resources/read", "--uri", "weaver://note/Hub.md"
    )
    assert read["contents"][0]["text"] == "# Hub\nThe centre.\n"
    prompts = inspector(node, target, cwd, "--method", "prompts/list")
    assert "summarize_folder" in [p["name"] for p in prompts["prompts"]]
    got = inspector(
        node,
        target,
        cwd,
        "--method",
        "prompts/get",
        "--prompt-name",
        "summarize_folder",
        "--prompt-args",
        "folder=n",
    )
    assert "600 notes" in got["messages"][0]["content"]["text"]
