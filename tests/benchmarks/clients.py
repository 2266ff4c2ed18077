"""The same answers through two MCP clients over stdio: the Python SDK's and the TypeScript
SDK's (what the Inspector, Claude Desktop and Claude Code are built on).

The big answers (`queries.BIG_ANSWERS`: thousands of items, or tens of kilobytes) are judged
here, through the TypeScript client, as the issue asks: through the Python SDK's client most of
their time is its pure-Python `jsonschema` check of the answer against the tool's output schema
(the TypeScript SDK checks the same schemas with a compiled validator, ajv). The query rows keep
their Python figures, unjudged, saying so. Each client drives its own `weaver serve` process on
the reference vault, so the figures say what a user of each would wait for, process boundary
included; the Python client's rows are reference figures. `get_file` of the most linked note and
an ordinary page (`query_files`) are run through both for comparison, and judged through the
TypeScript client too.

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
from typing import Any

import anyio

from tests.benchmarks.context import BenchContext
from tests.benchmarks.queries import BIG_ANSWERS, FAST, TOOL_CASES, ToolCase, timed_call
from tests.benchmarks.report import Figure, Target, latency_figure, percentile
from tests.benchmarks.vaultgen import VaultFacts
from tests.benchmarks.worker import clean_env

SECTION = "clients over stdio"
TS_SDK = "@modelcontextprotocol/sdk@1.32.2"
# The big answers, the most linked note (a big answer before its links were capped) and an
# ordinary page.
LABELS = (*BIG_ANSWERS, "get_file, most linked note", "query_files, no filter")
# The floor under the biggest answer: the same answer, recorded, from a bare SDK server.
FLOOR_CASE = "get_graph, 1,000 notes"
FLOOR_LABEL = "recorded, from a bare SDK server (the floor)"
CALLS, QUICK_CALLS, WARMUP = 50, 10, 3
INSTALL_TIMEOUT, RUN_TIMEOUT = 300, 600


def run(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    facts = ctx.facts(notes)
    cases = [case for case in TOOL_CASES if case.label in LABELS]
    calls = QUICK_CALLS if ctx.quick else CALLS
    command = _serve_command(ctx.vault(notes))
    recorded = ctx.workdir / "floor-answer.json"
    python = anyio.run(_python_client, command, ctx.workdir, cases, facts, calls, recorded)
    figures = [_figure(label, "Python", m, notes, None) for label, m in python.items()]
    try:
        typescript = _typescript_client(command, ctx.workdir, _spec_cases(cases, facts), calls)
        floor_case = [FLOOR_LABEL, *_spec_cases(cases, facts, FLOOR_CASE)[0][1:]]
        floor = _typescript_client(_floor_command(recorded), ctx.workdir, [floor_case], calls)
    except TypeScriptUnavailableError as exc:
        return [*figures, Figure(SECTION, "TypeScript SDK client", 0.0, "", f"not run: {exc}")]
    figures += [_figure(label, "TypeScript", m, notes, FAST) for label, m in typescript.items()]
    return figures + [
        _figure(f"{FLOOR_CASE}, {label}", "TypeScript", m, notes, None)
        for label, m in floor.items()
    ]


def _spec_cases(
    cases: list[ToolCase], facts: VaultFacts, only: str | None = None
) -> list[list[Any]]:
    """[label, tool, arguments] for the TypeScript client."""
    return [
        [case.label, case.tool, case.arguments(facts, 0)]
        for case in cases
        if only is None or case.label == only
    ]


def _floor_command(recorded: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).with_name("bare_server.py")), str(recorded)]


def _serve_command(vault: Path) -> list[str]:
    weaver = str(Path(sys.executable).with_name("weaver"))
    return [weaver, "--vault", str(vault), "--log-level", "warning", "serve"]


def _figure(
    label: str, client: str, measured: dict[str, list[float]], notes: int, target: Target | None
) -> Figure:
    fig = latency_figure(
        SECTION, f"{label}, {client} SDK client, {notes:,} notes", measured["seconds"], target
    )
    tool = percentile(measured["tool_seconds"], 50) * 1000
    size = max(measured["bytes"]) / 1024
    # A recorded answer's `executionTime` is the recording's, not this server's.
    spent = "no work in the tool" if label.endswith(FLOOR_LABEL) else f"tool p50 {tool:.1f} ms"
    return Figure(
        fig.section,
        fig.name,
        fig.value,
        fig.unit,
        f"{fig.shown}; {spent}; {size:,.1f} KiB",
        target,
        {**fig.data, "tool_p50_ms": tool, "kib": size},
    )


async def _python_client(
    command: list[str],
    workdir: Path,
    cases: list[ToolCase],
    facts: VaultFacts,
    calls: int,
    recorded: Path,
) -> dict[str, dict[str, list[float]]]:
    """Each case's calls, timed; and `FLOOR_CASE`'s answer written to `recorded`."""
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
                "bytes": [call.size for call in timed],
            }
        await _record(client, next(c for c in cases if c.label == FLOOR_CASE), facts, recorded)
    return measured


async def _record(client: Any, case: ToolCase, facts: VaultFacts, recorded: Path) -> None:
    """What the bare server answers: `case`'s answer and its tool's output schema, as listed."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    result = await client.call_tool(case.tool, case.arguments(facts, 0))
    answer = {
        "tool": case.tool,
        "outputSchema": listed[case.tool].output_schema,
        "structuredContent": result.structured_content,
        "text": result.content[0].text,
    }
    recorded.write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")


class TypeScriptUnavailableError(Exception):
    """No Node.js, npm or registry here: the TypeScript figures are left out, with the reason."""


def _typescript_client(
    command: list[str], workdir: Path, cases: list[list[Any]], calls: int
) -> dict[str, dict[str, list[float]]]:
    folder = _install_typescript_sdk(workdir / "ts-client")
    script = folder / "ts_client.mjs"
    shutil.copyfile(Path(__file__).with_name("ts_client.mjs"), script)
    spec = {
        "command": command,
        "cwd": str(workdir),
        "calls": calls,
        "warmup": WARMUP,
        "cases": cases,
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
