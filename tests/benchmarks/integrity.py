"""Integrity under contention: twenty clients editing one note with the same expectedHash, and
a person's editor saving while Weaver writes.

Same-hash edits: a server holding the cache's writer role (as `weaver serve` does) on a copy of
the reference vault, an in-memory MCP client, and rounds of 20 `edit_file` calls sent together,
each with the note's current hash. Every round must accept exactly one and refuse the rest with
the conflict answer, and the note must hold every accepted edit (none lost). p95 of all answers
is judged (≤ 200 ms); the floor is one such edit alone, measured in the same run.

Concurrent saves: another process saves the note in place as an editor does (read, append a
line, truncate and write), 3 to 50 times a second, while Weaver appends through `patch_note`
without a hash in a loop. A save is lost when its line is missing from the final note: what
the check just before Weaver's rename leaves open (a save landing between the check and the
rename). The count is printed; docs/guarantees.md states the window.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure, percentile
from weaver.config import TOOLSETS, Settings
from weaver.edits import patches
from weaver.edits.steps import NoteChangedError, sha256
from weaver.errors import NoteDecodeError
from weaver.mcp_server import build_server
from weaver.runtime import cache_sync
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState

SAME_HASH_TARGET = Target("<=", 200, "p95 ≤ 200 ms")
LOST_TARGET = Target("<=", 0, "0 lost")
CLIENTS = 20
NOTE = "integrity-bench.md"


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.workdir / "vault-integrity"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(ctx.vault(ctx.reference), vault)
    (vault / NOTE).write_text("# Contended note\n")
    try:
        rounds = 5 if ctx.quick else 15
        measured = anyio.run(_same_hash_rounds, vault, rounds)
        saves = _concurrent_saves(vault, seconds=3 if ctx.quick else 10)
    finally:
        shutil.rmtree(vault, ignore_errors=True)
    return _figures(measured, saves, ctx.reference)


async def _same_hash_rounds(vault: Path, rounds: int) -> dict[str, Any]:
    app = open_app(Settings(vault=vault, toolsets=list(TOOLSETS)))
    app.indexer.reconcile()
    state = ServerState(app, watch=False)
    state.writer = True  # as the serve process holding the writer lock
    latencies: list[float] = []
    alone: list[float] = []
    accepted_per_round: list[int] = []
    accepted_lines: list[str] = []
    try:
        async with Client(build_server(state)) as client:
            for i in range(rounds):
                alone.append(await _one_edit(client, f"alone {i}", None, []))
                start = sha256((vault / NOTE).read_bytes())
                answers: list[dict[str, Any]] = []
                async with anyio.create_task_group() as group:
                    for c in range(CLIENTS):
                        line = f"round {i} client {c}"
                        group.start_soon(_timed_edit, client, line, start, latencies, answers)
                won = [a for a in answers if a["success"]]
                accepted_per_round.append(len(won))
                accepted_lines += [a["line"] for a in won]
                refused = [a for a in answers if not a["success"]]
                assert all("File changed on disk" in a["error"] for a in refused), refused[:1]
    finally:
        app.close()
    text = (vault / NOTE).read_text()
    lost = sum(line not in text for line in accepted_lines)
    return {"latencies": latencies, "alone": alone, "accepted": accepted_per_round, "lost": lost}


async def _timed_edit(
    client: Client, line: str, start: str, latencies: list[float], answers: list[dict[str, Any]]
) -> None:
    envelope: list[dict[str, Any]] = []
    latencies.append(await _one_edit(client, line, start, envelope))
    answers.append(envelope[0] | {"line": line})


async def _one_edit(
    client: Client, line: str, expected: str | None, out: list[dict[str, Any]]
) -> float:
    args: dict[str, Any] = {"path": NOTE, "position": "append", "content": line}
    if expected is not None:
        args["expectedHash"] = expected
    started = time.perf_counter()
    result = await client.call_tool("edit_file", args)
    elapsed = time.perf_counter() - started
    out.append(dict(result.structured_content or {}))
    return elapsed


SAVER = textwrap.dedent(
    """
    import random, sys, time
    path, seconds = sys.argv[1], float(sys.argv[2])
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:   # in place, as an editor saves
            f.write(text + f"save {i}\\n")
        i += 1
        time.sleep(random.uniform(0.02, 0.3))  # a busy autosave: 3 to 50 saves a second
    print(i)
    """
)


def _concurrent_saves(vault: Path, seconds: float) -> dict[str, int]:
    path = vault / NOTE
    path.write_text("# Saved by an editor and by Weaver\n")
    app = open_app(Settings(vault=vault, toolsets=list(TOOLSETS)))
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    written = refused = 0
    try:
        while saver.poll() is None:
            transform = patches.insert_transform("append", f"weaver {written}")
            try:
                patches.patch_note(
                    app,
                    NOTE,
                    transform,
                    expected_hash=None,
                    sync=lambda e: cache_sync.sync_cache(app, e, holds_writer=True),
                )
                written += 1
            except (NoteChangedError, NoteDecodeError):
                refused += 1  # the editor was mid-save: refused, nothing overwritten
        saves = int(saver.communicate()[0].strip() or 0)
    finally:
        app.close()
    final = path.read_text()
    # The editor saves one after another, so it never drops a save of its own: a save missing
    # from the note was replaced by a Weaver write that did not see it.
    lost = sum(f"save {i}\n" not in final for i in range(saves))
    return {"saves": saves, "weaver_writes": written, "refused": refused, "lost": lost}


def _figures(m: dict[str, Any], saves: dict[str, int], notes: int) -> list[Figure]:
    same = latency_figure(
        "integrity",
        f"{CLIENTS} same-hash edit_file calls at once, {notes:,} notes",
        m["latencies"],
        SAME_HASH_TARGET,
    )
    alone_p50 = percentile(m["alone"], 50) * 1000
    accepted = m["accepted"]
    exact = sum(n == 1 for n in accepted)
    return [
        same,
        Figure(
            "integrity",
            "  the same, p95 against one edit alone (floor)",
            same.value / alone_p50 if alone_p50 else 0.0,
            "x",
            f"{same.value / alone_p50:.1f}x of {alone_p50:.1f} ms" if alone_p50 else "-",
        ),
        Figure(
            "integrity",
            "  rounds accepting exactly one edit; accepted edits lost",
            float(m["lost"] + (len(accepted) - exact)),
            "",
            f"{exact} of {len(accepted)} rounds; {m['lost']} lost",
            LOST_TARGET,
        ),
        Figure(
            "integrity",
            "editor saves in place while Weaver appends: saves lost",
            float(saves["lost"]),
            "",
            f"{saves['lost']} of {saves['saves']:,} saves lost; {saves['weaver_writes']:,} "
            f"Weaver writes, {saves['refused']:,} refused as the note changed",
            LOST_TARGET,
            dict(saves),
        ),
    ]
