"""Subscriptions: with `weaver serve` over stdio keeping the cache fresh, how long from saving a
note on disk until a client subscribed to it hears `notifications/resources/updated`.

The server is a separate process, as a desktop client runs it; the client subscribes to a few
notes and appends a line to one of them per trial, timing from just before the write to the
notification naming it. Trials are spaced wider than the watcher's debounce, so each one is a
batch of its own.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure
from tests.benchmarks.worker import clean_env
from weaver.mcp_server.resources import note_uri

TARGET = Target("<=", 300, "p95 ≤ 300 ms")
NOTES = 5  # subscribed at once: each trial saves the next in turn
GIVE_UP_SECONDS = 10.0  # a save not announced by then is a failure of the bench run
PAUSE_SECONDS = 0.1


def run(ctx: BenchContext) -> list[Figure]:
    vault = ctx.vault(ctx.reference)
    notes = ctx.facts(ctx.reference).sample[:NOTES]
    seconds = anyio.run(_measure, vault, ctx.workdir, notes, ctx.trials)
    name = f"save to resources/updated, {ctx.reference:,} notes (stdio)"
    return [latency_figure("subscriptions", name, seconds, TARGET)]


async def _measure(vault: Path, workdir: Path, notes: Sequence[str], trials: int) -> list[float]:
    from mcp import Client, StdioServerParameters
    from mcp_types import ResourceUpdatedNotification

    heard: dict[str, anyio.Event] = {}

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification) and message.params.uri in heard:
            heard[message.params.uri].set()

    weaver = str(Path(sys.executable).with_name("weaver"))
    params = StdioServerParameters(
        command=weaver,
        args=["--vault", str(vault), "--log-level", "warning", "serve"],
        env=clean_env(),
        cwd=str(workdir),
    )
    samples: list[float] = []
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        for note in notes:
            await client.subscribe_resource(note_uri(note))
        for i in range(trials):
            note = notes[i % len(notes)]
            uri = note_uri(note)
            heard[uri] = anyio.Event()
            started = time.perf_counter()
            with (vault / note).open("a", encoding="utf-8") as handle:
                handle.write(f"\nsaved by the subscription bench, trial {i}\n")
            with anyio.fail_after(GIVE_UP_SECONDS):
                await heard[uri].wait()
            samples.append(time.perf_counter() - started)
            await anyio.sleep(PAUSE_SECONDS)
    return samples
