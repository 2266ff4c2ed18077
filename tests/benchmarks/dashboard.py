"""The dashboard's pages: server time per page at the reference size, with as many executions
in the history as notes in the vault (10,000 and 10,000 at the reference size).

The dashboard is served as `weaver daemon` serves it (uvicorn on a loopback port, the engine
running) over a copy of the reference vault, and each page is asked for `calls` times after a
first warm-up call (which builds the link graph, as any first reader does). The time is the
whole request over loopback, measured by the client, so it bounds the server's own time.
The process keeps its garbage-collection pauses short as the daemon does (`gc_freeze`).
"""

from __future__ import annotations

import shutil
import time
import urllib.parse
import urllib.request

from sqlalchemy import select

from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, Target, latency_figure
from tests.dashboard.server import Served, fill_history, serve_dashboard
from weaver import gc_freeze
from weaver.cache.models import Execution

SECTION = "dashboard"
TARGET = Target("<=", 200.0, "p95 ≤ 200 ms")
MAX_CALLS = 50


def pages(served: Served, hub: str) -> dict[str, str]:
    """Page name -> path, with a real run and the vault's hub note filled in."""
    with served.app.db.connect() as conn:
        run = conn.execute(select(Execution.id).limit(1)).scalar_one()
    return {
        "overview": "/",
        "runs, first page": "/runs",
        "runs, page 100": "/runs?page=100",
        "runs, failed, 7 days, one workflow": (
            "/runs?status=failed&period=7d&workflow=test-slow-echo"
        ),
        "a run": f"/runs/{run}",
        "workflows": "/workflows",
        "a workflow": "/workflows/test-slow-echo",
        "vault health": "/vault",
        "search": "/search?q=graph",
        "the hub note": f"/notes/{urllib.parse.quote(hub)}",
        "graph page": "/graph",
        "graph data, hub at depth 2": f"/graph/data?note={urllib.parse.quote(hub)}&depth=2",
        "graph data, whole vault": "/graph/data",
    }


def time_request(served: Served, path: str) -> float:
    started = time.perf_counter()
    reply = served.get(path)
    elapsed = time.perf_counter() - started
    if reply.status != 200:
        raise RuntimeError(f"{path} answered {reply.status}: {reply.body[:300]}")
    return elapsed


def time_page(served: Served, path: str, calls: int) -> list[float]:
    time_request(served, path)  # warm-up: the graph, the name index, SQLite's page cache
    return [time_request(served, path) for _ in range(calls)]


def measure(served: Served, hub: str, calls: int) -> dict[str, list[float]]:
    found = {name: time_page(served, path, calls) for name, path in pages(served, hub).items()}
    # Vault health is kept per cache version and page: a page never asked for before costs
    # the queries, as the first view after a change does.
    found["vault health, not kept yet"] = [
        time_request(served, f"/vault?orphans={k + 1}") for k in range(calls)
    ]
    return found


def run(ctx: BenchContext) -> list[Figure]:
    notes = ctx.reference
    vault = ctx.workdir / f"dashboard-vault-{notes}"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(ctx.vault(notes), vault, ignore=shutil.ignore_patterns(".weaver"))
    hub = ctx.facts(notes).hub
    calls = min(ctx.calls, MAX_CALLS)
    gc_freeze.keep_pauses_short()  # as `weaver daemon` does before it serves
    with serve_dashboard(vault, builtins=False) as served:
        fill_history(served.app, notes)
        measured = measure(served, hub, calls)
    shutil.rmtree(vault, ignore_errors=True)
    return [
        latency_figure(SECTION, f"{name}, {notes:,} notes and runs", seconds, TARGET)
        for name, seconds in measured.items()
    ]
