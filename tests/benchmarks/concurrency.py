"""HTTP under concurrency, against the transport's own ceiling measured in the same run.

The ceiling is a bare SDK server (`mcp` 2.x `MCPServer`, uvicorn, one trivial `ping` tool),
driven by the same Python SDK client as Weaver:

- one call alone over HTTP: bare `ping` against Weaver's `health_check` and `get_stats`
  (target: within 2x the bare per-call time);
- 50 sessions at once, each making `LOAD_CALLS` calls: bare calls/s against Weaver's read mix
  (shown), and Weaver's read mix against the same answers replayed by a bare SDK server
  (`bare_server`, recorded from Weaver in this run: the SDK's and the client's own cost of
  those answers, with no work in the tools; target: at least 0.5x of that floor);
- the same load with one call in ten a write (`create_file`): the writes' p95 against the
  reads' p95 (target: at most 2x), and every write found in the vault and the cache afterwards.

Weaver is measured twice, with one server process and with `PROCESSES` (the writer and its
reader processes sharing the port: `weaver.host.http_readers`), side by side; the targets are
judged on `http_processes`' default.

Why the read mix is judged against the replayed answers rather than against `ping`: on this
2-core host the load client shares the cores, and the Python SDK client spends about twice the
CPU on one of Weaver's answers (parsing it, checking it against the tool's output schema) that
it spends on a `ping`: the replayed answers alone, with no work in the server, reach about
0.55x of `ping`'s calls/s. Half of `ping` would leave Weaver's tools next to no time at all
(docs/benchmarks.md, "HTTP under concurrency").

Everything runs on 127.0.0.1 with bounded loops; each server is a subprocess on a free port.
Weaver is measured once it has finished its first index of the vault (`health_check` no
longer says it is running): until then its parse workers hold both cores, and a call alone
measured the index, not the call. What follows the first index stays in the figures, as a
user would meet it: the workflows' first pass over the vault and the embedding worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, percentile
from tests.benchmarks.worker import clean_env
from weaver.config import Settings

SECTION = "HTTP under concurrency"
PROCESSES = 2  # the writer and one reader process, measured beside one process
DEFAULT_PROCESSES: int = Settings.model_fields["http_processes"].default
SESSIONS = 50
LOAD_CALLS, QUICK_LOAD_CALLS = 20, 10
FLOOR_ROUNDS = 2  # Weaver's read load and the replayed floor, in turns
ALONE_CALLS = 40
START_TIMEOUT = 120.0
BARE_SERVER = """
import sys, uvicorn
from mcp.server.mcpserver import MCPServer
server = MCPServer("bare")
@server.tool()
def ping() -> str:
    return "pong"
uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]),
            log_level="error")
