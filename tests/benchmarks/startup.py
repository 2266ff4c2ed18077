"""How soon a client can use Weaver after starting it (issue 39, "Start-up").

- spawn → answered `tools/list` of `weaver serve` on the reference vault with a warm cache,
  against a bare SDK server with one tool (`bare_server.py`), spawned the same way with the
  same Python, alternately, in the same run. Judged as the ratio of the medians (the issue's
  floor: 1.3×): on a shared machine the absolute times move with the load, their ratio much
  less. Each process's own CPU time up to that answer is printed beside, read from `/proc`.
- `weaver --help`, wall time, beside `python -c pass` (the interpreter's own start).

Both are driven by a few lines of JSON-RPC over the child's pipes rather than the SDK's client,
so nothing of the client's own start is counted. Every child is started once before the timed
runs (bytecode written, files in the page cache), and `PYTHONDONTWRITEBYTECODE` is dropped
from its environment: an installed package has its bytecode, and a checkout run with that
variable set would compile every module on every start.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target
from tests.benchmarks.worker import REPO, clean_env

SECTION = "start-up"
RATIO_FLOOR = Target("<=", 1.3, "≤ 1.3× bare SDK server")
HELP_FLOOR = Target("<=", 0.3, "≤ 0.3 s")
RUNS, QUICK_RUNS = 7, 3
ANSWER_TIMEOUT_S = 120.0
PROTOCOL = "2025-11-25"  # what the clients in use speak (MCP_NOTES: the TypeScript SDK's)
# One tool, answering a fixed text: the least an SDK server can list.
ONE_TOOL = {
    "tool": "echo",
    "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    "structuredContent": {"text": ""},
    "text": "",
}


@dataclass(frozen=True)
class Start:
    """One spawn, timed: wall seconds to the `initialize` and `tools/list` answers, and the
    child's CPU seconds (user + system) at the second."""

    initialized: float
    listed: float
    cpu: float
    tools: int


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    _index(vault)
    runs = QUICK_RUNS if ctx.quick else RUNS
    bare_answers = ctx.workdir / "one-tool.json"
    bare_answers.write_text(json.dumps(ONE_TOOL), encoding="utf-8")
    serve = [_weaver(), "--vault", str(vault), "--log-level", "warning", "serve"]
    bare = [sys.executable, str(Path(__file__).with_name("bare_server.py")), str(bare_answers)]
    weaver_starts, bare_starts = _alternate(serve, bare, runs, ctx.workdir)
    help_s = _median_wall([_weaver(), "--help"], runs)
    python_s = _median_wall([sys.executable, "-c", "pass"], runs)
    return [
        _start_figure(weaver_starts, bare_starts, ctx.reference),
        _help_figure(help_s, python_s, runs),
    ]


def _weaver() -> str:
    return str(Path(sys.executable).with_name("weaver"))


def _env() -> dict[str, str]:
    """The bench's environment (no `WEAVER_*`; `clean_env` serves every toolset, which is
    dropped here: a client starts the default ones), bytecode written."""
    env = clean_env()
    env.pop("WEAVER_TOOLSETS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _index(vault: Path) -> None:
    """A warm cache: the vault indexed (a no-op pass when it already is)."""
    command = [_weaver(), "--vault", str(vault), "--log-level", "warning", "index"]
    subprocess.run(command, env=_env(), cwd=REPO, check=True, capture_output=True, timeout=1800)


def _alternate(
    serve: list[str], bare: list[str], runs: int, cwd: Path
) -> tuple[list[Start], list[Start]]:
    """`runs` timed starts of each, alternating, after one untimed start of each."""
    _start(serve, cwd)
    _start(bare, cwd)
    weaver_starts, bare_starts = [], []
    for _ in range(runs):
        weaver_starts.append(_start(serve, cwd))
        bare_starts.append(_start(bare, cwd))
    return weaver_starts, bare_starts


def _start(command: list[str], cwd: Path) -> Start:
    """Spawn `command`, initialize a session, list the tools; then close its stdin (the end
    of a stdio session) and wait for it to leave."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _send(proc.stdin, _initialize())
        _answer(proc.stdout, 1)
        initialized = time.perf_counter() - started
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed_answer = _answer(proc.stdout, 2)
        listed = time.perf_counter() - started
        cpu = _cpu_seconds(proc.pid)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return Start(initialized, listed, cpu, len(listed_answer["result"]["tools"]))


def _initialize() -> dict[str, Any]:
    client = {"name": "weaver-bench", "version": "0"}
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message).encode() + b"\n")
    pipe.flush()


def _answer(pipe: IO[bytes], request_id: int) -> dict[str, Any]:
    """The answer to `request_id` (notifications the server sends first are skipped)."""
    deadline = time.perf_counter() + ANSWER_TIMEOUT_S
    while time.perf_counter() < deadline:
        line = pipe.readline()
        if not line:
            raise RuntimeError(f"the server closed its output before answering {request_id}")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"request {request_id} failed: {message['error']}")
            return message
    raise RuntimeError(f"no answer to request {request_id} in {ANSWER_TIMEOUT_S:.0f} s")


def _cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far, from `/proc/PID/stat` (0 elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return ticks / os.sysconf("SC_CLK_TCK")


def _median_wall(command: list[str], runs: int) -> float:
    subprocess.run(command, env=_env(), capture_output=True, check=True, timeout=60)
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=_env(), capture_output=True, check=True, timeout=60)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def _start_figure(weaver: list[Start], bare: list[Start], notes: int) -> Figure:
    listed = statistics.median(s.listed for s in weaver)
    floor = statistics.median(s.listed for s in bare)
    cpu = statistics.median(s.cpu for s in weaver)
    floor_cpu = statistics.median(s.cpu for s in bare)
    ratio = listed / floor
    cpu_ratio = cpu / floor_cpu if floor_cpu else 0.0
    initialized = statistics.median(s.initialized for s in weaver)
    shown = (
        f"{ratio:.2f}×: weaver serve p50 {listed:.2f} s (initialize {initialized:.2f} s, "
        f"{weaver[0].tools} tools), bare SDK server p50 {floor:.2f} s; CPU {cpu:.2f} s vs "
        f"{floor_cpu:.2f} s ({cpu_ratio:.2f}×) (n={len(weaver)})"
    )
    data = {
        "weaver_listed_s": [s.listed for s in weaver],
        "weaver_initialized_s": [s.initialized for s in weaver],
        "weaver_cpu_s": [s.cpu for s in weaver],
        "bare_listed_s": [s.listed for s in bare],
        "bare_cpu_s": [s.cpu for s in bare],
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "tools": weaver[0].tools,
    }
    name = f"spawn → answered tools/list, weaver serve vs bare SDK server, {notes:,} notes"
    return Figure(SECTION, name, ratio, "×", shown, RATIO_FLOOR, data)


def _help_figure(help_s: float, python_s: float, runs: int) -> Figure:
    shown = f"{help_s:.3f} s; python -c pass {python_s:.3f} s (median of {runs})"
    data = {"help_s": help_s, "python_s": python_s}
    return Figure(SECTION, "weaver --help, wall time", help_s, "s", shown, HELP_FLOOR, data)
