"""The same big answers through two MCP clients over stdio: the Python SDK's and the TypeScript
SDK's (what the Inspector, Claude Desktop and Claude Code are built on).

The query targets are judged through the Python SDK's in-memory client, as the issue asks. For
an answer of thousands of items most of that time is the client checking the result against the
tool's output schema in pure-Python `jsonschema`; the TypeScript SDK checks the same schemas with
a compiled validator (ajv). Each client here drives its own `weaver serve` process on the
reference vault, so the figures say what a user of each would wait for, process boundary
included. Reference figures, untargeted.

The TypeScript client is `ts_client.mjs`, run by Node with the SDK (pinned) installed by npm into
the bench's workdir. Without `node` and `npm`, or without the registry, the group says why it
has no TypeScript figures and gives the Python ones.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio

from tests.benchmarks.context import BenchContext
from tests.benchmarks.queries import TOOL_CASES, ToolCase, timed_call
from tests.benchmarks.report import Figure, latency_figure, percentile
from tests.benchmarks.vaultgen import VaultFacts
from tests.benchmarks.worker import clean_env

SECTION = "clients over stdio"
TS_SDK = "@modelcontextprotocol/sdk@1.32.2"
# The answers where the clients differ most (thousands of items) and two ordinary pages.
LABELS = (
    "get_file, most linked note",
    "get_graph, 1,000 notes",
    "get_graph, default limit (100 notes)",
    "search_tags",
    "query_files, no filter",
)
CALLS, QUICK_CALLS, WARMUP = 30, 10, 3
INSTALL_TIMEOUT, RUN_TIMEOUT = 300, 600


def run(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    facts = ctx.facts(notes)
    cases = [case for case in TOOL_CASES if case.label in LABELS]
    calls = QUICK_CALLS if ctx.quick else CALLS
    command = _serve_command(ctx.vault(notes))
    python = anyio.run(_python_client, command, ctx.workdir, cases, facts, calls)
    figures = [_figure(label, "Python", m, notes) for label, m in python.items()]
    try:
        typescript = _typescript_client(command, ctx.workdir, cases, facts, calls)
    except TypeScriptUnavailableError as exc:
        return [*figures, Figure(SECTION, "TypeScript SDK client", 0.0, "", f"not run: {exc}")]
    return figures + [_figure(label, "TypeScript", m, notes) for label, m in typescript.items()]


def _serve_command(vault: Path) -> list[str]:
    weaver = str(Path(sys.executable).with_name("weaver"))
    return [weaver, "--vault", str(vault), "--log-level", "warning", "serve"]


def _figure(label: str, client: str, measured: dict[str, list[float]], notes: int) -> Figure:
    fig = latency_figure(
        SECTION, f"{label}, {client} SDK client, {notes:,} notes", measured["seconds"], None
    )
    tool = percentile(measured["tool_seconds"], 50) * 1000
    return Figure(
        fig.section,
        fig.name,
        fig.value,
        fig.unit,
        f"{fig.shown}; tool p50 {tool:.1f} ms",
        None,
        {**fig.data, "tool_p50_ms": tool},
    )


async def _python_client(
    command: list[str], workdir: Path, cases: list[ToolCase], facts: VaultFacts, calls: int
) -> dict[str, dict[str, list[float]]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=command[0], args=command[1:], env=clean_env(), cwd=str(workdir)
    )
    measured: dict[str, dict[str, list[float]]] = {}
    async with Client(params, mode="legacy", cache=None) as client:
        for case in cases:
            done = [await timed_call(client, case, facts, 0, []) for _ in range(WARMUP + calls)]
            timed = done[WARMUP:]
            measured[case.label] = {
                "seconds": [call.total for call in timed],
                "tool_seconds": [call.tool for call in timed],
            }
    return measured


class TypeScriptUnavailableError(Exception):
    """No Node.js, npm or registry here: the TypeScript figures are left out, with the reason."""


def _typescript_client(
    command: list[str], workdir: Path, cases: list[ToolCase], facts: VaultFacts, calls: int
) -> dict[str, dict[str, list[float]]]:
    folder = _install_typescript_sdk(workdir / "ts-client")
    script = folder / "ts_client.mjs"
    shutil.copyfile(Path(__file__).with_name("ts_client.mjs"), script)
    spec = {
        "command": command,
        "cwd": str(workdir),
        "calls": calls,
        "warmup": WARMUP,
        "cases": [[case.label, case.tool, case.arguments(facts, 0)] for case in cases],
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        ["node", str(script), str(folder / "spec.json")],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the TypeScript client failed: {done.stderr.strip()[-2000:]}")
    measured: dict[str, dict[str, list[float]]] = json.loads(done.stdout.splitlines()[-1])
    return measured


def _install_typescript_sdk(folder: Path) -> Path:
    """`TS_SDK` in `folder/node_modules`, installed once per workdir."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise TypeScriptUnavailableError("no `node` and `npm` on this machine")
    name, _, version = TS_SDK.rpartition("@")
    installed = folder / "node_modules" / name / "package.json"
    if installed.exists() and json.loads(installed.read_text()).get("version") == version:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"private": true}\n')
    try:
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", TS_SDK],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=True,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = exc.stderr.strip()[-300:] if isinstance(exc.stderr, str) else "timed out"
        raise TypeScriptUnavailableError(f"`npm install {TS_SDK}` failed: {detail}") from exc
    return folder