"""
READS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_stats", {}),
    ("query_files", {"limit": 20}),
    ("search_notes", {"query": "project", "limit": 10}),
    ("health_check", {}),
)


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    calls = QUICK_LOAD_CALLS if ctx.quick else LOAD_CALLS
    answers = ctx.workdir / "concurrency-answers.json"
    measured: dict[str, Any] = {}
    with _bare_server() as bare, contextlib.ExitStack() as replaying:
        replay = None
        for processes in (1, PROCESSES):
            with _weaver_server(vault, ctx.workdir, processes) as weaver:
                if replay is None:  # Weaver's answers, recorded once, replayed from then on
                    asyncio.run(_record_answers(weaver, answers))
                    replay = replaying.enter_context(_replay_server(answers))
                found = asyncio.run(_measure(bare, replay, weaver, calls, processes))
            measured.update(found)
    return _figures(measured, ctx.reference)


@contextlib.contextmanager
def _bare_server() -> Iterator[str]:
    port = _free_port()
    with _process([sys.executable, "-c", BARE_SERVER, str(port)], port) as url:
        yield url


@contextlib.contextmanager
def _replay_server(answers: Path) -> Iterator[str]:
    port = _free_port()
    script = str(Path(__file__).with_name("bare_server.py"))
    with _process([sys.executable, script, str(answers), str(port)], port) as url:
        yield url


@contextlib.contextmanager
def _weaver_server(vault: Path, workdir: Path, processes: int) -> Iterator[str]:
    port = _free_port()
    weaver = str(Path(sys.executable).with_name("weaver"))
    command = [weaver, "--vault", str(vault), "--log-level", "warning", "serve"]
    command += ["--transport", "http", "--port", str(port), "--http-processes", str(processes)]
    with _process(command, port, workdir) as url:
        yield url


@contextlib.contextmanager
def _process(command: list[str], port: int, cwd: Path | None = None) -> Iterator[str]:
    log_file = (cwd or Path(tempfile.gettempdir())) / f"concurrency-server-{port}.log"
    errors = log_file.open("wb")  # what a server that exits says, for the message below
    process = subprocess.Popen(
        command, env=clean_env(), cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None:
                tail = log_file.read_text(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"{command[0]} exited with {process.returncode}: {tail}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        errors.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _alone(url: str, tool: str, args: dict[str, Any]) -> list[float]:
    from mcp import Client

    async with Client(url) as client:
        await client.call_tool(tool, args)  # warm: session, first query
        seconds = []
        for _ in range(ALONE_CALLS):
            started = time.perf_counter()
            await client.call_tool(tool, args)
            seconds.append(time.perf_counter() - started)
    return seconds


async def _session(
    url: str, calls: int, number: int, writes: str | None, bare: bool
) -> list[tuple[str, float]]:
    from mcp import Client

    done: list[tuple[str, float]] = []
    async with Client(url) as client:
        for i in range(calls):
            if bare:
                tool, args = "ping", {}
            elif writes and i % 10 == 9:
                tool = "create_file"
                args = {"path": f"{writes}/s{number}-{i}.md", "content": f"# {number} {i}"}
            else:
                tool, args = READS[(number + i) % len(READS)]
            started = time.perf_counter()
            result = await client.call_tool(tool, args)
            if result.is_error:
                raise RuntimeError(f"{tool} failed under load: {result.content}")
            done.append(
                ("write" if tool == "create_file" else "read", time.perf_counter() - started)
            )
    return done


async def _load(url: str, calls: int, writes: str | None, bare: bool) -> dict[str, Any]:
    """`SESSIONS` sessions at once; `writes`: the folder each tenth call creates a note in."""
    started = time.perf_counter()
    sessions = [_session(url, calls, n, writes, bare) for n in range(SESSIONS)]
    results = await asyncio.gather(*sessions)
    elapsed = time.perf_counter() - started
    flat = [item for result in results for item in result]
    return {
        "calls_per_s": len(flat) / elapsed,
        "seconds": elapsed,
        "reads": [s for kind, s in flat if kind == "read"],
        "writes": [s for kind, s in flat if kind == "write"],
    }


def _together(loads: list[dict[str, Any]]) -> dict[str, Any]:
    """Several loads as one: all their calls over all their time."""
    reads = [s for load in loads for s in load["reads"]]
    writes = [s for load in loads for s in load["writes"]]
    seconds = sum(load["seconds"] for load in loads)
    return {
        "calls_per_s": (len(reads) + len(writes)) / seconds,
        "seconds": seconds,
        "reads": reads,
        "writes": writes,
    }


async def _wait_indexed(url: str) -> None:
    """Until Weaver's first index of the vault is done (bounded by `START_TIMEOUT`)."""
    from mcp import Client

    deadline = time.monotonic() + START_TIMEOUT
    async with Client(url) as client:
        while time.monotonic() < deadline:
            result = await client.call_tool("health_check", {})
            data = (result.structured_content or {}).get("data", {})
            if not any("initial index" in p for p in data.get("problems", [])):
                return
            await asyncio.sleep(0.5)
    raise RuntimeError(f"Weaver did not finish indexing within {START_TIMEOUT:.0f} s")


async def _measure(
    bare: str, replay: str, weaver: str, calls: int, processes: int
) -> dict[str, Any]:
    """Weaver with `processes` server processes (and, with the default, the bare server and
    the calls alone, in the same run). Weaver's reads and the replayed floor take turns
    (`FLOOR_ROUNDS` each), so that a host's drift over the run moves both alike."""
    await _wait_indexed(weaver)
    found: dict[str, Any] = {}
    if processes == PROCESSES:
        found["bare_alone"] = await _alone(bare, "ping", {})
        found["health_alone"] = await _alone(weaver, "health_check", {})
        found["stats_alone"] = await _alone(weaver, "get_stats", {})
        found["bare_load"] = await _load(bare, calls, writes=None, bare=True)
    folder = f"bench-writes/{processes}p-{time.time_ns()}"
    floors, reads = [], []
    for _ in range(FLOOR_ROUNDS):
        floors.append(await _load(replay, calls, writes=None, bare=False))
        reads.append(await _load(weaver, calls, writes=None, bare=False))
    found[f"floor_load_{processes}"] = _together(floors)
    found[f"reads_load_{processes}"] = _together(reads)
    mixed = await _load(weaver, calls, writes=folder, bare=False)
    mixed["lost"] = len(mixed["writes"]) - await _notes_in(weaver, folder)
    found[f"mixed_load_{processes}"] = mixed
    return found


async def _record_answers(url: str, answers: Path) -> None:
    """Weaver's answer to each of `READS`, with its tool's output schema as listed, for
    `bare_server` to replay."""
    from mcp import Client

    await _wait_indexed(url)
    async with Client(url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        recorded = []
        for tool, args in READS:
            result = await client.call_tool(tool, args)
            recorded.append(
                {
                    "tool": tool,
                    "outputSchema": listed[tool].output_schema,
                    "structuredContent": result.structured_content,
                    "text": result.content[0].text,  # type: ignore[union-attr]
                }
            )
    answers.write_text(json.dumps(recorded, ensure_ascii=False), encoding="utf-8")


async def _notes_in(url: str, folder: str) -> int:
    """How many notes the cache holds in `folder` (every write of the load should be there)."""
    from mcp import Client

    async with Client(url) as client:
        result = await client.call_tool("query_files", {"directory": folder, "limit": 1})
        data = (result.structured_content or {}).get("data", {})
        return int(data.get("total", 0))


def _figures(m: dict[str, Any], notes: int) -> list[Figure]:
    bare_ms = percentile(m["bare_alone"], 50) * 1000
    figures = [
        Figure(
            SECTION,
            "one call alone, bare SDK server (ping)",
            bare_ms,
            "ms",
            f"p50 {bare_ms:.1f} ms",
        ),
    ]
    for key, label in (("health_alone", "health_check"), ("stats_alone", "get_stats")):
        ms = percentile(m[key], 50) * 1000
        ratio = ms / bare_ms
        figures.append(
            Figure(
                SECTION,
                f"one call alone, Weaver {label} / bare",
                ratio,
                "x",
                f"p50 {ms:.1f} ms = {ratio:.2f}x bare",
                Target("<=", 2.0, "≤ 2x"),
            )
        )
    bare_rate = m["bare_load"]["calls_per_s"]
    figures.append(
        Figure(
            SECTION,
            f"{SESSIONS} sessions, bare SDK server",
            bare_rate,
            "calls/s",
            f"{bare_rate:.0f} calls/s",
        )
    )
    for processes in (1, PROCESSES):
        figures += _load_figures(m, processes, bare_rate, notes)
    return figures


def _load_figures(m: dict[str, Any], processes: int, bare_rate: float, notes: int) -> list[Figure]:
    judged = processes == DEFAULT_PROCESSES  # the default is what the targets are judged on
    label = f"{processes} process{'es' if processes > 1 else ''}"
    reads = m[f"reads_load_{processes}"]
    floor_rate = m[f"floor_load_{processes}"]["calls_per_s"]
    ratio = reads["calls_per_s"] / floor_rate
    mixed = m[f"mixed_load_{processes}"]
    read_p95 = percentile(mixed["reads"], 95)
    write_p95 = percentile(mixed["writes"], 95)
    return [
        Figure(
            SECTION,
            f"{SESSIONS} sessions, Weaver's answers replayed by a bare SDK server, beside "
            f"{label} (the floor)",
            floor_rate,
            "calls/s",
            f"{floor_rate:.0f} calls/s = {floor_rate / bare_rate:.2f}x bare ping",
        ),
        Figure(
            SECTION,
            f"{SESSIONS} sessions, Weaver reads, {notes:,} notes, {label} / floor",
            ratio,
            "x",
            f"{reads['calls_per_s']:.0f} calls/s = {ratio:.2f}x the floor "
            f"({reads['calls_per_s'] / bare_rate:.2f}x bare ping); p95 "
            f"{percentile(reads['reads'], 95) * 1000:.0f} ms",
            Target(">=", 0.5, "≥ 0.5x") if judged else None,
        ),
        Figure(
            SECTION,
            f"{SESSIONS} sessions, 10% writes, {label}: write p95 / read p95",
            write_p95 / read_p95,
            "x",
            f"writes p95 {write_p95 * 1000:.0f} ms, reads p95 {read_p95 * 1000:.0f} ms, "
            f"{mixed['calls_per_s']:.0f} calls/s",
            Target("<=", 2.0, "≤ 2x") if judged else None,
        ),
        Figure(
            SECTION,
            f"{SESSIONS} sessions, 10% writes, {label}: writes missing from the cache",
            mixed["lost"],
            "writes",
            f"{mixed['lost']} of {len(mixed['writes'])}",
            Target("<=", 0, "none lost"),
        ),
    ]
